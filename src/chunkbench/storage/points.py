"""What a point of the vector store is: collection names, point ids, the chunk payload, filters, search modes.

The payload schema belongs to the store: it filters on ``tenant_id``, ``document_id``, ``is_parent`` and
``chunk_index`` and hands payloads back to retrieval; a chunk reaches it through the :class:`StoredChunk`
protocol, so storage knows no chunking class. Nothing here is engine-specific: a :class:`PointFilter` says
which points an access touches, and each engine (``storage.edge``, ``storage.qdrant_server``) translates it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import numpy as np

from chunkbench.errors import VectorStoreError
from chunkbench.models import StrategyName

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"
_COLLECTION_NAME = re.compile(r"^(?P<strategy>[a-z0-9_]+?)__(?P<model>.+)_collection$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class StoredChunk(Protocol):
    """A chunk as the store writes it: the fields of its point payload (``chunking.base.Chunk`` is one)."""

    chunk_id: str
    document_id: str
    document_name: str

    # Read-only: the store never sets it, and Chunk's is the narrower StrategyName (a str).
    @property
    def strategy_name(self) -> str: ...

    chunk_index: int
    text: str
    start_index: int
    end_index: int
    token_count: int
    character_count: int
    heading_path: list[str]
    parent_id: str | None
    is_parent: bool
    enriched_content: str | None
    context_header: str | None
    injection_risk: float | None
    injection_reasons: tuple[str, ...]


class QueryMode(StrEnum):
    """Which of a collection's vectors a search ranks by: the dense embedding, BM25 sparse, or both fused (RRF)."""

    DENSE = "dense"
    SPARSE = "sparse"
    FUSION = "fusion"


class SparseLike(Protocol):
    """Anything with parallel ``indices`` / ``values`` (``SparseEmbedding``, Qdrant's ``SparseVector``)."""

    # Read-only (properties): so list fields (SparseEmbedding's, SparseVector's) satisfy them.
    @property
    def indices(self) -> Sequence[int]: ...

    @property
    def values(self) -> Sequence[float]: ...


@dataclass(frozen=True)
class ReplaceResult:
    """What :meth:`VectorStore.replace_document_chunks` did."""

    collection: str
    upserted: int
    removed: int


def sanitize_model_id(model_id: str) -> str:
    """``model_id`` with every character outside ``[A-Za-z0-9._-]`` (``:``, ``/``, …) replaced by ``-``."""
    return _UNSAFE.sub("-", model_id)


def collection_name(strategy: StrategyName | str, model_id: str) -> str:
    """``{strategy}__{sanitized model}_collection`` (docs/embedding.md)."""
    try:
        strategy_value = StrategyName(strategy).value
    except ValueError as exc:
        known = ", ".join(s.value for s in StrategyName)
        raise VectorStoreError(f"Unknown strategy '{strategy}'. Known: {known}.") from exc
    if not model_id:
        raise VectorStoreError("A collection needs an embedding model id; got an empty one.")
    return f"{strategy_value}__{sanitize_model_id(model_id)}_collection"


def parse_collection_name(name: str) -> tuple[str | None, str | None]:
    """``(strategy, sanitized model)`` of a chunkbench collection name, ``(None, None)`` for any other."""
    match = _COLLECTION_NAME.match(name)
    if match is None or match["strategy"] not in {s.value for s in StrategyName}:
        return None, None
    return match["strategy"], match["model"]


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk: ``uuid5(NAMESPACE_URL, chunk_id)``, stable across runs."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, chunk_id))


def chunk_payload(chunk: StoredChunk, *, tenant_id: str, model_id: str) -> dict[str, Any]:
    """The payload of a chunk's point.

    ``enriched_content`` is stored only when set (contextual retrieval): it is what was embedded, the
    Chunk Preview shows it, and other strategies pay nothing for it. ``enriched`` flags it either way.
    """
    payload: dict[str, Any] = {
        "chunk_id": chunk.chunk_id,
        "document_id": chunk.document_id,
        "document_name": chunk.document_name,
        "strategy_name": StrategyName(chunk.strategy_name).value,
        "chunk_index": chunk.chunk_index,
        "text": chunk.text,
        "start_index": chunk.start_index,
        "end_index": chunk.end_index,
        "token_count": chunk.token_count,
        "character_count": chunk.character_count,
        "heading_path": list(chunk.heading_path),
        "parent_id": chunk.parent_id,
        "is_parent": chunk.is_parent,
        "tenant_id": tenant_id,
        "embedding_model_id": model_id,
        "enriched": chunk.enriched_content is not None,
    }
    if chunk.enriched_content is not None:
        payload["enriched_content"] = chunk.enriched_content
    if chunk.context_header is not None:
        payload["context_header"] = chunk.context_header
    if chunk.injection_risk is not None:
        payload["injection_risk"] = chunk.injection_risk
        payload["injection_reasons"] = list(chunk.injection_reasons)
    return payload


@dataclass(frozen=True)
class PointFilter:
    """Which points an access touches, engine-neutral: a tenant, optionally some documents, points or indices.

    ``include_parents=False`` keeps only searchable chunks (parents have no vectors and are never hits).
    ``document_ids``/``point_ids``/``chunk_indices`` of ``None`` do not filter; an empty tuple matches nothing.
    """

    tenant_id: str
    document_ids: tuple[str, ...] | None = None
    include_parents: bool = True
    point_ids: tuple[str, ...] | None = None
    chunk_indices: tuple[int, ...] | None = None


def document_filter(
    tenant_id: str,
    document_id: str | Sequence[str] | None = None,
    *,
    include_parents: bool = True,
    chunk_ids: Sequence[str] | None = None,
    chunk_indices: Sequence[int] | None = None,
) -> PointFilter:
    """The filter every point access goes through: this tenant, optionally these documents, maybe no parents."""
    documents = (document_id,) if isinstance(document_id, str) else None if document_id is None else tuple(document_id)
    return PointFilter(
        tenant_id=tenant_id,
        document_ids=documents,
        include_parents=include_parents,
        point_ids=None if chunk_ids is None else tuple(point_id(c) for c in dict.fromkeys(chunk_ids)),
        chunk_indices=None if chunk_indices is None else tuple(int(i) for i in chunk_indices),
    )


def chunk_order(payload: dict[str, Any]) -> tuple[bool, int]:
    return bool(payload.get("is_parent")), int(payload.get("chunk_index", 0))


def validate_document_points(
    strategy: str,
    model_id: str,
    dimension: int,
    chunks: Sequence[StoredChunk],
    dense: np.ndarray,
    sparse: Sequence[SparseLike],
    document_id: str | None,
) -> str:
    """Check one document's chunks and vectors before anything is written; return the document id."""
    document_ids = {c.document_id for c in chunks} | ({document_id} if document_id is not None else set())
    if len(document_ids) != 1:
        raise VectorStoreError(
            "replace_document_chunks takes the chunks of exactly one document "
            + (f"(got {sorted(document_ids)})." if document_ids else "(pass document_id when there are no chunks).")
        )
    wrong_strategy = {str(c.strategy_name) for c in chunks} - {strategy}
    if wrong_strategy:
        raise VectorStoreError(f"Chunks of strategies {sorted(wrong_strategy)} cannot go to a '{strategy}' collection.")
    ids = [c.chunk_id for c in chunks]
    if len(set(ids)) != len(ids):
        raise VectorStoreError("Chunk ids repeat within the document; each chunk must have its own id.")
    children = sum(not c.is_parent for c in chunks)
    shape = getattr(dense, "shape", None)
    expected = (children, dimension)
    if shape is None or len(shape) != 2 or tuple(shape) != expected:
        raise VectorStoreError(
            f"Dense vectors of model '{model_id}' have shape {shape}, expected {expected} "
            f"({children} non-parent chunks × dimension {dimension})."
        )
    if not np.isfinite(dense).all():
        raise VectorStoreError(f"Dense vectors of model '{model_id}' contain NaN or infinite values.")
    if len(sparse) != children:
        raise VectorStoreError(f"Got {len(sparse)} sparse vectors for {children} non-parent chunks.")
    for terms in sparse:
        if len(terms.indices) != len(terms.values):
            raise VectorStoreError("A sparse vector has different numbers of indices and values.")
    return document_ids.pop()
