"""The dashboard after a multi-file ingest, in a real browser: every skipped and refused file with its reason, and
the summary line (a folder of the data directory through index-directory, and several uploads at once)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkbench.config import Settings
from conftest import screenshot
from test_folder_ingest import EXPECTED, LIMIT_MB, LINE, _build


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.max_upload_mb = LIMIT_MB
    return settings


@pytest.fixture
def inbox(settings: Settings, tmp_path: Path) -> Iterator[str]:
    listener = _build(settings.data_dir / "inbox", tmp_path / "elsewhere")
    yield "inbox"
    listener.close()


def test_folder_ingest_lists_every_file_with_its_reason_and_the_summary(page, inbox: str) -> None:
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_text("Ingest a folder of the server's data directory").click()
    documents.get_by_label("Folder path").fill(inbox)
    documents.get_by_role("button", name="Ingest folder").click()
    summary = documents.get_by_role("status", name="Folder ingest summary")
    summary.wait_for(timeout=60_000)
    assert summary.inner_text() == LINE

    table = documents.get_by_role("table", name="Folder ingest results")
    rows = {
        cells[0]: cells[1:]
        for cells in (row.get_by_role("cell").all_inner_texts() for row in table.get_by_role("row").all()[1:])
    }
    assert set(rows) == {".git/ (3 files)" if key == ".git" else key for key in EXPECTED}
    for key, (outcome, code) in EXPECTED.items():
        shown, reason = rows[".git/ (3 files)" if key == ".git" else key]
        if outcome == "skipped":
            assert shown == f"skipped · {code}" and reason, (key, shown, reason)
        elif outcome == "failed":
            assert shown == "refused" and "not a readable PDF" in reason, (key, shown, reason)
        else:
            assert (shown, reason) == ("added", "open"), key
    assert "'.bin' is not a supported type (supported: " in rows["firmware.bin"][1]
    assert "the limit is 0.1 MB" in rows["big.txt"][1]
    assert "hidden folder with 3 file(s)" in rows[".git/ (3 files)"][1]
    assert "is a socket" in rows["sock.md"][1] and "does not exist" in rows["dangling.md"][1]

    # The ingested documents are in the list now; "open" shows one.
    documents.get_by_role("table", name="Documents list").get_by_role("button", name="report.docx").wait_for()
    table.get_by_role("row").filter(has_text="docs/guide.md").get_by_role("button", name="open").click()
    documents.get_by_label("Markdown preview").get_by_text("This guide explains").wait_for()
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "documents-folder-ingest")


def test_several_uploads_end_with_a_summary_line(page, tmp_path: Path) -> None:
    files = {
        "guide.md": b"# Guide\n\nThis guide explains how the service is installed and kept running.\n",
        "setup.exe": b"MZ\x90\x00 not a document",
        "empty.txt": b"",
        "broken.pdf": b"%PDF-1.7\n garbage",
    }
    paths = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(tmp_path / name)
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_label("Choose files to upload").set_input_files(paths)
    summary = documents.get_by_role("status", name="Upload summary")
    summary.filter(has_text=re.compile(r"^4 files")).wait_for(timeout=60_000)
    assert summary.inner_text() == "4 files: 1 ingested, 1 refused, 1 unsupported, 1 empty"
    uploads = documents.get_by_role("table", name="Uploads")
    # Each refused file keeps its own reason in its row.
    assert "not a readable PDF" in uploads.get_by_role("row").filter(has_text="broken.pdf").inner_text()
    assert "unsupported type '.exe'" in uploads.get_by_role("row").filter(has_text="setup.exe").inner_text()
    page.errors[:] = [e for e in page.errors if not re.search(r"status of (415|400)", e)]
