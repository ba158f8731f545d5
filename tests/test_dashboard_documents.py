"""The Documents and PDF tabs in a real browser: upload, list, section tree, processing, Chunk Preview, delete."""

from __future__ import annotations

import math
import re
from pathlib import Path

import httpx
from pypdf import PdfReader

from chunkbench.text.tokens import count_tokens
from conftest import screenshot
from docgen import office, pdfs


def _unmarked(text: str, first: int, last: int) -> str:
    """The drawn text without the ⟦n start markers of chunks first..last and the ⟧ end markers."""
    for index in range(first, last + 1):  # markers come in order, so the first "⟦n" left is chunk n's
        text = text.replace(f"⟦{index}", "", 1)
    return text.replace("⟧", "")


def _expected_upload_errors(page) -> None:
    """Chromium logs each refused upload (415, 400) as a console error; those two are what the test asks for."""
    page.errors[:] = [e for e in page.errors if not re.search(r"status of (415|400)", e)]


def _shoot(page, name: str) -> None:
    """A full-page screenshot from the top (the sticky header would otherwise sit where the page was scrolled)."""
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, name)


def _row(panel, name: str):
    """The list row of the document ``name`` in a tab's panel."""
    return panel.get_by_role("row").filter(has=panel.page.get_by_role("button", name=name, exact=True))


def test_upload_process_chunk_preview_and_delete(page, live_server, tmp_path: Path):
    docx_path = office.make_structured_docx(tmp_path / "report.docx")
    pdf_path = pdfs.make_structured_pdf(tmp_path, chapters=2)
    exe_path = tmp_path / "setup.exe"
    exe_path.write_bytes(b"MZ\x90\x00 not a document")
    empty_path = tmp_path / "empty.txt"
    empty_path.write_bytes(b"")

    # Intercept file choosers from the start: enabling it inside expect_file_chooser can lose the race with Enter.
    page.on("filechooser", lambda _chooser: None)
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    # The drop zone works from the keyboard: Enter opens the file chooser, which takes several files.
    documents.get_by_role("button", name=re.compile("^Upload files")).focus()
    with page.expect_file_chooser() as chooser:
        page.keyboard.press("Enter")
    assert chooser.value.is_multiple()
    chooser.value.set_files([docx_path, exe_path, empty_path])
    uploads = documents.get_by_role("table", name="Uploads")
    # Each file gets its own row and its own outcome: the server's message, not a generic failure.
    uploads.get_by_role("row").filter(has_text="report.docx").get_by_text("added").wait_for()
    refused = uploads.get_by_role("row").filter(has_text="setup.exe").get_by_role("alert")
    assert "unsupported type '.exe'" in refused.inner_text() and ".docx" in refused.inner_text()
    empty = uploads.get_by_role("row").filter(has_text="empty.txt").get_by_role("alert")
    assert "is empty (0 bytes)" in empty.inner_text()
    _expected_upload_errors(page)

    listed = _row(documents, "report.docx")
    listed.wait_for()
    cells = listed.get_by_role("cell").all_inner_texts()
    assert cells[2:6] == ["parsed", "1", "7", "not processed"]  # after the selection box and the file

    # The PDF tab lists PDFs only, and the Word tab never shows them.
    page.get_by_role("tab", name="PDF").click()
    pdf_panel = page.locator("#panel-pdf")
    pdf_panel.get_by_label("Choose files to upload").set_input_files(pdf_path)
    pdf_row = _row(pdf_panel, pdf_path.name)
    pdf_row.wait_for()
    assert pdf_row.get_by_role("cell").nth(3).inner_text() == str(len(PdfReader(pdf_path).pages))
    assert pdf_panel.get_by_role("table", name="PDF list").get_by_role("row").count() == 2  # header + the PDF
    pdf_row.get_by_role("button", name=pdf_path.name).click()
    tree = pdf_panel.get_by_label("Section tree")
    tree.get_by_text("Chapter 2 Overview of topic 2").wait_for()
    assert tree.get_by_text("2.2 Method part 2").count() == 1
    _shoot(page, "documents-pdf")

    page.get_by_role("tab", name="Documents").click()
    assert documents.get_by_role("table", name="Documents list").get_by_role("row").count() == 2
    listed.get_by_role("button", name="report.docx").click()
    documents.get_by_label("Section tree").get_by_text("Regional Scope").wait_for()
    assert documents.get_by_label("Markdown preview").inner_text().startswith("# Annual Report")

    # Process with fixed_size (40-token windows sharing 10) and recursive; the others unticked.
    for name in ("semantic", "contextual_retrieval", "semantic_parent_child"):
        documents.get_by_role("checkbox", name=name, exact=True).uncheck()
    documents.get_by_label("fixed_size Chunk Size").fill("40")
    documents.get_by_label("fixed_size Chunk Overlap").fill("10")
    documents.get_by_role("button", name="Run 2 strategies").click()
    outcome = documents.get_by_role("table", name="Strategy outcomes")
    outcome.wait_for(timeout=60_000)

    document_id = documents.get_by_text(re.compile(r"^[0-9a-f]{32}$")).inner_text()
    markdown = httpx.get(f"{live_server}/documents/{document_id}/markdown").text
    tokens = count_tokens(markdown)
    windows = 1 + math.ceil((tokens - 40) / 30)  # windows of 40 tokens, each starting 30 after the previous
    runs = {r["strategy_name"]: r for r in httpx.get(f"{live_server}/documents/{document_id}/runs").json()}
    rows = {
        r[0]: r for r in (row.get_by_role("cell").all_inner_texts() for row in outcome.get_by_role("row").all()[1:])
    }
    assert rows["fixed_size"][1:3] == ["completed", str(windows)]
    assert rows["recursive"][1:3] == ["completed", str(runs["recursive"]["chunk_count"])]
    assert _row(documents, "report.docx").get_by_role("cell").nth(2).inner_text() == "indexed"
    assert f"fixed_size {windows}" in _row(documents, "report.docx").inner_text()

    # Chunk Preview: the text the chunks cover, every start and end marked, and the three overlaps drawn.
    documents.get_by_label("Chunk Preview strategy").select_option(label="fixed_size · all-MiniLM-L6-v2")
    drawn = documents.get_by_label("Document text with chunk boundaries")
    drawn.locator("[data-chunk]").nth(windows - 1).wait_for()
    assert drawn.locator("[data-chunk]").all_inner_texts() == [f"⟦{i}" for i in range(windows)]
    assert drawn.locator("[title^='overlap of chunks']").count() == windows - 1
    assert _unmarked(drawn.inner_text(), 0, windows - 1).rstrip() == markdown.rstrip()
    assert '"chunk_size":40' in documents.get_by_label("Diagnostics").inner_text()
    _shoot(page, "documents-word")

    page.set_viewport_size({"width": 420, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 420
    _shoot(page, "documents-narrow")
    page.set_viewport_size({"width": 1280, "height": 800})

    documents.get_by_role("button", name="Ask a question").click()
    assert page.get_by_role("tab", name="Query").get_attribute("aria-selected") == "true"
    page.get_by_role("tab", name="Documents").click()

    documents.get_by_role("button", name="Delete…").click()
    documents.get_by_role("alertdialog").get_by_role("button", name="Delete for good").click()
    documents.get_by_text("No documents yet").wait_for()  # the tab holds every type but PDF
    assert httpx.get(f"{live_server}/documents/{document_id}").status_code == 404


def test_a_long_document_pages_its_chunks(page, live_server):
    paragraphs = [
        f"Paragraph {i} says that item {i} costs {i * 3} euros and ships in {i % 7 + 1} days." for i in range(240)
    ]
    text = "# Price list\n\n" + "\n\n".join(paragraphs) + "\n"
    document = httpx.post(f"{live_server}/documents", files={"file": ("prices.md", text.encode())}).json()["document"]
    processed = httpx.post(
        f"{live_server}/documents/{document['id']}/process",
        params={"wait": "true"},
        json={"strategies": ["fixed_size"], "params": {"fixed_size": {"chunk_size": 32, "chunk_overlap": 0}}},
        timeout=120,
    ).json()
    total = processed["chunk_counts"]["fixed_size"]
    assert total > 100  # three pages of 50

    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    _row(documents, "prices.md").get_by_role("button", name="prices.md").click()
    drawn = documents.get_by_label("Document text with chunk boundaries")
    drawn.locator("[data-chunk]").nth(49).wait_for()
    assert drawn.locator("[data-chunk]").count() == 50
    # One numbering: the range above the text names the chunk indices its markers show; the pager counts pages.
    pages = math.ceil(total / 50)
    assert documents.get_by_test_id("chunk-range").inner_text().startswith(f"Chunks 0–49 · 50 on this page, of {total}")
    assert documents.get_by_test_id("chunk-page").inner_text() == f"page 1 of {pages}"
    documents.get_by_role("button", name="Next page of chunks").click()
    documents.get_by_test_id("chunk-page").filter(has_text=f"page 2 of {pages}").wait_for()
    assert (
        documents.get_by_test_id("chunk-range").inner_text().startswith(f"Chunks 50–99 · 50 on this page, of {total}")
    )
    assert drawn.locator("[data-chunk]").first.inner_text() == "⟦50"
    # Windows without overlap: the page's text is the markdown from chunk 50's start to chunk 99's end.
    assert drawn.locator("[title^='overlap of chunks']").count() == 0
    chunks = httpx.get(
        f"{live_server}/admin/chunks/{document['id']}", params={"strategy": "fixed_size", "offset": 50, "limit": 50}
    ).json()["chunks"]
    expected = text[chunks[0]["start_index"] : chunks[-1]["end_index"]]
    assert _unmarked(drawn.inner_text(), 50, 99).strip() == expected.strip()
