"""The process form in a real browser: size defaults of the chosen Corpus model as the fields' defaults, and a size
beyond what the model reads whole flagged as soon as it is typed or the model chosen, before anything runs."""

from __future__ import annotations

import httpx

from chunkbench.embedding.registry import get_spec
from conftest import screenshot

READABLE = get_spec("all-MiniLM-L6-v2").readable_chunk_tokens


def test_the_process_form_shows_the_models_defaults_and_flags_a_size_beyond_the_window(page, live_server) -> None:
    text = "# Notes\n\n" + "\n\n".join(f"Paragraph {i} says the harbour opened at dawn." for i in range(12))
    httpx.post(f"{live_server}/documents", files={"file": ("notes.md", text.encode())}).raise_for_status()

    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_role("button", name="notes.md", exact=True).click()
    size = documents.get_by_label("fixed_size Chunk Size")
    size.wait_for()
    # The Admin Corpus role (MiniLM) is the default: its size default is the placeholder, and nothing is flagged.
    assert size.get_attribute("placeholder") == str(READABLE)
    assert documents.get_by_label("semantic Max Tokens").get_attribute("placeholder") == str(READABLE)
    warnings = documents.get_by_test_id("size-warning")
    assert warnings.count() == 0

    # 512 typed: flagged at once, before the Run button is pressed.
    size.fill("512")
    warnings.first.wait_for()
    assert warnings.count() == 1
    assert "fixed_size: chunk_size=512 is beyond what all-MiniLM-L6-v2 reads whole" in warnings.first.inner_text()
    screenshot(page, "process-size-warning")

    # e5 reads a long chunk as the mean of its windows: no size follows it, the warning goes.
    documents.get_by_label("Corpus model").select_option("multilingual-e5-small")
    documents.get_by_label("fixed_size Chunk Size").and_(page.locator('[placeholder="512"]')).wait_for()
    assert warnings.count() == 0

    # Back on the default, with the field cleared: the default fits, nothing flagged.
    documents.get_by_label("Corpus model").select_option("")
    size.fill("")
    documents.get_by_label("fixed_size Chunk Size").and_(page.locator(f'[placeholder="{READABLE}"]')).wait_for()
    assert warnings.count() == 0
    # Nothing was processed: the warning is told before any work.
    runs = httpx.get(f"{live_server}/documents").json()
    assert runs["items"] and all(not d["chunk_counts"] for d in runs["items"])

    # Run as asked: processed, and the outcome repeats the server's warning.
    for name in ("recursive", "semantic", "contextual_retrieval", "semantic_parent_child"):
        documents.get_by_role("checkbox", name=name, exact=True).uncheck()
    size.fill("512")
    documents.get_by_role("button", name="Run 1 strategy").click()
    result = documents.get_by_test_id("size-warning-result")
    result.wait_for(timeout=120_000)
    assert "fixed_size: chunk_size=512 is beyond what all-MiniLM-L6-v2 reads whole" in result.inner_text()
    assert f"Use chunk_size={READABLE} or less" in result.inner_text()
