"""Asking the corpus (``POST /v1/query``; ``POST /api/query`` renders the same answer in the chatbot's shape,
without the cache; docs/service.md): guard → redact → cache → retrieve + answer → redact → cache.

1. The prompt-injection guard reads the raw query; a flagged one gets a fixed refusal: no retrieval, no cache.
2. PII is redacted from the query before anything else sees it: the cache (keys and vectors), the embedder,
   the LLM, the logs and the response all get the sanitised text only. Nothing of a query is stored in SQL.
3. The cache is looked up by the sanitised text; its semantic lookup embeds the query at most once, and a miss
   reuses that vector for retrieval and for the new cache entry.
4. On a miss: the tenant's whole corpus answers with the tenant's serving configuration (the query pipeline: search,
   rerank, Neighbor Expansion, parents, guard, answer), then the answer and the sources' texts (parents too) are
   redacted on the way out and the result is cached.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.guard.injection import InjectionDetector
from chunkbench.guard.pii import detector_from_settings, policy_from_settings, redact
from chunkbench.metrics import INJECTIONS_BLOCKED, PII_DETECTIONS
from chunkbench.rag.schemas import RAGRequest, RAGResponse, RAGSource
from chunkbench.rag.semantic_cache import CacheScope, SemanticCache
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.serving import fingerprint, get_indexed_serving_config, serving_plan
from chunkbench.storage import corpus_generation
from chunkbench.storage.db import Database
from chunkbench.storage.vectors import VectorStore

logger = logging.getLogger("chunkbench.rag")

REFUSAL = (
    "I can't help with that request: it looks like an attempt to change my instructions. "
    "Ask a question about your documents instead."
)


class _QueryVector:
    """The sanitised query's Corpus-model vector: computed on first use, then the same array every time."""

    def __init__(self, compute: Callable[[], np.ndarray]) -> None:
        self._compute = compute
        self.value: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        if self.value is None:
            self.value = self._compute()
        return self.value


@dataclass(frozen=True)
class _CachedAnswer:
    answer: str
    answer_mode: str
    sources: tuple[RAGSource, ...]


def build_cache(settings: Settings) -> SemanticCache:
    """The process's semantic cache, sized and timed by ``settings``."""
    return SemanticCache(
        similarity=settings.cache_similarity, ttl_s=settings.cache_ttl_s, max_entries=settings.cache_max_entries
    )


def answer_query(
    database: Database,
    settings: Settings,
    store: VectorStore,
    cache: SemanticCache | None,
    request: RAGRequest,
    *,
    tenant_id: str,
    request_id: str | None = None,
) -> RAGResponse:
    """Answer ``request`` for ``tenant_id`` over its whole corpus (see the module docstring for the order): the one
    way a face asks the corpus (``/v1/query``; ``/api/query`` with no ``cache``: each chat question is answered
    afresh)."""
    started = time.perf_counter()
    request_id = request_id or uuid.uuid4().hex
    pii: dict[str, dict[str, int]] = {"query": {}, "answer": {}, "document": {}}
    outcome = "error"
    try:
        verdict = InjectionDetector(settings.injection_threshold).check(request.query)
        policy, detectors = policy_from_settings(settings), (detector_from_settings(settings),)
        sanitised = redact(request.query, policy, detectors)
        pii["query"] = sanitised.counts
        query = sanitised.text
        if verdict.flagged:
            outcome = "blocked"
            return _response(query, REFUSAL, "refused", (), started, request_id, pii, blocked=True)

        with database.session() as session:
            config = get_indexed_serving_config(session, tenant_id)
            # Read before answering: an answer tagged with it is stale as soon as the documents change after.
            generation = corpus_generation.current(session, tenant_id)
        plan = serving_plan(settings, config, query, tenant_id=tenant_id, top_k=request.top_k,
                            max_tokens=request.max_tokens)  # fmt: skip
        # One embedding of the sanitised query at most, shared by the cache lookup, the retrieval and the entry.
        query_vector = _QueryVector(lambda: roles.embed_query(plan.corpus, query, settings))
        lookup = cache if settings.cache_enabled else None
        scope = CacheScope(tenant_id, request.session_id, plan.top_k, fingerprint(config))
        if lookup is not None:
            hit = lookup.get(scope, query, generation=generation, vector=query_vector)
            if hit is not None:
                outcome = f"hit_{hit.kind}"
                value: _CachedAnswer = hit.value
                return _response(
                    query, value.answer, value.answer_mode, value.sources, started, request_id, pii,
                    cached=hit.kind,
                )  # fmt: skip

        found = pipeline.run(settings, store, replace(plan, query_vector=query_vector.value))
        assert found.answer is not None
        answer = redact(found.answer.text, policy, detectors)
        pii["answer"] = answer.counts
        sources = []
        for source in found.sources:
            chunk, parent = source.chunk, source.parent
            text = redact(chunk.text, policy, detectors)
            _add(pii["document"], text.counts)
            parent_text = redact(parent.text, policy, detectors) if parent is not None else None
            if parent_text is not None:
                _add(pii["document"], parent_text.counts)
            sources.append(
                RAGSource(
                    number=source.number, chunk_id=chunk.chunk_id, document_id=chunk.document_id,
                    filename=chunk.document_name, score=chunk.score, text=text.text,
                    parent_text=parent_text.text if parent_text is not None else None,
                    role="neighbor" if chunk.role == "neighbor" else "hit",
                    injection_flagged=source.verdict is not None and source.verdict.flagged,
                    injection_action=source.action,
                )
            )  # fmt: skip
        value = _CachedAnswer(answer.text, found.answer.mode, tuple(sources))
        if lookup is not None:
            if query_vector.value is None:
                query_vector.value = found.query_vector  # retrieval embedded it (None: BM25 alone)
            lookup.set(scope, query, query_vector(), value, generation=generation)
        outcome = "answered"
        return _response(query, value.answer, value.answer_mode, value.sources, started, request_id, pii)
    finally:
        # Failures are counted too: the detections happened whatever came after.
        for where, counts in pii.items():
            for entity, count in counts.items():
                PII_DETECTIONS.labels(entity=entity, where=where).inc(count)
        if outcome == "blocked":
            INJECTIONS_BLOCKED.inc()
        logger.info(
            "rag query %s",
            outcome,
            extra={
                "request_id": request_id, "tenant_id": tenant_id, "outcome": outcome,
                "latency_ms": _elapsed_ms(started), "pii_redacted": sum(pii["query"].values()),
            },
        )  # fmt: skip


def _response(
    query: str,
    answer: str,
    mode: str,
    sources: tuple[RAGSource, ...],
    started: float,
    request_id: str,
    pii: dict[str, dict[str, int]],
    *,
    cached: str | None = None,
    blocked: bool = False,
) -> RAGResponse:
    return RAGResponse(
        query=query, answer=answer, answer_mode=mode, sources=list(sources), latency_ms=_elapsed_ms(started),
        cached=cached is not None, cache_hit=cached, request_id=request_id, blocked=blocked,
        pii_redacted=dict(pii["query"]),
    )  # fmt: skip


def _add(total: dict[str, int], counts: dict[str, int]) -> None:
    for entity, count in counts.items():
        total[entity] = total.get(entity, 0) + count


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
