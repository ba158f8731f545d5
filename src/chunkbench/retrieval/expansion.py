"""Neighbor Expansion (seed 000 §9.2): add the chunks around each ``fixed_size`` hit, and the Expansion Tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chunkbench.chunking.base import capabilities
from chunkbench.models import StrategyName
from chunkbench.retrieval.search import RetrievedChunk
from chunkbench.storage.vectors import VectorStore


@dataclass
class ExpansionNode:
    """One hit of the Expansion Tree with the chunks before and after it (each nearest-last / nearest-first)."""

    hit: RetrievedChunk
    neighbors_prev: list[RetrievedChunk] = field(default_factory=list)
    neighbors_next: list[RetrievedChunk] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the hit's fields plus its neighbour arrays."""
        return {
            **self.hit.to_dict(),
            "neighbors_prev": [n.to_dict() for n in self.neighbors_prev],
            "neighbors_next": [n.to_dict() for n in self.neighbors_next],
        }

    def to_refs(self) -> dict[str, Any]:
        """JSON-ready with every chunk as a reference (``chunk_id``, ``chunk_index``, ``role``, ``score``):
        for a response that carries the chunks' text and fields once, elsewhere."""
        return {
            **_ref(self.hit),
            "neighbors_prev": [_ref(n) for n in self.neighbors_prev],
            "neighbors_next": [_ref(n) for n in self.neighbors_next],
        }


def _ref(chunk: RetrievedChunk) -> dict[str, Any]:
    return {"chunk_id": chunk.chunk_id, "chunk_index": chunk.chunk_index, "role": chunk.role, "score": chunk.score}


def apply_neighbor_expansion(
    store: VectorStore,
    hits: list[RetrievedChunk],
    *,
    strategy: StrategyName | str,
    model_id: str,
    tenant_id: str,
    document_id: str | None,
    neighbor_prev: int,
    neighbor_next: int,
) -> tuple[list[RetrievedChunk], list[ExpansionNode]]:
    """``(flat chunks, Expansion Tree)`` for hits given in score order.

    Only for a strategy that ``expands_neighbours`` (fixed_size) with ``neighbor_prev`` or ``neighbor_next`` > 0;
    otherwise the hits come back unchanged and each tree node has empty neighbour arrays. The flat list holds hits
    plus neighbours, deduplicated by chunk_id (a chunk that is a hit stays a hit, with its score), in index order.
    Neighbours are fetched in one Qdrant call per document (one call when ``document_id`` is given);
    indices below 0 or past the last chunk simply yield no neighbour.
    """
    tree = [ExpansionNode(hit) for hit in hits]
    if not capabilities(strategy).expands_neighbours or (neighbor_prev <= 0 and neighbor_next <= 0):
        return list(hits), tree
    prev, nxt = max(neighbor_prev, 0), max(neighbor_next, 0)

    # (document, chunk_index) → chunk; hits first, so a hit is never replaced by its neighbour copy.
    known: dict[tuple[str, int], RetrievedChunk] = {}
    for hit in hits:
        known.setdefault((hit.document_id, hit.chunk_index), hit)
    wanted: dict[str, set[int]] = {}
    for hit in hits:
        doc = document_id or hit.document_id
        for index in range(hit.chunk_index - prev, hit.chunk_index + nxt + 1):
            if index >= 0 and (doc, index) not in known:
                wanted.setdefault(doc, set()).add(index)
    for doc, indices in wanted.items():
        for payload in store.get_chunks_by_indices(
            strategy, model_id, tenant_id=tenant_id, document_id=doc, indices=sorted(indices)
        ):
            neighbour = RetrievedChunk.from_payload(payload, score=None, role="neighbor")
            known.setdefault((neighbour.document_id, neighbour.chunk_index), neighbour)

    for node in tree:
        doc, center = node.hit.document_id, node.hit.chunk_index
        node.neighbors_prev = [known[(doc, i)] for i in range(max(center - prev, 0), center) if (doc, i) in known]
        node.neighbors_next = [known[(doc, i)] for i in range(center + 1, center + nxt + 1) if (doc, i) in known]

    flat: dict[str, RetrievedChunk] = {hit.chunk_id: hit for hit in hits}
    for node in tree:
        for neighbour in (*node.neighbors_prev, *node.neighbors_next):
            flat.setdefault(neighbour.chunk_id, neighbour)
    ordered = sorted(flat.values(), key=lambda c: (c.document_id, c.chunk_index))
    return ordered, tree
