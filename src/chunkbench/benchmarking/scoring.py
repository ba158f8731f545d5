"""Scores of one benchmark cell: span and rank metrics from stored chunk offsets, answer metrics, judge scores.

Everything is computed from offsets (the question's evidence ranges and the chunks' ``start_index`` /
``end_index`` in the document's text), never by searching text at evaluation time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkbench.benchmarking.model import MetricValue, RetrievedChunk
from chunkbench.evaluation import answers, ranking
from chunkbench.evaluation.judge import JudgeVerdict
from chunkbench.evaluation.spans import precision_omega, span_metrics

Range = tuple[int, int]


@dataclass(frozen=True)
class Chunking:
    """A strategy's whole chunking of the document (children only for parent-child), as rank-metric chunks."""

    chunks: tuple[ranking.ChunkRef, ...]

    @classmethod
    def from_payloads(cls, payloads: Sequence[Mapping[str, Any]]) -> Chunking:
        return cls(tuple(_chunk_ref(p) for p in payloads))

    @property
    def ranges(self) -> list[Range]:
        return [(c.start_index, c.end_index) for c in self.chunks]


def _chunk_ref(chunk: Mapping[str, Any]) -> ranking.ChunkRef:
    # One document per benchmark: the document id plays no part in matching chunks to evidence.
    return ranking.ChunkRef(
        document_id="",
        chunk_index=int(chunk["chunk_index"]),
        start_index=int(chunk["start_index"]),
        end_index=int(chunk["end_index"]),
        token_count=int(chunk.get("token_count", chunk.get("tokens", 0)) or 0),
    )


SPAN_METRICS = ("recall", "precision", "precision_omega", "iou")
RANK_METRICS = ("recall_at_k", "hit_at_k", "mrr", "ndcg_at_k")


def retrieval_metrics(
    evidence: Sequence[Range], retrieved: Sequence[RetrievedChunk], chunking: Chunking, *, top_k: int
) -> dict[str, MetricValue]:
    """Chroma's span metrics over the whole context (hits and neighbours), rank metrics over the ranked hits."""
    if not evidence:
        return dict.fromkeys((*SPAN_METRICS, *RANK_METRICS))
    context = [(c.start_index, c.end_index) for c in retrieved]
    spans = span_metrics(context, evidence, chunking.ranges) if context else None
    relevant = ranking.relevant_chunk_ids(chunking.chunks, [ranking.Evidence("", s, e) for s, e in evidence])
    hits = [
        ranking.ChunkRef("", c.chunk_index, c.start_index, c.end_index, c.tokens) for c in retrieved if c.role == "hit"
    ]
    ranks = ranking.rank_metrics(hits, relevant, k=top_k)
    return {
        "recall": spans.recall if spans else 0.0,
        "precision": spans.precision if spans else 0.0,
        "precision_omega": spans.precision_omega if spans else precision_omega(chunking.ranges, evidence),
        "iou": spans.iou if spans else 0.0,
        **{name: getattr(ranks, name) for name in RANK_METRICS},
    }


def answer_scores(answer: str, expected: str | None, vectors: np.ndarray | None) -> dict[str, float | None]:
    """Exact match, token F1 and embedding similarity against the expected answer (None without one)."""
    if not expected:
        return {"exact_match": None, "token_f1": None, "answer_similarity": None}
    measured = answers.answer_metrics(
        answer, expected, None if vectors is None else vectors[0], None if vectors is None else vectors[1]
    )
    return {
        "exact_match": measured.exact_match,
        "token_f1": measured.token_f1,
        "answer_similarity": measured.answer_similarity,
    }


def judge_scores(verdict: JudgeVerdict | None) -> dict[str, Any]:
    """The judge's scores under the ``judge_`` prefix (None when not judged or when every attempt failed)."""
    if verdict is None:
        return dict.fromkeys(
            ("judge_context_relevance", "judge_answer_similarity", "judge_faithfulness", "judge_hallucination")
        )
    return {
        "judge_context_relevance": verdict.context_relevance,
        "judge_answer_similarity": verdict.answer_similarity,
        "judge_faithfulness": verdict.faithfulness,
        "judge_hallucination": verdict.hallucination,
    }
