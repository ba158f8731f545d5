"""A document's language in the dashboard: shown with its source and confidence, changed by the user, with the
warning of a model that already processed it and does not read the new language."""

from __future__ import annotations

import httpx

from conftest import screenshot
from docgen import languages as gen


def test_the_document_detail_shows_and_changes_the_language(page, live_server, tmp_path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(gen.prose("en", 9), encoding="utf-8")
    with notes.open("rb") as handle:
        document = httpx.post(f"{live_server}/documents", files={"file": ("notes.md", handle)}).json()["document"]
    processed = httpx.post(
        f"{live_server}/documents/{document['id']}/process",
        params={"wait": "true"}, json={"strategies": ["fixed_size"]}, timeout=120,
    )  # fmt: skip
    assert processed.status_code == 200, processed.text

    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_role("button", name="notes.md", exact=True).click()
    field = documents.get_by_test_id("document-language")
    field.wait_for()
    assert "en" in field.inner_text() and "detected" in field.inner_text() and "confidence 100%" in field.inner_text()

    # A code that is none: the server's message, nothing changed.
    field.get_by_role("button", name="Change language…").click()
    field.get_by_label("Language code").fill("klingon")
    field.get_by_role("button", name="Save").click()
    field.get_by_role("alert").filter(has_text="is not a language code").wait_for()
    page.errors[:] = [e for e in page.errors if "status of 400" not in e]  # the refusal the test asks for
    assert httpx.get(f"{live_server}/documents/{document['id']}").json()["language_source"] == "detected"

    # Persian: set by the user, and MiniLM, which processed it, does not read it.
    field.get_by_label("Language code").fill("fa")
    field.get_by_role("button", name="Save").click()
    warning = field.get_by_test_id("language-change-warning")
    warning.wait_for()
    assert "'notes.md' is in Persian (fa)" in warning.inner_text() and "all-MiniLM-L6-v2" in warning.inner_text()
    field.get_by_text("set by you").wait_for()
    assert "confidence 100%" in field.inner_text() and "fa" in field.inner_text()
    stored = httpx.get(f"{live_server}/documents/{document['id']}").json()
    assert (stored["language"], stored["language_source"], stored["language_confidence"]) == ("fa", "user", 1.0)
    screenshot(page, "documents-language")


def test_a_corpus_language_is_set_for_every_member_from_the_corpus_panel(page, live_server, tmp_path) -> None:
    ids = []
    for name in ("one.md", "two.md"):
        path = tmp_path / name
        path.write_text(gen.prose("en", 6), encoding="utf-8")
        with path.open("rb") as handle:
            ids.append(httpx.post(f"{live_server}/documents", files={"file": (name, handle)}).json()["document"]["id"])
    made = httpx.post(f"{live_server}/corpora", json={"name": "handbooks", "document_ids": ids})
    assert made.status_code == 201, made.text

    page.goto("/app#documents/corpus/handbooks")
    panel = page.locator("#panel-documents").get_by_role("region", name="Corpora")
    panel.get_by_role("button", name="Set language…").click()
    form = panel.get_by_role("form", name="Set the corpus's language")
    form.get_by_label("Language of every document in handbooks").fill("de")
    form.get_by_role("button", name="Set for every document").click()
    panel.get_by_role("status").filter(has_text="Set the language of 2 documents of handbooks to de").wait_for()
    for document_id in ids:
        stored = httpx.get(f"{live_server}/documents/{document_id}").json()
        assert (stored["language"], stored["language_source"]) == ("de", "user")
