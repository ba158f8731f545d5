"""The seam under :class:`~chunkbench.storage.vectors.VectorStore`: what a vector engine does, engine-neutral.

Two engines implement :class:`VectorEngine`: Qdrant Edge in process (``storage.edge``, the embedded default) and
qdrant-client against a Qdrant server or cluster (``storage.qdrant_server``, when ``CHUNKBENCH_QDRANT_URL`` is
set). The store validates, names collections, builds payloads and words the errors callers see; an engine only
runs raw operations on named collections, with :class:`~chunkbench.storage.points.PointFilter` filters,
:class:`EnginePoint` points and :class:`VectorQuery` searches, and raises :class:`VectorStoreError` (or
:class:`NotFoundError` for a missing collection) naming the operation that failed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkbench.errors import NotFoundError, VectorStoreError
from chunkbench.storage.points import PointFilter, QueryMode

# A migration's progress, reported while the embedded store opens: (points done, points in all, collection).
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class EnginePoint:
    """One point as an engine writes or reads it: id, payload and the vectors it has (a parent has none)."""

    id: str
    payload: dict[str, Any]
    dense: dict[str, list[float]] = field(default_factory=dict)
    sparse: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Layout:
    """A collection's vectors: dense name → (size, distance, lower case), sparse name → modifier (or None)."""

    dense: dict[str, tuple[int, str]]
    sparse: dict[str, str | None]


@dataclass(frozen=True)
class VectorQuery:
    """One search, engine-neutral (the store has checked it): what to rank by, over which points, how deep.

    ``mode`` is DENSE or SPARSE: hybrid search is fused by the store (:mod:`chunkbench.storage.fusion`), over
    rankings it orders itself, so no engine's order of equal scores reaches a result."""

    mode: QueryMode
    where: PointFilter
    limit: int
    dense: list[float] | None = None
    sparse: tuple[list[int], list[float]] | None = None
    exact: bool = True  # False: the HNSW graph where one is built (serving); True: exhaustive (figures repeat)
    idf_corpus: PointFilter | None = None  # BM25's IDF counted over these points; None: the whole collection
    payload_fields: tuple[str, ...] | None = None  # None: the whole payload


def missing_collection(name: str) -> NotFoundError:
    return NotFoundError(
        f"Collection '{name}' does not exist: nothing has been processed with that strategy and embedding "
        "model yet (or the collection was deleted).",
        collection=name,
    )


class VectorEngine(ABC):
    """Raw operations on named collections. Every method may raise VectorStoreError; a missing collection is a
    NotFoundError (:func:`missing_collection`), except where a method says otherwise."""

    is_local: bool
    location: str

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def ping(self) -> None:
        """Raise VectorStoreError unless the engine answers."""

    @abstractmethod
    def names(self) -> list[str]:
        """Every collection's name, sorted."""

    @abstractmethod
    def exists(self, name: str) -> bool: ...

    @abstractmethod
    def create(self, name: str, dimension: int) -> None:
        """A collection of chunkbench's layout: dense (cosine) + bm25 (IDF), tenant and payload indexes."""

    @abstractmethod
    def layout(self, name: str) -> Layout: ...

    @abstractmethod
    def drop(self, name: str) -> None: ...

    @abstractmethod
    def count(self, name: str, where: PointFilter | None = None) -> int:
        """Exact count of the points matching ``where`` (every point when None)."""

    @abstractmethod
    def upsert(self, name: str, points: Sequence[EnginePoint]) -> None: ...

    @abstractmethod
    def delete_ids(self, name: str, ids: Sequence[str]) -> None: ...

    @abstractmethod
    def delete_where(self, name: str, where: PointFilter | None) -> None:
        """Delete the points matching ``where`` (every point when None)."""

    @abstractmethod
    def scroll(
        self, name: str, where: PointFilter | None = None, *, with_payload: bool = True, with_vectors: bool = False
    ) -> list[EnginePoint]:
        """Every point matching ``where``, in the engine's order (by id)."""

    @abstractmethod
    def query(self, name: str, query: VectorQuery) -> list[tuple[dict[str, Any], float]]:
        """(payload, score) of the best ``query.limit`` points by a dense or sparse search, best first (equal scores
        in the engine's own order); a FUSION query is a VectorStoreError."""


def fusion_refused() -> VectorStoreError:
    """The error of a FUSION query sent to an engine (the store fuses: ``storage.fusion``)."""
    return VectorStoreError("An engine runs dense and sparse searches only: the vector store fuses them (RRF).")
