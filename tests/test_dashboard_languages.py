"""A Persian document in the dashboard: processing says which model it picked, Chunk Preview warns about MiniLM."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from conftest import screenshot

FARSI = Path(__file__).parent / "data" / "farsi"


def test_processing_a_persian_document_names_the_model_and_chunk_preview_warns(page, live_server) -> None:
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_label("Choose files to upload").set_input_files(FARSI / "hafez.md")
    row = documents.get_by_role("row").filter(has=page.get_by_role("button", name="hafez.md", exact=True))
    row.wait_for()
    row.get_by_role("button", name="hafez.md").click()
    for name in ("recursive", "semantic", "contextual_retrieval", "semantic_parent_child"):
        documents.get_by_role("checkbox", name=name, exact=True).uncheck()
    documents.get_by_role("button", name="Run 1 strategy").click()
    note = documents.get_by_test_id("model-note")
    note.wait_for(timeout=120_000)
    assert "is in Persian (fa), which the default Corpus model all-MiniLM-L6-v2 does not cover" in note.inner_text()
    assert documents.get_by_test_id("language-warning").count() == 0

    # MiniLM picked: refused with the reason; allowed with the box ticked, the outcome and Chunk Preview warn.
    documents.get_by_label("Corpus model", exact=True).select_option("all-MiniLM-L6-v2")
    documents.get_by_role("button", name="Run 1 strategy").click()
    refusal = documents.get_by_role("alert").filter(has_text="does not cover (it reads English)")
    refusal.wait_for(timeout=60_000)
    page.errors[:] = [e for e in page.errors if "status of 400" not in e]  # the refusal the test asks for
    documents.get_by_role("checkbox", name="Allow a model that does not read the language").check()
    documents.get_by_role("button", name="Run 1 strategy").click()
    outcome_warning = documents.locator("section[aria-label='Process']").get_by_test_id("language-warning")
    outcome_warning.wait_for(timeout=120_000)
    assert "all-MiniLM-L6-v2 does not cover" in outcome_warning.inner_text()
    document_id = documents.get_by_text(re.compile(r"^[0-9a-f]{32}$")).inner_text()
    (run,) = [r for r in httpx.get(f"{live_server}/documents/{document_id}/runs").json()
              if r["corpus_model_id"] == "all-MiniLM-L6-v2"]  # fmt: skip
    assert run["details"]["language_warnings"][0]["language"] == "fa"
    preview = documents.locator(".panel").filter(has=page.get_by_role("heading", name="Chunk Preview"))
    preview.get_by_label("Chunk Preview strategy").select_option(label="fixed_size · all-MiniLM-L6-v2")
    warning = preview.get_by_test_id("language-warning")
    warning.wait_for()
    assert "does not cover" in warning.inner_text() and "multilingual-e5-small" in warning.inner_text()
    preview.get_by_label("Chunk Preview strategy").select_option(label="fixed_size · multilingual-e5-small")
    warning.wait_for(state="detached")
    screenshot(page, "documents-farsi")
