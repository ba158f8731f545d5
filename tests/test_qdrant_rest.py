"""chunkbench against a Qdrant server over HTTP: qdrant-client's REST path, end to end, on the Qdrant REST test
server (tests/qdrant_rest.py: Qdrant's REST protocol over Qdrant Edge), where no Qdrant server can be installed.

The app indexes and answers through the server as it does embedded (same points, same rankings); two ``chunkbench``
processes write to the same collections at once and lose nothing; the API key is enforced; a call the test server
does not implement answers 501, and Qdrant's errors reach chunkbench as its own typed errors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import UnexpectedResponse

import chunkbench
import qdrant_rest
from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.errors import NotFoundError, VectorStoreError
from chunkbench.storage.engine import EnginePoint
from chunkbench.storage.points import PointFilter
from chunkbench.storage.qdrant_server import ServerEngine
from chunkbench.storage.vectors import VectorStore, get_vector_store
from fake_openai import FakeOpenAI

HANDBOOK = """# Staff Handbook

## Leave

Every employee receives 25 days of paid annual leave per calendar year. Unused leave can be carried over
until the end of March. Sick leave requires a doctor's note after three days.

## Equipment

Laptops are replaced every four years. Broken equipment is reported through the service desk with the
ticket code HW-7731. The service desk answers within one working day.

## Travel

Train travel is preferred for journeys under five hours. Hotel costs are reimbursed up to 150 euros a night.
"""
STRATEGIES = ["fixed_size", "recursive"]
PARAMS = {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}, "recursive": {"chunk_size": 60}}
REMOTE_MODEL = "text-embedding-3-small"  # served by the fake OpenAI server: no model to load in each process
QUESTIONS = ["How many days of paid annual leave do employees get?", "What is the ticket code for broken equipment?"]


@pytest.fixture
def rest_settings(settings: Settings, qdrant_rest_url: str) -> Iterator[Settings]:
    """``settings`` (same data folder and database) with the vector store on the Qdrant REST test server; the
    collections this test made there are removed after it."""
    yield settings.model_copy(update={"qdrant_url": qdrant_rest_url})
    engine = ServerEngine(settings.model_copy(update={"qdrant_url": qdrant_rest_url}))
    for name in engine.names():
        engine.drop(name)
    engine.close()


def _counts(store: VectorStore) -> dict[str, int]:
    return {name: store.engine.count(name) for name in store.engine.names()}


def _answers(client: TestClient, document_id: str) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    """(strategy, retriever, question) → the ranked (chunk id, score) of the query."""
    ranked = {}
    for strategy in STRATEGIES:
        for retriever in ("dense", "bm25", "hybrid"):
            for question in QUESTIONS:
                body = {"document_id": document_id, "question": question, "strategy": strategy,
                        "retriever": retriever, "top_k": 3}  # fmt: skip
                response = client.post("/queries", json=body)
                assert response.status_code == 201, response.text
                sources = response.json()["sources"]
                ranked[strategy, retriever, question] = [(s["chunk_id"], round(s["score"], 5)) for s in sources]
    return ranked


@pytest.mark.model
def test_the_app_indexes_and_answers_over_http_as_it_does_embedded(settings: Settings, rest_settings: Settings):
    # Embedded first: the document, processed with two strategies, its point counts and rankings.
    with TestClient(create_app(settings)) as embedded:
        uploaded = embedded.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())})
        document_id = uploaded.json()["document"]["id"]
        processed = embedded.post(f"/documents/{document_id}/process", params={"wait": "true"},
                                  json={"strategies": STRATEGIES, "params": PARAMS})  # fmt: skip
        assert processed.status_code == 200, processed.text
        expected_chunks = processed.json()["chunk_counts"]
        expected_answers = _answers(embedded, document_id)
    expected_counts = _counts(get_vector_store(settings))
    assert sorted(expected_counts.values()) == sorted(expected_chunks.values()) and all(expected_counts.values())

    # The same document processed again by an app whose vector store is the Qdrant server, over HTTP.
    with TestClient(create_app(rest_settings)) as served:
        processed = served.post(f"/documents/{document_id}/process", params={"wait": "true"},
                                json={"strategies": STRATEGIES, "params": PARAMS})  # fmt: skip
        assert processed.status_code == 200, processed.text
        assert processed.json()["chunk_counts"] == expected_chunks
        answers = _answers(served, document_id)
        health = served.get("/health/ready")
    server_store = VectorStore(rest_settings)
    try:
        assert not server_store.is_local and server_store.location == rest_settings.qdrant_url
        assert _counts(server_store) == expected_counts  # read back through the server
    finally:
        server_store.close()
    # Exact search on the same vectors: the same chunks in the same order with the same scores, by every retriever.
    assert answers == expected_answers
    assert all(answers.values())
    assert health.status_code == 200, health.text


def _documents(folder: Path, label: str, count: int) -> Path:
    folder.mkdir(parents=True)
    for number in range(count):
        lines = [f"# {label} report {number}", ""]
        lines += [
            f"The {label} team measured sample {number}-{line} at {line * 7 + number} units, and wrote down why "
            f"the reading of {label} batch {line} differed from the day before."
            for line in range(12)
        ]
        (folder / f"{label}-{number}.md").write_text("\n\n".join(lines), encoding="utf-8")
    return folder


class LockstepOpenAI(FakeOpenAI):
    """The fake OpenAI server, answering the two writers' embedding requests in lockstep: a client's n-th request
    waits until the other client has sent its n-th too. A process writes a document's points before it asks for
    the next embedding, so each process's later writes come after the other's earlier ones: the writes to each
    collection interleave, whatever the two processes' start-up times. ``PATIENCE_S`` only keeps a client whose
    peer has nothing more to ask from waiting for ever."""

    PATIENCE_S = 60

    def __init__(self, clients: list[str], **kwargs: Any) -> None:
        self.asked = dict.fromkeys(clients, 0)  # embedding requests per client (its API key)
        self.turns = threading.Condition()
        super().__init__(**kwargs)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        base, server = super()._handler_class(), self

        class Handler(base):  # type: ignore[valid-type, misc]
            def _embeddings(self, body: dict[str, Any]) -> None:
                who = self.headers.get("authorization", "").removeprefix("Bearer ")
                with server.turns:
                    server.asked[who] += 1
                    server.turns.notify_all()
                    server.turns.wait_for(lambda: min(server.asked.values()) >= server.asked[who], server.PATIENCE_S)
                super()._embeddings(body)

        return Handler


@pytest.mark.slow
def test_two_processes_write_to_the_same_collections_at_once_and_nothing_is_lost(
    tmp_path: Path, database_url: str, qdrant_rest_url: str
):
    # Two `chunkbench` processes, each with its own data folder (on PostgreSQL: one shared database, as replicas
    # and workers share it), ingest and process their own corpus into the same two collections of one server; one
    # document per batch, so each process alternates embedding requests and writes.
    labels = ["alpha", "omega"]  # the same length: their documents cut alike, so they ask as many embeddings
    fake = LockstepOpenAI([f"sk-{label}" for label in labels], dimension=1536)
    fake.start()

    def started(label: str) -> subprocess.Popen[str]:
        folder = _documents(tmp_path / f"{label}-files", label, 4)
        environment = {
            **os.environ, "PYTHONPATH": str(Path(chunkbench.__file__).parents[1]), "HF_HUB_OFFLINE": "1",
            "CHUNKBENCH_DATA_DIR": str(tmp_path / f"{label}-data"), "CHUNKBENCH_QDRANT_URL": qdrant_rest_url,
            "CHUNKBENCH_OPENAI_BASE_URL": fake.url, "CHUNKBENCH_OPENAI_API_KEY": f"sk-{label}",
            "CHUNKBENCH_CORPUS_BATCH_CHUNKS": "1",
        }  # fmt: skip
        params = " ".join(f"--param {s}.{k}={v}" for s, values in PARAMS.items() for k, v in values.items())
        cli = f"{sys.executable} -m chunkbench"
        strategies = ",".join(STRATEGIES)
        script = (f"{cli} ingest {folder} --corpus {label} --json > /dev/null && "
                  f"{cli} process --corpus {label} --strategies {strategies} --corpus-model {REMOTE_MODEL} "
                  f"{params} --json")  # fmt: skip
        return subprocess.Popen(["/bin/sh", "-c", script], env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip

    try:
        processes = {label: started(label) for label in labels}
        results = {}
        for label, process in processes.items():
            stdout, stderr = process.communicate(timeout=600)
            assert process.returncode == 0, f"{label}: {stderr[-3000:]}"
            results[label] = json.loads(stdout)
    finally:
        fake.stop()

    client = QdrantClient(url=qdrant_rest_url, port=None, prefer_grpc=False, check_compatibility=False)
    try:
        for row in (row for result in results.values() for row in result["strategies"]):
            assert row["processed"] == 4 and row["failed"] == 0
        expected = Counter()  # (strategy, document) → chunks each process says it indexed
        writer = {}  # document → the process that indexed it
        for label, result in results.items():
            for row in result["strategies"]:
                for outcome in row["documents"]:
                    expected[row["strategy"], outcome["document_id"]] = outcome["chunk_count"]
                    writer[outcome["document_id"]] = label
        names = {row["strategy"]: _collection(client, row["strategy"]) for row in results["alpha"]["strategies"]}
        assert len(set(names.values())) == 2
        stored = Counter()
        versions: dict[str, dict[str, list[int]]] = {}
        for strategy, name in names.items():
            total = client.count(name, exact=True).count
            # Every point (a query without a vector lists them), with its version: the operation id of the write
            # that stored it.
            points = client.query_points(name, limit=total + 10, with_payload=["document_id"]).points
            assert len(points) == total and len({p.id for p in points}) == total
            versions[strategy] = {label: [] for label in labels}
            for point in points:
                stored[strategy, point.payload["document_id"]] += 1
                versions[strategy][writer[point.payload["document_id"]]].append(point.version)
        assert stored == expected  # every document of both processes, each point once, none lost
        assert sum(expected.values()) == sum(r["chunks"] for r in results.values())
        # The writes were concurrent: each process wrote to each collection between two writes of the other.
        for strategy, by_label in versions.items():
            alpha, omega = by_label["alpha"], by_label["omega"]
            assert min(alpha) < max(omega) and min(omega) < max(alpha), f"{strategy}: the processes took turns"
    finally:
        client.close()


def _collection(client: QdrantClient, strategy: str) -> str:
    [name] = [c.name for c in client.get_collections().collections if c.name.startswith(f"{strategy}__")]
    return name


# ---------------------------------------------------------------------------------------------- the protocol


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with qdrant_rest.running(tmp_path_factory.mktemp("keyed") / "storage", api_key="s3cret-key") as url:
        yield url


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_the_api_key_is_enforced(keyed_server: str, tmp_path: Path):
    def engine(key: str) -> ServerEngine:
        return ServerEngine(Settings(_env_file=None, data_dir=tmp_path, qdrant_url=keyed_server, qdrant_api_key=key))

    right = engine("s3cret-key")
    right.create("keyed", 4)
    assert right.names() == ["keyed"] and right.count("keyed") == 0
    for key in ("wrong-key", ""):
        refused = engine(key)
        with pytest.raises(VectorStoreError, match="401"):
            refused.ping()
        with pytest.raises(VectorStoreError, match="401"):
            refused.drop("keyed")
        refused.close()
    assert right.exists("keyed")
    # Raw HTTP: Qdrant's header, or a bearer token; the health check needs no key.
    assert httpx.get(f"{keyed_server}/collections", headers={"api-key": "s3cret-key"}).status_code == 200
    assert httpx.get(f"{keyed_server}/collections", headers={"authorization": "Bearer s3cret-key"}).status_code == 200
    missing = httpx.get(f"{keyed_server}/collections")
    assert missing.status_code == 401 and "Must provide an API key" in missing.text
    assert httpx.get(f"{keyed_server}/healthz").status_code == 200
    right.drop("keyed")
    right.close()


def test_a_call_the_test_server_does_not_implement_answers_501_with_its_path(qdrant_rest_url: str):
    client = QdrantClient(url=qdrant_rest_url, port=None, prefer_grpc=False, check_compatibility=False)
    try:
        with pytest.raises(UnexpectedResponse) as raised:
            client.create_snapshot("anything")
        assert raised.value.status_code == 501
        assert "POST /collections/anything/snapshots" in raised.value.content.decode()
        with pytest.raises(UnexpectedResponse) as raised:
            client.get_aliases()
        assert raised.value.status_code == 501 and "GET /aliases" in raised.value.content.decode()
    finally:
        client.close()


def test_qdrant_errors_reach_chunkbench_as_typed_errors(rest_settings: Settings):
    engine = ServerEngine(rest_settings)
    try:
        with pytest.raises(NotFoundError, match="'missing' does not exist"):
            engine.count("missing")
        with pytest.raises(NotFoundError):
            engine.drop("missing")
        engine.create("errors", 4)
        with pytest.raises(VectorStoreError, match="409"):  # Qdrant's answer to an existing collection
            engine.create("errors", 4)
        wrong = EnginePoint(str(uuid.uuid4()), {"tenant_id": "t"}, dense={"dense": [1.0, 0.0]})
        with pytest.raises(VectorStoreError, match="400") as raised:  # a vector of the wrong size
            engine.upsert("errors", [wrong])
        assert "upsert points on collection 'errors'" in str(raised.value)
        # A body of the wrong shape is refused as Qdrant refuses it (400), before anything is written.
        refused = httpx.post(f"{rest_settings.qdrant_url}/collections/errors/points/count", json={"exact": "often"})
        assert refused.status_code == 400 and "error" in refused.json()["status"]
        assert engine.count("errors", PointFilter("t")) == 0
    finally:
        engine.close()


@pytest.mark.slow
def test_booleans_filter_and_the_server_keeps_its_collections_across_a_restart(tmp_path: Path):
    # Qdrant Edge 0.9 matches no boolean: the server's mirror field makes `is_parent` filters work, unseen.
    folder = tmp_path / "storage"
    points = [
        EnginePoint(
            str(uuid.uuid4()),
            {"tenant_id": "t", "document_id": "d", "chunk_index": i, "is_parent": i == 2},
            dense={"dense": [1.0, float(i), 0.0, 0.0]} if i < 2 else {},
        )
        for i in range(3)
    ]
    with qdrant_rest.running(folder) as url:
        engine = ServerEngine(Settings(_env_file=None, data_dir=tmp_path, qdrant_url=url))
        engine.create("kept", 4)
        engine.upsert("kept", points)
        assert engine.count("kept", PointFilter("t", include_parents=False)) == 2
        engine.close()
    with qdrant_rest.running(folder) as url:
        engine = ServerEngine(Settings(_env_file=None, data_dir=tmp_path, qdrant_url=url))
        assert engine.names() == ["kept"]
        assert engine.count("kept", PointFilter("t")) == 3
        assert engine.count("kept", PointFilter("t", include_parents=False)) == 2
        payloads = [p.payload for p in engine.scroll("kept", PointFilter("t"))]
        assert sorted(p["chunk_index"] for p in payloads) == [0, 1, 2]
        assert all(set(p) == {"tenant_id", "document_id", "chunk_index", "is_parent"} for p in payloads)
        engine.close()


def test_prefetch_and_fusion_run_on_edge_and_a_query_by_point_id_answers_501(qdrant_rest_url: str):
    # chunkbench fuses dense and sparse rankings itself (storage/fusion.py); a client that asks the server to fuse
    # gets Edge's own RRF over the prefetches, parsed by qdrant-client's models.
    client = QdrantClient(url=qdrant_rest_url, port=None, prefer_grpc=False, check_compatibility=False)
    try:
        client.create_collection(
            "fused", vectors_config={"dense": qm.VectorParams(size=2, distance=qm.Distance.COSINE)},
            sparse_vectors_config={"bm25": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
        )  # fmt: skip
        points = [
            qm.PointStruct(id=1, vector={"dense": [1.0, 0.0], "bm25": qm.SparseVector(indices=[7], values=[1.0])},
                           payload={"name": "both"}),
            qm.PointStruct(id=2, vector={"dense": [0.9, 0.1]}, payload={"name": "dense only"}),
            qm.PointStruct(id=3, vector={"dense": [0.0, 1.0], "bm25": qm.SparseVector(indices=[7], values=[0.5])},
                           payload={"name": "sparse, far"}),
        ]  # fmt: skip
        assert client.upsert("fused", points=points, wait=True).status == qm.UpdateStatus.COMPLETED
        prefetch = [
            qm.Prefetch(query=[1.0, 0.0], using="dense", limit=2),
            qm.Prefetch(query=qm.SparseVector(indices=[7], values=[1.0]), using="bm25", limit=2),
        ]
        fused = client.query_points(
            "fused", prefetch=prefetch, query=qm.FusionQuery(fusion=qm.Fusion.RRF), limit=3, with_payload=True
        ).points
        # 1 is first in both rankings; 2 (dense only) and 3 (sparse only) each appear once.
        assert fused[0].id == 1 and {p.id for p in fused} == {1, 2, 3}
        assert fused[0].payload == {"name": "both"} and fused[0].score > fused[1].score
        weighted = client.query_points(
            "fused",
            prefetch=prefetch,
            query=qm.RrfQuery(rrf=qm.Rrf(k=60, weights=[0.1, 3.0])),
            limit=3,
            with_payload=False,
        ).points
        assert [p.id for p in weighted][:2] == [1, 3]  # the sparse ranking weighs most
        assert weighted[0].payload is None and weighted[0].version > 0  # the version shown, the payload not asked
        with pytest.raises(UnexpectedResponse) as raised:
            client.query_points("fused", query=2, using="dense")  # "more like point 2": not implemented
        assert raised.value.status_code == 501
    finally:
        client.delete_collection("fused")
        client.close()
