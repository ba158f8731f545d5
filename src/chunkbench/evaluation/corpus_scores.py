"""Scoring a corpus evaluation: every document on one global axis, Chroma's span metrics and the rank metrics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkbench.chunking.base import Chunk
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.evaluation.ranking import ChunkRef, Evidence, rank_metrics, relevant_chunk_ids
from chunkbench.evaluation.spans import SpanMetrics, TokenMap, span_metrics
from chunkbench.text.tokens import get_tokenizer

SPAN_METRICS = ("recall", "precision", "precision_omega", "iou")
RANK_METRICS = ("recall_at_k", "hit_at_k", "mrr", "ndcg_at_k")

# ``progress(stage, done, total)``: called as each stage advances.
ProgressCallback = Callable[[str, int, int], None]


@dataclass
class SpanEvaluation:
    """The outcome of one evaluation: configuration, per-question scores, summaries and stage timings."""

    config: dict[str, Any]
    documents: int
    questions: int
    chunks: int
    mean_chunk_tokens: float
    per_question: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self, unit: str = "chars") -> dict[str, dict[str, float]]:
        """Chroma's four metrics in ``unit`` ("chars" or "tokens"): mean and population SD, in percent."""
        return {name: _mean_std([q[unit][name] for q in self.per_question], 100) for name in SPAN_METRICS}

    def rank_summary(self) -> dict[str, dict[str, float]]:
        """Rank metrics: ratios in percent, ``tok_at_k`` in tokens; mean and population SD."""
        summary = {name: _mean_std([q["rank"][name] for q in self.per_question], 100) for name in RANK_METRICS}
        summary["tok_at_k"] = _mean_std([q["rank"]["tok_at_k"] for q in self.per_question], 1)
        return summary

    def to_dict(self, *, per_question: bool = False) -> dict[str, Any]:
        """The JSON of ``chunkbench eval spans --json``."""
        data: dict[str, Any] = {**self.summary("chars"), **self.rank_summary()}
        data.update(
            tokens=self.summary("tokens"),
            config=self.config,
            documents=self.documents,
            questions=self.questions,
            chunks=self.chunks,
            mean_chunk_tokens=self.mean_chunk_tokens,
            units={
                "span_metrics": "percent",
                "rank_ratios": "percent",
                "tok_at_k": "cl100k tokens",
                "sd": "population",
            },
            timings=self.timings,
        )
        if per_question:
            data["per_question"] = self.per_question
        return data


def _mean_std(values: Sequence[float], scale: float) -> dict[str, float]:
    array = np.asarray(values, dtype=np.float64) * scale
    # Chroma reports numpy's population SD (ddof=0).
    return {"mean": float(array.mean()), "std": float(array.std())} if len(array) else {"mean": 0.0, "std": 0.0}


class _Axis:
    """One global coordinate axis per unit: document ``d`` starts where the previous one ended, plus one.

    Ranges of different documents then never meet: a reference may sit in any document, and a retrieved chunk
    of another document counts exactly as Chroma counts it (in the denominators, never as evidence).
    """

    def __init__(self, documents: dict[str, str]) -> None:
        tokenizer = get_tokenizer()
        self.char_offset: dict[str, int] = {}
        self.token_offset: dict[str, int] = {}
        self.token_maps: dict[str, TokenMap] = {}
        chars = tokens = 0
        for document_id, text in documents.items():
            starts = tokenizer.boundaries(text)[1].tolist()
            self.char_offset[document_id], self.token_offset[document_id] = chars, tokens
            self.token_maps[document_id] = TokenMap(starts)
            # One unit of gap: a range ending a document never touches one starting the next.
            chars += len(text) + 1
            tokens += len(starts)

    def chars(self, document_id: str, start: int, end: int) -> tuple[int, int]:
        offset = self.char_offset[document_id]
        return (offset + start, offset + end)

    def tokens(self, document_id: str, start: int, end: int) -> tuple[int, int]:
        first, last = self.token_maps[document_id]((start, end))
        offset = self.token_offset[document_id]
        return (offset + first, offset + last)


def score_questions(
    documents: dict[str, str],
    questions: Sequence[BenchmarkQuestion],
    by_document: dict[str, list[Chunk]],
    hits: list[list[ChunkRef]],
    n: int,
    report: ProgressCallback,
) -> list[dict[str, Any]]:
    """Each question's span metrics, in characters and in cl100k tokens, and rank metrics of its ``n`` hits; the
    chunkings of its evidence documents are where its evidence chunks (and precision_Ω) come from."""
    axis = _Axis(documents)
    chunkings = {
        document_id: [ChunkRef(document_id, c.chunk_index, c.start_index, c.end_index, c.token_count) for c in chunks]
        for document_id, chunks in by_document.items()
    }
    results: list[dict[str, Any]] = []
    for position, (question, retrieved) in enumerate(zip(questions, hits, strict=True)):
        # Placed references: each has its document and offsets.
        references = [(str(r.document), *r.span) for r in question.references]
        evidence_documents = list(dict.fromkeys(document for document, _, _ in references))
        chunking = [chunk for d in evidence_documents for chunk in chunkings.get(d, [])]
        evidence = [Evidence(*reference) for reference in references]
        scores: dict[str, Any] = {"id": question.id, "retrieved": [[c.document_id, c.chunk_index] for c in retrieved]}
        for unit, place in (("chars", axis.chars), ("tokens", axis.tokens)):
            metrics = span_metrics(
                [place(c.document_id, c.start_index, c.end_index) for c in retrieved],
                [place(*reference) for reference in references],
                [place(c.document_id, c.start_index, c.end_index) for c in chunking],
            )
            scores[unit] = _span_dict(metrics)
        ranks = rank_metrics(retrieved, relevant_chunk_ids(chunking, evidence), n)
        scores["rank"] = {
            "recall_at_k": ranks.recall_at_k,
            "hit_at_k": ranks.hit_at_k,
            "mrr": ranks.mrr,
            "ndcg_at_k": ranks.ndcg_at_k,
            "tok_at_k": ranks.tok_at_k,
        }
        results.append(scores)
        if position % 64 == 63 or position == len(questions) - 1:
            report("score", position + 1, len(questions))
    return results


def _span_dict(metrics: SpanMetrics) -> dict[str, float]:
    return {
        "recall": metrics.recall,
        "precision": metrics.precision,
        "precision_omega": metrics.precision_omega or 0.0,
        "iou": metrics.iou,
    }
