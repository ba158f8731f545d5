"""The CLI on a real data directory: ingest a mixed folder, list, show, delete, JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chunkbench.chunking import entry_points
from chunkbench.cli import app
from chunkbench.config import get_settings

runner = CliRunner()


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


@pytest.fixture
def mixed_folder(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nHello.\n\n## Setup\n\nRun it.\n")
    (folder / "notes.txt").write_text("First paragraph.\n\nSecond paragraph.\n")
    (folder / "page.htm").write_text("<h1>Title</h1><p>Body text.</p>")
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4\n%%EOF")
    (folder / "empty.md").write_text("")
    return folder


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_ingest_reports_each_file_and_fails_only_the_bad_ones(data_dir, mixed_folder):
    result = _invoke("ingest", str(mixed_folder), "--json")
    assert result.exit_code == 1  # some files failed
    rows = {r["filename"]: r for r in json.loads(result.stdout)}
    assert set(rows) == {"guide.md", "notes.txt", "page.htm", "scan.pdf", "empty.md"}
    assert rows["guide.md"]["document"]["heading_count"] == 2
    assert rows["guide.md"]["document"]["status"] == "parsed"
    assert rows["scan.pdf"]["error"]["error"] == "corrupt_document"
    # An empty file is seen by its size, before reading: skipped, not refused.
    assert (rows["empty.md"]["outcome"], rows["empty.md"]["skip_reason"]["code"]) == ("skipped", "empty")

    listed = json.loads(_invoke("documents", "list", "--json").stdout)
    assert listed["total"] == 3


def test_ingest_table_output_names_state_and_errors(data_dir, mixed_folder):
    result = _invoke("ingest", str(mixed_folder))
    assert "5 files: 3 ingested, 1 refused, 1 empty" in result.stdout
    assert "refused" in result.stdout and "parsed (created)" in result.stdout


def test_ingest_of_good_files_exits_zero_and_reingest_is_unchanged(data_dir, mixed_folder):
    guide = mixed_folder / "guide.md"
    assert _invoke("ingest", str(guide)).exit_code == 0
    again = json.loads(_invoke("ingest", str(guide), "--json").stdout)
    assert again[0]["outcome"] == "unchanged"


def test_show_and_delete(data_dir, mixed_folder):
    document_id = json.loads(_invoke("ingest", str(mixed_folder / "guide.md"), "--json").stdout)[0]["document"]["id"]
    shown = json.loads(_invoke("documents", "show", document_id, "--json").stdout)
    assert [h["heading"] for h in shown["headings"]] == ["Guide", "Setup"]
    text = _invoke("documents", "show", document_id).stdout
    assert "## Setup" in text

    refused = _invoke("documents", "delete", document_id, "--json")
    assert refused.exit_code == 1 and "--yes" in refused.stdout
    deleted = json.loads(_invoke("documents", "delete", document_id, "--yes", "--json").stdout)
    assert deleted["deleted"] == document_id
    missing = _invoke("documents", "show", document_id, "--json")
    assert missing.exit_code == 1
    assert json.loads(missing.stdout)["error"] == "document_not_found"


def test_missing_path_is_reported_not_crashed(data_dir, tmp_path):
    result = _invoke("ingest", str(tmp_path / "nope.md"), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)[0]["error"]["error"] == "not_found"


@pytest.mark.model
def test_process_then_chunk_preview_from_the_cli(data_dir, mixed_folder):
    assert _invoke("ingest", str(mixed_folder / "guide.md")).exit_code == 0
    result = _invoke(
        "process", "guide.md", "--strategies", "fixed_size,recursive", "--param", "fixed_size.chunk_size=8",
        "--param", "fixed_size.chunk_overlap=2", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout
    body = json.loads(result.stdout)
    assert {o["strategy"] for o in body["completed"]} == {"fixed_size", "recursive"}
    assert body["completed"][0]["params"]["chunk_size"] == 8

    preview = json.loads(_invoke("chunks", "guide.md", "--strategy", "fixed_size", "--json").stdout)
    markdown = json.loads(_invoke("documents", "show", "guide.md", "--json").stdout)["markdown_preview"]
    assert preview["total"] == body["chunk_counts"]["fixed_size"] > 1
    assert all(markdown[c["start_index"] : c["end_index"]] == c["text"] for c in preview["chunks"])
    table = _invoke("chunks", "guide.md", "--strategy", "fixed_size").stdout
    assert "tokens min" in table and "mid-sentence" in table


def test_process_refuses_bad_parameters(data_dir, mixed_folder):
    _invoke("ingest", str(mixed_folder / "guide.md"))
    result = _invoke("process", "guide.md", "--strategies", "fixed_size", "--param", "fixed_size.chunk_overlap=600")
    assert result.exit_code == 1
    assert "chunk_overlap" in result.stderr


def test_models_and_strategies_listing(data_dir):
    models = json.loads(_invoke("models", "list", "--json").stdout)
    assert models["corpus_model_id"] == "all-MiniLM-L6-v2"
    assert _invoke("models", "threshold", "all-MiniLM-L6-v2", "0.45").exit_code == 0
    listed = json.loads(_invoke("models", "list", "--json").stdout)
    minilm = next(m for m in listed["models"] if m["id"] == "all-MiniLM-L6-v2")
    assert minilm["semantic_threshold"] == 0.45
    assert _invoke("models", "threshold", "all-MiniLM-L6-v2", "1.5").exit_code == 1
    listed = json.loads(_invoke("strategies", "--json").stdout)
    own = [s["name"] for s in listed if "library" not in s]
    assert own == [
        "fixed_size",
        "recursive",
        "semantic",
        "contextual_retrieval",
        "semantic_parent_child",
        "code_aware",
        "table_aware",
        "cluster_semantic",
    ]
    # Then the installed packages' strategies (the library adapters' entry points), by name, each with its library.
    libraries = [s for s in listed if "library" in s]
    names = [s["name"] for s in listed]
    assert names == [*own, *sorted(entry_points.ORIGINS)] == [*own, *(s["name"] for s in libraries)]
    assert all(s["available"] and s["library_version"] and not s["in_default_set"] for s in libraries)


def test_a_ctrl_c_while_the_cli_loads_ends_quietly_with_the_shells_code() -> None:
    # The Ctrl-C is raised where it would land: in the import of the CLI's modules, which takes a second or two.
    script = """
import builtins
real_import = builtins.__import__
def interrupted(name, *args, **kwargs):
    if name == "chunkbench.cli":
        raise KeyboardInterrupt
    return real_import(name, *args, **kwargs)
builtins.__import__ = interrupted
from chunkbench.__main__ import main
main()
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert (ran.returncode, ran.stdout, ran.stderr) == (130, "", "")
