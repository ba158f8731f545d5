"""The budget-led, honest verdict: the frontier of configurations best for some budget, the winner at the budget
beside the winner at full context, the ceiling case named among its own, practical equivalence and Holm's correction
over a large grid."""

from __future__ import annotations

import json

from chunkbench.benchmarking.decision import decide, frontier


def test_the_frontier_keeps_the_configurations_best_for_some_budget_cheapest_first() -> None:
    means = {"big": 0.85, "mid": 0.70, "dominated": 0.60, "small": 0.50, "twin": 0.50, "unpriced": 0.99}
    context = {"big": 2171.0, "mid": 714.0, "dominated": 900.0, "small": 300.0, "twin": 300.0, "unpriced": None}
    points = frontier(means, context)
    # dominated: less recall than mid at more context; twin: as good as small at the same context, after it.
    assert [p["config"] for p in points] == ["small", "mid", "big"]
    assert points[0] == {"config": "small", "context": 300.0, "mean": 0.5, "from_budget": 300.0, "to_budget": 714.0}
    assert points[-1]["to_budget"] is None
    # Lower is better (the hallucination rate): the cheapest point is kept, then only lower rates.
    assert [p["config"] for p in frontier({"a": 0.2, "b": 0.1, "c": 0.3}, {"a": 1, "b": 2, "c": 3},
                                          higher_is_better=False)] == ["a", "b"]  # fmt: skip


def test_every_decision_stores_its_frontier() -> None:
    scores = {"lean": [0.5, 0.6] * 10, "wide": [0.9, 0.8] * 10, "waste": [0.4, 0.5] * 10}
    decision = decide(scores, {"lean": 300, "wide": 1200, "waste": 2000}, metric="recall")
    stored = json.loads(json.dumps(decision.to_dict()))
    assert [p["config"] for p in stored["frontier"]] == ["lean", "wide"]
