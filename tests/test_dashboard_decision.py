"""What the Decision Board reads: the scores view of an Experiment."""

from __future__ import annotations

import httpx

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
