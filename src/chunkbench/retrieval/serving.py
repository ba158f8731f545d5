"""The serving configuration: which strategy, Corpus model, retriever and top_k the chatbot API uses."""

from __future__ import annotations

from sqlalchemy.orm import Session

from chunkbench.embedding.registry import get_spec
from chunkbench.retrieval.schemas import ServingConfig
from chunkbench.storage.app_settings import AppSettingsRepository

SERVING_KEY = "serving_config"


def get_serving_config(session: Session) -> ServingConfig:
    """The stored configuration, or the default (recursive + MiniLM + hybrid, top 5)."""
    raw = AppSettingsRepository(session).get(SERVING_KEY)
    return ServingConfig.model_validate_json(raw) if raw else ServingConfig()


def set_serving_config(session: Session, config: ServingConfig) -> ServingConfig:
    get_spec(config.corpus_model_id)  # an unknown model is refused now, not at the next question
    AppSettingsRepository(session).set(SERVING_KEY, config.model_dump_json())
    return config
