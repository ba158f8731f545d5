"""The Query and Admin tabs in a real browser, on the real app (MiniLM, embedded Qdrant, SQLite)."""

from __future__ import annotations

import json
import re

import httpx
from playwright.sync_api import expect

from conftest import screenshot
from test_queries import HANDBOOK

FIXED = "fixed_size__all-MiniLM-L6-v2_collection"
RECURSIVE = "recursive__all-MiniLM-L6-v2_collection"


def _ingest(base: str, name: str, text: str, strategies: list[str]) -> str:
    """Upload a markdown document and process it inline (fixed_size in 40-token windows, no overlap)."""
    document = httpx.post(f"{base}/documents", files={"file": (name, text.encode())}).json()["document"]
    params = {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}} if "fixed_size" in strategies else {}
    processed = httpx.post(
        f"{base}/documents/{document['id']}/process",
        params={"wait": "true"},
        json={"strategies": strategies, "params": params},
        timeout=120,
    )
    assert processed.status_code == 200, processed.text
    return document["id"]


def _shot(page, name: str) -> None:
    # From the top: sticky headers would otherwise be drawn where the last scroll left them.
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, name)


def _fits_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_ask_with_neighbours_see_the_expansion_tree_and_reopen_history(page, live_server):
    handbook = _ingest(live_server, "handbook.md", HANDBOOK, ["fixed_size", "recursive"])
    # The HW-7731 window is neither the first nor the last of the fixed_size chunks: it has both neighbours.
    chunks = httpx.get(f"{live_server}/admin/chunks/{handbook}", params={"strategy": "fixed_size"}).json()["chunks"]
    [hit] = [c["chunk_index"] for c in chunks if "HW-7731" in c["text"]]
    assert 0 < hit < len(chunks) - 1

    page.goto("/app#query")
    expect(page.get_by_test_id("query-document")).to_have_value(handbook)
    page.get_by_label("Strategy").select_option("fixed_size")
    page.get_by_label("Retriever").select_option("hybrid")
    page.get_by_label("top_k").fill("1")
    page.get_by_label("Neighbours before").fill("1")
    page.get_by_label("Neighbours after").fill("1")
    page.get_by_label("Question", exact=True).fill("What is the ticket code for broken equipment?")
    page.get_by_label("Question", exact=True).press("Control+Enter")

    tree = page.get_by_test_id("expansion-tree")
    expect(tree).to_contain_text("1 hit, 2 neighbours")
    answer = page.get_by_test_id("query-answer")
    expect(answer).to_contain_text("HW-7731")
    assert tree.locator("[data-role=hit]").count() == 1
    neighbours = tree.locator("[data-role=neighbor]")
    assert neighbours.count() == 2
    before, after = neighbours.nth(0).inner_text(), neighbours.nth(1).inner_text()
    assert before.startswith("neighbour before") and f"chunk {hit - 1}" in before
    assert after.startswith("neighbour after") and f"chunk {hit + 1}" in after and "score —" in after
    sources = page.get_by_test_id("query-sources")
    expect(sources).to_contain_text("Sources (3)")
    assert sources.get_by_text("neighbor", exact=True).count() == 2

    # A citation in the answer shows its source.
    citation = answer.get_by_role("button", name=re.compile(r"Show source \d+"))
    number = re.search(r"\d+", citation.first.get_attribute("aria-label")).group()
    citation.first.click()
    cited = page.locator(f"#query-source-{number}")
    expect(cited).to_be_focused()
    assert "HW-7731" in cited.inner_text()
    latency = page.get_by_test_id("query-latency")
    for stage in ("embed", "search", "expand", "generate"):
        expect(latency.get_by_role("img", name=re.compile(f"^{stage}: "))).to_be_visible()
    expect(page.get_by_test_id("query-tokens")).to_contain_text("context")
    expect(page.get_by_test_id("query-history").locator("tbody tr")).to_have_count(1)
    expect(page.get_by_test_id("query-history")).to_contain_text("±1/1")
    _shot(page, "query")

    # Another strategy: neighbours do not apply, and the form says so.
    page.get_by_label("Strategy").select_option("recursive")
    expect(page.get_by_label("Neighbours before")).to_be_disabled()
    expect(page.get_by_text("Neighbor Expansion applies to fixed_size only: choose")).to_be_visible()
    page.get_by_label("Question", exact=True).fill("How many days of paid annual leave do employees get?")
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(answer).to_contain_text("25 days")
    expect(tree).to_contain_text("0 neighbours")
    history = page.get_by_test_id("query-history").locator("tbody tr")
    expect(history).to_have_count(2)

    # Rerankers that cannot work here are not offered, and the form says what would enable them.
    rerank = page.get_by_label("Rerank")
    expect(rerank.locator("option[value=cross_encoder]")).to_be_disabled()
    expect(rerank.locator("option[value=llm]")).to_be_disabled()
    expect(page.get_by_test_id("unavailable-options")).to_contain_text(
        "Cross-encoder reranking is not available: No cross-encoder is configured: set CHUNKBENCH_CROSS_ENCODER_MODEL"
    )

    # History: the first question comes back as it was answered, tree and all.
    page.get_by_role("button", name="Show the answer to: What is the ticket code for broken equipment?").click()
    expect(answer).to_contain_text("HW-7731")
    expect(tree).to_contain_text("1 hit, 2 neighbours")

    # Another tab selects a document: the Query tab follows (a document processed with recursive only).
    memo = _ingest(live_server, "memo.md", "# Memo\n\nThe cafeteria opens at eight.\n", ["recursive"])
    page.evaluate("id => import('/app/static/bus.js').then((bus) => bus.emit('select-document', {id}))", memo)
    expect(page.get_by_test_id("query-document")).to_have_value(memo)
    assert page.get_by_label("Strategy").locator("option").all_inner_texts() == ["recursive (1 chunks)"]

    page.set_viewport_size({"width": 420, "height": 900})
    page.get_by_test_id("query-document").select_option(handbook)
    expect(tree).to_be_visible()
    assert _fits_width(page)
    _shot(page, "query-narrow")


def test_admin_roles_thresholds_serving_collections_questions_and_health(
    page, live_server, settings, tiny_cross_encoder
):
    settings.cross_encoder_model = str(tiny_cross_encoder)  # the server's settings: a cross-encoder can rerank
    _ingest(live_server, "handbook.md", HANDBOOK, ["fixed_size", "recursive"])
    points = {c["name"]: c["points"] for c in httpx.get(f"{live_server}/admin/qdrant/collections").json()}
    assert points[FIXED] > 0 and points[RECURSIVE] > 0

    page.goto("/app#admin")
    health = page.get_by_test_id("admin-health")
    expect(health.locator("tbody tr")).to_have_count(4)
    rows = [row.split("\t") for row in health.locator("tbody tr").all_inner_texts()]
    assert [(row[0], row[1]) for row in rows] == [
        ("App", "ok"), ("Database", "ok"), ("Qdrant", "ok"), ("LLM", "not configured"),
    ]  # fmt: skip
    assert "2 collections" in rows[2][2] and "extractive" in rows[3][2]

    # Roles: the Corpus model changes on the server, and the table moves its badge.
    page.get_by_test_id("corpus-role").select_option("all-mpnet-base-v2")
    expect(page.get_by_role("status").filter(has_text="Corpus model set to all-mpnet-base-v2")).to_be_visible()
    registry = httpx.get(f"{live_server}/admin/embedding-models").json()
    assert registry["corpus_model_id"] == "all-mpnet-base-v2" and registry["boundary_model_id"] == "all-MiniLM-L6-v2"
    mpnet_row = page.get_by_test_id("admin-models").locator("tr", has_text="all-mpnet-base-v2")
    expect(mpnet_row.get_by_text("Corpus", exact=True)).to_be_visible()
    # MPNet is not installed here: the page says processing with it would fail.
    expect(page.get_by_text("all-mpnet-base-v2 is a default role but is not available")).to_be_visible()

    # A threshold outside (0, 1] is refused before any request; a valid one is saved and marked overridden.
    threshold = page.get_by_label("Semantic threshold of all-MiniLM-L6-v2")
    threshold.fill("1.5")
    expect(page.get_by_text("The threshold must be above 0 and at most 1.")).to_be_visible()
    save = page.get_by_role("button", name="Save the threshold of all-MiniLM-L6-v2")
    expect(save).to_be_disabled()
    threshold.fill("0.42")
    save.click()
    minilm_row = page.get_by_test_id("admin-models").locator("tr", has_text="all-MiniLM-L6-v2")
    expect(minilm_row).to_contain_text("overridden (default 0.3)")
    models = httpx.get(f"{live_server}/admin/embedding-models").json()["models"]
    [minilm] = [m for m in models if m["id"] == "all-MiniLM-L6-v2"]
    assert minilm["semantic_threshold"] == 0.42

    # Serving configuration.
    serving = page.get_by_role("form", name="Serving configuration")
    serving.get_by_label("Retriever").select_option("dense")
    serving.get_by_label("top_k").fill("3")
    expect(serving.get_by_label("Neighbours before")).to_be_disabled()  # recursive chunks are not windows
    # No LLM: LLM reranking is not offered, and the form says why.
    expect(serving.get_by_label("Rerank").locator("option[value=llm]")).to_be_disabled()
    expect(serving.get_by_test_id("unavailable-options")).to_contain_text("LLM listwise reranking is not available")
    serving.get_by_label("Rerank").select_option("cross_encoder")
    serving.get_by_label("Candidate pool").fill("8")
    serving.get_by_role("button", name="Save").click()
    expect(serving.get_by_role("status")).to_contain_text("Saved")
    assert httpx.get(f"{live_server}/admin/serving").json() == {
        "strategy": "recursive", "corpus_model_id": "all-MiniLM-L6-v2", "retriever": "dense", "top_k": 3,
        "rerank": "cross_encoder", "candidate_k": 8, "neighbor_prev": 0, "neighbor_next": 0, "parent_context": True,
    }  # fmt: skip

    # Wipe: the dialog names the collection; Escape cancels and nothing changes; confirming empties it.
    collections = page.get_by_test_id("admin-collections")
    page.get_by_role("button", name=f"Wipe {FIXED}").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Wipe {FIXED}?")
    expect(dialog).to_contain_text(f"{points[FIXED]} points")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert _points(live_server)[FIXED] == points[FIXED]
    page.get_by_role("button", name=f"Wipe {FIXED}").click()
    dialog.get_by_role("button", name="Wipe").click()
    expect(dialog).to_be_hidden()
    expect(collections.locator(f"tr[data-collection='{FIXED}'] td").nth(4)).to_have_text("0")
    assert _points(live_server) == {FIXED: 0, RECURSIVE: points[RECURSIVE]}

    page.get_by_role("button", name=f"Delete {RECURSIVE}").click()
    expect(dialog).to_contain_text(f"The collection {RECURSIVE} and its {points[RECURSIVE]} points will be deleted.")
    dialog.get_by_role("button", name="Delete").click()
    expect(collections.locator("tbody tr")).to_have_count(1)
    assert _points(live_server) == {FIXED: 0}
    page.get_by_role("button", name="Check again").click()
    expect(health).to_contain_text("1 collection")

    # Question files: a broken file is refused with the server's reason; a good one is listed, then deleted.
    chooser = page.get_by_label(re.compile(r"^Question file \("))
    chooser.set_input_files(files=[{"name": "broken.json", "mimeType": "application/json", "buffer": b'[{"id": 1}]'}])
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("alert").filter(has_text="broken.json")).to_contain_text(
        "'question' must be a non-empty string"
    )
    # Chromium logs every 4xx response as a console error: this refusal is the expected one.
    page.errors[:] = [error for error in page.errors if "status of 422" not in error]
    questions = [
        {"id": "q1", "question": "What is the ticket code?", "expected_answer": "HW-7731"},
        {"id": "q2", "question": "How many leave days?", "expected_answer": "25"},
    ]
    good = {"name": "handbook.json", "mimeType": "application/json", "buffer": json.dumps(questions).encode()}
    chooser.set_input_files(files=[good])
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_text("handbook.json uploaded: 2 questions.")).to_be_visible()
    table = page.get_by_test_id("admin-questions")
    expect(table.locator("tr[data-file='handbook.json'] td").nth(1)).to_have_text("json")  # its format
    _shot(page, "admin")

    page.get_by_role("button", name="Delete handbook.json").click()
    expect(dialog).to_contain_text("The question file handbook.json will be deleted.")
    dialog.get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No question file yet.")).to_be_visible()
    assert httpx.get(f"{live_server}/admin/questions").json() == []

    page.set_viewport_size({"width": 420, "height": 900})
    assert _fits_width(page)
    _shot(page, "admin-narrow")


def _points(base: str) -> dict[str, int]:
    return {c["name"]: c["points"] for c in httpx.get(f"{base}/admin/qdrant/collections").json()}
