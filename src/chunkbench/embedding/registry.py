"""The embedding model registry (seed 000 §6.1): every model chunkbench can embed with, and its defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chunkbench.errors import EmbeddingError


class UnknownEmbeddingModelError(EmbeddingError):
    """An embedding model id that is not in the registry."""

    code = "unknown_embedding_model"


# "plugin": registered through ``chunkbench.plugins.register_embedder`` with its own provider factory.
Provider = Literal["local", "openai", "ollama", "plugin"]
Purpose = Literal["document", "query"]


@dataclass(frozen=True)
class TaskPrefixes:
    """Strings some models expect before a text, depending on what the text is for."""

    document: str
    query: str

    def for_purpose(self, purpose: Purpose) -> str:
        return self.document if purpose == "document" else self.query


@dataclass(frozen=True)
class EmbeddingModelSpec:
    """One embedding model: where it runs, what it returns and how semantic strategies cut with it."""

    id: str
    provider: Provider
    model_name: str
    dimension: int
    display_name: str
    default_semantic_threshold: float
    # Texts per request (remote) or per forward pass (local).
    batch_size: int
    task_prefixes: TaskPrefixes | None = None
    # The model's input window in its own tokens (word pieces for BERT-style models, special tokens included): a
    # longer text is embedded from its first window only. None: unknown.
    max_input_tokens: int | None = None

    @property
    def is_local(self) -> bool:
        return self.provider == "local"


# Seed 000 §6.3: OpenAI accepts up to 2048 inputs per request; an Ollama server embeds one batch per
# call on a single model instance, so smaller requests keep each under its timeout.
OPENAI_BATCH_SIZE = 2048
OLLAMA_BATCH_SIZE = 64
LOCAL_BATCH_SIZE = 64

DEFAULT_MODEL_ID = "all-MiniLM-L6-v2"

_MODELS: tuple[EmbeddingModelSpec, ...] = (
    EmbeddingModelSpec(
        id="all-MiniLM-L6-v2",
        provider="local",
        model_name="sentence-transformers/all-MiniLM-L6-v2",
        dimension=384,
        display_name="MiniLM L6 v2 (local, bundled)",
        # Measured on the five chroma eval corpora: adjacent-sentence cosine medians 0.25–0.50, random
        # sentence pairs 0.07–0.27. At 0.3 a cut falls where neighbours are about as alike as random
        # text (15–40% of boundaries in prose, more in a speech), not inside every paragraph.
        default_semantic_threshold=0.3,
        batch_size=LOCAL_BATCH_SIZE,
        max_input_tokens=256,
    ),
    EmbeddingModelSpec(
        id="all-mpnet-base-v2",
        provider="local",
        model_name="sentence-transformers/all-mpnet-base-v2",
        dimension=768,
        display_name="MPNet base v2 (local, optional install)",
        # Same training recipe and cosine range as MiniLM.
        default_semantic_threshold=0.3,
        batch_size=LOCAL_BATCH_SIZE,
        max_input_tokens=384,
    ),
    EmbeddingModelSpec(
        id="text-embedding-3-small",
        provider="openai",
        model_name="text-embedding-3-small",
        dimension=1536,
        display_name="OpenAI text-embedding-3-small",
        default_semantic_threshold=0.3,
        batch_size=OPENAI_BATCH_SIZE,
        max_input_tokens=8191,
    ),
    EmbeddingModelSpec(
        id="text-embedding-3-large",
        provider="openai",
        model_name="text-embedding-3-large",
        dimension=3072,
        display_name="OpenAI text-embedding-3-large",
        default_semantic_threshold=0.3,
        batch_size=OPENAI_BATCH_SIZE,
        max_input_tokens=8191,
    ),
    EmbeddingModelSpec(
        id="nomic-embed-text-v2-moe",
        provider="ollama",
        model_name="nomic-embed-text-v2-moe",
        dimension=768,
        display_name="Nomic Embed Text v2 MoE (Ollama)",
        # Nomic's cosines are compressed towards the top of the range: related sentences score ~0.6+.
        default_semantic_threshold=0.6,
        batch_size=OLLAMA_BATCH_SIZE,
        task_prefixes=TaskPrefixes(document="search_document: ", query="search_query: "),
        max_input_tokens=512,
    ),
)

REGISTRY: dict[str, EmbeddingModelSpec] = {spec.id: spec for spec in _MODELS}


def all_specs() -> list[EmbeddingModelSpec]:
    """Every registered model, in registry order (built-ins first, then plugins)."""
    return list(REGISTRY.values())


def get_spec(model_id: str) -> EmbeddingModelSpec:
    """The spec of ``model_id``; an unknown id is an error that lists the known ones."""
    try:
        return REGISTRY[model_id]
    except KeyError:
        raise UnknownEmbeddingModelError(
            f"Unknown embedding model '{model_id}'. Known models: {', '.join(REGISTRY)}.",
            model_id=model_id,
        ) from None
