"""The plugin seam: real plugin files in a tmp CHUNKBENCH_PLUGINS_DIR (the examples/plugins/ files and broken
ones written here), loaded by the real app and CLI, used end to end with MiniLM and embedded Qdrant."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.chunking import entry_points
from chunkbench.chunking.base import all_strategies
from chunkbench.cli import app as cli_app
from chunkbench.config import Settings, get_settings
from chunkbench.documents.parsers import supported_suffixes
from chunkbench.embedding.registry import REGISTRY
from chunkbench.errors import PluginError
from chunkbench.models import RetrieverName, StrategyName
from chunkbench.plugins import isolated_registries, load_plugins
from test_benchmarks import QUESTIONS
from test_queries import HANDBOOK

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plugins"
BUILT_IN_STRATEGIES = [
    "fixed_size",
    "recursive",
    "semantic",
    "contextual_retrieval",
    "semantic_parent_child",
    "code_aware",
    "table_aware",
    "cluster_semantic",
]
# The handbook's three paragraphs, exactly as its markdown holds them.
LEAVE, EQUIPMENT, TRAVEL = (block.strip() for block in re.split(r"\n## \w+\n", HANDBOOK)[1:])


@pytest.fixture(autouse=True)
def _isolated() -> Iterator[None]:
    """Whatever a test's plugins register is gone afterwards (the registries are process-wide)."""
    with isolated_registries():
        yield


@pytest.fixture
def plugins_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    for example in EXAMPLES.glob("*.py"):
        shutil.copy(example, folder / example.name)
    return folder


@pytest.fixture
def plugin_client(settings: Settings, plugins_dir: Path) -> Iterator[TestClient]:
    settings.plugins_dir = plugins_dir
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def handbook_id(plugin_client: TestClient) -> str:
    response = plugin_client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())})
    assert response.status_code == 201, response.text
    return response.json()["document"]["id"]


def _process(client: TestClient, document_id: str, **body) -> dict:
    response = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=body)
    assert response.status_code == 200, response.text
    return response.json()


# ---------------------------------------------------------------------------------------------- strategy


@pytest.mark.model
def test_a_plugin_strategy_is_listed_processed_previewed_queried_and_benchmarked(plugin_client, handbook_id):
    listed = {s["name"]: s for s in plugin_client.get("/strategies").json()}
    # After the built-ins and any installed package's strategies (entry points, chunkbench's own adapters among them).
    assert [name for name in listed if name not in entry_points.ORIGINS] == [*BUILT_IN_STRATEGIES, "paragraph"]
    schema = listed["paragraph"]["params_schema"]["properties"]["paragraphs_per_chunk"]
    assert (schema["default"], schema["minimum"], schema["maximum"]) == (1, 1, 50)

    body = _process(plugin_client, handbook_id, strategies=["paragraph"], params={"paragraph": {}})
    assert body["status"] == "indexed" and body["chunk_counts"] == {"paragraph": 3}
    assert body["completed"][0]["collection"] == "paragraph__all-MiniLM-L6-v2_collection"

    preview = plugin_client.get(f"/admin/chunks/{handbook_id}", params={"strategy": "paragraph"}).json()
    assert [c["text"] for c in preview["chunks"]] == [LEAVE, EQUIPMENT, TRAVEL]
    assert [c["heading_path"] for c in preview["chunks"]] == [
        ["Staff Handbook", "Leave"],
        ["Staff Handbook", "Equipment"],
        ["Staff Handbook", "Travel"],
    ]

    answer = plugin_client.post(
        "/queries",
        json={
            "document_id": handbook_id,
            "strategy": "paragraph",
            "question": "Which ticket code reports broken equipment?",
            "top_k": 1,
        },
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["strategy"] == "paragraph"
    assert [s["text"] for s in answer.json()["sources"]] == [EQUIPMENT]

    # k=5 over 3 chunks retrieves every paragraph: each question's evidence is found, recall exactly 1.
    run = plugin_client.post(
        "/benchmarks",
        params={"wait": "true"},
        json={"document_id": handbook_id, "questions": QUESTIONS, "strategies": ["paragraph"], "top_k": [5]},
    )
    assert run.status_code == 200, run.text
    experiment = run.json()
    assert [c["key"] for c in experiment["configurations"]] == ["paragraph/dense/k5"]
    assert len(experiment["cells"]) == len(QUESTIONS) and all(c["status"] == "ok" for c in experiment["cells"])
    assert experiment["aggregate"]["paragraph/dense/k5"]["metrics"]["recall"]["mean"] == 1.0


def test_a_plugin_strategy_validates_its_params_and_unknown_names_keep_todays_422(plugin_client, handbook_id):
    bad = plugin_client.post(
        f"/documents/{handbook_id}/process",
        params={"wait": "true"},
        json={"strategies": ["paragraph"], "params": {"paragraph": {"paragraphs_per_chunk": 0}}},
    )
    assert bad.status_code == 400
    assert "Invalid parameters for 'paragraph'" in bad.json()["message"]

    unknown = plugin_client.post(f"/documents/{handbook_id}/process", json={"strategies": ["sentence"]})
    assert unknown.status_code == 422
    [error] = unknown.json()["detail"]
    assert error["type"] == "enum"
    # Every registered name, the installed packages' (entry points) before the plugin's.
    names = [*BUILT_IN_STRATEGIES, *sorted(entry_points.ORIGINS), "paragraph"]
    assert error["msg"] == f"Input should be {', '.join(repr(n) for n in names[:-1])} or 'paragraph'"
    openapi = plugin_client.get("/openapi.json").json()
    assert "paragraph" in json.dumps(openapi["components"]["schemas"]["ProcessIn"])


@pytest.mark.model
def test_two_paragraphs_per_chunk_joins_neighbours_exactly(plugin_client, handbook_id):
    _process(plugin_client, handbook_id, strategies=["paragraph"], params={"paragraph": {"paragraphs_per_chunk": 2}})
    chunks = plugin_client.get(f"/admin/chunks/{handbook_id}", params={"strategy": "paragraph"}).json()["chunks"]
    markdown = plugin_client.get(f"/documents/{handbook_id}/markdown").text
    assert len(chunks) == 2
    assert chunks[0]["text"].startswith(LEAVE) and chunks[0]["text"].endswith(EQUIPMENT)
    assert chunks[1]["text"] == TRAVEL
    assert all(markdown[c["start_index"] : c["end_index"]] == c["text"] for c in chunks)


# ---------------------------------------------------------------------------------------------- parser


SUBTITLES = (
    b"1\n00:00:01,000 --> 00:00:04,000\nWelcome to the handbook.\n\n"
    b"2\n00:00:04,500 --> 00:00:07,000\nLeave is booked\nin the portal.\n"
)


@pytest.mark.model
def test_a_parser_plugin_accepts_a_new_extension(plugin_client):
    response = plugin_client.post("/documents", files={"file": ("lecture.srt", SUBTITLES)})
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    assert document["mime_type"] == "application/x-subrip"
    markdown = plugin_client.get(f"/documents/{document['id']}/markdown").text
    assert (
        markdown
        == "# lecture\n\n[00:00:01,000] Welcome to the handbook.\n\n[00:00:04,500] Leave is booked in the portal."
    )

    body = _process(plugin_client, document["id"], strategies=["paragraph"])
    assert body["chunk_counts"] == {"paragraph": 2}

    binary = plugin_client.post("/documents", files={"file": ("blob.srt", b"\x00\x01\x02binary")})
    assert binary.status_code == 415 and "SubRip subtitle file" in binary.json()["message"]


def test_without_plugins_an_srt_is_still_415(client):
    assert ".srt" not in supported_suffixes()
    response = client.post("/documents", files={"file": ("lecture.srt", SUBTITLES)})
    assert response.status_code == 415
    assert "paragraph" not in StrategyName and "phrase" not in RetrieverName and "hashing-256" not in REGISTRY


# ---------------------------------------------------------------------------------------------- embedder


def _hashed(text: str) -> np.ndarray:
    """The example embedder, recomputed independently: signed MD5 buckets of lowercase words, unit length."""
    vector = np.zeros(256)
    for word, count in Counter(re.findall(r"\w+", text.lower())).items():
        digest = hashlib.md5(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % 256] += count * (1.0 if digest[4] & 1 else -1.0)
    return vector / np.linalg.norm(vector)


def test_an_embedder_plugin_is_a_corpus_model(plugin_client, handbook_id):
    models = {m["id"]: m for m in plugin_client.get("/admin/embedding-models").json()["models"]}
    assert models["hashing-256"]["provider"] == "plugin"
    assert models["hashing-256"]["dimension"] == 256 and models["hashing-256"]["available"] is True

    body = _process(plugin_client, handbook_id, strategies=["paragraph"], corpus_model_id="hashing-256")
    assert body["corpus_model_id"] == "hashing-256"
    assert body["completed"][0]["collection"] == "paragraph__hashing-256_collection"

    question = "Which ticket code is used for broken equipment?"
    response = plugin_client.post(
        "/queries",
        json={"document_id": handbook_id, "strategy": "paragraph", "question": question, "top_k": 3},
    )
    assert response.status_code == 201, response.text
    sources = response.json()["sources"]
    expected = {text: float(_hashed(question) @ _hashed(text)) for text in (LEAVE, EQUIPMENT, TRAVEL)}
    assert [s["text"] for s in sources] == sorted(expected, key=expected.get, reverse=True)
    assert sources[0]["text"] == EQUIPMENT
    for source in sources:
        assert source["score"] == pytest.approx(expected[source["text"]], abs=1e-5)


# ---------------------------------------------------------------------------------------------- retriever


@pytest.mark.model
def test_a_retriever_plugin_serves_queries_and_benchmarks(plugin_client, handbook_id):
    _process(plugin_client, handbook_id, strategies=["paragraph"])

    def ask(question: str) -> dict:
        response = plugin_client.post(
            "/queries",
            json={"document_id": handbook_id, "strategy": "paragraph", "retriever": "phrase", "question": question},
        )
        assert response.status_code == 201, response.text
        return response.json()

    assert [s["text"] for s in ask("the service desk")["sources"]] == [EQUIPMENT]
    assert [s["text"] for s in ask("Ticket   code HW-7731")["sources"]] == [EQUIPMENT]
    assert ask("paid parking")["sources"] == []

    unknown = plugin_client.post(
        "/queries",
        json={"document_id": handbook_id, "strategy": "paragraph", "retriever": "fuzzy", "question": "leave"},
    )
    assert unknown.status_code == 422
    assert unknown.json()["detail"][0]["msg"] == "Input should be 'dense', 'bm25', 'hybrid' or 'phrase'"

    run = plugin_client.post(
        "/benchmarks",
        params={"wait": "true"},
        json={
            "document_id": handbook_id,
            "questions": QUESTIONS,
            "strategies": ["paragraph"],
            "retrievers": ["dense", "phrase"],
        },
    )
    assert run.status_code == 200, run.text
    experiment = run.json()
    assert [c["key"] for c in experiment["configurations"]] == ["paragraph/dense/k5", "paragraph/phrase/k5"]
    # No question is written verbatim in the handbook: the phrase retriever finds nothing for any of them.
    phrase_cells = [c for c in experiment["cells"] if c["config_key"] == "paragraph/phrase/k5"]
    assert len(phrase_cells) == len(QUESTIONS) and all(c["metrics"]["recall"] == 0.0 for c in phrase_cells)


@pytest.mark.model
def test_history_stays_readable_after_the_plugin_is_removed(client, plugins_dir):
    document_id = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"]["id"]
    with isolated_registries():
        load_plugins(plugins_dir)
        _process(client, document_id, strategies=["paragraph"])
        asked = client.post(
            "/queries", json={"document_id": document_id, "strategy": "paragraph", "question": "Hotel costs?"}
        )
        assert asked.status_code == 201, asked.text
        run = client.post(
            "/benchmarks",
            params={"wait": "true"},
            json={"document_id": document_id, "questions": QUESTIONS[:2], "strategies": ["paragraph"]},
        )
        assert run.status_code == 200, run.text
    assert "paragraph" not in StrategyName  # the plugin is gone, as after a restart without it

    history = client.get("/queries").json()
    assert [q["strategy"] for q in history] == ["paragraph"]
    experiment = client.get(f"/benchmarks/{run.json()['id']}")
    assert experiment.status_code == 200 and experiment.json()["configurations"][0]["strategy"] == "paragraph"
    again = client.post("/queries", json={"document_id": document_id, "strategy": "paragraph", "question": "Hotel?"})
    assert again.status_code == 422  # using it needs the plugin


# ---------------------------------------------------------------------------------------------- broken plugins

GOOD_FIRST = """
from chunkbench.plugins import register_strategy
from chunkbench.chunking.strategies.fixed_size import FixedSizeStrategy


@register_strategy
class Alpha(FixedSizeStrategy):
    name = "alpha"
"""

BROKEN = {
    "syntax": ("def broken(:\n    pass\n", r"failed to import \(line 1\): SyntaxError"),
    "raises": ("raise RuntimeError('no licence key found')\n", r"failed to import: RuntimeError: no licence key found"),
    "builtin_name": (
        GOOD_FIRST.replace('"alpha"', '"recursive"'),
        r"The strategy 'recursive' is already registered \(by chunkbench \(built-in\)\)",
    ),
    "bad_name": (GOOD_FIRST.replace('"alpha"', '"Alpha-2"'), r"StrategyName 'Alpha-2' is not valid"),
    "parser_taken": (
        "from chunkbench.plugins import register_parser\n"
        "from chunkbench.documents.parsers.text import TextParser\n\n"
        "@register_parser\nclass Mine(TextParser):\n    suffixes = ('.md',)\n",
        r"The parser for '\.md' is already registered",
    ),
    # A built-in format is never silently replaced: .csv has a built-in parser now.
    "parser_builtin_csv": (
        "from chunkbench.plugins import register_parser\n"
        "from chunkbench.documents.parsers.text import TextParser\n\n"
        "@register_parser\nclass Mine(TextParser):\n    suffixes = ('.csv',)\n",
        r"The parser for '\.csv' is already registered \(by chunkbench \(built-in\)\); pick another name",
    ),
    "retriever_no_search": (
        "from chunkbench.plugins import Retriever, register_retriever\n\n"
        "@register_retriever\nclass Lazy(Retriever):\n    name = 'lazy'\n",
        r"Retriever 'lazy' must override search",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_plugin_stops_the_app_start_with_its_file_named_and_leaves_nothing(settings, tmp_path, case):
    source, message = BROKEN[case]
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "a_good.py").write_text(GOOD_FIRST)
    bad = folder / f"b_{case}.py"
    bad.write_text(source)
    settings.plugins_dir = folder
    with pytest.raises(PluginError, match=message) as raised, TestClient(create_app(settings)):
        pass  # pragma: no cover (the start fails)
    assert str(bad) in raised.value.message and raised.value.details["plugin"] == str(bad)
    # All or nothing: the good plugin loaded before the broken one was rolled back.
    listed = [c.name for c in all_strategies() if c.name not in entry_points.ORIGINS]
    assert "alpha" not in StrategyName and listed == BUILT_IN_STRATEGIES
    assert ".md" in supported_suffixes()


def test_the_same_name_from_two_plugins_names_both_files(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "one.py").write_text(GOOD_FIRST)
    (folder / "two.py").write_text(GOOD_FIRST)
    with pytest.raises(PluginError) as raised:
        load_plugins(folder)
    assert raised.value.message == (
        f"Plugin {folder / 'two.py'}: The strategy 'alpha' is already registered (by {folder / 'one.py'}); "
        "pick another name."
    )


def test_plugins_load_once_per_process_and_an_absent_dir_is_a_no_op(tmp_path, plugins_dir, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_PLUGINS_DIR", "")
    assert Settings(_env_file=None).plugins_dir is None  # not Path("") = the working directory
    assert load_plugins(None) == [] and load_plugins(tmp_path / "missing") == []
    loaded = load_plugins(plugins_dir)
    assert [p.name for p in loaded] == [
        "hashing_embedder.py", "paragraph_strategy.py", "phrase_retriever.py", "srt_parser.py",
    ]  # fmt: skip
    assert load_plugins(plugins_dir) == []  # a second start in the same process imports nothing again
    assert "paragraph" in StrategyName and "phrase" in RetrieverName
    not_a_dir = tmp_path / "file.py"
    not_a_dir.write_text("")
    with pytest.raises(PluginError, match="is not a directory"):
        load_plugins(not_a_dir)


# ---------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def cli_env(tmp_path, monkeypatch) -> Iterator[Path]:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "cli-plugins"
    folder.mkdir()
    monkeypatch.setenv("CHUNKBENCH_PLUGINS_DIR", str(folder))
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


@pytest.mark.model
def test_the_cli_lists_plugin_strategies_and_processes_with_them(cli_env):
    for example in EXAMPLES.glob("*.py"):
        shutil.copy(example, cli_env / example.name)
    runner = CliRunner()
    listed = runner.invoke(cli_app, ["strategies", "--json"], catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    names = [s["name"] for s in json.loads(listed.stdout)]
    assert [name for name in names if name not in entry_points.ORIGINS] == [*BUILT_IN_STRATEGIES, "paragraph"]

    document = cli_env.parent / "lecture.srt"
    document.write_bytes(SUBTITLES + b"\n3\n00:00:08,000 --> 00:00:09,000\nThank you.\n")
    ingested = runner.invoke(cli_app, ["ingest", str(document), "--json"], catch_exceptions=False)
    assert ingested.exit_code == 0, ingested.output
    processed = runner.invoke(
        cli_app, ["process", "lecture.srt", "--strategies", "paragraph", "--json"], catch_exceptions=False
    )
    assert processed.exit_code == 0, processed.output
    assert json.loads(processed.stdout)["chunk_counts"] == {"paragraph": 3}


@pytest.mark.parametrize("command", [["strategies"], ["documents", "list"]])
def test_every_cli_command_exits_1_naming_a_broken_plugin(cli_env, command):
    (cli_env / "broken.py").write_text("import not_a_module_anywhere\n")
    result = CliRunner().invoke(cli_app, command)
    assert result.exit_code == 1
    expected = f"error: Plugin {cli_env / 'broken.py'} failed to import: ModuleNotFoundError"
    assert "".join(expected.split()) in "".join(result.stderr.split())  # rich wraps long paths anywhere


# ---------------------------------------------------------------------------------------------- the open names


def test_open_names_behave_like_the_enum_they_replaced():
    import copy
    import pickle

    # The built-ins first; the strategies of installed packages (chunkbench's own library adapters, registered by its
    # entry points) follow.
    assert [s.value for s in StrategyName][: len(BUILT_IN_STRATEGIES)] == BUILT_IN_STRATEGIES
    assert len(StrategyName) == len(BUILT_IN_STRATEGIES) + len(entry_points.ORIGINS)
    assert StrategyName("semantic") is StrategyName.SEMANTIC and StrategyName.SEMANTIC == "semantic"
    assert copy.deepcopy(StrategyName.RECURSIVE) is StrategyName.RECURSIVE
    assert pickle.loads(pickle.dumps(RetrieverName.BM25)) is RetrieverName.BM25
    assert f"{StrategyName.FIXED_SIZE}" == "fixed_size" and json.dumps([RetrieverName.HYBRID]) == '["hybrid"]'
    with pytest.raises(ValueError, match="'chapter' is not a valid StrategyName"):
        StrategyName("chapter")
    detached = StrategyName.stored("chapter")
    assert detached == "chapter" and "chapter" not in StrategyName  # readable, not registered
    # Strategy names start collection names ``{strategy}__{model}_collection``: lowercase words and digits joined by
    # single underscores, starting with a letter (digits name variants: ``fixed_size_250_125``).
    with isolated_registries():
        assert StrategyName.add("chapter_2") == "chapter_2"
    for bad in ("Chapter", "2chapter", "two__parts", "_x", "x" * 49):
        with pytest.raises(ValueError, match="is not valid"):
            StrategyName.add(bad)
    assert RetrieverName.add("bm25_strict") == "bm25_strict" and "bm25_strict" in RetrieverName
