"""Budget-matched comparison: every configuration's context cut to the same number of tokens and scored again.

Ranked on raw recall, the configuration that sends the most text tends to win. At a budget of B tokens each
cell's context is rebuilt from the chunks it stored, in the order it gave them (hits by rank, then the Neighbor
Expansion neighbours): chunks are kept whole while they fit, the first one that does not is **cut
proportionally** (its first ``length × left / tokens`` characters, ``left`` the tokens still free) and the rest
are dropped. Cutting rather than dropping keeps a strategy of large chunks from scoring 0 at any budget under
one chunk. Tokens are the stored chunks' own counts (the text the span metrics score; a parent-child strategy's
parent passages are not counted).

A chunk counts toward a reference only when both name the same document (None = the Experiment's one
document). Only metrics that the stored offsets determine are rescored (``BUDGET_METRICS``); recall@k and nDCG@k
need the strategy's whole chunking, so a Decision on those compares at equal budget on recall.

The default budget is the smallest median tok@k among the configurations: every configuration is cut to what
the leanest one sends on a typical question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, median
from typing import Any

from chunkbench.benchmarking.decision import frontier as decision_frontier
from chunkbench.benchmarking.model import CellChunk, CellResult
from chunkbench.evaluation.spans import span_metrics

SPAN_BUDGET_METRICS = ("recall", "precision", "iou")
RANK_BUDGET_METRICS = ("hit_at_k", "mrr")
BUDGET_METRICS = (*SPAN_BUDGET_METRICS, *RANK_BUDGET_METRICS)
# Budgets of the report's curve: this many, evenly spaced up to the largest median tok@k (and B itself).
CURVE_POINTS = 8
# Documents are laid end to end on one axis this far apart, so ranges of different documents never meet.
_DOCUMENT_STRIDE = 1 << 40

Reference = tuple[int, int, str | None]


@dataclass(frozen=True)
class Piece:
    """The part of a stored chunk that fits in the budget: ``[start, end)`` of its document."""

    start: int
    end: int
    document_id: str | None
    role: str | None


def budget_metric(primary: str | None) -> str:
    """The metric compared at equal budget: the primary metric when the offsets determine it, else recall."""
    return primary if primary in BUDGET_METRICS else "recall"


def cut(retrieved: Sequence[CellChunk], budget: float) -> list[Piece]:
    """The context within ``budget`` tokens: whole chunks while they fit, then the proportional part of the next."""
    pieces: list[Piece] = []
    left = float(budget)
    for chunk in retrieved:
        if chunk.tokens <= left:
            pieces.append(Piece(chunk.start_index, chunk.end_index, chunk.document_id, chunk.role))
            left -= chunk.tokens
            continue
        kept = int((chunk.end_index - chunk.start_index) * left / chunk.tokens)
        if kept > 0:
            pieces.append(Piece(chunk.start_index, chunk.start_index + kept, chunk.document_id, chunk.role))
        break
    return pieces


def references_of(question: Mapping[str, Any]) -> list[Reference]:
    """A stored question's evidence (``model.ExperimentQuestion``) as ``(start, end, document_id)``."""
    return [
        (int(r["start_index"]), int(r["end_index"]), r.get("document_id"))
        for r in question.get("references") or ()
        if r.get("start_index") is not None and r.get("end_index") is not None
    ]


def score(retrieved: Sequence[CellChunk], references: Sequence[Reference], metric: str, budget: float) -> float:
    """One cell's ``metric`` with its context cut to ``budget`` tokens."""
    if metric not in BUDGET_METRICS:
        raise ValueError(f"{metric} cannot be rescored at a budget; use one of {', '.join(BUDGET_METRICS)}")
    pieces = cut(retrieved, budget)
    if metric in RANK_BUDGET_METRICS:
        ranks = [rank for rank, piece in enumerate((p for p in pieces if p.role == "hit"), start=1)
                 if any(_overlaps(piece, reference) for reference in references)]  # fmt: skip
        if not ranks:
            return 0.0
        return 1.0 if metric == "hit_at_k" else 1.0 / ranks[0]
    if not pieces:
        return 0.0
    # One axis for every document: span metrics compare ranges without knowing which document they are in.
    axis: dict[str | None, int] = {}

    def place(start: int, end: int, document_id: str | None) -> tuple[int, int]:
        offset = axis.setdefault(document_id, len(axis)) * _DOCUMENT_STRIDE
        return (start + offset, end + offset)

    evidence = [place(*reference) for reference in references]
    context = [place(p.start, p.end, p.document_id) for p in pieces]
    return float(getattr(span_metrics(context, evidence), metric))


def _overlaps(piece: Piece, reference: Reference) -> bool:
    start, end, document_id = reference
    return piece.document_id == document_id and min(piece.end, end) - max(piece.start, start) >= 1


def rescore(
    questions: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    results: Sequence[CellResult],
    *,
    metric: str,
    budget: float,
) -> dict[str, list[float | None]]:
    """``scores[config][question]`` at ``budget`` tokens; None for a failed or missing cell or no evidence."""
    by_cell = {(r.config_key, r.question_id): r for r in results}
    out: dict[str, list[float | None]] = {}
    for key in keys:
        column: list[float | None] = []
        for question in questions:
            result = by_cell.get((key, str(question["id"])))
            references = references_of(question)
            ok = result is not None and result.ok and references
            column.append(score(result.retrieved, references, metric, budget) if ok else None)  # type: ignore[union-attr]
        out[key] = column
    return out


def median_context(keys: Sequence[str], results: Sequence[CellResult]) -> dict[str, float | None]:
    """Each configuration's median tok@k over its cells that ran (None without any)."""
    values: dict[str, list[float]] = {key: [] for key in keys}
    for result in results:
        tokens = result.metrics.get("tok_at_k")
        if result.ok and result.config_key in values and tokens is not None:
            values[result.config_key].append(float(tokens))
    return {key: float(median(v)) if v else None for key, v in values.items()}


def default_budget(context: Mapping[str, float | None]) -> int | None:
    """The smallest positive median tok@k (None when no configuration has one)."""
    medians = [value for value in context.values() if value]
    return max(1, round(min(medians))) if medians else None


def curve_budgets(context: Mapping[str, float | None], budget: int | None) -> list[int]:
    """The budgets of the report's curve: ``CURVE_POINTS`` steps up to the largest median tok@k, and B."""
    top = max((value for value in context.values() if value), default=0.0)
    steps = {max(1, round(top * i / CURVE_POINTS)) for i in range(1, CURVE_POINTS + 1)} if top else set()
    return sorted(steps | ({budget} if budget else set()))


def curve(
    questions: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    results: Sequence[CellResult],
    *,
    metric: str,
    budgets: Sequence[int],
) -> dict[str, list[float | None]]:
    """Per configuration, the mean ``metric`` at each budget (None where no cell could be scored)."""
    series: dict[str, list[float | None]] = {key: [] for key in keys}
    for value in budgets:
        for key, column in rescore(questions, keys, results, metric=metric, budget=value).items():
            scored = [v for v in column if v is not None]
            series[key].append(fmean(scored) if scored else None)
    return series


def frontier(points: Mapping[str, tuple[float | None, float | None]], *, higher_is_better: bool = True) -> list[str]:
    """The configurations best for some budget, cheapest first (``points``: ``config → (tokens per question, metric
    mean)``; one without both is left out): the Decision's own rule (``decision.frontier``), for Experiments
    decided before it stored one."""
    known = {key: (float(t), float(v)) for key, (t, v) in points.items() if t is not None and v is not None}
    means = {key: value for key, (_tokens, value) in known.items()}
    context: dict[str, float | None] = {key: tokens for key, (tokens, _value) in known.items()}
    return [point["config"] for point in decision_frontier(means, context, higher_is_better=higher_is_better)]
