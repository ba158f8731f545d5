"""Admin operations that no domain router owns (docs/api.md): Chunk Preview, health."""

from __future__ import annotations

from sqlalchemy.orm import Session

from chunkbench import __version__
from chunkbench.admin.schemas import (
    AdminHealthOut,
    CapabilitiesOut,
    CapabilityOut,
    CollectionOut,
    ComponentHealthOut,
    EmbeddingCacheClearedOut,
    EmbeddingCacheOut,
)
from chunkbench.chunking.base import context_prefix, strategy_class
from chunkbench.chunking.diagnostics import TINY_CHUNK_TOKENS, token_histograms
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.cache import EMBEDDINGS, disk_cache
from chunkbench.embedding.registry import REGISTRY, get_spec, language_warnings
from chunkbench.embedding.window import window_report
from chunkbench.errors import InvalidRequestError, NotFoundError, PermissionDeniedError
from chunkbench.indexing import processing
from chunkbench.indexing.schemas import (
    ChunkOut,
    ChunkPreviewOut,
    ChunkSizesOut,
    ChunkSizesRunOut,
    LanguageWarningOut,
    StrategyRunOut,
)
from chunkbench.llm.client import get_llm_client
from chunkbench.models import StrategyName
from chunkbench.retrieval.rerank import cross_encoder_availability
from chunkbench.storage import corpus_generation
from chunkbench.storage.db import Database
from chunkbench.storage.index_state import mark_not_indexed
from chunkbench.storage.points import collection_name
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import VectorStore, get_vector_store
from chunkbench.text.tokens import count_tokens


def list_collections(store: VectorStore, *, tenant_id: str | None) -> list[CollectionOut]:
    """Every collection with its point count (``tenant_id`` None: the operator), or the collections holding the
    tenant's points with only its own counts (a tenant admin learns nothing of other tenants, not even which
    strategies and models they index with)."""
    listed = store.list_collections(tenant_id)
    return [CollectionOut(**info) for info in listed if tenant_id is None or info["points"]]


def clear_collection(
    database: Database, store: VectorStore, name: str, *, delete: bool, tenant_id: str | None = None
) -> int:
    """Wipe a collection's points (``delete=False``) or drop it (the operator's alone); ``tenant_id`` wipes only that
    tenant's points. The runs whose points go are marked not indexed and committed first, then the points are
    deleted, then the cached answers that may have come from them are made stale. Returns the runs marked."""
    if delete and tenant_id is not None:
        raise PermissionDeniedError(
            f"Dropping collection '{name}' removes every tenant's points and needs an operator key: a tenant admin "
            f"wipes its own points (POST /admin/qdrant/collections/{name}/wipe).",
            tenant_id=tenant_id,
        )
    store.require_collection(name)
    reason = f"collection '{name}' was {'deleted' if delete else 'wiped'}"
    with database.session() as session:
        marked = mark_not_indexed(session, collection=name, reason=reason, tenant_id=tenant_id)
    if delete:
        store.delete_collection(name)
    else:
        store.wipe_collection(name, tenant_id)
    with database.session() as session:
        # Every tenant's cached answers may have come from it (only this tenant's, for a tenant's wipe).
        corpus_generation.bump(session, tenant_id) if tenant_id is not None else corpus_generation.bump_all(session)
    return len(marked)


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
    start: int | None = None,
    end: int | None = None,
) -> ChunkPreviewOut:
    """The chunks of a document as indexed (read back from Qdrant), with the run's diagnostics.

    Without an explicit Corpus model, the one the document was last processed with is shown. With ``start`` and
    ``end`` (character offsets into the markdown), only the chunks overlapping ``[start, end)`` are listed: another
    strategy's chunks on the same stretch of text.
    """
    if (start is None) != (end is None) or (start is not None and end is not None and start >= end):
        raise InvalidRequestError(
            f"Give both start and end, with start < end, to list the chunks over a stretch of the text (got start="
            f"{start}, end={end}); give neither to list every chunk."
        )
    document = DocumentRepository(session, tenant_id).get(document_id)
    model_id = _preview_model(session, document, corpus_model_id)
    payloads = store.scroll_document(
        strategy.value, model_id, tenant_id=tenant_id, document_id=document_id, include_parents=True
    )
    if start is not None and end is not None:
        payloads = [p for p in payloads if p["start_index"] < end and p["end_index"] > start]
    run = processing.latest_run(session, document_id, strategy, model_id, tenant_id=tenant_id)
    page = payloads[offset : offset + limit]
    chunks = [_chunk_out(payload) for payload in page]
    window = _window(settings, model_id, page, chunks)
    boundary = run.boundary_model_id if run is not None and strategy_class(strategy).needs_boundary else None
    return ChunkPreviewOut(
        document_id=document_id,
        strategy=strategy,
        corpus_model_id=model_id,
        collection=collection_name(strategy, model_id),
        run=StrategyRunOut.model_validate(run) if run is not None else None,
        diagnostics=run.diagnostics if run is not None else {},
        window_tokens=window,
        prefix_mode=run.details.get("prefix_mode") if run is not None else None,
        language=document.language,
        warnings=_language_warnings({document.source_key: document.language}, model_id, boundary, run),
        total=len(payloads),
        start=start,
        end=end,
        offset=offset,
        limit=limit,
        chunks=chunks,
    )


def _preview_model(session: Session, document: DocumentRow, corpus_model_id: str | None) -> str:
    """The Corpus model whose chunks are shown: the one asked for, else the document's last, else the default."""
    return corpus_model_id or document.last_corpus_embedding_model_id or roles.resolve_corpus_model(session, None).id


def _chunk_out(payload: dict) -> ChunkOut:
    """A stored chunk as the preview shows it, with the context prefix it was embedded behind (if any)."""
    chunk = ChunkOut.model_validate(payload)
    chunk.context_prefix = context_prefix(chunk.text, payload.get("enriched_content"))
    if chunk.context_prefix is not None:
        chunk.prefix_tokens = count_tokens(chunk.context_prefix)
    return chunk


def chunk_sizes(session: Session, store: VectorStore, document_id: str, *, tenant_id: str) -> ChunkSizesOut:
    """A token-size histogram of each indexed run of a document (the newest completed run per strategy × Corpus
    model, as indexed now), on bins shared by all of them."""
    DocumentRepository(session, tenant_id).get(document_id)
    current: dict[tuple[str, str], StrategyRunRow] = {}
    for run in processing.runs(session, document_id, tenant_id=tenant_id):  # newest first
        # A strategy no longer registered (a removed plugin or variant) has no collection to read.
        if run.status == "completed" and run.strategy_name in StrategyName:
            current.setdefault((run.strategy_name, run.corpus_model_id), run)
    order = {name.value: rank for rank, name in enumerate(StrategyName)}  # the strategies' own order, as listed
    sizes: list[tuple[StrategyRunRow, list[int], int]] = []
    for run in sorted(current.values(), key=lambda r: (order[r.strategy_name], r.corpus_model_id)):
        try:
            payloads = store.scroll_document(
                run.strategy_name, run.corpus_model_id, tenant_id=tenant_id, document_id=document_id
            )
        except NotFoundError:  # the collection was deleted (Admin): nothing of this run is indexed any more
            payloads = []
        tokens = [int(p["token_count"]) for p in payloads if not p.get("is_parent")]
        sizes.append((run, tokens, len(payloads) - len(tokens)))
    width, histograms = token_histograms([tokens for _, tokens, _ in sizes])
    return ChunkSizesOut(
        document_id=document_id,
        bin_tokens=width,
        bins=len(histograms[0]) if histograms else 0,
        tiny_threshold_tokens=TINY_CHUNK_TOKENS,
        runs=[
            ChunkSizesRunOut(
                strategy=StrategyName(run.strategy_name),
                corpus_model_id=run.corpus_model_id,
                chunk_count=len(tokens),
                parent_count=parents,
                counts=histogram,
            )
            for (run, tokens, parents), histogram in zip(sizes, histograms, strict=True)
        ],
    )


def _language_warnings(
    languages: dict[str, str | None], corpus_model_id: str, boundary_model_id: str | None, run: StrategyRunRow | None
) -> list[LanguageWarningOut]:
    """What the chunks' Corpus model (and the Boundary model that cut them) cannot read of the document, from its
    language now: runs recorded before languages were checked are warned about too. Where the run recorded the same
    warning, its record is shown: it has the share of the corpus it was processed in and why the model was kept."""
    recorded = {
        (w.role, w.language): w
        for w in (LanguageWarningOut(**entry) for entry in (run.details.get("language_warnings") or [] if run else []))
    }
    out: list[LanguageWarningOut] = []
    for role, model_id in (("corpus", corpus_model_id), ("boundary", boundary_model_id)):
        spec = REGISTRY.get(model_id) if model_id else None
        if spec is not None:
            found = (LanguageWarningOut(**w.to_dict()) for w in language_warnings(role, spec, languages))
            out.extend(recorded.get((w.role, w.language), w) for w in found)
    return out


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


def health(database: Database, settings: Settings, *, tenant_id: str | None = None) -> AdminHealthOut:
    """Ping the database, Qdrant and the configured LLM; every failure is reported, none is raised. ``tenant_id``
    None (the operator): the deployment's collections and points; a tenant admin's: only its own share of them."""
    db = _database_health(database, settings)
    qdrant, collections, points = _qdrant_health(settings, tenant_id)
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
        scope="deployment" if tenant_id is None else "tenant",
        collections=collections,
        points=points,
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


def _qdrant_health(settings: Settings, tenant_id: str | None) -> tuple[ComponentHealthOut, int | None, int | None]:
    """Qdrant's state and the figures the caller may see: every collection and point (the operator), or the
    collections holding the tenant's points and its point count (a tenant admin learns nothing of other tenants:
    not how many collections they made, nor how many points they hold, nor where the data lives)."""
    where = settings.qdrant_url or f"embedded at {settings.qdrant_path}"
    if tenant_id is not None:
        where = "a server" if settings.qdrant_url else "embedded"
    try:
        # The process's store (the one the API uses): opening it is part of what is checked.
        listed = get_vector_store(settings).list_collections(tenant_id)
    except Exception as exc:  # a locked folder or an unreachable server is a finding, not a 500
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return ComponentHealthOut(status="error", ok=False, detail=f"Qdrant ({where}): {message}"), None, None
    if tenant_id is not None:
        listed = [info for info in listed if info["points"]]
    count, points = len(listed), sum(info["points"] for info in listed)
    plural = "" if count == 1 else "s"
    whose = f" hold{'s' if count == 1 else ''} your tenant's {points} point(s)" if tenant_id is not None else ""
    detail = f"Qdrant ({where}): {count} collection{plural}{whose}"
    return ComponentHealthOut(status="ok", ok=True, detail=detail), count, points


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
