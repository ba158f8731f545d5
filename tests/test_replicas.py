"""Several API processes on one metadata store (issue 7 §8): what one replica writes, another reads, queries
and deletes; and the pieces that make several replicas safe (migration lock, row lock, typed connection errors).

The two app instances (two TestClients, each with its own engine, pool and job runner) share the test's
database — SQLite on the first pass, PostgreSQL on the second. They cannot each open the embedded Qdrant folder
(one client per folder, a file lock), so they share this process's one client for it: the stand-in for the
Qdrant server that real replicas share through CHUNKBENCH_QDRANT_URL.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from chunkbench.app import create_app
from chunkbench.benchmarking import claims
from chunkbench.config import Settings
from chunkbench.errors import DatabaseUnavailableError, InvalidStateTransitionError
from chunkbench.models import DocumentState
from chunkbench.storage.db import Database, create_db_engine, migrate
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import DEFAULT_TENANT, ExperimentRow
from pgtest import ON_POSTGRES
from test_queries import HANDBOOK

POSTGRES_ONLY = "PostgreSQL behaviour (advisory and row locks); SQLite is one writer per file and one process"


def _wait_for_job(client: TestClient, job_url: str) -> dict:
    deadline = time.monotonic() + 120
    while (job := client.get(job_url).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    return job


@pytest.mark.model
def test_a_document_uploaded_on_one_replica_is_seen_queried_and_deleted_from_another(settings):
    settings.llm_max_retries = 0
    with (
        TestClient(create_app(settings)) as first,
        TestClient(create_app(settings.model_copy())) as second,
    ):
        assert first.app.state.database is not second.app.state.database
        document_id = first.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"][
            "id"
        ]
        # Processed as a job by the first replica's runner, followed through the second (job rows are shared).
        accepted = first.post(f"/documents/{document_id}/process", json={"strategies": ["recursive"]})
        assert accepted.status_code == 202, accepted.text
        job = _wait_for_job(second, accepted.json()["status_url"])
        assert job["status"] == "succeeded", job

        listed = second.get("/documents").json()
        assert [item["id"] for item in listed["items"]] == [document_id] and listed["total"] == 1
        assert second.get(f"/documents/{document_id}").json()["status"] == "indexed"

        asked = second.post(
            "/queries", json={"document_id": document_id, "strategy": "recursive", "question": "Hotel costs?"}
        )
        assert asked.status_code == 201, asked.text
        assert "150 euros" in asked.json()["answer"]
        assert first.get(f"/queries/{asked.json()['id']}").json()["answer"] == asked.json()["answer"]

        # Run-time settings live in app_settings, read per request: a change on one replica holds on the other.
        assert first.put("/admin/serving", json={"strategy": "recursive", "top_k": 3}).status_code == 200
        assert second.get("/admin/serving").json()["top_k"] == 3

        assert second.delete(f"/documents/{document_id}").status_code == 204
        assert first.get(f"/documents/{document_id}").status_code == 404
        gone = first.post("/queries", json={"document_id": document_id, "strategy": "recursive", "question": "Why?"})
        assert gone.status_code == 404
        assert first.get("/queries").json() == []  # the deleted document's queries went with it
        assert [c["points"] for c in first.get("/admin/qdrant/collections").json()] == [0]


@pytest.mark.postgres
@pytest.mark.skipif(not ON_POSTGRES, reason=POSTGRES_ONLY)
def test_replicas_migrating_a_fresh_database_at_once_take_turns(database_url):
    # A fresh, empty database next to the test's migrated one: the schema is created by the racing migrations.
    engine = create_db_engine(database_url)
    fresh = f"{engine.url.database}_fresh"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f'CREATE DATABASE "{fresh}"'))
    engine.dispose()
    fresh_url = engine.url.set(database=fresh).render_as_string(hide_password=False)
    start, errors = threading.Barrier(3), []

    def replica() -> None:
        replica_engine = create_db_engine(fresh_url)
        try:
            start.wait()
            migrate(replica_engine)
        except Exception as exc:  # the assertion below reports it
            errors.append(exc)
        finally:
            replica_engine.dispose()

    threads = [threading.Thread(target=replica) for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        check = create_db_engine(fresh_url)
        with check.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
            assert connection.execute(text("SELECT count(*) FROM documents")).scalar_one() == 0
        check.dispose()
    finally:
        admin = create_db_engine(database_url)
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)'))
        admin.dispose()


@pytest.mark.postgres
@pytest.mark.skipif(not ON_POSTGRES, reason=POSTGRES_ONLY)
def test_two_replicas_cannot_both_start_processing_one_document(client):
    document_id = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"]["id"]
    first, second = client.app.state.database, Database(client.app.state.settings.sqlalchemy_url)
    outcome: list[object] = []
    try:
        with first.session() as session:
            row = DocumentRepository(session, DEFAULT_TENANT).get(document_id, for_update=True)
            DocumentRepository.transition(row, DocumentState.CHUNKING)
            session.flush()

            def other_replica() -> None:
                try:
                    with second.session() as other:
                        claimed = DocumentRepository(other, DEFAULT_TENANT).get(document_id, for_update=True)
                        DocumentRepository.transition(claimed, DocumentState.CHUNKING)
                    outcome.append("claimed")
                except InvalidStateTransitionError as exc:
                    outcome.append(exc)

            thread = threading.Thread(target=other_replica)
            thread.start()
            thread.join(timeout=1.0)
            assert thread.is_alive(), "the second claim must wait for the first one's transaction"
        thread.join(timeout=30)
    finally:
        second.dispose()
    [result] = outcome
    assert isinstance(result, InvalidStateTransitionError) and "'chunking'" in result.message


def test_an_unreachable_database_is_a_503_naming_the_host_not_a_traceback(tmp_path):
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path / "data",
        database_url="postgresql+psycopg://ci:secret-pw@127.0.0.1:9/nowhere",
        database_connect_timeout_s=2,
    )
    with pytest.raises(DatabaseUnavailableError) as info:
        Database.from_settings(settings)
    assert info.value.status_code == 503
    assert "127.0.0.1:9/nowhere" in info.value.message and "CHUNKBENCH_DATABASE_URL" in info.value.message
    assert "secret-pw" not in info.value.message


def test_a_database_lost_while_serving_answers_503_with_the_host(client):
    # The running app's database swapped for one on a dead server: every request needing SQL fails to connect.
    settings, serving = client.app.state.settings, client.app.state.database
    kept_url, dead = settings.database_url, "postgresql+psycopg://ci:ci@127.0.0.1:9/gone"
    settings.database_url = dead
    client.app.state.database = Database(dead, connect_timeout_s=2)
    try:
        response = client.get("/documents")
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["error"] == "database_unavailable" and "127.0.0.1:9/gone" in body["message"]
        assert "Traceback" not in response.text
    finally:
        client.app.state.database.dispose()
        client.app.state.database, settings.database_url = serving, kept_url


def test_a_restarted_container_reusing_the_pid_still_finds_its_killed_benchmark(client):
    # In a container the server has the same pid after every restart: a "running" Experiment recorded under this
    # host and pid, that this process never claimed, was left by the killed previous incarnation.
    document_id = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"]["id"]
    database = client.app.state.database
    with database.session() as session:
        session.add(
            ExperimentRow(
                id="e-before-restart", tenant_id=DEFAULT_TENANT, document_id=document_id, status="running",
                runner_host=socket.gethostname(), runner_pid=os.getpid(),
            )
        )  # fmt: skip
    assert claims.fail_interrupted(database) == 1
    with database.session() as session:
        assert session.get(ExperimentRow, "e-before-restart").status == "interrupted"
