"""Retrievers (dense, BM25, hybrid RRF), the chunks they return, and the optional absolute score floor.

Adding a retriever is one :class:`Retriever` subclass decorated with :func:`register_retriever`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from chunkbench.chunking.base import context_prefix
from chunkbench.config import Settings
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.embedding.sparse import Bm25Encoder
from chunkbench.errors import CollectionMissingError, QueryError
from chunkbench.limits import MAX_TOP_K
from chunkbench.models import RetrieverName, StrategyName
from chunkbench.storage.points import QueryMode
from chunkbench.storage.vectors import VectorStore

__all__ = ["MAX_TOP_K", "RetrievedChunk", "Retriever", "SearchRequest", "get_retriever", "register_retriever"]

Role = Literal["hit", "neighbor", "parent"]


@dataclass
class RetrievedChunk:
    """A chunk as a query sees it: a search hit, a Neighbor Expansion neighbour or a parent."""

    chunk_id: str
    chunk_index: int
    text: str
    score: float | None
    role: Role
    start_index: int
    end_index: int
    token_count: int
    heading_path: list[str]
    parent_id: str | None
    document_id: str
    document_name: str
    strategy_name: str
    payload: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_payload(cls, payload: dict[str, Any], *, score: float | None, role: Role) -> RetrievedChunk:
        """Build from a Qdrant point payload (see ``storage.points.chunk_payload``)."""
        return cls(
            chunk_id=str(payload["chunk_id"]),
            chunk_index=int(payload["chunk_index"]),
            text=str(payload.get("text", "")),
            score=score,
            role=role,
            start_index=int(payload.get("start_index", 0)),
            end_index=int(payload.get("end_index", 0)),
            token_count=int(payload.get("token_count", 0)),
            heading_path=list(payload.get("heading_path") or []),
            parent_id=payload.get("parent_id"),
            document_id=str(payload.get("document_id", "")),
            document_name=str(payload.get("document_name", "")),
            strategy_name=str(payload.get("strategy_name", "")),
            payload=payload,
        )

    @property
    def context_header(self) -> str | None:
        """What must be read before the text (a table part's header rows; ``Chunk.context_header``), or None."""
        header = self.payload.get("context_header")
        return str(header) if header else None

    @property
    def readable_text(self) -> str:
        """What the answerer reads of this chunk: its context header, then its text."""
        header = self.context_header
        return f"{header}\n{self.text}" if header else self.text

    @property
    def prefix(self) -> str | None:
        """The context prefix the chunk was embedded behind (contextual retrieval); None for other strategies."""
        return context_prefix(self.text, self.payload.get("enriched_content"))

    def to_dict(self, *, with_text: bool = True) -> dict[str, Any]:
        """JSON-ready fields (without the raw payload; without the text when ``with_text`` is false)."""
        fields = {
            "chunk_id": self.chunk_id,
            "chunk_index": self.chunk_index,
            "text": self.text,
            "score": self.score,
            "role": self.role,
            "start_index": self.start_index,
            "end_index": self.end_index,
            "token_count": self.token_count,
            "heading_path": list(self.heading_path),
            "parent_id": self.parent_id,
            "document_id": self.document_id,
            "document_name": self.document_name,
            "strategy_name": self.strategy_name,
        }
        if not with_text:
            del fields["text"]
        return fields


@dataclass(frozen=True)
class SearchRequest:
    """Everything a retriever needs for one search."""

    strategy: str
    model_id: str
    tenant_id: str
    document_id: str | tuple[str, ...] | None  # one document, several, or the tenant's whole corpus
    question: str
    query_vector: np.ndarray | None
    # How many hits: the plan's candidate pool (its top_k, or the reranker's candidates), or a benchmark's deeper
    # ranking. The plan checked the bounds (pipeline._check); nothing below it checks them again.
    limit: int
    # Candidates each vector contributes before fusion (hybrid): the reranker's candidate pool at least.
    prefetch_limit: int | None = None
    # Exhaustive search (benchmarks, evaluation: figures repeat); False lets the store walk its HNSW graph (serving).
    exact: bool = True


class Retriever:
    """One way of ranking a collection's chunks for a question. Its capabilities say how the store is queried:
    ``query_mode`` (dense Corpus embedding, BM25 sparse vector, or both fused by RRF), and whether it needs
    the question's embedding and BM25 terms."""

    name: ClassVar[RetrieverName]
    query_mode: ClassVar[QueryMode] = QueryMode.DENSE
    needs_query_vector: ClassVar[bool] = True
    uses_sparse: ClassVar[bool] = False

    def search(self, store: VectorStore, request: SearchRequest) -> list[RetrievedChunk]:
        """The top ``request.limit`` hits (role "hit"), best first."""
        rows = store.search(
            request.strategy,
            request.model_id,
            mode=self.query_mode,
            tenant_id=request.tenant_id,
            document_id=request.document_id,
            top_k=request.limit,
            dense=_require_vector(request, self.name.value) if self.needs_query_vector else None,
            sparse=Bm25Encoder().encode_query(request.question) if self.uses_sparse else None,
            prefetch_limit=request.prefetch_limit,
            exact=request.exact,
        )
        return [RetrievedChunk.from_payload(payload, score=score, role="hit") for payload, score in rows]

    def floor_scores(self, store: VectorStore, request: SearchRequest, hits: list[RetrievedChunk]) -> list[float]:
        """The score the floor is compared with, per hit (by default the hit's own score)."""
        return [hit.score if hit.score is not None else float("-inf") for hit in hits]


_RETRIEVERS: dict[RetrieverName, type[Retriever]] = {}


def register_retriever(cls: type[Retriever]) -> type[Retriever]:
    """Class decorator: make a retriever available by its name (a new name joins :class:`RetrieverName`)."""
    cls.name = RetrieverName.add(cls.name)
    _RETRIEVERS[cls.name] = cls
    return cls


def get_retriever(name: RetrieverName | str) -> Retriever:
    """A retriever instance by name; unknown name → QueryError listing the known ones."""
    try:
        return _RETRIEVERS[RetrieverName(name)]()
    except (ValueError, KeyError):
        raise QueryError(f"Unknown retriever '{name}'. Known: {', '.join(r.value for r in _RETRIEVERS)}.") from None


def _require_vector(request: SearchRequest, retriever: str) -> np.ndarray:
    if request.query_vector is None:
        raise QueryError(f"The {retriever} retriever needs the question's embedding; none was computed.")
    return request.query_vector


@register_retriever
class DenseRetriever(Retriever):
    """Cosine similarity of the Corpus-model embeddings; the floor applies to that cosine."""

    name = RetrieverName.DENSE


@register_retriever
class Bm25Retriever(Retriever):
    """BM25 over the sparse vectors (IDF applied by Qdrant); the floor applies to the raw BM25 score."""

    name = RetrieverName.BM25
    query_mode = QueryMode.SPARSE
    needs_query_vector = False
    uses_sparse = True


@register_retriever
class HybridRetriever(Retriever):
    """Dense + BM25 candidates fused by Reciprocal Rank Fusion (``storage.fusion``); the hit score is the RRF score.

    RRF scores depend on ranks only (1/(k+rank) summed), so an absolute floor on them means nothing;
    the floor applies to each hit's dense cosine instead, obtained by an exact dense query restricted to
    the hit ids (a hit found only by BM25 still gets its true cosine).
    """

    name = RetrieverName.HYBRID
    query_mode = QueryMode.FUSION
    uses_sparse = True

    def floor_scores(self, store: VectorStore, request: SearchRequest, hits: list[RetrievedChunk]) -> list[float]:
        cosines = store.dense_scores(
            request.strategy,
            request.model_id,
            tenant_id=request.tenant_id,
            document_id=request.document_id,
            chunk_ids=[hit.chunk_id for hit in hits],
            dense=_require_vector(request, "hybrid"),
        )
        for hit in hits:
            hit.payload["dense_score"] = cosines.get(hit.chunk_id)
        return [cosines.get(hit.chunk_id, float("-inf")) for hit in hits]


def retrieve(
    store: VectorStore,
    settings: Settings,
    *,
    strategy: StrategyName | str,
    corpus_spec: EmbeddingModelSpec,
    retriever: RetrieverName | str,
    question: str,
    query_vector: np.ndarray | None,
    tenant_id: str,
    document_id: str | tuple[str, ...] | None,
    limit: int,
    score_floor: float | None,
    exact: bool = True,
    depth: int = 0,
) -> list[RetrievedChunk]:
    """The first ``limit`` hits (role "hit", best first) of ``retriever``, minus those under the optional score
    floor; with ``depth`` > ``limit``, that many (the ranking below the top k, to say where a chunk ranked).

    The floor (docs/retrieval.md: absolute, off when ``None``, may leave nothing) compares per retriever:
    dense → cosine similarity; bm25 → raw BM25 score; hybrid → the hit's dense cosine, because RRF
    scores are rank-based and not comparable to any absolute threshold. ``limit`` is the plan's ``candidate_k``
    (its top_k, or the candidates for a reranker; the plan checked its bounds); ``document_id`` one id, several,
    or None (the tenant's whole corpus). ``exact`` (the default) searches exhaustively, so a benchmark's figures repeat;
    the serving faces pass ``exact=False`` to use the collection's HNSW graph where one is built. Hybrid fuses
    ``max(2 * limit, rerank_candidate_k)`` candidates per vector, so a ``depth`` up to that leaves the top k as it
    was without it. Equal scores are ordered by the chunk's place (``storage.fusion.tie_key``) in every ranking.
    """
    if not question.strip():
        raise QueryError("The question is empty.")
    try:
        strategy_value = StrategyName(strategy).value
    except ValueError:
        raise QueryError(f"Unknown strategy '{strategy}'. Known: {', '.join(s.value for s in StrategyName)}.") from None
    engine = get_retriever(retriever)
    if query_vector is not None and np.shape(query_vector)[-1] != corpus_spec.dimension:
        raise QueryError(
            f"The query embedding has {np.shape(query_vector)[-1]} dimensions, but model '{corpus_spec.id}' "
            f"has {corpus_spec.dimension}: embed the question with the Corpus model the document was processed with."
        )
    request = SearchRequest(
        strategy=strategy_value,
        model_id=corpus_spec.id,
        tenant_id=tenant_id,
        document_id=document_id,
        question=question,
        query_vector=query_vector,
        limit=max(limit, depth),
        prefetch_limit=max(2 * limit, settings.rerank_candidate_k),
        exact=exact,
    )
    try:
        hits = engine.search(store, request)
    except CollectionMissingError as exc:
        raise not_processed(exc, document_id) from exc
    if score_floor is None or not hits:
        return hits
    scores = engine.floor_scores(store, request, hits)
    return [hit for hit, score in zip(hits, scores, strict=True) if score >= score_floor]


def not_processed(missing: CollectionMissingError, document_id: str | tuple[str, ...] | None) -> QueryError:
    """The error of a search on a collection nothing was processed into, saying how to process it."""
    strategy, model_id = missing.details["strategy"], missing.details["model_id"]
    single = document_id if isinstance(document_id, str) else None
    what = f"Document '{single}' has" if single else "No document has"
    target = single or "DOCUMENT"
    return QueryError(
        f"{what} not been processed with strategy '{strategy}' and embedding model '{model_id}' "
        f"(collection '{missing.details['collection']}' does not exist). Process it first: `chunkbench process "
        f"{target} --strategies {strategy} --corpus-model {model_id}` or POST /documents/{{document_id}}/process.",
        **missing.details,
    )
