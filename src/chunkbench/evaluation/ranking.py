"""Chunk-level rank metrics of one question: recall@k, hit@k, MRR, nDCG@k and tok@k.

A chunk is *relevant* to a question when its character range overlaps one of the question's evidence
ranges in the same document by at least one character (ranges that only touch do not count). The set of
relevant chunks is taken over the document's whole chunking, so recall@k says how much of what this
chunking could have returned was returned.

Definitions over the retrieved chunks, best first, cut to the top ``k``:

* recall@k: relevant chunks in the top k / all relevant chunks (0 when the chunking has none);
* hit@k: 1 if any of the top k is relevant, else 0;
* MRR: 1 / rank of the first relevant chunk in the top k (ranks start at 1), 0 if none is relevant;
* nDCG@k: binary gains, DCG = Σ rel_i / log2(i + 1) over ranks i = 1..k, divided by the ideal DCG
  Σ 1 / log2(i + 1) over i = 1..min(k, |relevant|) (0 when nothing is relevant);
* tok@k: cl100k tokens of the top-k context, the sum of the chunks' token counts (what a generator would
  read; overlapping chunks count their shared tokens twice, chunks of other documents count too).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ChunkKey = tuple[str, int]  # (document_id, chunk_index)


@dataclass(frozen=True)
class ChunkRef:
    """A chunk as the rank metrics see it: where it is and how many tokens it holds."""

    document_id: str
    chunk_index: int
    start_index: int
    end_index: int
    token_count: int = 0

    @property
    def key(self) -> ChunkKey:
        return (self.document_id, self.chunk_index)


@dataclass(frozen=True)
class Evidence:
    """A character range ``[start_index, end_index)`` of a document that answers the question."""

    document_id: str
    start_index: int
    end_index: int


@dataclass(frozen=True)
class RankMetrics:
    """Rank metrics of one question; ratios in [0, 1], ``tok_at_k`` in tokens."""

    recall_at_k: float
    hit_at_k: float
    mrr: float
    ndcg_at_k: float
    tok_at_k: int


def overlaps(chunk: ChunkRef, evidence: Evidence) -> bool:
    """Same document and at least one shared character (touching ranges do not overlap)."""
    return (
        chunk.document_id == evidence.document_id
        and min(chunk.end_index, evidence.end_index) - max(chunk.start_index, evidence.start_index) >= 1
    )


def relevant_chunk_ids(chunking: Iterable[ChunkRef], evidence: Sequence[Evidence]) -> set[ChunkKey]:
    """Keys of the chunks (of the full chunking) that overlap any evidence range."""
    return {chunk.key for chunk in chunking if any(overlaps(chunk, item) for item in evidence)}


def rank_metrics(retrieved: Sequence[ChunkRef], relevant_ids: set[ChunkKey], k: int) -> RankMetrics:
    """The metrics of the ``retrieved`` chunks (best first) cut at ``k``, against all ``relevant_ids``."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k}.")
    top = list(retrieved[:k])
    gains = [1 if chunk.key in relevant_ids else 0 for chunk in top]
    found = len({chunk.key for chunk in top if chunk.key in relevant_ids})
    first = next((rank for rank, gain in enumerate(gains, start=1) if gain), None)
    dcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(k, len(relevant_ids)) + 1))
    return RankMetrics(
        recall_at_k=found / len(relevant_ids) if relevant_ids else 0.0,
        hit_at_k=1.0 if first is not None else 0.0,
        mrr=1.0 / first if first is not None else 0.0,
        ndcg_at_k=dcg / ideal if ideal else 0.0,
        tok_at_k=sum(chunk.token_count for chunk in top),
    )
