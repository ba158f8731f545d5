"""The isolation probe as a test: tenant A's documents, corpora, queries, Experiments and question sets carry unique
markers; every (route, method) of the app's OpenAPI is called with tenant B's keys (its admin's and a plain one)
and A's ids in the path, query and body; no response to B may carry an A marker, and A's rows, files and point
counts must be as they were. The routes come from the OpenAPI itself, so a new route is probed without editing
this file. A second test takes one repository's tenant filter out and checks that the walker then fails."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from chunkbench.app import create_app
from chunkbench.storage.points import collection_name
from chunkbench.storage.question_files import QuestionFileRepository
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import AppSettingRow, Base, DocumentRow
from chunkbench.tenants import accounts
from test_benchmarks import QUESTIONS
from test_queries import HANDBOOK

A, B = "tenant-a", "tenant-b"
MODEL = "all-MiniLM-L6-v2"
PROCESS = {"strategies": ["fixed_size", "recursive"], "params": {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}}}
PROBE_QUESTION = "What is the probe word?"
METHODS = ("get", "post", "put", "patch", "delete")


def _marker(kind: str) -> str:
    # Lowercase letters and digits: valid in every name (corpus, question file) and found verbatim in any response.
    return f"zqx{kind}{uuid.uuid4().hex[:16]}"


@pytest.fixture
def tenants(settings):
    """A with marked data of every kind, B with its own document; B's admin and plain keys."""
    settings.auth = True
    settings.rate_limit_per_minute = 0  # the walk makes a few hundred requests in seconds
    markers = {kind: _marker(kind) for kind in ("document", "corpus", "query", "experiment", "questions")}
    with TestClient(create_app(settings)) as client:
        keys = {}
        with client.app.state.database.session() as session:
            for tenant in (A, B):
                accounts.create_tenant(session, tenant, tenant_id=tenant)
                keys[tenant] = {"Authorization": f"Bearer {accounts.create_key(session, tenant)[1]}"}
                admin = accounts.create_key(session, tenant, admin=True)[1]
                keys[f"{tenant}-admin"] = {"Authorization": f"Bearer {admin}"}
        a = keys[A]
        text = HANDBOOK + f"\n\nThe probe word is {markers['document']}.\n"
        upload = client.post("/documents", headers=a, files={"file": (f"{markers['document']}.md", text.encode())})
        assert upload.status_code == 201, upload.text
        doc_a = upload.json()["document"]["id"]
        accepted = client.post(f"/documents/{doc_a}/process", headers=a, json=PROCESS)
        assert accepted.status_code == 202, accepted.text
        client.app.state.jobs.wait_idle()
        job_a = accepted.json()["job_id"]
        assert client.get(f"/jobs/{job_a}", headers=a).json()["status"] == "succeeded"
        corpus = client.post("/corpora", headers=a, json={"name": markers["corpus"], "document_ids": [doc_a]})
        assert corpus.status_code == 201, corpus.text
        question = f"How many days of paid annual leave? {markers['query']}"
        asked = {"document_id": doc_a, "question": question, "strategy": "recursive"}
        query = client.post("/queries", headers=a, json=asked)
        assert query.status_code == 201, query.text
        questions = [{**q, "question": f"{q['question']} {markers['experiment']}"} for q in QUESTIONS[:2]]
        experiment = client.post(
            "/benchmarks", headers=a, params={"wait": "true"},
            json={"document_id": doc_a, "questions": questions, "strategies": ["fixed_size"],
                  "name": markers["experiment"]},
        )  # fmt: skip
        assert experiment.status_code == 200, experiment.text
        # Addressed by names and ids that carry no marker: a 404 may echo what B asked for, never what A wrote.
        question_file = "a-probe-questions.json"
        marked = [{**q, "question": f"{q['question']} {markers['questions']}"} for q in QUESTIONS[:2]]
        saved = client.post(
            "/admin/questions", headers=keys[f"{A}-admin"],
            files={"file": (question_file, json.dumps({"questions": marked}).encode())},
        )  # fmt: skip
        assert saved.status_code == 201, saved.text
        questions_of_a = client.get(f"/admin/questions/{question_file}", headers=a).json()
        own = client.post("/documents", headers=keys[B], files={"file": ("b.md", HANDBOOK.encode())})
        doc_b = own.json()["document"]["id"]
        assert (
            client.post(
                f"/documents/{doc_b}/process", headers=keys[B], params={"wait": "true"}, json=PROCESS
            ).status_code
            == 200
        )
        ids = {
            "document_id": doc_a, "document_ids": [doc_a], "job_id": job_a, "query_id": query.json()["id"],
            "experiment_id": experiment.json()["id"], "experiment_ids": [experiment.json()["id"]],
            "corpus": corpus.json()["id"], "corpus_name": corpus.json()["id"], "corpus_id": corpus.json()["id"],
            "question_file": question_file, "question_set": question_file,
            "question_id": _first_question_id(questions_of_a), "collection": collection_name("recursive", MODEL),
        }  # fmt: skip
        yield {"client": client, "keys": keys, "markers": markers, "ids": ids, "settings": settings}


def _first_question_id(question_set: dict[str, Any]) -> str:
    found = question_set.get("questions") or [{}]
    return str(found[0].get("id", "q1"))


# ------------------------------------------------------------------------------------------------ A's snapshot


def snapshot(client, settings) -> dict[str, Any]:
    """Every row of A's (each table with a tenant_id), A's app settings, question files and point counts."""
    rows: dict[str, Any] = {}
    with client.app.state.database.session() as session:
        for table in Base.metadata.sorted_tables:
            if "tenant_id" in table.c:
                found = session.execute(select(table).where(table.c.tenant_id == A)).mappings().all()
                rows[table.name] = sorted(json.dumps(dict(row), default=str, sort_keys=True) for row in found)
        settings_rows = session.scalars(select(AppSettingRow).where(AppSettingRow.key.endswith(f":{A}"))).all()
        rows["app_settings"] = {row.key: row.value for row in settings_rows}
        rows["files"] = {
            row.name: hashlib.sha256(row.content).hexdigest() for row in QuestionFileRepository(session, A).list()
        }  # fmt: skip
    # Collections B's calls may create hold none of A's points: only A's non-zero counts are A's state.
    collections = client.app.state.vector_store.list_collections(A)
    rows["points"] = {c["name"]: c["points"] for c in collections if c["points"]}
    return rows


# ------------------------------------------------------------------------------------------------- the walker


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return _resolve(spec, options[0]) if options else {}
    return schema


def _sample(spec: dict[str, Any], schema: dict[str, Any], name: str, ids: dict[str, Any]) -> Any:
    """A value for a field: A's id where the field names one, else a plausible value of its type."""
    if name in ids:
        return ids[name]
    schema = _resolve(spec, schema)
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return _body(spec, schema, ids)
    if kind == "array":
        item = _sample(spec, schema.get("items", {}), name.removesuffix("s"), ids)
        return [item] if schema.get("minItems") else []
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    return PROBE_QUESTION if name in ("question", "query") else "probe"


def _body(spec: dict[str, Any], schema: dict[str, Any], ids: dict[str, Any]) -> dict[str, Any]:
    """An object with its required fields and every field that names one of A's ids."""
    schema = _resolve(spec, schema)
    required = set(schema.get("required", []))
    return {
        field: _sample(spec, sub, field, ids)
        for field, sub in schema.get("properties", {}).items()
        if field in required or field in ids
    }


def _path_value(path: str, name: str, ids: dict[str, Any]) -> Any:
    if name == "name":  # /corpora/{name}, /admin/questions/{name}, /admin/qdrant/collections/{name}
        if path.startswith("/admin/questions"):
            return ids["question_file"]
        if "/collections/" in path:
            return ids["collection"]
        return ids["corpus"]
    if name == "role":
        return "corpus"
    if name == "model_id":
        return MODEL
    return ids.get(name, ids["document_id"])  # an id nobody named yet: A's document's


def _is_file(spec: dict[str, Any], schema: dict[str, Any]) -> bool:
    """An upload field (one file or several), however the OpenAPI version spells it."""
    if schema.get("type") == "array":
        return _is_file(spec, _resolve(spec, schema.get("items", {})))
    return schema.get("format") == "binary" or "contentMediaType" in schema


def _request(spec: dict[str, Any], path: str, operation: dict[str, Any], ids: dict[str, Any]) -> dict[str, Any]:
    """httpx keyword arguments for one operation, A's ids everywhere one fits."""
    url, params = path, {}
    for parameter in operation.get("parameters", []):
        name, where = parameter["name"], parameter["in"]
        if where == "path":
            integer = _resolve(spec, parameter.get("schema", {})).get("type") == "integer"
            url = url.replace("{" + name + "}", "0" if integer else str(_path_value(path, name, ids)))
        elif where == "query" and (parameter.get("required") or name in ids):
            params[name] = _sample(spec, parameter.get("schema", {}), name, ids)
    kwargs: dict[str, Any] = {"url": url, "params": params}
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        kwargs["json"] = _sample(spec, content["application/json"]["schema"], "", ids)
    elif "multipart/form-data" in content:
        schema = _resolve(spec, content["multipart/form-data"]["schema"])
        files, data = {}, {}
        for field, sub in schema.get("properties", {}).items():
            resolved = _resolve(spec, sub)
            if _is_file(spec, resolved):
                files[field] = ("probe.md", b"# Probe\n\nTenant B's own text.\n")
            elif field in schema.get("required", []) or field in ids:
                data[field] = str(_sample(spec, sub, field, ids))
        kwargs.update(files=files, data=data)
    return kwargs


_TARGETS = (("corpus", "corpus_name", "corpus_id"), ("document_id", "document_ids"))


def _variants(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request, then (for a JSON body naming several targets) the body with one kind of target left out."""
    body = request.get("json")
    if not isinstance(body, dict):
        return [request]
    out = [request]
    for left_out in _TARGETS:
        if any(field in body for field in left_out):
            out.append({**request, "json": {k: v for k, v in body.items() if k not in left_out}})
    return out


def _stage(path: str, method: str) -> int:
    """Reads first, then B's own writes and searches, then writes aimed at A's ids, deletions last: B's searches
    run while B's and A's points are all there, before a wipe."""
    if method == "get":
        return 0
    if method == "delete":
        return 3
    return 2 if "{" in path else 1


def walk(client, keys: dict[str, dict[str, str]], markers: dict[str, str], ids: dict[str, Any]) -> list[str]:
    """Call every (route, method) of the OpenAPI as B's admin and as B's plain key: each A marker in a response,
    and each crash."""
    spec = client.app.openapi()
    leaks: list[str] = []
    calls = 0
    operations = sorted(
        ((path, method) for path, item in spec["paths"].items() for method in METHODS if method in item),
        key=lambda op: (_stage(*op), op),
    )
    for path, method in operations:
        item = spec["paths"][path]
        for role in (f"{B}-admin", B):
            for request in _variants(_request(spec, path, item[method], ids)):
                response = client.request(method.upper(), headers=keys[role], **request)
                calls += 1
                where = f"{method.upper()} {path} as {role}"
                if response.status_code == 500:  # a crash (a 503 names a missing LLM or database)
                    leaks.append(f"{where}: 500 {response.text[:200]}")
                leaks += [f"{where}: A's {kind}" for kind, marker in markers.items() if marker in response.text]
                if response.status_code != 422:  # a body naming both a document and a corpus: try each alone
                    break
    assert calls > 100, f"the walk made only {calls} calls: it read no routes"
    return leaks


@pytest.mark.model
def test_tenant_b_sees_and_changes_nothing_of_tenant_a_on_any_route(tenants):
    client, settings = tenants["client"], tenants["settings"]
    before = snapshot(client, settings)
    assert before["documents"] and before["queries"] and before["experiments"] and before["corpora"]
    assert before["files"] and sum(before["points"].values()) > 0
    leaks = walk(client, tenants["keys"], tenants["markers"], tenants["ids"])
    client.app.state.jobs.wait_idle()  # whatever B's calls started has finished
    assert leaks == [], "\n".join(leaks)
    after = snapshot(client, settings)
    assert {k: v for k, v in after.items() if v != before[k]} == {}


@pytest.mark.model
def test_the_walker_fails_when_one_repository_forgets_the_tenant(tenants, monkeypatch):
    def any_tenant(self, document_id, *, for_update=False):  # the tenant filter taken out
        return self.session.scalar(select(DocumentRow).where(DocumentRow.id == document_id))

    monkeypatch.setattr(DocumentRepository, "get_optional", any_tenant)
    leaks = walk(tenants["client"], tenants["keys"], tenants["markers"], tenants["ids"])
    assert any(leak.startswith("GET /documents/{document_id} as") and "document" in leak for leak in leaks), leaks
