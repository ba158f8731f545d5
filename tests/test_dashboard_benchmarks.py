"""The Benchmarks tab in a real browser on the real app: a question file uploaded and validated (an unplaceable
snippet shown with its closest text), a dry run, a run with progress, the Experiment with its Decision, the
Neighbor badge and a mismatch warning, and Retrieval Inspect with the evidence highlighted in the chunks."""

from __future__ import annotations

import json

import httpx
import pytest

from conftest import screenshot
from test_benchmarks import QUESTIONS
from test_queries import HANDBOOK

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

SIX = [
    *QUESTIONS,
    {
        "id": "desk",
        "question": "How fast does the service desk answer?",
        "expected_answer": "within one working day",
        "references": [{"content": "The service desk answers within one working day."}],
    },
]
# The same file with the last snippet made up: it is nowhere in the handbook.
BROKEN = [*SIX[:5], {**SIX[5], "references": [{"content": "The sky is a brilliant shade of cerulean blue today."}]}]


def _processed_handbook(base: str) -> str:
    """The handbook uploaded and processed with fixed_size and recursive through the API; returns its id."""
    document = httpx.post(f"{base}/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"]
    processed = httpx.post(
        f"{base}/documents/{document['id']}/process",
        params={"wait": "true"},
        json={
            "strategies": ["fixed_size", "recursive"],
            "params": {"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}, "recursive": {"chunk_size": 60}},
        },
        timeout=300,
    )
    assert processed.status_code == 200, processed.text
    return document["id"]


def _upload(page, questions: list[dict]) -> None:
    page.locator('input[type="file"]').set_input_files(
        files=[
            {
                "name": "handbook-questions.json",
                "mimeType": "application/json",
                "buffer": json.dumps(questions).encode(),
            }
        ]
    )


def test_a_benchmark_from_question_file_to_retrieval_inspect(page, live_server):
    document_id = _processed_handbook(live_server)
    page.goto("/app#benchmarks")
    panel = page.locator("#panel-benchmarks")
    expect(panel.get_by_role("combobox", name="Document", exact=True)).to_have_value(document_id)
    # No LLM here: the judge cannot be switched on, and the page says why.
    expect(panel.get_by_label("LLM-as-judge")).to_be_disabled()
    expect(panel.get_by_test_id("unavailable-options")).to_contain_text(
        "The LLM-as-judge is not available: The LLM-as-judge needs an LLM. No LLM configured"
    )

    # A file with one snippet that is not in the document: validation names it and shows the closest text.
    _upload(page, BROKEN)
    expect(panel.get_by_role("status").filter(has_text="Uploaded handbook-questions.json")).to_contain_text(
        "6 questions, 6 references"
    )
    expect(panel.get_by_role("combobox", name="Question file", exact=True)).to_have_value("handbook-questions.json")
    panel.get_by_role("button", name="Validate").click()
    validation = panel.get_by_role("region", name="Validation")
    expect(validation).to_contain_text("6 questions, 6 references · placed: 5 exact · 1 cannot be placed")
    problem = validation.get_by_role("alert")
    expect(problem).to_contain_text(
        "question desk, reference 1: “The sky is a brilliant shade of cerulean blue today.”"
    )
    expect(problem).to_contain_text("closest text (0.48)")
    expect(validation.get_by_role("table", name="Evidence placements").locator("tbody tr")).to_have_count(5)
    screenshot(page, "benchmarks-validation")
    # The dry run is refused by the server with the same finding.
    panel.get_by_role("button", name="Dry run").click()
    expect(panel.get_by_role("alert").filter(has_text="cannot be placed in 'handbook.md'")).to_be_visible()
    # Chromium logs the refused request itself; that one console error is expected, any other still fails.
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.errors.clear()

    # The corrected file replaces it; everything is placed now.
    panel.get_by_label("Replace a file of the same name").check()
    _upload(page, SIX)
    expect(panel.get_by_role("status").filter(has_text="Replaced handbook-questions.json")).to_be_visible()
    panel.get_by_role("button", name="Validate").click()
    expect(validation).to_contain_text("valid 6 questions, 6 references · placed: 6 exact")
    expect(validation.get_by_role("alert")).to_have_count(0)

    # Both processed strategies are offered and ticked; Neighbor Expansion ±1/1 for fixed_size.
    expect(panel.get_by_label("fixed_size")).to_be_checked()
    expect(panel.get_by_label("recursive")).to_be_checked()
    panel.get_by_label("Neighbors before").fill("1")
    panel.get_by_label("Neighbors after").fill("1")
    panel.get_by_role("button", name="Dry run").click()
    dry = panel.get_by_role("region", name="Dry run")
    expect(dry).to_contain_text("2 configurations × 6 questions = 12 cells · 0 LLM calls · $0.0000")
    expect(dry.get_by_role("table", name="Estimated cost")).to_contain_text("all-MiniLM-L6-v2")

    panel.get_by_role("button", name="Run benchmark").click()
    experiment = panel.get_by_role("region", name="Experiment", exact=True)
    expect(experiment.get_by_role("heading", name="Experiment: handbook.md completed")).to_be_visible(timeout=120_000)
    [summary] = httpx.get(f"{live_server}/experiments").json()
    stored = httpx.get(f"{live_server}/benchmarks/{summary['id']}").json()
    assert stored["status"] == "completed" and len(stored["cells"]) == 12

    # The list: one row, its Neighbor badge and all 12 cells done.
    rows = panel.get_by_role("table", name="Experiments").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("±1/1")
    expect(rows.first).to_contain_text("12/12")
    expect(rows.first).to_contain_text("fixed_size, recursive")
    # The Experiment: the server's Decision sentence, one aggregates row per configuration, the reports.
    expect(experiment.get_by_role("region", name="Decision")).to_contain_text(stored["decision"]["reasons"][0])
    aggregates = experiment.get_by_role("table", name="Aggregates").locator("tbody tr")
    expect(aggregates).to_have_count(2)
    expect(aggregates.nth(0)).to_contain_text("fixed_size/dense/k5/n1-1")
    expect(aggregates.nth(1)).to_contain_text("recursive/dense/k5")
    recall = stored["aggregate"]["recursive/dense/k5"]["metrics"][stored["decision"]["metric"]]
    expect(aggregates.nth(1)).to_contain_text(f"{recall['mean']:.3f} [{recall['ci_low']:.3f}, {recall['ci_high']:.3f}]")
    technical = experiment.get_by_role("link", name="Technical report")
    assert technical.get_attribute("href") == f"/benchmarks/{summary['id']}/report?view=technical"
    assert technical.get_attribute("target") == "_blank"
    assert httpx.get(f"{live_server}{technical.get_attribute('href')}").status_code == 200
    screenshot(page, "benchmarks-experiment")

    # A second Experiment without neighbours: the list warns that the two differ in Neighbor Expansion.
    second = httpx.post(
        f"{live_server}/benchmarks",
        params={"wait": "true"},
        json={"document_id": document_id, "question_set": "handbook-questions.json", "strategies": ["fixed_size"]},
        timeout=120,
    )
    assert second.status_code == 200, second.text
    panel.get_by_role("button", name="Refresh").click()
    expect(rows).to_have_count(2)
    expect(panel.get_by_role("note")).to_contain_text("Neighbor Expansion differs (±0/0, ±1/1)")
    expect(rows.filter(has_text="±0/0")).to_contain_text("≠ Neighbors")

    # Retrieval Inspect: the second question by keyboard, then the recursive configuration.
    experiment.get_by_role("button", name="Retrieval Inspect").click()
    inspect = panel.get_by_role("region", name="Retrieval Inspect")
    rail = inspect.get_by_role("listbox", name="Questions (up and down keys)")
    rail.focus()
    page.keyboard.press("ArrowDown")
    expect(inspect.get_by_role("heading", name="ticket · question 2 of 6")).to_be_visible()
    expect(inspect.get_by_role("region", name="Expected answer")).to_contain_text("HW-7731")
    inspect.get_by_role("combobox", name="Configuration").select_option("recursive/dense/k5")
    chunks = inspect.get_by_role("region", name="Retrieved chunks")
    # The three recursive chunks (top_k 5 > 3), the evidence marked exactly where it was placed.
    expect(chunks.get_by_role("article")).to_have_count(3)
    evidence = chunks.locator("mark.evidence")
    expect(evidence).to_have_count(1)
    expect(evidence).to_have_text("ticket code HW-7731")
    expect(inspect.get_by_role("region", name="Expansion Tree")).to_contain_text("No Neighbor Expansion")

    # fixed_size with ±1/1: the Expansion Tree lists hits with their neighbours before and after.
    inspect.get_by_role("combobox", name="Configuration").select_option("fixed_size/dense/k5/n1-1")
    tree = inspect.get_by_role("region", name="Expansion Tree")
    expect(tree.get_by_text("before", exact=True).first).to_be_visible()
    expect(tree.get_by_text("after", exact=True).first).to_be_visible()
    expect(chunks.locator("mark.evidence")).to_have_text("ticket code HW-7731")
    # Hits in rank order even though Neighbor Expansion keeps the cell's context in document order.
    cell = next(
        c for c in stored["cells"] if c["question_id"] == "ticket" and c["config_key"] == "fixed_size/dense/k5/n1-1"
    )
    by_score = sorted((c for c in cell["retrieved"] if c["role"] == "hit"), key=lambda c: -c["score"])
    expect(chunks.get_by_role("article")).to_have_count(len(cell["retrieved"]))
    for rank, chunk in enumerate(by_score, start=1):
        expect(chunks.get_by_role("article").nth(rank - 1)).to_have_accessible_name(
            f"rank {rank}, chunk #{chunk['chunk_index']}"
        )
    screenshot(page, "benchmarks-inspect")

    page.set_viewport_size({"width": 420, "height": 800})
    expect(chunks.locator("mark.evidence")).to_be_visible()
    screenshot(page, "benchmarks-inspect-narrow")
    inspect.get_by_role("button", name="← Back to the Experiment").click()
    expect(experiment).to_be_visible()
