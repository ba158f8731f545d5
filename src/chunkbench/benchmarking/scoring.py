"""Scores of one benchmark cell: span and rank metrics from stored chunk offsets, answer metrics, judge scores.

Everything is computed from offsets (the question's evidence ranges and the chunks' ``start_index`` /
``end_index`` in the document's text), never by searching text at evaluation time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkbench.benchmarking.model import CellChunk, EvidenceChunk, EvidenceRanks, MetricValue
from chunkbench.evaluation import answers, ranking
from chunkbench.evaluation.judge import JudgeVerdict
from chunkbench.evaluation.spans import SPAN_METRICS, precision_omega, span_metrics

Range = tuple[int, int]
# Evidence: (document id, start, end).
Span = tuple[str, int, int]


@dataclass(frozen=True)
class Chunking:
    """A strategy's whole chunking (children only for parent-child) of every document of the Experiment, embedded
    with one Corpus model, as rank-metric chunks, and the documents on one global character axis.

    Document ``d`` starts on the axis where the previous one ended, plus one, so ranges of different documents
    never meet, not even at an end point: a retrieved chunk of another document counts in the precision and IoU
    denominators and never as evidence (Chroma's protocol). With one
    document the axis is its own offsets.
    """

    chunks: tuple[ranking.ChunkRef, ...]
    # Where each document starts on the global axis.
    offsets: Mapping[str, int]

    @classmethod
    def from_payloads(cls, lengths: Mapping[str, int], payloads: Sequence[Mapping[str, Any]]) -> Chunking:
        """``lengths``: each document's text length, in the Experiment's document order."""
        offsets: dict[str, int] = {}
        position = 0
        for document_id, length in lengths.items():
            offsets[document_id] = position
            position += length + 1
        return cls(tuple(_chunk_ref(p) for p in payloads), offsets)

    @property
    def sole_document(self) -> str | None:
        return next(iter(self.offsets)) if len(self.offsets) == 1 else None

    def place(self, document_id: str, start: int, end: int) -> Range:
        offset = self.offsets[document_id]
        return (offset + start, offset + end)

    def of_documents(self, document_ids: set[str]) -> list[ranking.ChunkRef]:
        return [c for c in self.chunks if c.document_id in document_ids]


def _chunk_ref(chunk: Mapping[str, Any]) -> ranking.ChunkRef:
    return ranking.ChunkRef(
        document_id=str(chunk["document_id"]),
        chunk_index=int(chunk["chunk_index"]),
        start_index=int(chunk["start_index"]),
        end_index=int(chunk["end_index"]),
        token_count=int(chunk.get("token_count", chunk.get("tokens", 0)) or 0),
    )


RANK_METRICS = ("recall_at_k", "hit_at_k", "mrr", "ndcg_at_k")


def retrieval_metrics(
    evidence: Sequence[Span], retrieved: Sequence[CellChunk], chunking: Chunking, *, top_k: int
) -> dict[str, MetricValue]:
    """Chroma's span metrics over the whole context (hits and neighbours), rank metrics over the ranked hits.

    A chunk without a document id is the Experiment's one document's. Relevant chunks and precision_Ω come from
    the evidence documents' chunks only: another document's chunks never touch the evidence on the axis.
    """
    if not evidence:
        return dict.fromkeys((*SPAN_METRICS, *RANK_METRICS))
    sole = chunking.sole_document
    located = [(c, c.document_id or sole) for c in retrieved]
    context = [chunking.place(str(d), c.start_index, c.end_index) for c, d in located]
    references = [chunking.place(*span) for span in evidence]
    own = chunking.of_documents({d for d, _, _ in evidence})
    own_ranges = [chunking.place(c.document_id, c.start_index, c.end_index) for c in own]
    spans = span_metrics(context, references, own_ranges) if context else None
    relevant = ranking.relevant_chunk_ids(own, [ranking.Evidence(*span) for span in evidence])
    hits = [
        ranking.ChunkRef(str(d), c.chunk_index, c.start_index, c.end_index, c.tokens) for c, d in located
        if c.role == "hit"
    ]  # fmt: skip
    ranks = ranking.rank_metrics(hits, relevant, k=top_k)
    return {
        "recall": spans.recall if spans else 0.0,
        "precision": spans.precision if spans else 0.0,
        "precision_omega": spans.precision_omega if spans else precision_omega(own_ranges, references),
        "iou": spans.iou if spans else 0.0,
        **{name: getattr(ranks, name) for name in RANK_METRICS},
    }


def evidence_ranks(
    evidence: Sequence[Span], ranked: Sequence[ranking.ChunkKey], chunking: Chunking, *, depth: int
) -> EvidenceRanks | None:
    """The chunks of ``chunking`` that overlap the evidence, in document order, each with its 1-based rank in
    ``ranked`` (``(document id, chunk index)``, best first, asked ``depth`` deep); None without evidence."""
    if not evidence:
        return None
    rank_of: dict[ranking.ChunkKey, int] = {}
    for rank, key in enumerate(ranked, start=1):
        rank_of.setdefault(key, rank)
    references = [ranking.Evidence(*span) for span in evidence]
    own = chunking.of_documents({d for d, _, _ in evidence})
    chunks = []
    for chunk in sorted(own, key=lambda c: (chunking.offsets[c.document_id], c.chunk_index)):
        overlapped = tuple(i for i, reference in enumerate(references) if ranking.overlaps(chunk, reference))
        if overlapped:
            document = None if chunking.sole_document else chunk.document_id
            chunks.append(
                EvidenceChunk(
                    chunk_index=chunk.chunk_index,
                    start_index=chunk.start_index,
                    end_index=chunk.end_index,
                    rank=rank_of.get(chunk.key),
                    references=overlapped,
                    document_id=document,
                )
            )
    return EvidenceRanks(depth=depth, ranked=len(ranked), chunks=tuple(chunks))


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
