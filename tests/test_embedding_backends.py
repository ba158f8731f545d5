"""The int8 ONNX backend of MiniLM (model ``minilm-int8``): exported once from the bundled torch weights, reused,
close to torch's vectors, usable end to end through the API, and a typed error naming the extra when it is missing.

No network: sockets are blocked around every test that loads or exports a model.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.embedding import onnx_int8, roles
from chunkbench.embedding.onnx_int8 import (
    EXPORTS,
    MODEL_FILE,
    ONNX_INSTALL_COMMAND,
    EmbeddingExtraMissingError,
    OnnxExportError,
    OnnxInt8Provider,
)
from chunkbench.embedding.providers import get_provider, local_model_available, local_model_path
from chunkbench.embedding.registry import DEFAULT_MODEL_ID, INT8_MODEL_ID, get_spec
from chunkbench.errors import EmbeddingError
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.storage.db import Database

ROOT = Path(__file__).resolve().parents[1]
CHROMA = DEFAULT_CHROMA_DIR / "corpora"
MINILM = get_spec(DEFAULT_MODEL_ID)
INT8 = get_spec(INT8_MODEL_ID)

DOCUMENT = """# Annual report

## Finance

Revenue grew by twelve percent in 2023 on strong cloud sales. The board approved a new budget for the coming year.
Operating costs fell because the company moved its data centres to a cheaper region.

## Football

The local team won the championship after a dramatic penalty shoot-out. Fans celebrated in the streets until
morning. The coach praised the goalkeeper, who saved three penalties.

## Gardening

Tomatoes need six hours of direct sunlight a day and deep watering twice a week. Mulch keeps the soil moist.
"""


def _refuse(self, address, *args, **kwargs):
    raise OSError(f"network blocked in this test: {address}")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One models folder for the module: the export (~15 s) runs once, in the first test that embeds."""
    return tmp_path_factory.mktemp("int8-models")


@pytest.fixture(scope="module")
def int8_settings(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # The disk cache off: every vector below is the model's own work.
    return Settings(
        _env_file=None,
        data_dir=tmp_path_factory.mktemp("int8") / "data",
        models_dir=models_dir,
        embedding_cache_enabled=False,
    )


def _chroma_texts() -> list[str]:
    """Sentences and ~250-token passages of two of Chroma's corpora: short and window-sized inputs both."""
    texts: list[str] = []
    for name in ("wikitexts", "state_of_the_union"):
        words = (CHROMA / f"{name}.md").read_text(encoding="utf-8").split()
        texts += [" ".join(words[start : start + 14]) for start in range(0, 14 * 40, 14)]
        texts += [" ".join(words[start : start + 190]) for start in range(0, 190 * 10, 190)]
    return texts


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return _chroma_texts()


@pytest.fixture(scope="module")
def int8_vectors(int8_settings: Settings, texts: list[str]) -> np.ndarray:
    before = len(EXPORTS)
    vectors = get_provider(INT8, int8_settings).embed(texts)
    assert EXPORTS[before:] == [int8_settings.resolved_models_dir / INT8_MODEL_ID], "the first load exports"
    return vectors


def test_int8_is_its_own_model_with_minilm_dimension_and_window() -> None:
    assert INT8.id != MINILM.id
    assert (INT8.provider, INT8.dimension, INT8.max_input_tokens) == (
        "local",
        MINILM.dimension,
        MINILM.max_input_tokens,
    )
    assert INT8.default_semantic_threshold == MINILM.default_semantic_threshold
    # Nothing that finds MiniLM by its id finds this model too.
    assert DEFAULT_MODEL_ID.lower() not in INT8.model_name.lower()


@pytest.mark.model
def test_int8_embeds_normalised_float32_rows(int8_vectors: np.ndarray, texts: list[str]) -> None:
    assert int8_vectors.shape == (len(texts), 384)
    assert int8_vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(int8_vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_int8_vectors_are_close_to_torch_minilm(int8_vectors: np.ndarray, int8_settings: Settings, texts) -> None:
    torch_vectors = get_provider(MINILM, int8_settings).embed(texts)
    cosines = np.sum(int8_vectors * torch_vectors, axis=1)
    # Measured: mean 0.993, lowest 0.986 on these texts (sentences and 190-word passages alike).
    assert cosines.mean() > 0.985, cosines.mean()
    assert cosines.min() > 0.97, cosines.min()

    # And it keeps the neighbourhoods: each text's nearest other text is mostly torch's nearest too.
    def nearest(vectors: np.ndarray) -> np.ndarray:
        similarity = vectors @ vectors.T
        np.fill_diagonal(similarity, -1)
        return similarity.argmax(axis=1)

    agreement = float(np.mean(nearest(int8_vectors) == nearest(torch_vectors)))
    # Measured 0.87: short slices of one article have near-ties that either model may break.
    assert agreement > 0.8, agreement


@pytest.mark.model
def test_int8_vectors_depend_a_little_on_their_batch(int8_vectors: np.ndarray, int8_settings: Settings) -> None:
    # Dynamic quantization scales activations per batch: a text embedded alone (a query) is not bit-identical to
    # the same text embedded among others (chunks), but as close as int8 is to torch (measured >= 0.988).
    provider = get_provider(INT8, int8_settings)
    alone = np.stack([provider.embed([text])[0] for text in _chroma_texts()[:6]])
    cosines = np.sum(alone * int8_vectors[:6], axis=1)
    assert cosines.min() > 0.975, cosines


@pytest.mark.model
def test_int8_tells_similar_from_unrelated(int8_settings: Settings) -> None:
    vectors = get_provider(INT8, int8_settings).embed(
        [
            "The cat sat on the warm windowsill in the afternoon sun.",
            "A kitten was lying in the sunshine by the window.",
            "The central bank raised interest rates to curb inflation.",
        ]
    )
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.3


@pytest.mark.model
def test_int8_counts_tokens_with_minilm_tokenizer(int8_settings: Settings, int8_vectors) -> None:
    long = " ".join(["word"] * 400)
    counts, window, source = get_provider(INT8, int8_settings).input_tokens(["hello world", long])
    # [CLS] hello world [SEP]; the long text is counted whole, past the window it is cut at.
    assert counts == [4, 402] and window == 256 and source == "model tokenizer"


@pytest.mark.model
def test_the_export_is_reused_in_this_process_and_another(int8_settings: Settings, int8_vectors, texts) -> None:
    model_file = int8_settings.resolved_models_dir / INT8_MODEL_ID / MODEL_FILE
    written = model_file.stat().st_mtime_ns
    exports = len(EXPORTS)
    reference = get_provider(INT8, int8_settings).embed(texts[:8])
    # This process, as if restarted: no session loaded, and a torch folder that must not be asked for.
    onnx_int8.forget_runtimes()
    provider = OnnxInt8Provider(INT8, int8_settings, source=lambda: pytest.fail("the export ran again"))
    np.testing.assert_allclose(provider.embed(texts[:8]), reference, atol=1e-6)
    assert len(EXPORTS) == exports and model_file.stat().st_mtime_ns == written
    # Another process on the same models folder: it loads the export (and never imports torch to do it).
    code = (
        "import sys; from pathlib import Path;"
        "from chunkbench.config import Settings; from chunkbench.embedding import onnx_int8;"
        "from chunkbench.embedding.providers import get_provider; from chunkbench.embedding.registry import get_spec;"
        f"s = Settings(_env_file=None, data_dir=Path(sys.argv[1]), models_dir=Path({str(int8_settings.models_dir)!r}));"
        "v = get_provider(get_spec('minilm-int8'), s).embed(['hello world']);"
        "assert v.shape == (1, 384), v.shape;"
        "assert onnx_int8.EXPORTS == [], onnx_int8.EXPORTS;"
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(int8_settings.data_dir / "other")], env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert model_file.stat().st_mtime_ns == written


@pytest.mark.model
def test_a_failed_export_is_typed_and_leaves_no_folder(tmp_path: Path, int8_settings: Settings) -> None:
    # A MiniLM folder without its weights: the exporter cannot load it.
    broken = tmp_path / "broken-minilm"
    broken.mkdir()
    source = local_model_path(MINILM, int8_settings)
    for name in ("config.json", "tokenizer.json"):
        (broken / name).write_bytes((source / name).read_bytes())
    target = tmp_path / "models" / INT8_MODEL_ID
    with pytest.raises(OnnxExportError) as raised:
        onnx_int8.export_int8(broken, target)
    assert raised.value.status_code == 400 and raised.value.code == "onnx_export_failed"
    assert ONNX_INSTALL_COMMAND in raised.value.message and str(broken) in raised.value.message
    assert not target.exists() and list(target.parent.iterdir()) == []


@pytest.mark.parametrize("missing", ["onnxruntime", "onnx"])
@pytest.mark.model
def test_a_missing_extra_is_a_typed_error_naming_the_install(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sys.modules[name] = None is how Python marks a module as not importable: find_spec and import both fail.
    monkeypatch.setitem(sys.modules, missing, None)
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    assert not local_model_available(INT8, settings)
    with pytest.raises(EmbeddingExtraMissingError) as raised:
        get_provider(INT8, settings).embed(["hello world"])
    assert isinstance(raised.value, EmbeddingError) and raised.value.status_code == 400
    assert raised.value.code == "embedding_extra_missing"
    assert ONNX_INSTALL_COMMAND in raised.value.message and missing in raised.value.message
    assert not (settings.resolved_models_dir / INT8_MODEL_ID).exists()
    database = Database.from_settings(settings)
    try:
        with database.session() as session:
            listed = {m["id"]: m for m in roles.list_models(session, settings)["models"]}
    finally:
        database.dispose()
    assert listed[INT8_MODEL_ID]["available"] is False
    assert listed[INT8_MODEL_ID]["availability_note"] == f"not installed: {ONNX_INSTALL_COMMAND}"
    assert listed[DEFAULT_MODEL_ID]["available"] is True


# --------------------------------------------------------------------------- end to end


@pytest.fixture
def int8_client(settings: Settings, models_dir: Path, int8_vectors) -> Iterator[TestClient]:
    """The app on a fresh data folder and database, with the module's exported model (no second export)."""
    settings.models_dir = models_dir
    settings.llm_max_retries = 0
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.mark.model
def test_processing_and_querying_a_document_with_int8_through_the_api(int8_client: TestClient) -> None:
    client = int8_client
    exports = len(EXPORTS)
    listed = {m["id"]: m for m in client.get("/admin/embedding-models").json()["models"]}
    assert listed[INT8_MODEL_ID]["available"] is True and listed[INT8_MODEL_ID]["dimension"] == 384
    uploaded = client.post("/documents", files={"file": ("report.md", DOCUMENT.encode())})
    assert uploaded.status_code == 201, uploaded.text
    document_id = uploaded.json()["document"]["id"]
    processed = client.post(
        f"/documents/{document_id}/process",
        params={"wait": "true"},
        json={
            "strategies": ["recursive"],
            "corpus_model_id": INT8_MODEL_ID,
            "params": {"recursive": {"chunk_size": 40}},
        },
    )
    assert processed.status_code == 200, processed.text
    body = processed.json()
    assert body["corpus_model_id"] == INT8_MODEL_ID and not body["failed"]
    (outcome,) = body["completed"]
    assert outcome["chunk_count"] >= 3
    # Its own collection: torch MiniLM's vectors and these never share one.
    assert outcome["collection"] == f"recursive__{INT8_MODEL_ID}_collection"
    points = {c["name"]: c["points"] for c in client.get("/admin/qdrant/collections").json()}
    assert points[outcome["collection"]] == outcome["chunk_count"]
    assert not any(DEFAULT_MODEL_ID in name and points[name] for name in points)

    asked = client.post(
        "/queries",
        json={"document_id": document_id, "question": "Who saved the penalties?", "strategy": "recursive", "top_k": 1},
    )
    assert asked.status_code == 201, asked.text
    answer = asked.json()
    (top,) = answer["sources"]
    assert "goalkeeper" in top["text"], top
    assert answer["config"].get("corpus_model_id", INT8_MODEL_ID) == INT8_MODEL_ID
    assert len(EXPORTS) == exports, "the app reused the module's export"
