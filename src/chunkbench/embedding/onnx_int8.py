"""MiniLM as int8 ONNX: exported once from the bundled torch weights, then run by ONNX Runtime without torch.

Neither sentence-transformers' ``backend="onnx"`` nor its OpenVINO backend installs next to the torch 2.13 and
transformers 5 that chunkbench runs on (optimum-onnx 0.1 wants transformers < 4.58; optimum-intel pulls another
torch), so the export is done with what they use underneath: ``torch.onnx.export`` of the bundled MiniLM's
transformer, then ONNX Runtime's dynamic int8 quantization (weights int8 per channel, activations quantized per
batch at run time: no calibration data). The tokenizer (MiniLM's ``tokenizer.json``), mean pooling and the
normalisation are MiniLM's own, done here in numpy.

The export writes ``{models_dir}/minilm-int8/`` atomically (a temp folder, then a rename) and is reused by every
later load, in this process or another; the fp32 intermediate is not kept. Its vectors are not torch's (cosine
≈ 0.99 per text): it is its own registered model (``minilm-int8``), with its own cache keys and collections.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chunkbench.config import Settings
from chunkbench.embedding.provider_base import (
    EmbeddingProvider,
    LoadedOnce,
    apply_task_prefixes,
    check_shape,
    normalise_rows,
)
from chunkbench.embedding.registry import INT8_MODEL_ID, EmbeddingModelSpec, Purpose
from chunkbench.errors import EmbeddingError

ONNX_INSTALL_COMMAND = "pip install 'chunkbench[onnx]'"
# What the extra installs: the runtime, and the onnx package its quantizer reads and writes models with.
ONNX_MODULES = ("onnxruntime", "onnx")
MODEL_FILE = "model_int8.onnx"
MANIFEST_FILE = "export.json"
# MiniLM's window (sentence_bert_config.json's max_seq_length): the tokenizer.json it ships truncates at 128.
MAX_SEQ_LENGTH = 256
# The ONNX opset of the export: every ONNX Runtime of the last years runs it, and its quantizer handles it.
OPSET = 17


class EmbeddingExtraMissingError(EmbeddingError):
    """A local model runs a library of an optional extra that is not installed: the message names the command."""

    code = "embedding_extra_missing"


class OnnxExportError(EmbeddingError):
    """The one-time int8 ONNX export of MiniLM failed: the message says what to install or remove."""

    code = "onnx_export_failed"


def extra_installed() -> bool:
    """Whether ONNX Runtime and onnx can be imported (nothing is imported here)."""
    return all(_importable(module) for module in ONNX_MODULES)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules (how a test removes it)
        return False


def require_extra() -> None:
    missing = [module for module in ONNX_MODULES if not _importable(module)]
    if missing:
        raise EmbeddingExtraMissingError(
            f"The '{INT8_MODEL_ID}' model runs on ONNX Runtime, and {', '.join(missing)} is not installed. "
            f"Install the extra with: {ONNX_INSTALL_COMMAND} — or pick another Corpus/Boundary model.",
            model_id=INT8_MODEL_ID,
            install=ONNX_INSTALL_COMMAND,
        )


def export_folder(settings: Settings) -> Path:
    return settings.resolved_models_dir / INT8_MODEL_ID


def is_exported(folder: Path) -> bool:
    return (folder / MODEL_FILE).is_file() and (folder / "tokenizer.json").is_file()


# Exports this process ran (tests and benchmarks read it: a second load must not export again).
EXPORTS: list[Path] = []
_EXPORT_LOCK = threading.Lock()


def ensure_exported(settings: Settings, source: Path) -> Path:
    """The int8 model folder, exporting it from the torch MiniLM at ``source`` the first time."""
    require_extra()
    target = export_folder(settings)
    with _EXPORT_LOCK:
        if is_exported(target):
            return target
        export_int8(source, target)
        EXPORTS.append(target)
    return target


def export_int8(source: Path, target: Path) -> Path:
    """Export MiniLM at ``source`` to int8 ONNX in ``target``, atomically: a temp folder, then a rename."""
    require_extra()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        staged = work / "model"
        staged.mkdir()
        fp32 = work / "model_fp32.onnx"
        try:
            _export_fp32(source, fp32)
            _quantize(fp32, staged / MODEL_FILE)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise OnnxExportError(
                f"Exporting {INT8_MODEL_ID} from {source} failed ({type(exc).__name__}: {exc}). Reinstall the extra "
                f"({ONNX_INSTALL_COMMAND} --force-reinstall) and retry; {target} is written only when the export "
                "succeeds.",
                model_id=INT8_MODEL_ID,
                install=ONNX_INSTALL_COMMAND,
            ) from exc
        shutil.copy2(source / "tokenizer.json", staged / "tokenizer.json")
        (staged / MANIFEST_FILE).write_text(json.dumps(_manifest(source), indent=2) + "\n", encoding="utf-8")
        try:
            os.rename(staged, target)
        except OSError:
            # Another process finished first; its export is as good as ours.
            if not is_exported(target):
                raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _manifest(source: Path) -> dict[str, Any]:
    import onnxruntime
    import torch

    return {
        "model_id": INT8_MODEL_ID,
        "source": str(source),
        "opset": OPSET,
        "quantization": "dynamic int8 (QInt8 weights per channel, activations per batch), onnxruntime.quantization",
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


def _export_fp32(source: Path, out: Path) -> None:
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    # Eager attention: the traced graph is plain MatMul/Softmax, which the int8 quantizer rewrites.
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager")
    model.eval()

    class _Encoder(torch.nn.Module):
        """The transformer's token embeddings only: pooling and normalising happen outside the graph."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = torch.ones((2, 16), dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    # The tracer warns about shape checks it freezes (padding of the mask, always 0 here: the mask is the input's
    # own length) and the exporter about negative indices (none): noise in the CLI's output, not faults.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Encoder(model),
            (sample, sample, torch.zeros_like(sample)),
            str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
            opset_version=OPSET,
            # The TorchScript exporter: the dynamo one needs onnxscript, one more package for the same graph.
            dynamo=False,
        )


def _quantize(fp32: Path, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantizer logs "consider pre-processing" on the root logger: shape inference it suggests for static
    # quantization of convolutions, which a dynamic MatMul quantization does not need.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        # Per-channel weight scales: MiniLM's cosines with torch stay ≈ 0.99 (perf/embedding_backends.py).
        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.setLevel(level)


class _Runtime:
    """One ONNX Runtime session and MiniLM's tokenizer, used under one lock (the session spreads a batch over the
    cores itself; the tokenizer refuses two threads at once)."""

    def __init__(self, folder: Path, threads: int | None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        try:
            self.session = onnxruntime.InferenceSession(
                str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own classes, not importable without it
            raise EmbeddingError(
                f"ONNX Runtime could not load {folder / MODEL_FILE} ({exc}). Delete {folder}: the next load exports "
                "it again.",
                model_id=INT8_MODEL_ID,
            ) from exc
        self.inputs = {item.name for item in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of each batch
        self.lock = threading.Lock()

    def embed(self, texts: list[str], batch_size: int, dimension: int) -> np.ndarray:
        # Longest first, as sentence-transformers batches: texts of a batch are about as long, so little padding.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            with self.lock:
                encoded = self.tokenizer.encode_batch([texts[i] for i in batch])
                ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
                mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
                feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                (hidden,) = self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})
            # MiniLM's pooling: the mean of the token vectors the mask keeps (its 1_Pooling config).
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[batch] = pooled
        return normalise_rows(out)

    def count(self, texts: Sequence[str]) -> list[int]:
        with self.lock:
            self.tokenizer.no_truncation()
            self.tokenizer.no_padding()
            try:
                return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts))]
            finally:
                self.tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
                self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")


_RUNTIMES: LoadedOnce[_Runtime] = LoadedOnce()


def load_runtime(settings: Settings, source: Callable[[], Path]) -> _Runtime:
    """The process-wide runtime of the int8 model under ``settings``' models folder, exported on first use from the
    torch folder ``source()`` finds (asked only then: an exported folder loads without it)."""
    folder = export_folder(settings)

    def load() -> _Runtime:
        torch_folder = Path() if is_exported(folder) else source()
        return _Runtime(ensure_exported(settings, torch_folder), settings.embedding_threads)

    return _RUNTIMES.get(folder, load)


def forget_runtimes() -> None:
    """Drop the loaded sessions (tests: the next load reads the folder again, as a new process would)."""
    _RUNTIMES.clear()


class OnnxInt8Provider(EmbeddingProvider):
    """MiniLM int8 on ONNX Runtime, in this process; ``source`` finds the torch MiniLM folder to export from."""

    def __init__(self, spec: EmbeddingModelSpec, settings: Settings, source: Any) -> None:
        super().__init__(spec)
        self._settings = settings
        self._source = source

    def _runtime(self) -> _Runtime:
        return load_runtime(self._settings, self._source)

    def input_tokens(self, texts: Sequence[str], purpose: Purpose = "document") -> tuple[list[int], int, str] | None:
        """Counted with MiniLM's own tokenizer (special tokens included); the window is MiniLM's 256."""
        counts = self._runtime().count(apply_task_prefixes(self.spec, texts, purpose))
        return counts, MAX_SEQ_LENGTH, "model tokenizer"

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = self._runtime().embed(texts, self.spec.batch_size, self.spec.dimension)
        check_shape(self.spec, vectors, len(texts), "The int8 ONNX model")
        return vectors
