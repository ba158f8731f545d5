"""Strategies from installed packages: a real package, built and installed outside the repo by pip, registers a
strategy through the ``chunkbench.strategies`` entry-point group; the app lists it, processes with it and benchmarks
it, and the CLI of another process lists it too. Broken entry points stop the lookup with the package named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chunkbench.app import create_app
from chunkbench.chunking import entry_points
from chunkbench.chunking.base import strategy_class
from chunkbench.errors import PluginError
from chunkbench.plugins import isolated_registries
from test_benchmarks import QUESTIONS
from test_queries import HANDBOOK

# A strategy of its author's: one chunk per paragraph pair, built with chunkbench's public chunk factory.
MODULE = """
import re

from pydantic import Field

from chunkbench.chunking.base import ChunkFactory, ChunkingStrategy, StrategyParams


class PairParams(StrategyParams):
    paragraphs: int = Field(2, ge=1, le=10, description="Paragraphs per chunk")


class ParagraphPairs(ChunkingStrategy):
    name = "paragraph_pairs"
    description = "Paragraphs, a few per chunk (a package outside chunkbench)."
    params_model = PairParams

    def chunk(self, document):
        spans = [m.span() for m in re.finditer(r"[^\\n](?:.|\\n(?!\\n))*", document.markdown) if m.group().strip()]
        step = self.params.paragraphs
        factory = ChunkFactory(self.name, document)
        groups = [spans[i : i + step] for i in range(0, len(spans), step)]
        return [factory.make(i, g[0][0], g[-1][1]) for i, g in enumerate(groups)]
"""

PYPROJECT = """
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-chunkers"
version = "1.2.0"

[project.entry-points."chunkbench.strategies"]
{entry}
"""


def _install(tmp_path: Path, name: str, entry: str, module: str) -> Path:
    """Build and install a package with pip into a folder of its own (as a user's environment would hold it)."""
    source = tmp_path / f"{name}-src"
    (source / "acme_chunkers").mkdir(parents=True)
    (source / "acme_chunkers" / "__init__.py").write_text(textwrap.dedent(module), encoding="utf-8")
    (source / "pyproject.toml").write_text(PYPROJECT.format(entry=entry), encoding="utf-8")
    target = tmp_path / f"{name}-site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return target


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The package on this process's path, the entry points read again; everything it registered undone after."""
    target = _install(tmp_path, "good", 'paragraph_pairs = "acme_chunkers:ParagraphPairs"', MODULE)
    with isolated_registries():
        monkeypatch.syspath_prepend(str(target))
        monkeypatch.setattr(entry_points, "_loaded", False)
        yield target
        sys.modules.pop("acme_chunkers", None)


@pytest.mark.model
def test_an_installed_package_registers_a_strategy_that_is_listed_processed_and_benchmarked(installed, settings):
    assert [e.name for e in metadata.entry_points(group=entry_points.GROUP) if e.dist.name == "acme-chunkers"] == [
        "paragraph_pairs"
    ]
    with TestClient(create_app(settings)) as client:
        listed = {s["name"]: s for s in client.get("/strategies").json()}
        assert listed["paragraph_pairs"]["description"] == "Paragraphs, a few per chunk (a package outside chunkbench)."
        assert listed["paragraph_pairs"]["params_schema"]["properties"]["paragraphs"]["maximum"] == 10

        document = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"]
        processed = client.post(
            f"/documents/{document['id']}/process",
            params={"wait": "true"},
            json={"strategies": ["paragraph_pairs"], "params": {"paragraph_pairs": {"paragraphs": 2}}},
        )
        assert processed.status_code == 200, processed.text
        # The handbook's markdown: a title, three headings and three paragraphs, two per chunk.
        assert processed.json()["chunk_counts"] == {"paragraph_pairs": 4}

        run = client.post(
            "/benchmarks",
            params={"wait": "true"},
            json={"document_id": document["id"], "questions": QUESTIONS, "strategies": ["paragraph_pairs"],
                  "top_k": [5]},
        )  # fmt: skip
        assert run.status_code == 200, run.text
        experiment = run.json()
        assert [c["key"] for c in experiment["configurations"]] == ["paragraph_pairs/dense/k5"]
        assert all(cell["status"] == "ok" for cell in experiment["cells"])
        # Four chunks, five retrieved: every question's evidence is in what was retrieved.
        assert experiment["aggregate"]["paragraph_pairs/dense/k5"]["metrics"]["recall"]["mean"] == 1.0


@pytest.mark.slow
def test_another_process_cli_lists_the_installed_strategy(installed, tmp_path):
    # Its own data folder and SQLite file: the suite's per-test PostgreSQL database (CHUNKBENCH_DATABASE_URL on the
    # PostgreSQL pass) is not made for this test, and listing strategies needs only the Admin Corpus role.
    env = {key: value for key, value in os.environ.items() if key != "CHUNKBENCH_DATABASE_URL"}
    env |= {"PYTHONPATH": os.pathsep.join([str(installed), *sys.path]), "CHUNKBENCH_DATA_DIR": str(tmp_path / "data")}
    listed = subprocess.run(
        [sys.executable, "-m", "chunkbench", "strategies", "--json"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    names = [s["name"] for s in json.loads(listed.stdout)]
    assert names.index("paragraph_pairs") > names.index("semantic_parent_child")  # after the built-ins


def test_a_broken_entry_point_names_its_package(tmp_path, monkeypatch):
    target = _install(tmp_path, "broken", 'paragraph_pairs = "acme_chunkers:Missing"', "X = 1\n")
    with isolated_registries():
        monkeypatch.syspath_prepend(str(target))
        monkeypatch.setattr(entry_points, "_loaded", False)
        with pytest.raises(PluginError) as raised:
            strategy_class("fixed_size")
        sys.modules.pop("acme_chunkers", None)
    assert raised.value.message.startswith(
        "The strategy entry point paragraph_pairs = 'acme_chunkers:Missing' of acme-chunkers failed to import"
    )


def test_an_entry_point_must_be_named_as_its_strategy(tmp_path, monkeypatch):
    target = _install(tmp_path, "misnamed", 'pairs = "acme_chunkers:ParagraphPairs"', MODULE)
    with isolated_registries():
        monkeypatch.syspath_prepend(str(target))
        monkeypatch.setattr(entry_points, "_loaded", False)
        with pytest.raises(PluginError) as raised:
            strategy_class("fixed_size")
        sys.modules.pop("acme_chunkers", None)
    assert "is named 'paragraph_pairs'; the entry point's name must be the same" in raised.value.message
