"""Strategy variants: declared in the variants file by the CLI, registered at every start (CLI and server), a
strategy of their own (runs, collection, chunk ids), never in a default strategy list, refused when malformed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.chunking import variants
from chunkbench.chunking.base import Variant, default_strategies, strategy_class, validate_params
from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.errors import ChunkingError
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.plugins import isolated_registries

runner = CliRunner()
TEXT = "# Guide\n\n" + " ".join(f"Sentence number {i} says something about topic {i % 7}." for i in range(120))


@pytest.fixture(autouse=True)
def registries():
    with isolated_registries():
        yield


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_a_variant_pins_its_parameters_and_keeps_the_bases_rules(settings: Settings) -> None:
    cls = variants.define(Variant("fixed_size_64_8", "fixed_size", {"chunk_size": 64, "chunk_overlap": 8}), settings)
    assert cls.name == "fixed_size_64_8" and cls.variant.base == "fixed_size"
    assert validate_params("fixed_size_64_8", {}).model_dump() == {"chunk_size": 64, "chunk_overlap": 8}
    assert cls.expands_neighbours and cls.settings_defaults == {}  # capabilities inherited, Settings no longer
    with pytest.raises(ChunkingError, match="chunk_overlap"):  # the base's validator still runs
        validate_params("fixed_size_64_8", {"chunk_overlap": 64})
    assert "fixed_size_64_8" not in default_strategies()
    # The same declaration again is the same class; another one under the name is refused.
    assert variants.define(Variant("fixed_size_64_8", "fixed_size", {"chunk_size": 64, "chunk_overlap": 8}), settings)
    with pytest.raises(ChunkingError, match="already exists"):
        variants.define(Variant("fixed_size_64_8", "fixed_size", {"chunk_size": 65}), settings)
    for bad, message in [
        (Variant("fixed_size", "recursive", {"chunk_size": 9}), "already exists"),
        (Variant("Big Name", "recursive", {"chunk_size": 9}), "not valid"),
        (Variant("r9", "planet", {"chunk_size": 9}), "Unknown strategy"),
        (Variant("r9", "recursive", {"size": 9}), "no parameter"),
        (Variant("r9", "recursive", {}), "pins no parameter"),
        (Variant("r9", "recursive", {"chunk_size": 0}), "greater than or equal to 1"),
        (Variant("r9", "fixed_size_64_8", {"chunk_size": 9}), "itself a variant"),
    ]:
        with pytest.raises(ChunkingError, match=message):
            variants.define(bad, settings)
    with pytest.raises(ChunkingError):
        strategy_class("r9")  # nothing half-registered by the refusals


@pytest.mark.model
def test_cli_adds_processes_and_removes_a_variant(data_dir: Path) -> None:
    (data_dir.parent / "guide.md").write_text(TEXT, encoding="utf-8")
    added = _invoke("strategies", "add", "fixed_size_64_0", "--base", "fixed_size", "--param", "chunk_size=64",
                    "--param", "chunk_overlap=0", "--json")  # fmt: skip
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout) == {
        "name": "fixed_size_64_0", "base": "fixed_size", "params": {"chunk_size": 64, "chunk_overlap": 0},
    }  # fmt: skip
    assert 'base = "fixed_size"' in (data_dir / "strategies.toml").read_text()

    # A new command (a new start in a real shell) reads the file: the variant is a --strategies name.
    with isolated_registries():
        listed = {s["name"]: s for s in json.loads(_invoke("strategies", "--json").stdout)}
        assert listed["fixed_size_64_0"]["variant_of"] == "fixed_size"
        assert listed["fixed_size_64_0"]["params"] == {"chunk_size": 64, "chunk_overlap": 0}
        assert listed["fixed_size"]["variant_of"] is None
        assert _invoke("ingest", str(data_dir.parent / "guide.md")).exit_code == 0
        processed = _invoke("process", "guide.md", "--strategies", "fixed_size,fixed_size_64_0", "--json")
        assert processed.exit_code == 0, processed.output
        runs = {r["strategy"]: r for r in json.loads(processed.stdout)["completed"]}
        assert runs["fixed_size_64_0"]["collection"] == "fixed_size_64_0__all-MiniLM-L6-v2_collection"
        assert runs["fixed_size_64_0"]["params"] == {"chunk_size": 64, "chunk_overlap": 0}
        assert runs["fixed_size_64_0"]["chunk_count"] > runs["fixed_size"]["chunk_count"]
        # "all" (processing's default) is every strategy but the variants.
        assert "fixed_size_64_0" not in ProcessIn().strategies and "fixed_size" in ProcessIn().strategies

    removed = _invoke("strategies", "remove", "fixed_size_64_0")
    assert removed.exit_code == 0 and "removed fixed_size_64_0" in removed.stdout
    assert variants.read_file(data_dir / "strategies.toml") == []
    missing = _invoke("strategies", "remove", "fixed_size_64_0", "--json")
    assert missing.exit_code == 1 and json.loads(missing.stdout)["error"] == "chunking_error"


def test_the_server_registers_the_variants_file_and_refuses_a_broken_one(settings: Settings) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    path = settings.resolved_strategies_file
    path.write_text('[variants.recursive_100_0]\nbase = "recursive"\nchunk_size = 100\nchunk_overlap = 0\n')
    with TestClient(create_app(settings)) as client:
        listed = {s["name"]: s for s in client.get("/strategies").json()}
    assert listed["recursive_100_0"]["variant_of"] == "recursive"
    assert listed["recursive_100_0"]["pinned_params"] == {"chunk_size": 100, "chunk_overlap": 0}
    assert listed["recursive"]["variant_of"] is None

    path.write_text('[variants.recursive_0]\nbase = "recursive"\nchunk_size = 0\n')
    with isolated_registries(), pytest.raises(ChunkingError, match=str(path)), TestClient(create_app(settings)):
        pass
    path.write_text("[variants.x\n")
    with pytest.raises(ChunkingError, match="not valid TOML"):
        variants.load(settings)
