"""Operators and tenant admins (CHUNKBENCH_AUTH=on), and stored state that follows the index: the real app, SQLite,
embedded Qdrant and MiniLM. A tenant admin acts on its own points only; the operator on the deployment; whatever
removes points marks their runs not indexed first, and queries on them answer 409 ``not_indexed`` with the fix."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.errors import VectorStoreError
from chunkbench.storage.points import collection_name
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.tenants import accounts
from test_auth import cli  # noqa: F401 (a fixture: the CLI on the test's data directory and database)
from test_benchmarks import QUESTIONS
from test_queries import HANDBOOK

MODEL = "all-MiniLM-L6-v2"
PROCESS = {"strategies": ["fixed_size", "recursive"], "params": {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}}}
RECURSIVE = collection_name("recursive", MODEL)
FIXED = collection_name("fixed_size", MODEL)
QUESTION = "How many days of paid annual leave?"


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def deployment(settings):
    """Tenants A and B, each with a plain key, a tenant admin key and the handbook processed with two strategies;
    and an operator key (of the default tenant, as `chunkbench admin key create --operator` makes it)."""
    settings.auth = True
    with TestClient(create_app(settings)) as client:
        keys: dict[str, dict[str, str]] = {}
        with client.app.state.database.session() as session:
            for tenant in ("tenant-a", "tenant-b"):
                accounts.create_tenant(session, tenant, tenant_id=tenant)
                keys[tenant] = _bearer(accounts.create_key(session, tenant)[1])
                keys[f"{tenant}-admin"] = _bearer(accounts.create_key(session, tenant, admin=True)[1])
            keys["operator"] = _bearer(accounts.create_key(session, "default", operator=True)[1])
        docs = {}
        for tenant in ("tenant-a", "tenant-b"):
            files = {"file": (f"{tenant}.md", HANDBOOK.encode())}
            upload = client.post("/documents", headers=keys[tenant], files=files)
            assert upload.status_code == 201, upload.text
            docs[tenant] = upload.json()["document"]["id"]
            processed = client.post(
                f"/documents/{docs[tenant]}/process", headers=keys[tenant], params={"wait": "true"}, json=PROCESS
            )
            assert processed.status_code == 200, processed.text
        yield client, keys, docs


def _points(client, headers) -> dict[str, int]:
    listed = client.get("/admin/qdrant/collections", headers=headers)
    assert listed.status_code == 200, listed.text
    return {c["name"]: c["points"] for c in listed.json()}


def _runs(client, headers, document_id) -> dict[str, str]:
    """strategy → status of the document's newest run of it."""
    runs = client.get(f"/documents/{document_id}/runs", headers=headers).json()
    latest: dict[str, str] = {}
    for run in runs:  # newest first
        latest.setdefault(run["strategy_name"], run["status"])
    return latest


def _query(client, headers, document_id, strategy="recursive"):
    return client.post(
        "/queries", headers=headers, json={"document_id": document_id, "question": QUESTION, "strategy": strategy}
    )


@pytest.mark.model
def test_a_tenant_admin_sees_and_wipes_only_its_own_points(deployment):
    client, keys, docs = deployment
    everything = _points(client, keys["operator"])
    own_a, own_b = _points(client, keys["tenant-a-admin"]), _points(client, keys["tenant-b-admin"])
    assert own_a[RECURSIVE] > 0 and own_b[RECURSIVE] > 0
    # A collection only B's points are in is not listed to A at all.
    only_b = collection_name("semantic", MODEL)
    processed = client.post(
        f"/documents/{docs['tenant-b']}/process", headers=keys["tenant-b"], params={"wait": "true"},
        json={"strategies": ["semantic"]},
    )  # fmt: skip
    assert processed.status_code == 200, processed.text
    assert only_b in _points(client, keys["tenant-b-admin"]) and only_b not in _points(client, keys["tenant-a-admin"])
    # The operator's figure is both tenants'; each admin's is its own (same handbook, same chunks).
    assert everything[RECURSIVE] == own_a[RECURSIVE] + own_b[RECURSIVE]

    wiped = client.post(f"/admin/qdrant/collections/{RECURSIVE}/wipe", headers=keys["tenant-b-admin"])
    assert wiped.status_code == 204, wiped.text
    assert RECURSIVE not in _points(client, keys["tenant-b-admin"])  # none of B's points is left in it
    assert _points(client, keys["tenant-a-admin"])[RECURSIVE] == own_a[RECURSIVE]  # A's points are all there
    answered = _query(client, keys["tenant-a"], docs["tenant-a"])
    assert answered.status_code == 201 and answered.json()["sources"], answered.text
    # B's run reads not indexed; its other strategy is untouched.
    assert _runs(client, keys["tenant-b"], docs["tenant-b"]) == {
        "recursive": "not_indexed", "fixed_size": "completed", "semantic": "completed",
    }  # fmt: skip
    assert _runs(client, keys["tenant-a"], docs["tenant-a"])["recursive"] == "completed"


@pytest.mark.model
def test_only_the_operator_acts_on_the_deployment(deployment):
    client, keys, _docs = deployment
    deployment_wide = [
        ("GET", "/admin/embedding-cache", None),
        ("DELETE", "/admin/embedding-cache", None),
        ("DELETE", f"/admin/qdrant/collections/{FIXED}", None),
        ("POST", "/admin/qdrant/collections", {"strategy": "semantic", "model_id": MODEL}),
        ("PUT", "/admin/embedding-models/corpus", {"model_id": MODEL}),
        ("PUT", f"/admin/embedding-models/{MODEL}/semantic-threshold", {"threshold": 0.5}),
        ("GET", "/metrics", None),
    ]
    before = client.get("/admin/embedding-cache", headers=keys["operator"]).json()
    assert before["entries"] > 0
    for method, path, body in deployment_wide:
        for role in ("tenant-b-admin", "tenant-b"):
            refused = client.request(method, path, headers=keys[role], json=body)
            assert refused.status_code == 403, (role, method, path, refused.text)
            assert refused.json()["error"] == "forbidden"
            assert "chunkbench admin key create --operator" in refused.json()["message"], refused.text
    # Nothing of the refused calls happened: the cache and A's collection are as they were.
    assert client.get("/admin/embedding-cache", headers=keys["operator"]).json()["entries"] == before["entries"]
    assert FIXED in _points(client, keys["operator"])
    # The operator may: each call answers as it does with auth off.
    for method, path, body in deployment_wide:
        allowed = client.request(method, path, headers=keys["operator"], json=body)
        assert allowed.status_code in (200, 201, 204), (method, path, allowed.text)
    assert client.get("/admin/embedding-cache", headers=keys["operator"]).json()["entries"] == 0
    assert FIXED not in _points(client, keys["operator"])


@pytest.mark.model
def test_a_wipe_marks_runs_not_indexed_and_queries_answer_409_until_processed_again(deployment):
    client, keys, docs = deployment
    doc_a = docs["tenant-a"]
    # The operator's wipe removes every tenant's points of the collection.
    assert client.post(f"/admin/qdrant/collections/{RECURSIVE}/wipe", headers=keys["operator"]).status_code == 204
    assert _points(client, keys["operator"])[RECURSIVE] == 0
    for tenant in ("tenant-a", "tenant-b"):
        assert _runs(client, keys[tenant], docs[tenant])["recursive"] == "not_indexed"
    benchmark = {"document_id": doc_a, "questions": QUESTIONS[:1], "strategies": ["recursive"]}
    faces = {
        "/queries": lambda: _query(client, keys["tenant-a"], doc_a),
        "/v1/query": lambda: client.post("/v1/query", headers=keys["tenant-a"], json={"query": QUESTION}),
        "/api/query": lambda: client.post("/api/query", headers=keys["tenant-a"], json={"question": QUESTION}),
        "/benchmarks": lambda: client.post(
            "/benchmarks", headers=keys["tenant-a"], params={"wait": "true"}, json=benchmark
        ),
    }
    for face, call in faces.items():
        refused = call()
        assert refused.status_code == 409, (face, refused.text)
        body = refused.json()
        assert body["error"] == "not_indexed", face
        assert "'recursive'" in body["message"] and "chunkbench process" in body["message"], body
        assert "--strategies recursive" in body["message"], body
    # The other strategy still answers.
    assert _query(client, keys["tenant-a"], doc_a, "fixed_size").status_code == 201
    # Processed again, the run is indexed and the query answers with sources.
    again = client.post(
        f"/documents/{doc_a}/process", headers=keys["tenant-a"], params={"wait": "true"},
        json={"strategies": ["recursive"]},
    )  # fmt: skip
    assert again.status_code == 200, again.text
    answered = _query(client, keys["tenant-a"], doc_a)
    assert answered.status_code == 201 and answered.json()["sources"], answered.text
    assert client.post("/v1/query", headers=keys["tenant-a"], json={"query": QUESTION}).status_code == 200


@pytest.mark.model
def test_dropping_a_collection_leaves_no_document_indexed_without_points(deployment):
    client, keys, docs = deployment
    assert client.delete(f"/admin/qdrant/collections/{FIXED}", headers=keys["operator"]).status_code == 204
    assert client.delete(f"/admin/qdrant/collections/{RECURSIVE}", headers=keys["operator"]).status_code == 204
    with client.app.state.database.session() as session:
        statuses = set(session.scalars(select(StrategyRunRow.status)))
        documents = {row.id: row.status for row in session.scalars(select(DocumentRow))}
    assert statuses == {"not_indexed"}
    # No completed run left: the documents wait to be processed again.
    assert documents == {docs["tenant-a"]: "parsed", docs["tenant-b"]: "parsed"}
    refused = _query(client, keys["tenant-b"], docs["tenant-b"], "fixed_size")
    assert refused.status_code == 409 and refused.json()["error"] == "not_indexed", refused.text


@pytest.mark.model
def test_a_failed_upsert_marks_the_earlier_run_not_indexed_and_leaves_no_mixed_points(deployment, monkeypatch):
    client, keys, docs = deployment
    doc_b = docs["tenant-b"]
    store = client.app.state.vector_store
    real_upsert = store.engine.upsert
    calls = []

    def upsert_then_fail(name, points):
        calls.append(name)
        real_upsert(name, points[: len(points) // 2])  # half of the batch lands, then the engine fails
        raise VectorStoreError("Qdrant refused the write (disk full).")

    monkeypatch.setattr(store.engine, "upsert", upsert_then_fail)
    failed = client.post(
        f"/documents/{doc_b}/process", headers=keys["tenant-b"], params={"wait": "true"},
        json={"strategies": ["fixed_size"], "params": {"fixed_size": {"chunk_size": 60, "chunk_overlap": 0}}},
    )  # fmt: skip
    monkeypatch.setattr(store.engine, "upsert", real_upsert)
    assert calls and failed.json()["failed"], failed.text
    assert _runs(client, keys["tenant-b"], doc_b)["fixed_size"] == "failed"
    assert store.count_document("fixed_size", MODEL, tenant_id="tenant-b", document_id=doc_b) == 0
    refused = _query(client, keys["tenant-b"], doc_b, "fixed_size")
    assert refused.status_code == 409 and refused.json()["error"] == "not_indexed", refused.text
    assert "disk full" in client.get(f"/documents/{doc_b}/runs", headers=keys["tenant-b"]).text
    # Tenant A's document of the same strategy is untouched.
    assert _query(client, keys["tenant-a"], docs["tenant-a"], "fixed_size").status_code == 201


def test_with_auth_off_the_local_user_is_the_operator(client):
    assert client.get("/admin/embedding-cache").status_code == 200
    assert client.delete("/admin/embedding-cache").status_code == 200
    assert client.get("/admin/qdrant/collections").status_code == 200


def test_the_cli_makes_operator_keys_on_the_servers_machine(cli, settings):  # noqa: F811 (the fixture)
    runner = cli
    made = runner.invoke(cli_app, ["admin", "key", "create", "--operator", "--json"])
    assert made.exit_code == 0, made.output
    key = json.loads(made.stdout)
    assert key["tenant_id"] == "default" and key["scopes"] == ["query", "admin", "operator"]
    plain = runner.invoke(cli_app, ["admin", "key", "create", "--json"])
    assert plain.exit_code == 1 and "--tenant" in plain.stdout
    settings.auth = True
    with TestClient(create_app(settings)) as client:
        assert client.get("/admin/embedding-cache", headers=_bearer(key["key"])).status_code == 200


@pytest.mark.model
def test_the_cli_wipes_as_the_operator_and_its_query_answers_not_indexed(client, cli):  # noqa: F811 (the fixture)
    upload = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())})
    document_id = upload.json()["document"]["id"]
    processed = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=PROCESS)
    assert processed.status_code == 200, processed.text
    wiped = cli.invoke(cli_app, ["collections", "wipe", RECURSIVE, "--yes"])
    assert wiped.exit_code == 0, wiped.output
    asked = cli.invoke(cli_app, ["query", document_id, QUESTION, "--strategy", "recursive", "--json"])
    assert asked.exit_code == 1, asked.output
    error = json.loads(asked.stdout)
    assert error["error"] == "not_indexed" and error["details"]["strategy"] == "recursive"
    assert f"chunkbench process {document_id} --strategies recursive --corpus-model {MODEL}" in error["message"]
    # fixed_size still has its points: the document stays indexed.
    assert client.get(f"/documents/{document_id}").json()["status"] == "indexed"


@pytest.mark.model
def test_admin_health_shows_a_tenant_admin_its_own_share_and_the_operator_the_deployment(deployment, settings):
    client, keys, docs = deployment
    # A third collection that only B's points are in: A is not told it exists, not even as a count.
    processed = client.post(
        f"/documents/{docs['tenant-b']}/process", headers=keys["tenant-b"], params={"wait": "true"},
        json={"strategies": ["semantic"]},
    )  # fmt: skip
    assert processed.status_code == 200, processed.text
    everything, own_a = _points(client, keys["operator"]), _points(client, keys["tenant-a-admin"])
    operator = client.get("/admin/health", headers=keys["operator"]).json()
    assert operator["scope"] == "deployment" and operator["collections"] == len(everything) == 3
    assert operator["points"] == sum(everything.values()) and "3 collections" in operator["qdrant"]["detail"]
    assert str(settings.qdrant_path) in operator["qdrant"]["detail"]
    admin = client.get("/admin/health", headers=keys["tenant-a-admin"]).json()
    assert admin["status"] == "ok" and admin["scope"] == "tenant"
    assert admin["collections"] == len(own_a) == 2 and admin["points"] == sum(own_a.values()) < operator["points"]
    assert (
        admin["qdrant"]["detail"] == f"Qdrant (embedded): 2 collections hold your tenant's {admin['points']} point(s)"
    )
    # A plain key sees no admin health at all.
    assert client.get("/admin/health", headers=keys["tenant-a"]).status_code == 403


@pytest.mark.model
def test_admin_me_names_the_keys_role(deployment):
    deployed, keys, _docs = deployment
    operator = deployed.get("/admin/me", headers=keys["operator"]).json()
    assert operator["role"] == "operator" and operator["tenant_id"] == "default" and "operator" in operator["scopes"]
    admin = deployed.get("/admin/me", headers=keys["tenant-b-admin"]).json()
    assert admin["role"] == "admin" and admin["tenant_id"] == "tenant-b" and "operator" not in admin["scopes"]
    assert admin["key_id"] and admin["key_id"] != operator["key_id"]
    assert deployed.get("/admin/me", headers=keys["tenant-b"]).status_code == 403


def test_with_auth_off_admin_me_says_operator(client):
    # The local user is the operator of its own deployment.
    assert client.get("/admin/me").json() == {
        "tenant_id": "default", "role": "operator", "scopes": ["admin", "operator", "query"], "key_id": None,
    }  # fmt: skip


@pytest.mark.model
def test_sweeps_over_a_wiped_run_answer_not_indexed_before_any_level_runs(client, cli, tmp_path):  # noqa: F811
    upload = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())})
    document_id = upload.json()["document"]["id"]
    processed = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=PROCESS)
    assert processed.status_code == 200, processed.text
    assert client.post(f"/admin/qdrant/collections/{FIXED}/wipe").status_code == 204
    runs_before = client.get(f"/documents/{document_id}/runs").json()
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"questions": QUESTIONS[:2]}), encoding="utf-8")
    sweeps = {
        "neighbors": ["sweep", "neighbors", "handbook.md", "-q", str(questions), "--levels", "0,1"],
        # The grid re-processes at every point: without the check it would run, and leave no parameters to restore.
        "chunks": ["sweep", "chunks", "handbook.md", "-q", str(questions), "--sizes", "20", "--overlaps", "0"],
    }
    for name, args in sweeps.items():
        swept = cli.invoke(cli_app, [*args, "--json"])
        assert swept.exit_code == 1, (name, swept.output)
        error = json.loads(swept.stdout)
        assert error["error"] == "not_indexed" and error["details"]["strategy"] == "fixed_size", (name, error)
        assert f"chunkbench process {document_id} --strategies fixed_size --corpus-model {MODEL}" in error["message"]
    # Nothing ran: no Experiment, no run added.
    assert client.get("/experiments").json() == []
    assert client.get(f"/documents/{document_id}/runs").json() == runs_before
    # Processed again, the sweep runs.
    again = client.post(
        f"/documents/{document_id}/process", params={"wait": "true"},
        json={"strategies": ["fixed_size"], "params": PROCESS["params"]},
    )  # fmt: skip
    assert again.status_code == 200, again.text
    swept = cli.invoke(cli_app, [*sweeps["neighbors"][:-1], "0", "--json"])
    assert swept.exit_code == 0, swept.output
    assert [level["level"] for level in json.loads(swept.stdout)] == ["±0"]
