"""Corpora in the dashboard, in a real browser on the real app: two documents of the same filename ingested from a
folder (told apart by their source keys), a corpus made, shown, changed and deleted in the Documents tab, the
corpus processed as one job with its per-strategy outcome, a corpus benchmark started from the Benchmarks tab,
and the Experiment with its corpus, breakdowns and Retrieval Inspect; the Decision Board filtered to the corpus."""

from __future__ import annotations

import json

import httpx
import pytest

from conftest import screenshot
from test_corpus_benchmark import TEMPLATE

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

OFFICES = {
    "berlin/handbook.txt": {"city": "Berlin", "leave": 25, "ticket": "HW-7731", "hotel": 150, "laptop": 3, "floor": 2},
    "madrid/handbook.txt": {"city": "Madrid", "leave": 30, "ticket": "HW-8842", "hotel": 170, "laptop": 4, "floor": 3},
}
# Each question names its document by source key; two categories, so both breakdowns have rows.
QUESTIONS = [
    {
        "id": "leave-berlin",
        "document_id": "berlin/handbook.txt",
        "category": "leave",
        "question": "How many days of paid annual leave do staff in Berlin get?",
        "expected_answer": "25 days",
        "references": [{"content": "Staff in Berlin receive 25 days of paid annual leave per calendar year."}],
    },
    {
        "id": "ticket-madrid",
        "document_id": "madrid/handbook.txt",
        "category": "equipment",
        "question": "Which ticket code reports broken equipment in Madrid?",
        "expected_answer": "HW-8842",
        "references": [{"content": "ticket code HW-8842"}],
    },
    {
        "id": "printer-madrid",
        "document_id": "madrid/handbook.txt",
        "category": "equipment",
        "question": "On which floor is the Madrid printer?",
        "expected_answer": "floor 3",
        "references": [{"content": "The Madrid printer sits on floor 3."}],
    },
]


def _ingest(settings, base: str) -> dict[str, str]:
    """The two handbooks written under the data directory and indexed as a folder; source key → document id."""
    for key, office in OFFICES.items():
        path = settings.data_dir / "offices" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TEMPLATE.format(**office), encoding="utf-8")
    response = httpx.post(f"{base}/documents/index-directory", json={"path": "offices"}, timeout=120)
    assert response.status_code == 200, response.text
    return {r["source_key"]: r["document"]["id"] for r in response.json()["results"]}


def test_a_corpus_made_processed_and_benchmarked_from_the_dashboard(page, live_server, settings):
    ids = _ingest(settings, live_server)
    assert sorted(ids) == sorted(OFFICES)
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    corpora = documents.get_by_role("region", name="Corpora")
    listing = documents.get_by_role("table", name="Documents list")
    # Same filename twice: each row says which file it is by its source key.
    for key in OFFICES:
        expect(listing.get_by_role("row").filter(has_text=key)).to_contain_text("handbook.txt")

    # 1. A corpus of both, made from the ticked rows.
    for key in OFFICES:
        listing.get_by_label(f"Select {key}").check()
    expect(corpora.get_by_test_id("picked-count")).to_have_text("2 selected:")
    corpora.get_by_role("button", name="New corpus…").click()
    form = corpora.get_by_role("form", name="New corpus")
    form.get_by_label("Name").fill("offices")
    form.get_by_label("Description").fill("Both handbooks")
    form.get_by_role("button", name="Create with 2 documents").click()
    expect(corpora.get_by_role("status")).to_have_text("Created offices with 2 documents.")
    stored = httpx.get(f"{live_server}/corpora/offices").json()
    assert stored["description"] == "Both handbooks"
    assert sorted(d["id"] for d in stored["documents"]) == sorted(ids.values())

    # Removing one and adding it back: the list shown is the corpus's.
    corpora.get_by_label("Show corpus").select_option(label="offices (2)")
    expect(documents.get_by_role("heading", name="Documents in offices (2)")).to_be_visible()
    expect(corpora.get_by_text("Both handbooks")).to_be_visible()
    listing.get_by_label("Select madrid/handbook.txt").check()
    corpora.get_by_role("button", name="Remove from corpus").click()
    expect(corpora.get_by_role("status")).to_have_text("Removed 1 from offices; the documents stay.")
    expect(listing.get_by_role("row")).to_have_count(2)  # the header and Berlin
    assert [d["source_key"] for d in httpx.get(f"{live_server}/corpora/offices").json()["documents"]] == [
        "berlin/handbook.txt"
    ]
    corpora.get_by_label("Show corpus").select_option(label="all documents")
    expect(listing.get_by_role("row")).to_have_count(3)  # the whole list is back before "select all"
    listing.get_by_label("Select every document on this page").check()
    corpora.get_by_role("button", name="Add to corpus").click()
    expect(corpora.get_by_role("status")).to_have_text("Added 1 to offices (1 already there); it has 2 documents.")

    # 2. Process the corpus with fixed_size as one job: the outcome per strategy, then again (all skipped).
    corpora.get_by_label("Show corpus").select_option(label="offices (2)")
    corpora.get_by_role("button", name="Process corpus…").click()
    process = corpora.get_by_role("region", name="Process the corpus offices")
    for name in ("recursive", "semantic", "contextual_retrieval", "semantic_parent_child"):
        process.get_by_role("checkbox", name=name, exact=True).uncheck()
    process.get_by_label("fixed_size Chunk Size").fill("30")
    process.get_by_label("fixed_size Chunk Overlap").fill("0")
    process.get_by_role("button", name="Run 1 strategy").click()
    outcome = process.get_by_role("table", name="Corpus outcome per strategy")
    expect(outcome).to_be_visible(timeout=120_000)
    chunks = sum(httpx.get(f"{live_server}/documents/{i}").json()["chunk_counts"]["fixed_size"] for i in ids.values())
    assert outcome.locator("tbody tr").get_by_role("cell").all_inner_texts()[:5] == [
        "fixed_size",
        "2",
        "0",
        "0",
        str(chunks),
    ]
    expect(
        process.get_by_role("heading", name="Outcome · 2 documents · 2 processed, 0 skipped, 0 failed")
    ).to_be_visible()
    expect(process.get_by_role("table", name="Failed documents")).to_have_count(0)
    screenshot(page, "corpora-processed")
    process.get_by_role("button", name="Run 1 strategy").click()
    expect(
        process.get_by_role("heading", name="Outcome · 2 documents · 0 processed, 2 skipped, 0 failed")
    ).to_be_visible(timeout=60_000)

    # 3. A corpus benchmark from the Benchmarks tab.
    page.get_by_role("tab", name="Benchmarks").click()
    bench = page.locator("#panel-benchmarks")
    bench.get_by_label("a corpus").check()
    expect(bench.get_by_role("combobox", name="Corpus", exact=True)).to_have_value("offices")
    bench.locator('input[type="file"]').set_input_files(
        files=[{"name": "offices.json", "mimeType": "application/json", "buffer": json.dumps(QUESTIONS).encode()}]
    )
    expect(bench.get_by_role("status").filter(has_text="Uploaded offices.json")).to_be_visible()
    # Validation places each question's evidence in the member it names (not in one document of the corpus).
    bench.get_by_role("button", name="Validate").click()
    validation = bench.get_by_role("region", name="Validation")
    expect(validation.get_by_role("status")).to_contain_text("valid 3 questions, 3 references · placed: 3 exact")
    expect(validation.get_by_role("alert")).to_have_count(0)
    expect(bench.get_by_label("fixed_size")).to_be_checked()
    bench.get_by_label("MiniLM L6 v2 (local, bundled)").check()  # the Corpus-model axis, one model
    bench.get_by_label("top_k values").fill("1, 5")  # two configurations: a Decision between them
    bench.get_by_role("button", name="Dry run").click()
    expect(bench.get_by_role("region", name="Dry run")).to_contain_text("2 configurations × 3 questions = 6 cells")
    bench.get_by_role("button", name="Run benchmark").click()
    experiment = bench.get_by_role("region", name="Experiment", exact=True)
    expect(experiment.get_by_role("heading", name="Experiment: corpus offices completed")).to_be_visible(
        timeout=120_000
    )
    [summary] = httpx.get(f"{live_server}/experiments", params={"corpus": "offices"}).json()
    assert summary["corpus_name"] == "offices" and summary["documents"] == 2
    stored = httpx.get(f"{live_server}/benchmarks/{summary['id']}").json()
    assert stored["status"] == "completed" and len(stored["cells"]) == 6
    row = bench.get_by_role("table", name="Experiments").locator("tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("corpus offices · 2 documents")
    expect(row).to_contain_text("all-MiniLM-L6-v2")
    expect(experiment).to_contain_text("offices · 2 documents")
    expect(experiment.get_by_role("region", name="Decision")).to_contain_text(stored["decision"]["verdict"])

    # The breakdowns as the server computed them, worst first, one column per configuration.
    breakdowns = experiment.get_by_role("region", name="Breakdowns")
    per_document = breakdowns.get_by_role("table", name="Breakdown per document").locator("tbody tr")
    expected = stored["breakdowns"]["documents"]
    expect(per_document).to_have_count(len(expected))
    keys = [c["key"] for c in stored["configurations"]]
    for index, group in enumerate(expected):
        cells = per_document.nth(index).get_by_role("cell")
        expect(cells.nth(0)).to_have_text(group["source_key"])
        for column, key in enumerate(keys, start=2):
            figures = group["configurations"][key]
            failures = f" {figures['failures']} ✗" if figures["failures"] else ""
            expect(cells.nth(column)).to_have_text(f"{figures['mean']:.3f}{failures}")
    per_category = breakdowns.get_by_role("table", name="Breakdown per category").locator("tbody tr")
    assert per_category.locator("td:first-child").all_inner_texts() == [
        g["category"] for g in stored["breakdowns"]["categories"]
    ]
    screenshot(page, "corpora-experiment")

    # Retrieval Inspect: each chunk names its document; the evidence is marked in the question's own document.
    experiment.get_by_role("button", name="Retrieval Inspect").click()
    inspect = bench.get_by_role("region", name="Retrieval Inspect")
    expect(inspect.get_by_role("heading", name="Retrieval Inspect · corpus offices")).to_be_visible()
    inspect.get_by_role("combobox", name="Configuration").select_option("fixed_size/dense/k5")
    retrieved = inspect.get_by_role("region", name="Retrieved chunks")
    leave = next(c for c in stored["cells"] if c["question_id"] == "leave-berlin" and c["config_key"].endswith("k5"))
    assert leave["metrics"]["recall"] == 1.0  # the evidence chunk is among the five
    expect(retrieved.get_by_role("article")).to_have_count(len(leave["retrieved"]))
    # Hits in rank order; chunk n of one handbook and of the other are told apart.
    by_score = sorted((c for c in leave["retrieved"] if c["role"] == "hit"), key=lambda c: -c["score"])
    for index, chunk in enumerate(by_score):
        source_key = next(k for k, i in ids.items() if i == chunk["document_id"])
        article = retrieved.get_by_role("article").nth(index)
        expect(article).to_have_accessible_name(f"rank {index + 1}, chunk #{chunk['chunk_index']}")
        expect(article).to_contain_text(source_key)
    # The evidence is marked in Berlin's chunks only, though Madrid's chunks sit at the same offsets.
    marks = retrieved.locator("mark.evidence")
    expect(marks.first).to_be_visible()
    assert "".join(marks.all_inner_texts()) == QUESTIONS[0]["references"][0]["content"]
    marked = retrieved.get_by_role("article").filter(has=page.locator("mark.evidence"))
    assert marked.count() == marks.count()
    assert all("berlin/handbook.txt" in text for text in marked.all_inner_texts())
    inspect.get_by_role("button", name="← Back to the Experiment").click()

    # 4. The Decision Board, filtered to the corpus: its verdict with the breakdowns.
    page.get_by_role("tab", name="Decision Board").click()
    board = page.locator("#panel-decision")
    board.get_by_label("Document or corpus").select_option(label="corpus offices · 2 documents")
    verdict = board.get_by_test_id("verdict")
    expect(verdict).to_contain_text("corpus offices · 2 documents")
    verdict.get_by_test_id("decision-details").locator("summary").click()  # the details sit collapsed
    expect(verdict.get_by_role("table", name="Breakdown per document").locator("tbody tr")).to_have_count(len(expected))

    # 5. Deleting the corpus keeps its documents.
    page.get_by_role("tab", name="Documents").click()
    corpora.get_by_role("button", name="Delete corpus…").click()
    expect(corpora.get_by_role("alertdialog", name="Confirm corpus deletion")).to_contain_text("Its 2 documents stay")
    corpora.get_by_role("button", name="Delete the corpus").click()
    expect(corpora.get_by_role("status")).to_have_text("Deleted the corpus offices; its documents stay.")
    expect(documents.get_by_role("heading", name="Documents (2)")).to_be_visible()
    assert httpx.get(f"{live_server}/corpora").json() == []
