"""Admin operations that no domain router owns (seed 000 §11, ADR-0006): Chunk Preview, health."""

from __future__ import annotations

from sqlalchemy.orm import Session

from chunkbench import __version__
from chunkbench.admin.schemas import (
    AdminHealthOut,
    CapabilitiesOut,
    CapabilityOut,
    ComponentHealthOut,
    EmbeddingCacheClearedOut,
    EmbeddingCacheOut,
)
from chunkbench.config import Settings
from chunkbench.embedding import service as embedding
from chunkbench.embedding.cache import EMBEDDINGS, disk_cache
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.window import window_report
from chunkbench.indexing import service as chunking
from chunkbench.indexing.schemas import ChunkOut, ChunkPreviewOut, StrategyRunOut
from chunkbench.llm.client import get_llm_client
from chunkbench.models import StrategyName
from chunkbench.retrieval.rerank import cross_encoder_availability
from chunkbench.storage import corpus_generation
from chunkbench.storage.db import Database
from chunkbench.storage.points import collection_name
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.vectors import VectorStore, get_vector_store


def clear_collection(session: Session, store: VectorStore, name: str, *, delete: bool) -> None:
    """Wipe a collection's points (``delete=False``) or drop it; every tenant's cached answers may have come from
    it, so every tenant's corpus generation changes (API and CLI alike)."""
    store.delete_collection(name) if delete else store.wipe_collection(name)
    corpus_generation.bump_all(session)


def chunk_preview(
    session: Session,
    settings: Settings,
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
    chunks = [ChunkOut.model_validate(payload) for payload in payloads[offset : offset + limit]]
    window = _window(settings, model_id, payloads[offset : offset + limit], chunks)
    return ChunkPreviewOut(
        document_id=document_id,
        strategy=strategy,
        corpus_model_id=model_id,
        collection=collection_name(strategy, model_id),
        run=StrategyRunOut.model_validate(run) if run is not None else None,
        diagnostics=run.diagnostics if run is not None else {},
        window_tokens=window,
        total=len(payloads),
        offset=offset,
        limit=limit,
        chunks=chunks,
    )


def _window(settings: Settings, model_id: str, payloads: list[dict], chunks: list[ChunkOut]) -> int | None:
    """Mark the page's searchable chunks that pass the Corpus model's window (what it embedded: the enriched text
    when there is one); the window, or None when the model cannot tell."""
    searchable = [(payload, chunk) for payload, chunk in zip(payloads, chunks, strict=True) if not chunk.is_parent]
    texts = [payload.get("enriched_content") or payload.get("text", "") for payload, _ in searchable]
    report = window_report(get_spec(model_id), texts, settings) if texts else None
    if report is None:
        return None
    for (_, chunk), count, beyond in zip(searchable, report.token_counts, report.beyond, strict=True):
        chunk.model_tokens, chunk.beyond_window = count, beyond
    return report.window


def health(database: Database, settings: Settings) -> AdminHealthOut:
    """Ping the database, Qdrant and the configured LLM; every failure is reported, none is raised."""
    db = _database_health(database, settings)
    qdrant, collections = _qdrant_health(settings)
    llm = _llm_health(settings)
    app = ComponentHealthOut(status="ok", ok=True, detail=f"chunkbench {__version__} is serving requests")
    healthy = all(part.ok for part in (db, qdrant, llm))
    return AdminHealthOut(
        status="ok" if healthy else "degraded",
        version=__version__,
        app=app,
        database=db,
        qdrant=qdrant,
        llm=llm,
        collections=collections,
    )


def _database_health(database: Database, settings: Settings) -> ComponentHealthOut:
    engine = database.engine.url.get_backend_name()
    try:
        ok = database.ping()
    except Exception as exc:  # health reports every failure instead of raising it
        return ComponentHealthOut(status="error", ok=False, detail=f"{engine}: {type(exc).__name__}: {exc}")
    if not ok:
        return ComponentHealthOut(status="error", ok=False, detail=f"{engine}: SELECT 1 gave an unexpected answer")
    return ComponentHealthOut(status="ok", ok=True, detail=f"{engine} answers SELECT 1")


def _qdrant_health(settings: Settings) -> tuple[ComponentHealthOut, int | None]:
    where = settings.qdrant_url or f"embedded at {settings.qdrant_path}"
    try:
        # The process's store (the one the API uses): opening it is part of what is checked.
        count = get_vector_store(settings).collection_count()
    except Exception as exc:  # a locked folder or an unreachable server is a finding, not a 500
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return ComponentHealthOut(status="error", ok=False, detail=f"Qdrant ({where}): {message}"), None
    plural = "" if count == 1 else "s"
    return ComponentHealthOut(status="ok", ok=True, detail=f"Qdrant ({where}): {count} collection{plural}"), count


def _llm_health(settings: Settings) -> ComponentHealthOut:
    client = get_llm_client(settings)
    if client is None:
        return ComponentHealthOut(
            status="not_configured",
            ok=True,
            detail="No LLM configured: answers are extractive. Set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL "
            "to use one.",
        )
    probe = client.health()
    if not probe["ok"]:
        return ComponentHealthOut(status="unreachable", ok=False, detail=probe["error"])
    served = "" if probe["model_available"] else f" (but '{client.model}' is not among its models: {probe['models']})"
    return ComponentHealthOut(
        status="reachable", ok=True, detail=f"{client.base_url} answers, model '{client.model}'{served}"
    )


_LLM_SETTING = "CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL"
_CROSS_ENCODER_SETTING = "CHUNKBENCH_CROSS_ENCODER_MODEL"


def capabilities(settings: Settings) -> CapabilitiesOut:
    """What can work now: the LLM (configured and answering), and what needs it (the judge, LLM reranking), and
    cross-encoder reranking (a model set); each unavailable one says why and what to set."""
    llm = _llm_health(settings)
    connected = llm.status == "reachable"
    detail = llm.detail
    if llm.status == "unreachable":
        detail = f"The configured LLM does not answer ({llm.detail}): start it or correct {_LLM_SETTING}."
    llm_out = CapabilityOut(available=connected, detail=detail, setting=None if connected else _LLM_SETTING)

    def needs_llm(feature: str) -> CapabilityOut:
        if connected:
            return CapabilityOut(available=True, detail=f"{feature}: {detail}.")
        return CapabilityOut(available=False, detail=f"{feature} needs an LLM. {detail}", setting=_LLM_SETTING)

    cross_ok, cross_detail = cross_encoder_availability(settings)
    return CapabilitiesOut(
        llm=llm_out,
        judge=needs_llm("The LLM-as-judge"),
        rerankers={
            "none": CapabilityOut(available=True, detail="The retriever's own order."),
            "cross_encoder": CapabilityOut(
                available=cross_ok, detail=cross_detail, setting=None if cross_ok else _CROSS_ENCODER_SETTING
            ),
            "llm": needs_llm("LLM listwise reranking"),
        },
    )


def embedding_cache_stats(settings: Settings) -> EmbeddingCacheOut:
    """The cache file's figures (entries per model, bytes, bound); an empty answer when the disk cache is off."""
    disk = disk_cache(settings)
    if disk is None:
        path = str(settings.embedding_cache_path)
        return EmbeddingCacheOut(path=path, entries=0, bytes=0, max_bytes=0, models={}, enabled=False)
    return EmbeddingCacheOut(**disk.stats())


def clear_embedding_cache(settings: Settings, model_id: str | None = None) -> EmbeddingCacheClearedOut:
    """Forget the cached vectors of every model (or one) in memory and on disk."""
    EMBEDDINGS.clear(model_id)
    disk = disk_cache(settings)
    removed = disk.clear(model_id) if disk is not None else 0
    return EmbeddingCacheClearedOut(removed=removed, model_id=model_id)
