"""The Decision Board in a real browser: candidates from real Experiments (MiniLM, embedded Qdrant, SQLite),
filters, exclusions kept across reloads, the two-stage heat comparison and each Experiment's Decision."""

from __future__ import annotations

import re

import httpx
import pytest

from conftest import screenshot
from test_benchmarks import QUESTIONS
from test_queries import HANDBOOK

TRAVEL = """# Travel Policy

## Booking

Flights are booked through the travel desk at least two weeks ahead. Economy class is the rule for flights
under six hours.

## Expenses

Meals abroad are reimbursed up to 40 euros a day. Receipts are submitted within thirty days of the trip.
"""
TRAVEL_QUESTIONS = [
    {
        "id": "meals",
        "question": "How much is reimbursed for meals abroad?",
        "references": [{"content": "Meals abroad are reimbursed up to 40 euros a day."}],
    },
    {
        "id": "receipts",
        "question": "When must receipts be submitted?",
        "references": [{"content": "Receipts are submitted within thirty days of the trip."}],
    },
]
STATUS_LABELS = {
    "winner": "Winner",
    "tie_broken_by_cost": "Tie broken by cost",
    "cannot_tell": "Cannot tell",
    "no_clear_winner": "No clear winner",
    "insufficient_data": "Insufficient data",
}


def _document(http: httpx.Client, name: str, text: str, strategies: list[str], params: dict) -> str:
    document = http.post("/documents", files={"file": (name, text.encode())}).json()["document"]
    processed = http.post(
        f"/documents/{document['id']}/process",
        params={"wait": "true"},
        json={"strategies": strategies, "params": params},
    )
    assert processed.status_code == 200, processed.text
    return document["id"]


def _benchmark(http: httpx.Client, document_id: str, questions: list[dict], **fields) -> dict:
    body = {"document_id": document_id, "questions": questions, **fields}
    response = http.post("/benchmarks", params={"wait": "true"}, json=body)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.model
def test_the_scores_view_of_an_experiment_keeps_every_figure_without_the_text(client):
    document_id = _document(client, "handbook.md", HANDBOOK, ["recursive"], {"recursive": {"chunk_size": 60}})
    full = _benchmark(client, document_id, QUESTIONS[:2])
    scores = client.get(f"/benchmarks/{full['id']}", params={"cells": "scores"}).json()
    assert len(scores["cells"]) == 2
    assert set(scores["cells"][0]) == {
        "question_id",
        "config_key",
        "status",
        "error",
        "metrics",
        "latency_ms",
        "tokens",
    }
    assert [c["metrics"] for c in scores["cells"]] == [c["metrics"] for c in full["cells"]]
    assert scores["decision"] == full["decision"] and scores["aggregate"] == full["aggregate"]
    assert "expansion_tree" in client.get(f"/benchmarks/{full['id']}").json()["cells"][0]
    assert client.get(f"/benchmarks/{full['id']}", params={"cells": "some"}).status_code == 422


def _cell(page, table: str, row_label: str, column: str) -> str:
    """The text of a heat table's cell, found as a person would: by its row header and column header."""
    headers = page.get_by_test_id(table).locator("thead th").all_inner_texts()
    index = next(i for i, text in enumerate(headers) if text.strip().rstrip(" ↓▾").strip() == column)
    row = page.get_by_test_id(table).locator("tbody tr").filter(has=page.locator("th", has_text=row_label))
    return row.locator("th, td").nth(index).inner_text().strip()


def test_the_decision_board_compares_experiments_in_two_stages_with_their_verdicts(page, live_server):
    with httpx.Client(base_url=live_server, timeout=300) as http:
        handbook = _document(
            http, "handbook.md", HANDBOOK, ["fixed_size", "recursive"],
            {"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}, "recursive": {"chunk_size": 60}},
        )  # fmt: skip
        travel = _document(http, "travel.md", TRAVEL, ["recursive"], {"recursive": {"chunk_size": 60}})
        baseline = _benchmark(http, handbook, QUESTIONS, name="baseline", top_k=[2])
        _benchmark(http, handbook, QUESTIONS, name="hybrid", retrievers=["dense", "hybrid"], neighbor_prev=1,
                   neighbor_next=1)  # fmt: skip
        _benchmark(http, travel, TRAVEL_QUESTIONS, name="travel")

    expect = pytest.importorskip("playwright.sync_api").expect
    page.goto("/app#decision")
    expect(page.get_by_test_id("candidate")).to_have_count(3)
    # 2 + 4 + 1 configurations, one row each.
    expect(page.get_by_test_id("config-row")).to_have_count(7)
    expect(page.get_by_test_id("mismatches")).to_contain_text("Different documents")
    expect(page.get_by_test_id("mismatches")).to_contain_text("Different Neighbor Expansion (±0/0, ±1/1)")

    # Filter to the handbook: its two Experiments, same document and questions, but different neighbours.
    page.get_by_label("Document").select_option(label="handbook.md")
    expect(page.get_by_test_id("candidate")).to_have_count(2)
    expect(page.get_by_test_id("config-row")).to_have_count(6)
    expect(page.get_by_test_id("not-paired")).to_be_visible()
    expect(page.get_by_test_id("mismatches")).not_to_contain_text("Different documents")
    expect(page.get_by_test_id("mismatches")).to_contain_text("Neighbor Expansion")
    expect(page.get_by_test_id("verdict")).to_have_count(2)

    # Exclude the hybrid Experiment: only the baseline's two configurations and its own Decision are left.
    page.get_by_label("Exclude experiment hybrid").check()
    expect(page.get_by_test_id("config-row")).to_have_count(2)
    expect(page.get_by_test_id("candidate-count")).to_have_text("2 experiments, 1 excluded, 1 compared")
    expect(page.get_by_test_id("not-paired")).to_have_count(0)
    expect(page.get_by_test_id("mismatches")).to_have_count(0)
    decision = baseline["decision"]
    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_have_count(1)
    expect(verdict).to_contain_text(STATUS_LABELS[decision["status"]])
    expect(verdict).to_contain_text(decision["reasons"][0])
    expect(verdict).to_contain_text(f"on {decision['metric']} over {decision['n_questions']} questions")
    leader = decision["leader"]
    standing = verdict.locator("tr", has_text=leader)
    expect(standing).to_contain_text(f"{decision['means'][leader]:.3f}")
    expect(standing).to_contain_text(f"{round(decision['prob_best'][leader] * 100)}%")
    # The verdict in the server's words, the same as the Experiment view's and the reports'.
    expect(verdict.get_by_test_id("decision-verdict")).to_have_text(decision["verdict"])

    # Stage 1 shows the server's means; tok@k is better when lower, so its best (bold) cell is the smaller one.
    aggregate = baseline["aggregate"]
    for key in aggregate:
        assert (
            _cell(page, "config-heat", f"baseline/{key}", "recall")
            == f"{aggregate[key]['metrics']['recall']['mean']:.3f}"
        )
    tokens = {key: aggregate[key]["metrics"]["tok_at_k"]["mean"] for key in aggregate}
    assert len(set(tokens.values())) == 2, tokens  # the two strategies' context costs differ at top_k 2
    cheaper = min(tokens, key=tokens.get)
    best = page.get_by_test_id("config-heat").locator("td.best")
    expect(best.filter(has_text=re.compile(rf"^{tokens[cheaper]:.0f}$"))).to_have_count(1)
    cheaper_row = page.get_by_test_id("config-row").filter(has=page.locator("th", has_text=f"baseline/{cheaper}"))
    expect(cheaper_row.locator("td.best", has_text=re.compile(rf"^{tokens[cheaper]:.0f}$"))).to_have_count(1)

    # Stage 2: pick both configurations and read per-question scores.
    keys = [c["key"] for c in baseline["configurations"]]
    expect(page.get_by_test_id("question-heat")).to_have_count(0)
    for key in keys:
        page.get_by_label(f"Compare baseline/{key} per question").check()
    expect(page.get_by_test_id("question-row")).to_have_count(len(QUESTIONS))
    cell = {(c["question_id"], c["config_key"]): c for c in baseline["cells"]}
    ticket = QUESTIONS[1]
    for key in keys:
        expected = cell[(ticket["id"], key)]["metrics"]["recall"]
        assert _cell(page, "question-heat", ticket["question"], f"baseline/{key}") == f"{expected:.3f}"
    page.get_by_label("Per-question metric").select_option(label="token F1")
    expect(page.get_by_label("token F1 per question")).to_be_visible()
    expected = cell[(ticket["id"], keys[0])]["metrics"]["token_f1"]
    assert _cell(page, "question-heat", ticket["question"], f"baseline/{keys[0]}") == f"{expected:.3f}"
    screenshot(page, "decision-board")

    # The exclusion is remembered in this browser; the filters start afresh.
    page.reload()
    expect(page.get_by_test_id("candidate-count")).to_have_text("3 experiments, 1 excluded, 2 compared")
    expect(page.get_by_test_id("config-row")).to_have_count(3)

    # A narrow window: the page itself does not scroll sideways (wide tables scroll inside their panel).
    page.set_viewport_size({"width": 420, "height": 800})
    expect(page.get_by_test_id("config-heat")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 420
    screenshot(page, "decision-board-narrow")
