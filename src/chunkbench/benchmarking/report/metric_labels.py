"""The metrics a report shows: how each is labelled, formatted and charted."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    """How a metric is labelled, formatted and charted."""

    key: str
    label: str
    digits: int
    # Chart domain; ``high=None`` means from the data (token counts).
    low: float = 0.0
    high: float | None = 1.0
    higher_is_better: bool = True


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("recall", "Recall", 2),
    MetricSpec("precision", "Precision", 3),
    MetricSpec("precision_omega", "Precision Ω", 2),
    MetricSpec("iou", "IoU", 3),
    MetricSpec("recall_at_k", "Recall@k", 2),
    MetricSpec("hit_at_k", "Hit@k", 2),
    MetricSpec("mrr", "MRR", 2),
    MetricSpec("ndcg_at_k", "nDCG@k", 2),
    MetricSpec("tok_at_k", "Context tokens", 0, high=None, higher_is_better=False),
    MetricSpec("exact_match", "Exact match", 2),
    MetricSpec("token_f1", "Token F1", 2),
    MetricSpec("answer_similarity", "Answer similarity", 2),
    # The judge scores 1–10; charts start at 0 so bars stay comparable.
    MetricSpec("judge_context_relevance", "Judge: context relevance", 1, high=10.0),
    MetricSpec("judge_answer_similarity", "Judge: answer similarity", 1, high=10.0),
    MetricSpec("judge_faithfulness", "Judge: faithfulness", 1, high=10.0),
    MetricSpec("judge_hallucination", "Judge: hallucination", 2, higher_is_better=False),
)
METRIC_BY_KEY = {m.key: m for m in METRICS}
