"""The serving configuration: how the chatbot and RAG APIs search and answer (strategy, Corpus model, retriever,
top_k, reranking, Neighbor Expansion, parents), and the query plan it makes of a question.

Each tenant may have its own (``serving_config:{tenant}`` in app_settings); a tenant without one is served by the
global configuration (``serving_config``), and without that by the default.
"""

from __future__ import annotations

import hashlib

import numpy as np
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.embedding.registry import get_spec
from chunkbench.retrieval.pipeline import QueryPlan, Scope, make_plan
from chunkbench.retrieval.schemas import ServingConfig
from chunkbench.storage import corpus_generation
from chunkbench.storage.app_settings import AppSettingsRepository
from chunkbench.storage.index_state import require_indexed

SERVING_KEY = "serving_config"


def tenant_key(tenant_id: str) -> str:
    return f"{SERVING_KEY}:{tenant_id}"


def get_serving_config(session: Session, tenant_id: str | None = None) -> ServingConfig:
    """The tenant's configuration, else the global one, else the default (recursive + MiniLM + hybrid, top 5)."""
    repository = AppSettingsRepository(session)
    raw = repository.get(tenant_key(tenant_id)) if tenant_id is not None else None
    raw = raw or repository.get(SERVING_KEY)
    return ServingConfig.model_validate_json(raw) if raw else ServingConfig()


def get_indexed_serving_config(session: Session, tenant_id: str) -> ServingConfig:
    """The tenant's configuration, once every document it searches is indexed with it (409 ``not_indexed`` naming
    the command that processes a document whose points were removed)."""
    config = get_serving_config(session, tenant_id)
    require_indexed(session, tenant_id, config.strategy.value, config.corpus_model_id)
    return config


def set_serving_config(session: Session, config: ServingConfig, tenant_id: str | None = None) -> ServingConfig:
    """Store the tenant's configuration (``tenant_id=None``: the global default of tenants without their own)."""
    get_spec(config.corpus_model_id)  # an unknown model is refused now, not at the next question
    AppSettingsRepository(session).set(tenant_key(tenant_id) if tenant_id else SERVING_KEY, config.model_dump_json())
    if tenant_id is not None:
        # Cached answers came from the previous configuration (the cache scope holds its fingerprint too).
        corpus_generation.bump(session, tenant_id)
    return config


def fingerprint(config: ServingConfig) -> str:
    """A short stable digest of a configuration: answers from different configurations never mix."""
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:16]


def serving_plan(
    settings: Settings,
    config: ServingConfig,
    question: str,
    *,
    tenant_id: str,
    top_k: int | None = None,
    max_tokens: int | None = None,
    query_vector: np.ndarray | None = None,
) -> QueryPlan:
    """The query plan of a question over the tenant's whole corpus, answered the way ``config`` says."""
    return make_plan(
        settings,
        question=question,
        scope=Scope.corpus(tenant_id),
        strategy=config.strategy,
        corpus=get_spec(config.corpus_model_id),
        retriever=config.retriever,
        top_k=config.top_k if top_k is None else top_k,
        candidate_k=config.candidate_k,
        rerank=config.rerank,
        neighbor_prev=config.neighbor_prev,
        neighbor_next=config.neighbor_next,
        parent_context=config.parent_context,
        max_tokens=max_tokens,
        query_vector=query_vector,
        exact=False,  # serving: the HNSW graph where the collection has one
    )
