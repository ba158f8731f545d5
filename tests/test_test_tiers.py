"""The `model` tier stays true: an inner pytest run (pytester) with tests/model_tier.py as its plugin fails a test
that loads a real model without the marker, and lets a marked one through to the real loader.

The inner tests take the cheap way into each loader (a model the loader refuses, an empty cross-encoder setting, an
ONNX file that is not there): the marker check comes first, so an unmarked test fails without any model loading,
and a marked one reaches the loader's own error — proof that the call went through.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INI = """
[pytest]
markers =
    model: loads a real model
"""


def run_inner(pytester: pytest.Pytester, source: str) -> pytest.RunResult:
    pytester.makeini(INI)
    pytester.makepyfile(test_inner=source)
    return pytester.runpytest("-p", "model_tier", "-p", "no:cacheprovider", "-q")


def test_an_unmarked_test_that_loads_the_local_model_fails_naming_the_marker(pytester: pytest.Pytester) -> None:
    result = run_inner(
        pytester,
        """
import pytest
from chunkbench.config import Settings
from chunkbench.embedding.providers import load_local_model
from chunkbench.embedding.registry import get_spec
from chunkbench.errors import EmbeddingError


def test_unmarked(tmp_path):
    load_local_model(get_spec("all-MiniLM-L6-v2"), Settings(_env_file=None, data_dir=tmp_path))


def test_unmarked_swallowing_the_error(tmp_path):
    # Code under test that turns any failure into something else (an API's 500, a failed job) cannot hide it.
    try:
        load_local_model(get_spec("all-MiniLM-L6-v2"), Settings(_env_file=None, data_dir=tmp_path))
    except Exception:
        pass


@pytest.mark.model
def test_marked(tmp_path):
    with pytest.raises(EmbeddingError, match="No local weights are known"):
        load_local_model(get_spec("text-embedding-3-small"), Settings(_env_file=None, data_dir=tmp_path))
""",
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_inner.py::test_unmarked loads a real model (chunkbench.embedding.providers.load_local_model) but "
            "is not marked `model`: add @pytest.mark.model to it*",
            "*test_inner.py::test_unmarked_swallowing_the_error loads a real model*not marked `model`*",
        ]
    )


def test_the_cross_encoder_and_onnx_runtime_are_guarded_too(pytester: pytest.Pytester) -> None:
    result = run_inner(
        pytester,
        """
import onnxruntime
import pytest
from chunkbench.retrieval.rerank import _load_cross_encoder


def test_cross_encoder():
    _load_cross_encoder("", "cpu")


def test_onnx_session(tmp_path):
    onnxruntime.InferenceSession(str(tmp_path / "missing.onnx"))


@pytest.mark.model
def test_onnx_session_marked(tmp_path):
    with pytest.raises(Exception, match="missing.onnx"):
        onnxruntime.InferenceSession(str(tmp_path / "missing.onnx"))
""",
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*::test_cross_encoder loads a real model (chunkbench.retrieval.rerank._load_cross_encoder)*",
            "*::test_onnx_session loads a real model (onnxruntime.InferenceSession)*",
        ]
    )


def test_a_wide_fixture_that_loads_a_model_counts_against_every_test_using_it(pytester: pytest.Pytester) -> None:
    # The module fixture loads once, in the marked first test's setup; the unmarked second test gets the cached
    # value and loads nothing itself, and still fails: it depends on a model all the same.
    result = run_inner(
        pytester,
        """
import pytest
from chunkbench.errors import QueryError
from chunkbench.retrieval.rerank import _load_cross_encoder


@pytest.fixture(scope="module")
def reranker():
    with pytest.raises(QueryError, match="not configured"):
        _load_cross_encoder("", "cpu")
    return "loaded"


@pytest.mark.model
def test_marked_first(reranker):
    assert reranker == "loaded"


def test_unmarked_later(reranker):
    assert reranker == "loaded"


def test_unmarked_without_the_fixture():
    pass
""",
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*::test_unmarked_later loads a real model (fixture 'reranker')*"])
