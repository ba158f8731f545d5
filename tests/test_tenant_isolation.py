"""Two tenants on one server (CHUNKBENCH_AUTH=on): the real pipeline (SQLite, embedded Qdrant, MiniLM). Tenant B
gets 404, never 403, on everything of tenant A's, and B's searches never return A's chunks, even for the same
text."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient

from chunkbench.app import create_app
from chunkbench.embedding import roles
from chunkbench.embedding.registry import get_spec
from chunkbench.storage.points import QueryMode
from chunkbench.tenants import accounts
from question_store import stored_question_names
from test_benchmarks import QUESTIONS
from test_queries import HANDBOOK

PROCESS = {"strategies": ["fixed_size", "recursive"], "params": {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}}}


@pytest.fixture
def world(settings):
    """Tenants A and B, each with an admin key and the same handbook processed (A's also queried, benchmarked
    and with a question file)."""
    settings.auth = True
    with TestClient(create_app(settings)) as client:
        headers = {}
        with client.app.state.database.session() as session:
            for tenant in ("tenant-a", "tenant-b"):
                accounts.create_tenant(session, tenant, tenant_id=tenant)
                headers[tenant] = {"Authorization": f"Bearer {accounts.create_key(session, tenant, admin=True)[1]}"}
        a, b = headers["tenant-a"], headers["tenant-b"]
        docs = {}
        for tenant, name in (("tenant-a", "handbook-a.md"), ("tenant-b", "handbook-b.md")):
            upload = client.post("/documents", headers=headers[tenant], files={"file": (name, HANDBOOK.encode())})
            assert upload.status_code == 201, upload.text
            docs[tenant] = upload.json()["document"]["id"]
        accepted = client.post(f"/documents/{docs['tenant-a']}/process", headers=a, json=PROCESS)
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        client.app.state.jobs.shutdown(wait=True)  # the job has run
        assert client.get(f"/jobs/{job_id}", headers=a).json()["status"] == "succeeded"
        processed = client.post(
            f"/documents/{docs['tenant-b']}/process", headers=b, params={"wait": "true"}, json=PROCESS
        )
        assert processed.status_code == 200, processed.text
        question = {"document_id": docs["tenant-a"], "question": "How many days of paid annual leave?"}
        query = client.post("/queries", headers=a, json={**question, "strategy": "fixed_size"})
        assert query.status_code == 201, query.text
        experiment = client.post(
            "/benchmarks", headers=a, params={"wait": "true"},
            json={"document_id": docs["tenant-a"], "questions": QUESTIONS[:2], "strategies": ["fixed_size"]},
        )  # fmt: skip
        assert experiment.status_code == 200, experiment.text
        questions = json.dumps({"questions": QUESTIONS[:2]}).encode()
        saved = client.post("/admin/questions", headers=a, files={"file": ("a-questions.json", questions)})
        assert saved.status_code == 201, saved.text
        yield {
            "client": client, "a": a, "b": b, "doc_a": docs["tenant-a"], "doc_b": docs["tenant-b"], "job_a": job_id,
            "query_a": query.json()["id"], "experiment_a": experiment.json()["id"], "settings": settings,
        }  # fmt: skip


@pytest.mark.model
def test_tenant_b_gets_404_on_everything_of_tenant_a(world):
    client, b = world["client"], world["b"]
    doc, job, query, experiment = world["doc_a"], world["job_a"], world["query_a"], world["experiment_a"]
    requests = [
        ("GET", f"/documents/{doc}", None),
        ("GET", f"/documents/{doc}/markdown", None),
        ("GET", f"/documents/{doc}/runs", None),
        ("POST", f"/documents/{doc}/process", {"strategies": ["fixed_size"]}),
        ("GET", f"/admin/chunks/{doc}?strategy=fixed_size", None),
        ("GET", f"/admin/chunks/{doc}/sizes", None),
        ("POST", "/queries", {"document_id": doc, "question": "leave?", "strategy": "fixed_size"}),
        ("GET", f"/jobs/{job}", None),
        ("GET", f"/queries/{query}", None),
        ("GET", f"/benchmarks/{experiment}", None),
        ("GET", f"/benchmarks/{experiment}/report", None),
        ("POST", f"/benchmarks/{experiment}/resume", None),
        ("GET", f"/experiments/compare?a={experiment}&b={experiment}", None),
        ("POST", "/benchmarks", {"document_id": doc, "questions": QUESTIONS[:1]}),
        ("POST", "/benchmarks", {"document_id": world["doc_b"], "question_set": "a-questions.json"}),
        ("GET", "/admin/questions/a-questions.json", None),
        ("DELETE", "/admin/questions/a-questions.json", None),
        ("DELETE", f"/benchmarks/{experiment}", None),
        ("DELETE", f"/documents/{doc}", None),
    ]
    for method, path, body in requests:
        response = client.request(method, path, headers=b, json=body)
        assert response.status_code == 404, f"{method} {path}: {response.status_code} {response.text[:200]}"
    # Lists are B's alone.
    assert [d["id"] for d in client.get("/documents", headers=b).json()["items"]] == [world["doc_b"]]
    assert client.get("/jobs", headers=b).json() == []
    assert client.get("/queries", headers=b).json() == []
    assert client.get("/experiments", headers=b).json() == []
    assert client.get("/admin/questions", headers=b).json() == []
    # ...and A still has everything (B's deletes did nothing).
    a = world["a"]
    assert client.get(f"/documents/{doc}", headers=a).status_code == 200
    assert client.get(f"/benchmarks/{experiment}", headers=a).status_code == 200
    assert [f["name"] for f in client.get("/admin/questions", headers=a).json()] == ["a-questions.json"]
    # The question file is A's own.
    assert stored_question_names(world["settings"], "tenant-a") == ["a-questions.json"]


@pytest.mark.model
def test_searches_of_tenant_b_never_return_tenant_a_chunks_for_the_same_text(world):
    client, b = world["client"], world["b"]
    question = "How many days of paid annual leave?"
    body = {"document_id": world["doc_b"], "question": question, "strategy": "fixed_size", "top_k": 20}
    asked = client.post("/queries", headers=b, json=body)
    assert asked.status_code == 201, asked.text
    chunks = asked.json()["retrieved_chunks"]
    assert chunks and all(world["doc_b"] in c["chunk_id"] for c in chunks)
    # The chatbot searches every document of the tenant (no document filter): still only B's.
    answer = client.post("/api/query", headers=b, json={"question": question, "top_k": 20})
    assert answer.status_code == 200, answer.text
    assert answer.json()["sources"] and {s["source"] for s in answer.json()["sources"]} == {"handbook-b.md"}
    # The vector store itself: B's filter over the whole collection (A's points are there, same text, same vectors).
    store = client.app.state.vector_store
    spec = get_spec("all-MiniLM-L6-v2")
    vector = roles.embed_texts(spec, ["paid annual leave"], "query", world["settings"])[0]
    hits = {
        tenant: store.search("fixed_size", spec.id, mode=QueryMode.DENSE, tenant_id=tenant, document_id=None, top_k=50,
                             dense=np.asarray(vector), sparse=None)
        for tenant in ("tenant-a", "tenant-b")
    }  # fmt: skip
    assert hits["tenant-a"] and hits["tenant-b"]
    assert {p["document_id"] for p, _ in hits["tenant-b"]} == {world["doc_b"]}
    assert {p["document_id"] for p, _ in hits["tenant-a"]} == {world["doc_a"]}
    # Same text, same scores: only the tenant filter tells them apart.
    assert [round(s, 5) for _, s in hits["tenant-a"]] == [round(s, 5) for _, s in hits["tenant-b"]]
