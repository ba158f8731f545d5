"""Folder ingest reports every file: the CLI (table, --json), both index-directory APIs and the summary line.

One real folder holds supported files and every kind of file that is not read: a hidden file, a hidden folder
of files, unsupported suffixes, an oversized file, an empty file, a corrupt PDF (read and refused), a broken
link, a link out of the folder, a named pipe and a socket. Every file is accounted for, and the counts add up to
the number of files the operating system lists under the folder.
"""

from __future__ import annotations

import io
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import docx
import pytest
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.documents.discovery import SkipCode, SkippedFile, SourceFile, discover_files
from chunkbench.documents.ingest_results import IngestOutcome, IngestResult, IngestSummary
from chunkbench.documents.parsers import supported_suffixes

LIMIT_MB = 0.1  # CHUNKBENCH_MAX_UPLOAD_MB in these tests: big.txt is twice that
GUIDE = (
    "# Guide\n\nThis guide explains how the service is installed and how a team keeps it running.\n\n"
    "## Install\n\nRun the installer, then open the dashboard in your browser and upload the first document.\n"
)

# source key → (outcome, skip code or error code); the hidden folder is one entry standing for its three files.
EXPECTED = {
    ".DS_Store": ("skipped", "hidden"),
    ".git": ("skipped", "hidden"),
    "blob": ("skipped", "unsupported_type"),
    "big.txt": ("skipped", "too_large"),
    "corrupt.pdf": ("failed", "corrupt_document"),
    "dangling.md": ("skipped", "not_a_regular_file"),
    "docs/empty.md": ("skipped", "empty"),
    "docs/guide.md": ("created", None),
    "docs/notes.txt": ("created", None),
    "docs/tool.exe": ("skipped", "unsupported_type"),
    "outside.md": ("skipped", "not_a_regular_file"),
    "firmware.bin": ("skipped", "unsupported_type"),
    "pipe.txt": ("skipped", "not_a_regular_file"),
    "report.docx": ("created", None),
    "sock.md": ("skipped", "not_a_regular_file"),
}
LINE = "17 files: 3 ingested, 1 refused, 3 unsupported, 4 hidden, 1 too large, 1 empty, 4 not regular"


def _docx_bytes() -> bytes:
    document = docx.Document()
    document.add_heading("Policy", level=1)
    document.add_paragraph("Claims are paid within 30 days.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _build(folder: Path, outside: Path) -> socket.socket:
    """Write the folder (``outside``: a folder beside it for the link out); the socket's listener is returned."""
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "guide.md").write_text(GUIDE)
    (folder / "docs" / "notes.txt").write_text("The notes say the release ships on Friday.\n\nEveryone agreed.\n")
    (folder / "docs" / "empty.md").write_bytes(b"")
    (folder / "docs" / "tool.exe").write_bytes(b"MZ\x90\x00 not a document")
    (folder / "report.docx").write_bytes(_docx_bytes())
    (folder / "firmware.bin").write_bytes(b"\x7fELF" + bytes(64))
    (folder / "blob").write_bytes(b"\x00\x01 raw bytes")
    (folder / "big.txt").write_text("A line of text that repeats.\n" * int(LIMIT_MB * 2 * 1048576 / 29))
    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.7\n garbage, not a PDF body")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    for name in ("HEAD", "config", "objects/ab/cdef"):
        (folder / ".git" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / ".git" / name).write_text("ref: refs/heads/main\n")
    (folder / "dangling.md").symlink_to(folder / "gone.md")
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "outside.md").write_text("# Outside\n\nNot in the folder.\n")
    (folder / "outside.md").symlink_to(outside / "outside.md")
    os.mkfifo(folder / "pipe.txt")
    listener = socket.socket(socket.AF_UNIX)
    # Bound by a relative name: a socket's path is limited to about 100 bytes, and test folders run longer.
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        listener.bind("sock.md")
    finally:
        os.chdir(cwd)
    return listener


@pytest.fixture
def real_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "folder"
    listener = _build(folder, tmp_path / "elsewhere")
    yield folder
    listener.close()


def _files_listed_by_the_os(folder: Path) -> int:
    """Every non-folder entry under ``folder`` (links, pipes and sockets included), as ``os.walk`` sees them."""
    return sum(len(files) for _root, _dirs, files in os.walk(folder))


def _reason(result: dict) -> str | None:
    return (result["error"] or {}).get("error") or (result["skip_reason"] or {}).get("code")


# ------------------------------------------------------------------------------------------------ discovery


def test_discovery_reports_every_file_with_a_typed_reason(real_folder: Path, settings: Settings) -> None:
    settings.max_upload_mb = LIMIT_MB
    found = list(discover_files([real_folder], settings))
    assert [f.source_key for f in found] == sorted(EXPECTED)  # path order, each file once
    sources = {f.source_key for f in found if isinstance(f, SourceFile)}
    assert sources == {"corrupt.pdf", "docs/guide.md", "docs/notes.txt", "report.docx"}  # nothing else is read
    skipped = {f.source_key: f.reason for f in found if isinstance(f, SkippedFile)}
    assert skipped[".git"].files == 3 and "3 file(s)" in skipped[".git"].message
    assert skipped[".DS_Store"].message == "hidden file: ingest it by name to include it."
    assert skipped["firmware.bin"].details == {"extension": ".bin"}
    assert "'.bin' is not a supported type (supported: " in skipped["firmware.bin"].message
    assert all(suffix in skipped["firmware.bin"].message for suffix in supported_suffixes()[:5])
    assert skipped["blob"].details == {"extension": ""} and "no extension" in skipped["blob"].message
    big = skipped["big.txt"]
    assert big.details == {"size_bytes": (real_folder / "big.txt").stat().st_size, "limit_bytes": 104857}
    assert "the limit is 0.1 MB" in big.message and "CHUNKBENCH_MAX_UPLOAD_MB" in big.message
    assert skipped["dangling.md"].details == {"kind": "broken link"}
    # No link's target is named: through the API it would show server paths outside the data directory.
    assert all(str(real_folder.parent) not in reason.message for reason in skipped.values())
    assert skipped["outside.md"].details == {"kind": "link outside the folder"}
    assert skipped["pipe.txt"].details == {"kind": "named pipe"}
    assert skipped["sock.md"].details == {"kind": "socket"}


def test_a_hidden_file_named_directly_is_a_source(real_folder: Path) -> None:
    # "Ingest it by name": the message's advice works.
    [found] = discover_files([real_folder / ".git" / "HEAD"])
    assert isinstance(found, SourceFile) and found.source_key == "HEAD"


def test_without_settings_sizes_are_left_to_ingestion(real_folder: Path) -> None:
    found = {f.source_key: f for f in discover_files([real_folder])}
    assert isinstance(found["big.txt"], SourceFile)


def test_a_link_to_a_file_inside_the_folder_is_ingested_and_a_link_to_a_folder_is_not(tmp_path: Path) -> None:
    folder = tmp_path / "links"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.md").write_text("# A\n\ntext\n")
    (folder / "alias.md").symlink_to(folder / "sub" / "a.md")
    (folder / "loop").symlink_to(folder)
    found = {f.source_key: f for f in discover_files([folder])}
    assert isinstance(found["alias.md"], SourceFile) and isinstance(found["sub/a.md"], SourceFile)
    assert found["loop"].reason.details == {"kind": "link to a folder"}  # not followed: no endless walk


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file whatever its permissions")
def test_an_unreadable_file_and_folder_are_reported(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    (folder / "closed").mkdir(parents=True)
    (folder / "secret.md").write_text("# s\n")
    (folder / "secret.md").chmod(0)
    (folder / "closed").chmod(0)
    try:
        found = {f.source_key: f for f in discover_files([folder])}
    finally:
        (folder / "closed").chmod(0o755)
    assert found["secret.md"].reason.code is SkipCode.UNREADABLE
    assert found["closed"].reason.code is SkipCode.UNREADABLE


def test_the_summary_counts_files_and_its_line_names_every_kind() -> None:
    def skipped(code: SkipCode, files: int = 1) -> IngestResult:
        from chunkbench.documents.discovery import SkipReason

        reason = SkipReason(code=code, message="…", files=files)
        return IngestResult("x", IngestOutcome.SKIPPED, "x", skip_reason=reason)

    results = [
        IngestResult("a", IngestOutcome.CREATED, "a"),
        IngestResult("b", IngestOutcome.UNCHANGED, "b"),
        IngestResult("c", IngestOutcome.REPLACED, "c"),
        IngestResult("d", IngestOutcome.FAILED, "d"),
        skipped(SkipCode.HIDDEN, files=40),
        skipped(SkipCode.UNSUPPORTED_TYPE),
        skipped(SkipCode.UNSUPPORTED_TYPE),
    ]
    summary = IngestSummary.of(results)
    assert (summary.files, summary.ingested, summary.refused, summary.skipped) == (46, 3, 1, 42)
    assert summary.skipped_by_reason == {SkipCode.UNSUPPORTED_TYPE: 2, SkipCode.HIDDEN: 40}
    assert summary.line == "46 files: 3 ingested (1 new, 1 replaced, 1 unchanged), 1 refused, 2 unsupported, 40 hidden"
    assert IngestSummary.of([IngestResult("a", IngestOutcome.CREATED, "a")]).line == "1 file: 1 ingested, 0 refused"


# ------------------------------------------------------------------------------------------------ CLI


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CHUNKBENCH_MAX_UPLOAD_MB", str(LIMIT_MB))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_cli_json_lists_every_file_and_the_counts_add_up(cli_env, real_folder: Path) -> None:
    result = _cli("ingest", str(real_folder), "--json", "--with-summary")
    assert result.exit_code == 1  # the corrupt PDF was refused; skipped files alone would not fail the command
    body = json.loads(result.stdout)
    assert {r["source_key"]: (r["outcome"], _reason(r)) for r in body["results"]} == EXPECTED
    summary = body["summary"]
    assert summary["line"] == LINE and LINE in result.stderr
    assert summary["files"] == _files_listed_by_the_os(real_folder) == 17
    assert summary["files"] == summary["ingested"] + summary["refused"] + summary["skipped"]
    assert summary["skipped_by_reason"] == {
        "unsupported_type": 3,
        "hidden": 4,
        "too_large": 1,
        "empty": 1,
        "not_a_regular_file": 4,
    }
    git = next(r for r in body["results"] if r["source_key"] == ".git")
    assert git["skip_reason"]["files"] == 3 and git["document"] is None and git["error"] is None

    # The bare list (what scripts read) holds the same entries; a second run finds everything unchanged.
    again = _cli("ingest", str(real_folder), "--json")
    listed = json.loads(again.stdout)
    assert [r["source_key"] for r in listed] == sorted(EXPECTED)
    assert {r["source_key"] for r in listed if r["outcome"] == "unchanged"} == {
        "docs/guide.md",
        "docs/notes.txt",
        "report.docx",
    }
    assert "17 files: 3 ingested (3 unchanged), 1 refused" in again.stderr


def test_cli_table_names_every_skipped_file_with_its_reason(cli_env, real_folder: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", str(real_folder)], catch_exceptions=False, env={"COLUMNS": "400"})
    assert result.exit_code == 1
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") >= 6}
    assert ".git/ (3 files)" in rows and "hidden folder with 3 file(s)" in rows[".git/ (3 files)"]
    for key, (outcome, code) in EXPECTED.items():
        row = rows[".git/ (3 files)" if key == ".git" else key]
        if outcome == "skipped":
            assert f"skipped ({code})" in row, row
        elif outcome == "failed":
            assert "refused" in row and "corrupt" in row.lower(), row
        else:
            assert "parsed (created)" in row, row
    assert "'.exe' is not a supported type" in rows["docs/tool.exe"]
    assert result.stdout.rstrip().endswith(LINE)


# ------------------------------------------------------------------------------------------------ APIs


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.max_upload_mb = LIMIT_MB
    return settings


@pytest.fixture
def staged(settings: Settings, tmp_path: Path) -> Iterator[str]:
    """The folder inside the data directory, as index-directory needs it."""
    listener = _build(settings.data_dir / "inbox", tmp_path / "elsewhere")
    yield "inbox"
    listener.close()


def test_index_directory_lists_every_file_with_the_summary(client, staged: str, settings: Settings) -> None:
    response = client.post("/documents/index-directory", json={"path": staged})
    assert response.status_code == 200, response.text
    body = response.json()
    assert {r["source_key"]: (r["outcome"], _reason(r)) for r in body["results"]} == EXPECTED
    assert body["summary"]["line"] == LINE
    assert body["summary"]["files"] == _files_listed_by_the_os(settings.data_dir / staged)
    assert (body["ingested"], body["unchanged"], body["failed"], body["skipped"]) == (3, 0, 1, 13)
    assert client.get("/documents").json()["total"] == 3  # nothing skipped left a row
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert {"summary", "skipped"} <= set(schema["IndexDirectoryOut"]["properties"])
    assert "skip_reason" in schema["IngestOut"]["properties"]


@pytest.mark.model
def test_the_chatbot_index_directory_lists_skipped_and_refused_files(client, staged: str) -> None:
    body = client.post("/api/index-directory", json={"path": staged}).json()
    assert body["status"] == "partial" and body["chunks_created"] >= 3, body
    files = {f["source_key"]: f for f in body["files"]}
    assert set(files) == set(EXPECTED)
    assert files["docs/guide.md"]["chunks"] >= 1 and files["docs/guide.md"]["outcome"] == "created"
    assert files["corrupt.pdf"]["error"]["error"] == "corrupt_document"
    assert files["firmware.bin"]["skip_reason"]["code"] == "unsupported_type"
    assert files[".git"]["skip_reason"]["files"] == 3
    assert body["summary"]["line"] == LINE and LINE in body["message"]
    assert "corrupt.pdf" in body["message"]
