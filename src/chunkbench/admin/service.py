"""Admin operations that no domain router owns (seed 000 §11, ADR-0006): Chunk Preview."""

from __future__ import annotations

from sqlalchemy.orm import Session

from chunkbench.chunking import service as chunking
from chunkbench.chunking.schemas import ChunkOut, ChunkPreviewOut, StrategyRunOut
from chunkbench.embedding import service as embedding
from chunkbench.models import StrategyName
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.vectors import VectorStore, collection_name


def chunk_preview(
    session: Session,
    store: VectorStore,
    document_id: str,
    strategy: StrategyName,
    *,
    tenant_id: str,
    corpus_model_id: str | None = None,
    offset: int = 0,
    limit: int = 100,
) -> ChunkPreviewOut:
    """The chunks of a document as indexed (read back from Qdrant), with the run's diagnostics.

    Without an explicit Corpus model, the one the document was last processed with is shown.
    """
    document = DocumentRepository(session, tenant_id).get(document_id)
    model_id = (
        corpus_model_id or document.last_corpus_embedding_model_id or embedding.resolve_corpus_model(session, None).id
    )
    payloads = store.scroll_document(
        strategy.value, model_id, tenant_id=tenant_id, document_id=document_id, include_parents=True
    )
    run = chunking.latest_run(session, document_id, strategy, model_id, tenant_id=tenant_id)
    return ChunkPreviewOut(
        document_id=document_id,
        strategy=strategy,
        corpus_model_id=model_id,
        collection=collection_name(strategy, model_id),
        run=StrategyRunOut.model_validate(run) if run is not None else None,
        diagnostics=run.diagnostics if run is not None else {},
        total=len(payloads),
        offset=offset,
        limit=limit,
        chunks=[ChunkOut.model_validate(payload) for payload in payloads[offset : offset + limit]],
    )
