"""Budget-matched rescoring of stored cells: contexts cut to B tokens (whole chunks, then a proportional part),
evidence counted only in its own document, the default budget and the curve's budgets."""

from __future__ import annotations

import pytest

from chunkbench.benchmarking import context_budget
from chunkbench.benchmarking.model import CellChunk, CellResult


def chunk(start: int, end: int, tokens: int, role: str = "hit", document_id: str | None = None) -> CellChunk:
    return CellChunk(
        chunk_index=0, start_index=start, end_index=end, role=role, score=None, tokens=tokens, document_id=document_id
    )


def test_whole_chunks_fit_then_the_next_is_cut_in_proportion_and_the_rest_dropped() -> None:
    context = [chunk(0, 400, 100), chunk(1000, 1200, 50), chunk(2000, 2400, 100), chunk(3000, 3100, 10)]
    pieces = context_budget.cut(context, 175)
    # 100 + 50 tokens whole; 25 of the third's 100 tokens left: its first quarter (100 of 400 characters).
    assert [(p.start, p.end) for p in pieces] == [(0, 400), (1000, 1200), (2000, 2100)]
    assert [(p.start, p.end) for p in context_budget.cut(context, 10_000)] == [(0, 400), (1000, 1200), (2000, 2400),
                                                                      (3000, 3100)]  # fmt: skip
    assert context_budget.cut(context, 0) == []


def test_span_and_rank_metrics_at_a_budget() -> None:
    references = [(2050, 2150, None)]
    context = [chunk(0, 400, 100), chunk(1000, 1200, 50, role="neighbor"), chunk(2000, 2400, 100)]
    # Cut at 175 tokens: 2000–2100 kept, 50 of the 100 evidence characters.
    assert context_budget.score(context, references, "recall", 175) == 0.5
    assert context_budget.score(context, references, "precision", 175) == pytest.approx(50 / 700)
    assert context_budget.score(context, references, "recall", 1000) == 1.0
    # The relevant hit is the 2nd hit (the neighbour does not count as a rank).
    assert context_budget.score(context, references, "mrr", 1000) == 0.5
    assert context_budget.score(context, references, "hit_at_k", 100) == 0.0
    with pytest.raises(ValueError, match="ndcg_at_k cannot be rescored"):
        context_budget.score(context, references, "ndcg_at_k", 100)


def test_evidence_counts_only_in_its_own_document() -> None:
    context = [chunk(0, 100, 10, document_id="a"), chunk(0, 100, 10, document_id="b")]
    assert context_budget.score(context, [(0, 100, "b")], "recall", 10) == 0.0  # only document a fits
    assert context_budget.score(context, [(0, 100, "b")], "recall", 20) == 1.0
    assert context_budget.score(context, [(0, 100, "b")], "mrr", 20) == 0.5
    # Experiment of one document: chunks and references both without a document id.
    assert context_budget.score([chunk(0, 100, 10)], [(50, 150, None)], "recall", 10) == 0.5


def test_rescore_default_budget_and_curve_from_cells() -> None:
    questions = [
        {"id": "q1", "references": [{"start_index": 0, "end_index": 100, "content": "x"}]},
        {"id": "q2", "references": []},  # no evidence: not scored
        {"id": "q3", "references": [{"start_index": 500, "end_index": 600, "content": "y"}]},
    ]
    cells = [
        CellResult(
            question_id="q1", config_key="A", status="ok", retrieved=(chunk(0, 100, 40),), metrics={"tok_at_k": 40}
        ),
        CellResult(
            question_id="q2", config_key="A", status="ok", retrieved=(chunk(0, 100, 40),), metrics={"tok_at_k": 40}
        ),
        CellResult(
            question_id="q3",
            config_key="A",
            status="ok",
            retrieved=(chunk(300, 500, 40), chunk(500, 600, 40)),
            metrics={"tok_at_k": 80},
        ),
        CellResult(
            question_id="q1", config_key="B", status="ok", retrieved=(chunk(0, 100, 200),), metrics={"tok_at_k": 200}
        ),
        CellResult.failed("q3", "B", "boom"),
    ]
    assert context_budget.rescore(questions, ["A", "B"], cells, metric="recall", budget=40) == {
        "A": [1.0, None, 0.0],
        "B": [0.2, None, None],
    }
    context = context_budget.median_context(["A", "B", "C"], cells)
    assert context == {"A": 40.0, "B": 200.0, "C": None}
    assert context_budget.default_budget(context) == 40
    assert context_budget.default_budget({"A": None}) is None
    budgets = context_budget.curve_budgets(context, 40)
    assert budgets == [25, 40, 50, 75, 100, 125, 150, 175, 200]
    series = context_budget.curve(questions, ["A", "B"], cells, metric="recall", budgets=[40, 200])
    assert series == {"A": [0.5, 1.0], "B": [0.2, 1.0]}
    assert context_budget.budget_metric("ndcg_at_k") == "recall" and context_budget.budget_metric("mrr") == "mrr"
