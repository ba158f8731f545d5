"""The serving configuration: which strategy, Corpus model, retriever and top_k the chatbot and RAG APIs use.

Each tenant may have its own (``serving_config:{tenant}`` in app_settings); a tenant without one is served by the
global configuration (``serving_config``), and without that by the default.
"""

from __future__ import annotations

import hashlib

from sqlalchemy.orm import Session

from chunkbench.embedding.registry import get_spec
from chunkbench.retrieval.schemas import ServingConfig
from chunkbench.storage import corpus_generation
from chunkbench.storage.app_settings import AppSettingsRepository

SERVING_KEY = "serving_config"


def tenant_key(tenant_id: str) -> str:
    return f"{SERVING_KEY}:{tenant_id}"


def get_serving_config(session: Session, tenant_id: str | None = None) -> ServingConfig:
    """The tenant's configuration, else the global one, else the default (recursive + MiniLM + hybrid, top 5)."""
    repository = AppSettingsRepository(session)
    raw = repository.get(tenant_key(tenant_id)) if tenant_id is not None else None
    raw = raw or repository.get(SERVING_KEY)
    return ServingConfig.model_validate_json(raw) if raw else ServingConfig()


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
