"""Processing end to end through the real app: five strategies, MiniLM, embedded Qdrant, jobs, admin."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from chunkbench.app import create_app
from chunkbench.chunking.base import default_strategies
from chunkbench.models import StrategyName
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import DocumentRepository

ZWNJ = "\u200c"
DOCUMENT = f"""# Annual Report

## Finance

Revenue grew by 12.5 percent in 2023. The board approved a new budget for the coming year.
Operating costs fell because the company moved its data centres to a cheaper region.

Cash reserves now cover eighteen months of spending. Debt was reduced by a third.

## Football

The local team won the championship after a dramatic penalty shoot-out. Fans celebrated in the streets
until morning. The coach praised the goalkeeper, who saved three penalties.

## گزارش فارسی

من می{ZWNJ}خواهم کتاب{ZWNJ}ها را بخوانم. نرخ رشد ۲.۵ درصد بود؟ بله؛ درست است.

Ordinary closing paragraph with no heading of its own but enough words to be a sentence.
"""


def _process(client: TestClient, document_id: str, **body):
    return client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=body)


@pytest.fixture
def document_id(client) -> str:
    response = client.post("/documents", files={"file": ("report.md", DOCUMENT.encode())})
    assert response.status_code == 201, response.text
    return response.json()["document"]["id"]


def _preview(client: TestClient, document_id: str, strategy: str) -> dict:
    response = client.get(f"/admin/chunks/{document_id}", params={"strategy": strategy, "limit": 1000})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.model
def test_all_five_strategies_index_exact_chunks(client, document_id):
    response = _process(client, document_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["failed"] == []
    # "All strategies": chunkbench's own; cluster_semantic (Chroma's chunker) and variants are named explicitly.
    assert {o["strategy"] for o in body["completed"]} == set(default_strategies())
    assert body["status"] == "indexed"
    assert body["corpus_model_id"] == body["boundary_model_id"] == "all-MiniLM-L6-v2"

    markdown = client.get(f"/documents/{document_id}/markdown").text
    document = client.get(f"/documents/{document_id}").json()
    assert document["status"] == "indexed"
    for strategy in default_strategies():
        preview = _preview(client, document_id, strategy.value)
        chunks = [c for c in preview["chunks"] if not c["is_parent"]]
        assert len(chunks) == document["chunk_counts"][strategy.value] > 0
        for chunk in preview["chunks"]:
            assert markdown[chunk["start_index"] : chunk["end_index"]] == chunk["text"], strategy
            assert chunk["chunk_id"].startswith(f"{strategy.value}_{document_id}_")
        assert [c["chunk_index"] for c in chunks] == list(range(len(chunks)))
        assert preview["diagnostics"]["chunk_count"] == len(chunks)
        assert preview["run"]["params"], strategy
    parent_child = _preview(client, document_id, "semantic_parent_child")["chunks"]
    parents = {c["chunk_id"] for c in parent_child if c["is_parent"]}
    assert parents and all(c["parent_id"] in parents for c in parent_child if not c["is_parent"])
    contextual = _preview(client, document_id, "contextual_retrieval")["run"]
    assert contextual["details"]["prefix_mode"] == "deterministic"
    finance = next(c for c in _preview(client, document_id, "recursive")["chunks"] if "Revenue" in c["text"])
    assert finance["heading_path"] == ["Annual Report", "Finance"]


@pytest.mark.model
def test_reprocessing_replaces_points_without_stale_chunks(client, document_id):
    first = _process(
        client, document_id, strategies=["fixed_size"], params={"fixed_size": {"chunk_size": 40, "chunk_overlap": 5}}
    )
    many = first.json()["completed"][0]["chunk_count"]
    again = _process(
        client, document_id, strategies=["fixed_size"], params={"fixed_size": {"chunk_size": 40, "chunk_overlap": 5}}
    )
    assert again.json()["completed"][0]["chunk_count"] == many
    assert _preview(client, document_id, "fixed_size")["total"] == many
    bigger = _process(client, document_id, strategies=["fixed_size"], params={"fixed_size": {"chunk_size": 400}})
    few = bigger.json()["completed"][0]["chunk_count"]
    assert few < many
    assert _preview(client, document_id, "fixed_size")["total"] == few  # no stale points left
    runs = client.get(f"/documents/{document_id}/runs").json()
    assert [r["params"]["chunk_size"] for r in runs] == [400, 40, 40]


@pytest.mark.model
def test_one_failing_strategy_never_stops_the_others(settings, document_id, client):
    # The Boundary model points at an OpenAI-compatible server that is not there.
    settings.openai_api_key = "sk-test"
    settings.openai_base_url = "http://127.0.0.1:9/v1"
    response = _process(client, document_id, boundary_model_id="text-embedding-3-small")
    assert response.status_code == 200, response.text
    body = response.json()
    assert {o["strategy"] for o in body["failed"]} == {"semantic", "semantic_parent_child"}
    assert all(o["error"] == "embedding_error" for o in body["failed"])
    assert {o["strategy"] for o in body["completed"]} == {"fixed_size", "recursive", "contextual_retrieval"}
    assert body["status"] == "indexed"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"params": {"fixed_size": {"chunk_size": 100, "chunk_overlap": 100}}}, 400, "chunking_error"),
        ({"params": {"fixed_size": {"no_such_knob": 1}}}, 400, "chunking_error"),
        ({"strategies": ["recursive"], "params": {"fixed_size": {"chunk_size": 100}}}, 400, "chunking_error"),
        ({"corpus_model_id": "no-such-model"}, 400, "unknown_embedding_model"),
    ],
)
def test_bad_requests_are_refused_before_any_work(client, document_id, body, status, code):
    response = client.post(f"/documents/{document_id}/process", json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"] == code
    assert client.get("/jobs", params={"document_id": document_id}).json() == []
    assert client.get(f"/documents/{document_id}").json()["status"] == "parsed"


def test_unknown_strategy_and_document(client, document_id):
    assert client.post(f"/documents/{document_id}/process", json={"strategies": ["magic"]}).status_code == 422
    missing = client.post("/documents/nope/process", json={})
    assert (missing.status_code, missing.json()["error"]) == (404, "document_not_found")


@pytest.mark.model
def test_processing_runs_as_a_job_with_progress(client, document_id):
    response = client.post(f"/documents/{document_id}/process", json={"strategies": ["fixed_size", "recursive"]})
    assert response.status_code == 202, response.text
    job_url = response.json()["status_url"]
    deadline = time.monotonic() + 120
    while (job := client.get(job_url).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job["status"] == "succeeded", job
    assert job["progress"] == 1.0
    assert {o["strategy"] for o in job["result"]["completed"]} == {"fixed_size", "recursive"}
    assert job["request"]["strategies"] == ["fixed_size", "recursive"]


@pytest.mark.model
def test_delete_removes_the_vectors_too(client, document_id):
    _process(client, document_id, strategies=["fixed_size", "recursive"])
    points = {c["name"]: c["points"] for c in client.get("/admin/qdrant/collections").json()}
    assert all(count > 0 for count in points.values()) and len(points) == 2
    assert client.delete(f"/documents/{document_id}").status_code == 204
    assert all(c["points"] == 0 for c in client.get("/admin/qdrant/collections").json())


@pytest.mark.model
def test_replacing_a_document_drops_the_old_vectors(client, document_id):
    _process(client, document_id, strategies=["fixed_size"])
    replaced = client.post("/documents", files={"file": ("report.md", b"# New\n\nDifferent text.")})
    assert replaced.json()["replaced_id"] == document_id
    assert all(c["points"] == 0 for c in client.get("/admin/qdrant/collections").json())


@pytest.mark.model
def test_embedded_qdrant_persists_across_a_restart(settings, document_id, client):
    _process(client, document_id, strategies=["recursive"])
    before = _preview(client, document_id, "recursive")
    client.__exit__(None, None, None)  # stop the app: lifespan closes the store
    with TestClient(create_app(settings)) as restarted:
        after = _preview(restarted, document_id, "recursive")
    assert after["chunks"] == before["chunks"] and after["total"] > 0


def test_interrupted_processing_is_marked_failed_at_start(settings, document_id, client):
    client.__exit__(None, None, None)
    database = Database.from_settings(settings)
    with database.session() as session:
        row = DocumentRepository(session, "default").get(document_id)
        DocumentRepository.transition(row, __import__("chunkbench.models").models.DocumentState.CHUNKING)
    database.dispose()
    with TestClient(create_app(settings)) as restarted:
        document = restarted.get(f"/documents/{document_id}").json()
    assert document["status"] == "failed"
    assert "interrupted" in document["error_message"]


def test_strategy_catalog(client):
    catalog = {item["name"]: item for item in client.get("/strategies").json()}
    assert set(catalog) == {s.value for s in StrategyName}
    assert catalog["fixed_size"]["params_schema"]["properties"]["chunk_size"]["default"] == 512
    assert catalog["semantic"]["needs_boundary_model"] is True


def test_admin_models_roles_thresholds_and_collections(client):
    models = client.get("/admin/embedding-models").json()
    assert models["corpus_model_id"] == models["boundary_model_id"] == "all-MiniLM-L6-v2"
    assert client.put("/admin/embedding-models/boundary", json={"model_id": "nope"}).status_code in (400, 404)
    assert (
        client.put("/admin/embedding-models/all-MiniLM-L6-v2/semantic-threshold", json={"threshold": 0}).status_code
        == 422
    )
    updated = client.put("/admin/embedding-models/all-MiniLM-L6-v2/semantic-threshold", json={"threshold": 0.42})
    assert updated.status_code == 200
    created = client.post("/admin/qdrant/collections", json={"strategy": "semantic", "model_id": "all-MiniLM-L6-v2"})
    assert created.status_code == 201
    name = created.json()["name"]
    assert name == "semantic__all-MiniLM-L6-v2_collection"
    assert client.post(f"/admin/qdrant/collections/{name}/wipe").status_code == 204
    assert client.delete(f"/admin/qdrant/collections/{name}").status_code == 204
    assert client.delete(f"/admin/qdrant/collections/{name}").status_code == 404


@pytest.mark.model
def test_settings_give_the_parameter_defaults(settings, client, document_id):
    settings.chunk_size, settings.chunk_overlap = 64, 8
    body = _process(client, document_id, strategies=["fixed_size", "recursive"]).json()
    params = {o["strategy"]: o["params"] for o in body["completed"]}
    assert params["fixed_size"]["chunk_size"] == params["recursive"]["chunk_size"] == 64
    assert params["fixed_size"]["chunk_overlap"] == 8
    explicit = _process(client, document_id, strategies=["fixed_size"], params={"fixed_size": {"chunk_size": 100}})
    assert explicit.json()["completed"][0]["params"] == {"chunk_size": 100, "chunk_overlap": 8}
