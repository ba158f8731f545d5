"""Neighbor Expansion (docs/retrieval.md): add the chunks around each ``fixed_size`` hit, and the Expansion Tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chunkbench.chunking.base import capabilities
from chunkbench.models import StrategyName
from chunkbench.retrieval.search import RetrievedChunk
from chunkbench.storage.vectors import VectorStore


@dataclass(frozen=True)
class TreeNeighbour:
    """A chunk in a hit's window: a Neighbor Expansion neighbour, or another hit (``rank`` set), which the tree
    draws as a reference to that hit's own node rather than a second copy of it."""

    chunk: RetrievedChunk
    rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A neighbour's fields; a hit's position and rank only (its text is in its own node)."""
        if self.rank is None:
            return self.chunk.to_dict()
        return {**_ref(self.chunk), "rank": self.rank, "start_index": self.chunk.start_index,
                "end_index": self.chunk.end_index, "document_id": self.chunk.document_id}  # fmt: skip

    def to_ref(self) -> dict[str, Any]:
        return _ref(self.chunk) | ({"rank": self.rank} if self.rank is not None else {})


@dataclass
class ExpansionNode:
    """One hit of the Expansion Tree (``rank`` 1 = best) with the chunks of its window it accounts for: before it
    (nearest last) and after it (nearest first)."""

    hit: RetrievedChunk
    rank: int
    neighbors_prev: list[TreeNeighbour] = field(default_factory=list)
    neighbors_next: list[TreeNeighbour] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the hit's fields, its rank and its neighbour arrays."""
        return {
            **self.hit.to_dict(),
            "rank": self.rank,
            "neighbors_prev": [n.to_dict() for n in self.neighbors_prev],
            "neighbors_next": [n.to_dict() for n in self.neighbors_next],
        }

    def to_refs(self) -> dict[str, Any]:
        """JSON-ready with every chunk as a reference (``chunk_id``, ``chunk_index``, ``role``, ``score``, a hit's
        ``rank``): for a response that carries the chunks' text and fields once, elsewhere."""
        return {
            **_ref(self.hit),
            "rank": self.rank,
            "neighbors_prev": [n.to_ref() for n in self.neighbors_prev],
            "neighbors_next": [n.to_ref() for n in self.neighbors_next],
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
    """``(flat chunks, Expansion Tree)`` for hits given in rank order.

    Only for a strategy that ``expands_neighbours`` (fixed_size) with ``neighbor_prev`` or ``neighbor_next`` > 0;
    otherwise the hits come back unchanged and each tree node has empty neighbour arrays. The flat list holds hits
    plus neighbours, deduplicated by chunk_id (a chunk that is a hit stays a hit, with its score), in index order.
    Neighbours are fetched in one Qdrant call per document (one call when ``document_id`` is given);
    indices below 0 or past the last chunk simply yield no neighbour.

    The tree shows every chunk once: one node per hit, in rank order, and each other chunk of the context under
    the one hit it is drawn under: the nearest hit whose window holds it (a tie: the better-ranked). A hit that lies
    in another hit's window is listed there the same way, once, as a reference (its rank, no text) to its own node.
    """
    tree = [ExpansionNode(hit, rank) for rank, hit in enumerate(hits, start=1)]
    if not capabilities(strategy).expands_neighbours or (neighbor_prev <= 0 and neighbor_next <= 0):
        return list(hits), tree
    prev, nxt = max(neighbor_prev, 0), max(neighbor_next, 0)

    # (document, chunk_index) → chunk; hits first, so a hit is never replaced by its neighbour copy.
    known: dict[tuple[str, int], RetrievedChunk] = {}
    for hit in hits:
        known.setdefault((hit.document_id, hit.chunk_index), hit)
    ranks = {(hit.document_id, hit.chunk_index): rank for rank, hit in enumerate(hits, start=1)}
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

    # Who draws each chunk of a window: (distance, rank) of the nearest hit holding it, the better-ranked on a tie.
    drawn_by: dict[tuple[str, int], tuple[int, int]] = {}
    for node in tree:
        doc, center = node.hit.document_id, node.hit.chunk_index
        for index in range(max(center - prev, 0), center + nxt + 1):
            if index != center and (doc, index) in known:
                claim = (abs(index - center), node.rank)
                drawn_by[(doc, index)] = min(drawn_by.get((doc, index), claim), claim)
    for node in tree:
        doc, center = node.hit.document_id, node.hit.chunk_index
        window = [(doc, i) for i in range(center - prev, center + nxt + 1)]
        drawn = [key for key in window if key in drawn_by and drawn_by[key][1] == node.rank]
        node.neighbors_prev = [TreeNeighbour(known[key], ranks.get(key)) for key in drawn if key[1] < center]
        node.neighbors_next = [TreeNeighbour(known[key], ranks.get(key)) for key in drawn if key[1] > center]

    flat: dict[str, RetrievedChunk] = {hit.chunk_id: hit for hit in hits}
    for chunk in known.values():
        flat.setdefault(chunk.chunk_id, chunk)
    # Documents by name first: an id is fresh per ingest, and the answerer reads the context in this order.
    ordered = sorted(flat.values(), key=lambda c: (c.document_name, c.document_id, c.chunk_index))
    return ordered, tree
