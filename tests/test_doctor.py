"""``chunkbench doctor`` and ``GET /admin/consistency``: each invariant between the metadata store and the vector
store broken on purpose, behind chunkbench's back (the real app, SQLite, embedded Qdrant, MiniLM), found, and
repaired until the two agree."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.storage.ownership import lease_until, this_process
from chunkbench.storage.points import collection_name, document_filter
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.tenants import accounts
from test_auth import cli  # noqa: F401 (a fixture: the CLI on the test's data directory and database)
from test_queries import HANDBOOK

MODEL = "all-MiniLM-L6-v2"
FIXED, RECURSIVE = collection_name("fixed_size", MODEL), collection_name("recursive", MODEL)
PROCESS = {"strategies": ["fixed_size", "recursive"], "params": {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}}}
OTHER = "# Travel\n\n" + "".join(
    f"Rule {n}: trains are preferred for trips under five hours, and flights need a manager's approval first.\n\n"
    for n in range(1, 9)
)


@pytest.fixture
def indexed(client):
    """Three documents processed with fixed_size and recursive."""
    ids = []
    for name, text in (("handbook.md", HANDBOOK), ("travel.md", OTHER), ("more.md", HANDBOOK + "\n\nMore.\n")):
        upload = client.post("/documents", files={"file": (name, text.encode())})
        assert upload.status_code == 201, upload.text
        document_id = upload.json()["document"]["id"]
        processed = client.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=PROCESS)
        assert processed.status_code == 200, processed.text
        ids.append(document_id)
    return client, ids


def _consistency(client) -> dict:
    response = client.get("/admin/consistency")
    assert response.status_code == 200, response.text
    return response.json()


def _kinds(report: dict) -> dict[tuple[str, str | None], str]:
    return {(f["document_id"], f["collection"]): f["kind"] for f in report["findings"]}


@pytest.mark.model
def test_a_freshly_processed_store_is_consistent(indexed):
    client, _ids = indexed
    report = _consistency(client)
    assert report["consistent"] is True and report["findings"] == []
    assert report["documents"] == 3 and report["runs"] == 6 and report["collections"] == 2 and report["points"] > 0


@pytest.mark.model
def test_every_broken_invariant_is_found_and_repaired(indexed, cli):  # noqa: F811 (the fixture)
    client, (handbook, travel, more) = indexed
    store, database = client.app.state.vector_store, client.app.state.database
    engine = store.engine
    # 1. Points deleted behind its back: the handbook's fixed_size run has none left.
    store.delete_collection_document(FIXED, "default", handbook)
    # 2. Some points gone: travel's fixed_size run holds fewer points than it cut.
    travel_points = engine.scroll(FIXED, document_filter("default", travel, include_parents=False))
    assert len(travel_points) > 1
    engine.delete_ids(FIXED, [travel_points[0].id])
    # 3. A process died between the two stores: more's recursive points are written, its run was never recorded.
    with database.session() as session:
        recursive_of_more = (StrategyRunRow.document_id == more, StrategyRunRow.strategy_name == "recursive")
        session.execute(delete(StrategyRunRow).where(*recursive_of_more))
    # 4. Points of a document that does not exist (another tenant's, removed without its vectors).
    with database.session() as session:
        accounts.create_tenant(session, "Gone", tenant_id="gone")
    source = engine.scroll(RECURSIVE, document_filter("default", handbook, include_parents=False), with_vectors=True)[0]
    orphan = replace(
        source,
        id="00000000-0000-5000-8000-000000000001",
        payload={**source.payload, "tenant_id": "gone", "document_id": "f" * 32, "is_parent": False},
    )
    engine.upsert(RECURSIVE, [orphan])

    report = _consistency(client)
    assert report["consistent"] is False
    assert _kinds(report) == {
        (handbook, FIXED): "missing_points",
        (travel, FIXED): "point_count_mismatch",
        (more, RECURSIVE): "orphan_points",
        ("f" * 32, RECURSIVE): "orphan_points",
    }, report["findings"]
    mismatch = next(f for f in report["findings"] if f["kind"] == "point_count_mismatch")
    assert mismatch["points"] == mismatch["chunk_count"] - 1 and mismatch["strategy"] == "fixed_size"
    gone = next(f for f in report["findings"] if f["tenant_id"] == "gone")
    assert "does not exist" in gone["message"]

    # The CLI reports the same differences and exits 1.
    checked = cli.invoke(cli_app, ["doctor", "--json"])
    assert checked.exit_code == 1, checked.output
    assert _kinds(json.loads(checked.stdout)) == _kinds(report)

    repaired = cli.invoke(cli_app, ["doctor", "--repair", "--json"])
    assert repaired.exit_code == 0, repaired.output
    body = json.loads(repaired.stdout)
    assert body["consistent"] is True and body["repaired"] is True
    said = {(f["document_id"], f["collection"]): f["repaired"] for f in body["findings"]}
    assert said[(handbook, FIXED)].startswith("marked not indexed and processed again")
    assert said[(travel, FIXED)].startswith("marked not indexed and processed again")
    orphans = next(f["points"] for f in report["findings"] if f["document_id"] == more)
    assert said[(more, RECURSIVE)] == f"deleted {orphans} orphan point(s)"
    assert said[("f" * 32, RECURSIVE)] == "deleted 1 orphan point(s)"

    # Nothing is left: the API and the CLI agree, and the re-processed runs answer queries.
    assert _consistency(client)["consistent"] is True
    clean = cli.invoke(cli_app, ["doctor"])
    assert clean.exit_code == 0 and "consistent" in clean.stdout
    asked = client.post("/queries", json={"document_id": handbook, "question": "leave?", "strategy": "fixed_size"})
    assert asked.status_code == 201 and asked.json()["sources"], asked.text


@pytest.mark.model
def test_a_dropped_collection_and_a_stale_status_are_found_and_repaired(indexed, cli):  # noqa: F811
    client, (handbook, travel, more) = indexed
    store, database = client.app.state.vector_store, client.app.state.database
    store.delete_collection(RECURSIVE)  # behind its back: no run was marked
    with database.session() as session:
        session.execute(delete(StrategyRunRow).where(StrategyRunRow.document_id == travel))
    report = _consistency(client)
    kinds = _kinds(report)
    assert {kinds[(d, RECURSIVE)] for d in (handbook, more)} == {"missing_collection"}
    assert kinds[(travel, FIXED)] == "orphan_points"
    assert kinds[(travel, None)] == "indexed_status"  # 'indexed' without a completed run
    repaired = cli.invoke(cli_app, ["doctor", "--repair", "--json"])
    assert repaired.exit_code == 0, repaired.output
    said = {(f["document_id"], f["collection"]): f["repaired"] for f in json.loads(repaired.stdout)["findings"]}
    assert said[(handbook, RECURSIVE)].startswith("marked not indexed and processed again"), said
    assert said[(travel, FIXED)].startswith("deleted ") and said[(travel, None)].startswith("status set to 'parsed'")
    assert _consistency(client)["consistent"] is True
    with database.session() as session:
        assert session.get(DocumentRow, travel).status == "parsed"


def test_only_the_operator_reads_the_consistency_report(settings):
    settings.auth = True
    with TestClient(create_app(settings)) as client:
        with client.app.state.database.session() as session:
            accounts.create_tenant(session, "A", tenant_id="a")
            admin = accounts.create_key(session, "a", admin=True)[1]
            operator = accounts.create_key(session, "default", operator=True)[1]
        refused = client.get("/admin/consistency", headers={"Authorization": f"Bearer {admin}"})
        assert refused.status_code == 403 and "--operator" in refused.json()["message"]
        allowed = client.get("/admin/consistency", headers={"Authorization": f"Bearer {operator}"})
        assert allowed.status_code == 200 and allowed.json()["consistent"] is True


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.model
def test_a_document_a_live_process_is_processing_is_left_out_and_a_dead_ones_is_not(indexed, cli):  # noqa: F811
    client, (_handbook, _travel, more) = indexed
    store, database = client.app.state.vector_store, client.app.state.database
    points = store.count_document("recursive", MODEL, tenant_id="default", document_id=more)
    # As a live process leaves it mid-processing: the new points are written, the run is not recorded yet.
    with database.session() as session:
        recursive_of_more = (StrategyRunRow.document_id == more, StrategyRunRow.strategy_name == "recursive")
        session.execute(delete(StrategyRunRow).where(*recursive_of_more))
        row = session.get(DocumentRow, more)
        me = this_process()
        row.status, row.owner_host, row.owner_pid, row.owner_token = "embedding", me.host, me.pid, me.token
        row.lease_expires_at = lease_until(300)
    report = _consistency(client)
    assert report["consistent"] is True and report["in_progress"] == 1 and report["findings"] == []
    # A repair then must not delete the points the live process is about to record.
    repaired = cli.invoke(cli_app, ["doctor", "--repair", "--json"])
    assert repaired.exit_code == 0 and json.loads(repaired.stdout)["in_progress"] == 1, repaired.output
    assert store.count_document("recursive", MODEL, tenant_id="default", document_id=more) == points
    assert "left out" in cli.invoke(cli_app, ["doctor"]).stdout
    # Its owner dead, the same points are orphans.
    with database.session() as session:
        row = session.get(DocumentRow, more)
        row.owner_pid, row.owner_token = _dead_pid(), "d" * 32
    report = _consistency(client)
    assert report["in_progress"] == 0 and _kinds(report) == {(more, RECURSIVE): "orphan_points"}
