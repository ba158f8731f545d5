"""The order of a search's results: equal scores broken by the chunk's place, and Reciprocal Rank Fusion.

An engine returns equal scores in whatever order its segments, insertion history or hash maps give (Qdrant's
RRF collects the fused scores in a hash map seeded per process), so a top-k cut through a run of equal scores
would keep different chunks in different runs. Every ranking the store returns is therefore sorted by
(score, descending; then :func:`tie_key`), and hybrid search fuses here, over rankings already in that order.

The tie key is the chunk's place in the corpus, (document name, chunk index), then its chunk id: the name and
index are the same in every ingest of the same files, whatever order they were ingested in (a document id is
a fresh uuid per ingest, so it alone would order equal scores differently in a re-ingested corpus); the chunk
id settles chunks of two same-named documents at the same index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# RRF's ranking constant: score = Σ 1 / (k + rank), rank from 0. 2 is Qdrant's default (server and local mode).
RRF_K = 2

Row = tuple[dict[str, Any], float]


def tie_key(payload: Mapping[str, Any]) -> tuple[str, int, str]:
    """What orders chunks of equal score: (document name, chunk index, chunk id)."""
    return (str(payload.get("document_name", "")), int(payload.get("chunk_index", 0)), str(payload.get("chunk_id", "")))


def ranked(rows: Sequence[Row]) -> list[Row]:
    """``rows`` best first: by score, descending, then by :func:`tie_key` (the same order in every run)."""
    return sorted(rows, key=lambda row: (-row[1], tie_key(row[0])))


def cut_is_settled(rows: Sequence[Row], depth: int, fetched: int) -> bool:
    """Whether the best ``depth`` of ``rows`` (an engine's answer to a search for ``fetched`` points, best first)
    are the same whatever order the engine gives equal scores: the engine had no more points, or the last point it
    returned scores below the one at the cut, so every point tied with the cut is among ``rows``."""
    if len(rows) < fetched or len(rows) <= depth:
        return True
    return rows[-1][1] < rows[depth - 1][1]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Row]], limit: int, k: int = RRF_K) -> list[Row]:
    """The best ``limit`` chunks of ``rankings`` (each best first, as :func:`ranked` orders) by RRF: Σ 1/(k + rank),
    rank from 0, over the rankings a chunk is in; equal fused scores by :func:`tie_key`. Qdrant's formula."""
    fused: dict[str, float] = {}
    payloads: dict[str, dict[str, Any]] = {}
    for ranking in rankings:
        for rank, (payload, _score) in enumerate(ranking):
            key = str(payload.get("chunk_id", ""))
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
            payloads.setdefault(key, payload)
    return ranked([(payloads[key], score) for key, score in fused.items()])[:limit]
