"""Work interrupted by a dead process: a real server killed with SIGKILL mid-embedding, and who may recover what
when several replicas share one database (owner + lease on documents and jobs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

import chunkbench
from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.indexing import processing
from chunkbench.jobs import execution
from chunkbench.jobs.local import JobRunner
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import owner_gone, this_process
from chunkbench.storage.schema import DocumentRow, JobRow, StrategyRunRow
from chunkbench.storage.vectors import close_vector_stores, get_vector_store
from fake_openai import running_fake_openai
from netutil import free_port
from pgtest import ON_POSTGRES

REMOTE_MODEL = "text-embedding-3-small"  # 1536 dimensions, one embedding request per strategy
# Three sections of well under 512 tokens: recursive starts a chunk at every heading, so 3 chunks.
SECTIONS = {
    "Rivers": "Rivers carry water from the mountains to the sea. They shape valleys over thousands of years. ",
    "Forests": "Forests store carbon and shelter many animals. Old trees can live for centuries. ",
    "Deserts": "Deserts receive little rain each year. Their nights can be surprisingly cold. ",
}
DOCUMENT = "\n\n".join(f"## {title}\n\n{body * 4}".strip() for title, body in SECTIONS.items()) + "\n"


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _wait_for(predicate, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def _points(settings: Settings, strategy: str, document_id: str) -> int:
    store = get_vector_store(settings)
    try:
        return store.count_document(strategy, REMOTE_MODEL, tenant_id="default", document_id=document_id)
    finally:
        close_vector_stores()


@pytest.mark.slow
def test_a_server_killed_mid_embedding_leaves_a_failed_resumable_document_and_no_orphan_vectors(
    tmp_path: Path, database_url: str
):
    data_dir = tmp_path / "data"
    with running_fake_openai(dimension=1536) as fake:
        fake.hold_embeddings_after = 1  # fixed_size embeds and is indexed; recursive hangs mid-embedding
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(Path(chunkbench.__file__).parents[1]),
            "HF_HUB_OFFLINE": "1",
            "CHUNKBENCH_DATA_DIR": str(data_dir),
            "CHUNKBENCH_PORT": str(port),
            "CHUNKBENCH_OPENAI_BASE_URL": fake.url,
            "CHUNKBENCH_OPENAI_API_KEY": "sk-test",
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "chunkbench", "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        base = f"http://127.0.0.1:{port}"
        try:

            def up() -> bool:
                assert server.poll() is None, "the server exited"
                try:
                    return httpx.get(f"{base}/health", timeout=2).status_code == 200
                except httpx.TransportError:
                    return False

            _wait_for(up, "the server to start")
            uploaded = httpx.post(f"{base}/documents", files={"file": ("nature.md", DOCUMENT.encode())}, timeout=30)
            assert uploaded.status_code == 201, uploaded.text
            document_id = uploaded.json()["document"]["id"]
            body = {
                "strategies": ["fixed_size", "recursive"],
                "corpus_model_id": REMOTE_MODEL,
                "params": {"fixed_size": {"chunk_size": 40, "chunk_overlap": 0}},
            }
            accepted = httpx.post(f"{base}/documents/{document_id}/process", json=body, timeout=30)
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["job_id"]
            assert fake.embeddings_held.wait(timeout=120), "processing never reached its second embedding request"
            # Mid-embedding, as the server itself reports it; the first strategy's points are already written.
            assert httpx.get(f"{base}/documents/{document_id}", timeout=10).json()["status"] == "embedding"
            assert httpx.get(f"{base}/jobs/{job_id}", timeout=10).json()["status"] == "running"
            server.send_signal(signal.SIGKILL)
            assert server.wait(timeout=30) == -signal.SIGKILL
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(timeout=30)
            fake.release_embeddings.set()

        settings = Settings(
            _env_file=None, data_dir=data_dir, openai_base_url=fake.url, openai_api_key="sk-test", llm_max_retries=0,
            # On PostgreSQL the restarted server's worker retries the killed one's job once its heartbeat is stale:
            # not before its first check, 2 s after the start (the document is read before that).
            worker_heartbeat_s=2, worker_stalled_s=5,
        )  # fmt: skip
        fixed_size_points = _points(settings, "fixed_size", document_id)
        assert fixed_size_points > 0  # what the killed run left behind: orphans unless recovery removes them

        fake.hold_embeddings_after = None
        with TestClient(create_app(settings)) as restarted:
            document = restarted.get(f"/documents/{document_id}").json()
            assert document["status"] == "failed"
            assert (
                "interrupted" in document["error_message"] and "process the document again" in document["error_message"]
            )
            assert document["chunk_counts"] == {}
            assert restarted.get(f"/documents/{document_id}/runs").json() == []  # the killed run's rows are gone
            job = restarted.get(f"/jobs/{job_id}").json()
            if ON_POSTGRES:
                # A job of the task queue is not failed: the stopped worker's task is retried, and processes the
                # recovered document again; the kill stays in the job's history.
                ended = ("succeeded", "failed", "cancelled")
                _wait_for(lambda: restarted.get(f"/jobs/{job_id}").json()["status"] in ended, "the retry")
                job = restarted.get(f"/jobs/{job_id}").json()
                assert job["status"] == "succeeded", (job["error"], job["attempts"])
                assert [a["outcome"] for a in job["attempts"]] == ["lost", "succeeded"]
                assert restarted.get(f"/documents/{document_id}").json()["status"] == "indexed"
            else:
                assert job["status"] == "failed" and job["error"]["error"] == "interrupted"
            assert restarted.get("/health").status_code == 200
        if ON_POSTGRES:
            # What the retry indexed, then the process below replaces it.
            assert _points(settings, "fixed_size", document_id) == fixed_size_points
        else:
            assert _points(settings, "fixed_size", document_id) == 0
            with pytest.raises(Exception, match="recursive"):  # its collection was never even written
                _points(settings, "recursive", document_id)

        with TestClient(create_app(settings)) as restarted:
            again = restarted.post(f"/documents/{document_id}/process", params={"wait": "true"}, json=body)
            assert again.status_code == 200, again.text
            result = again.json()
            assert result["status"] == "indexed" and result["failed"] == []
            counts = result["chunk_counts"]
            assert counts["recursive"] == len(SECTIONS)  # one chunk per section
            # The same windows as the killed run produced before it was killed.
            assert counts["fixed_size"] == fixed_size_points
            # Parse, the killed run, (on the queue: its retry,) this one.
            assert restarted.get(f"/documents/{document_id}").json()["attempts"] == (4 if ON_POSTGRES else 3)
        assert _points(settings, "fixed_size", document_id) == counts["fixed_size"]
        assert _points(settings, "recursive", document_id) == len(SECTIONS)


# ------------------------------------------------------------------------------------ ownership and leases


def test_owner_gone_takes_over_only_dead_or_expired_work():
    me = this_process()
    now = datetime.now(UTC)
    later, earlier = now + timedelta(minutes=5), now - timedelta(seconds=1)
    assert owner_gone(me.host, me.pid, me.token, earlier, now=now) is False  # our own work, even if late
    assert owner_gone(None, None, None, None, now=now) is True  # written before leases existed
    assert owner_gone("other-host", 4242, "t" * 32, later, now=now) is False  # another replica, lease valid
    assert owner_gone("other-host", 4242, "t" * 32, earlier, now=now) is True  # it stopped renewing
    assert owner_gone(me.host, _dead_pid(), "t" * 32, later, now=now) is True  # same host, process gone
    assert owner_gone(me.host, me.pid, "t" * 32, later, now=now) is True  # our pid, another token: a past life
    assert owner_gone(me.host, os.getppid(), "t" * 32, later, now=now) is False  # a live process on this host
    # SQLite hands timestamps back naive: they are UTC.
    assert owner_gone("other-host", 4242, "t" * 32, earlier.replace(tzinfo=None), now=now) is True


def _document(database: Database, **values) -> str:
    document_id = uuid.uuid4().hex
    with database.session() as session:
        session.add(
            DocumentRow(
                id=document_id, filename=f"{document_id}.md", content_hash="0" * 64, file_size=1,
                mime_type="text/markdown", parsed_text="x", document_tree={}, status="embedding", **values,
            )
        )  # fmt: skip
    return document_id


def _job(database: Database, **values) -> str:
    job_id = uuid.uuid4().hex
    with database.session() as session:
        session.add(JobRow(id=job_id, kind="process", status="running", request={}, **values))
    return job_id


def test_a_starting_replica_recovers_only_dead_or_expired_owners(settings: Settings):
    database = Database.from_settings(settings)
    later = datetime.now(UTC) + timedelta(minutes=5)
    earlier = datetime.now(UTC) - timedelta(minutes=1)
    me = this_process()
    live_elsewhere = {"owner_host": "replica-b", "owner_pid": 7, "owner_token": "b" * 32, "lease_expires_at": later}
    expired = {"owner_host": "replica-c", "owner_pid": 7, "owner_token": "c" * 32, "lease_expires_at": earlier}
    dead_here = {"owner_host": me.host, "owner_pid": _dead_pid(), "owner_token": "d" * 32, "lease_expires_at": later}
    mine = {"owner_host": me.host, "owner_pid": me.pid, "owner_token": me.token, "lease_expires_at": later}
    documents = {name: _document(database, **owner) for name, owner in
                 {"live": live_elsewhere, "expired": expired, "dead": dead_here, "mine": mine}.items()}  # fmt: skip
    run_id = uuid.uuid4().hex
    with database.session() as session:
        row = session.get(DocumentRow, documents["dead"])
        row.chunk_counts = {"fixed_size": 3, "semantic": 5}
        row.processing_run = {"strategies": ["fixed_size"], "corpus_model_id": "all-MiniLM-L6-v2",
                              "strategy_run_ids": [run_id]}  # fmt: skip
        session.add(StrategyRunRow(id=run_id, document_id=documents["dead"], strategy_name="fixed_size",
                                   status="completed", corpus_model_id="all-MiniLM-L6-v2"))  # fmt: skip
    job_ids = {name: _job(database, **owner) for name, owner in
               {"live": live_elsewhere, "expired": expired, "dead": dead_here, "mine": mine}.items()}  # fmt: skip

    # At least these two each (a shared PostgreSQL may hold other tests' expired work too).
    assert processing.fail_interrupted(database, settings) >= 2
    assert execution.fail_interrupted(database) >= 2
    with database.session() as session:
        status = {name: session.get(DocumentRow, i).status for name, i in documents.items()}
        assert status == {"live": "embedding", "expired": "failed", "dead": "failed", "mine": "embedding"}
        recovered = session.get(DocumentRow, documents["dead"])
        assert recovered.chunk_counts == {"semantic": 5}  # the interrupted strategy's points are gone
        assert recovered.processing_run is None and recovered.owner_token is None
        assert session.get(StrategyRunRow, run_id) is None
        job_status = {name: session.get(JobRow, i).status for name, i in job_ids.items()}
        assert job_status == {"live": "running", "expired": "failed", "dead": "failed", "mine": "running"}
    database.dispose()


def test_a_job_carries_its_owner_and_a_lease_that_is_renewed(settings: Settings):
    database = Database.from_settings(settings)
    runner = JobRunner(database, lease_s=3)  # renewed every second
    try:
        started = datetime.now(UTC)
        release = threading.Event()
        execution.register_kind("test", lambda call, progress, stop: {"done": release.wait(timeout=60)})
        row = runner.submit(kind="test", tenant_id="default", document_id=None, request={}, payload={})

        def lease() -> datetime:
            with database.session() as session:
                job = session.get(JobRow, row.id)
                assert (job.owner_host, job.owner_pid, job.owner_token) == tuple(vars(this_process()).values())
                stamp = job.lease_expires_at
                return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp

        first = lease()
        assert first >= started + timedelta(seconds=3)
        _wait_for(lambda: lease() > first, "the lease to be renewed", timeout_s=60)
        release.set()
        runner.wait_idle()
    finally:
        runner.shutdown()
        database.dispose()


# ------------------------------------------------------------------------------------ the CLI, killed and re-run


def _cli_env(data_dir: Path, fake_url: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(Path(chunkbench.__file__).parents[1]),
        "HF_HUB_OFFLINE": "1",
        "CHUNKBENCH_DATA_DIR": str(data_dir),
        "CHUNKBENCH_OPENAI_BASE_URL": fake_url,
        "CHUNKBENCH_OPENAI_API_KEY": "sk-test",
        **extra,
    }


PROCESS_ARGS = ["--strategies", "fixed_size,recursive", "--corpus-model", REMOTE_MODEL,
                "--param", "fixed_size.chunk_size=40", "--param", "fixed_size.chunk_overlap=0", "--json"]  # fmt: skip


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkbench", *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _kill_when_held(env: dict[str, str], fake, args: list[str], held: Callable[[], None]) -> None:
    """Start ``chunkbench`` with ``args``, wait until its embedding is held, check ``held()``, SIGKILL it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "chunkbench", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_for(lambda: fake.embeddings_held.is_set() or process.poll() is not None, "the embedding to be held")
        assert process.poll() is None, "chunkbench exited before it was caught mid-embedding"
        held()
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        fake.hold_embeddings_after = None
        fake.release_embeddings.set()


def _ingest(settings: Settings, folder: Path, texts: dict[str, str]) -> dict[str, str]:
    """Write and ingest ``texts`` (filename → markdown); filename → document id."""
    from chunkbench.documents.discovery import discover_files
    from chunkbench.documents.ingest import ingest_paths

    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    database = Database.from_settings(settings)
    try:
        files = discover_files([folder / name for name in texts])
        results = list(ingest_paths(database, settings, files, tenant_id="default"))
        return {result.filename: result.document.id for result in results}
    finally:
        database.dispose()


def _status(settings: Settings, document_id: str) -> str:
    database = Database.from_settings(settings)
    try:
        with database.session() as session:
            return session.get(DocumentRow, document_id).status
    finally:
        database.dispose()


@pytest.mark.slow
def test_a_cli_process_killed_mid_embedding_is_recovered_by_the_next_cli_process(tmp_path: Path, database_url: str):
    data_dir = tmp_path / "data"
    settings = Settings(_env_file=None, data_dir=data_dir)
    (document_id,) = _ingest(settings, tmp_path / "files", {"nature.md": DOCUMENT}).values()
    with running_fake_openai(dimension=1536) as fake:
        env = _cli_env(data_dir, fake.url)
        fake.hold_embeddings_after = 1  # fixed_size is embedded and written; recursive hangs mid-embedding
        held = lambda: _wait_for(lambda: _status(settings, document_id) == "embedding", "the document to embed")  # noqa: E731
        _kill_when_held(env, fake, ["process", "nature.md", *PROCESS_ARGS], held)
        assert _status(settings, document_id) == "embedding"  # what the next command used to refuse

        again = _cli(env, "process", "nature.md", *PROCESS_ARGS)
    assert again.returncode == 0, again.stderr
    assert "recovered the work of a stopped process" in again.stderr and "1 document(s)" in again.stderr
    result = json.loads(again.stdout)
    assert result["status"] == "indexed" and result["failed"] == []
    assert result["chunk_counts"]["recursive"] == len(SECTIONS)
    assert _points(settings, "fixed_size", document_id) == result["chunk_counts"]["fixed_size"]
    assert _points(settings, "recursive", document_id) == len(SECTIONS)
    database = Database.from_settings(settings)
    with database.session() as session:
        runs = session.scalars(select(StrategyRunRow).where(StrategyRunRow.document_id == document_id)).all()
        assert sorted(run.strategy_name for run in runs) == ["fixed_size", "recursive"]  # the killed run's are gone
    database.dispose()


def _topic_document(topic: str) -> str:
    sentence = f"The {topic} of the world change slowly over many thousands of years. "
    return f"## {topic.title()} now\n\n{sentence * 5}\n\n## {topic.title()} later\n\n{sentence * 3}\n"


def _snapshot(settings: Settings, document_ids: list[str]) -> list[dict]:
    """Per document, in order: its state, chunk counts, strategy runs and points (as the engine returns them)."""
    database = Database.from_settings(settings)
    store = get_vector_store(settings)
    snapshot = []
    try:
        with database.session() as session:
            for document_id in document_ids:
                row = session.get(DocumentRow, document_id)
                runs = session.scalars(select(StrategyRunRow).where(StrategyRunRow.document_id == document_id)).all()
                points = {}
                for strategy in ("fixed_size", "recursive"):
                    found = store.scroll_document(strategy, REMOTE_MODEL, tenant_id="default", document_id=document_id)
                    points[strategy] = [(p["chunk_index"], p["start_index"], p["end_index"], p["text"]) for p in found]
                snapshot.append({
                    "status": row.status,
                    "chunk_counts": row.chunk_counts,
                    "runs": sorted((r.strategy_name, r.status, r.chunk_count, json.dumps(r.params, sort_keys=True),
                                    json.dumps(r.details, sort_keys=True)) for r in runs),
                    "points": points,
                })  # fmt: skip
    finally:
        close_vector_stores()
        database.dispose()
    return snapshot


@pytest.mark.slow
def test_a_corpus_job_killed_mid_way_ends_as_an_uninterrupted_one_when_run_again(tmp_path: Path, database_url: str):
    from chunkbench.storage.repositories import CorpusRepository

    data_dir = tmp_path / "data"
    settings = Settings(_env_file=None, data_dir=data_dir)
    topics = ["rivers", "forests", "deserts", "glaciers"]
    killed = list(_ingest(settings, tmp_path / "a", {f"{t}.md": _topic_document(t) for t in topics}).values())
    # The same texts under other names: the uninterrupted run to compare with.
    reference = list(_ingest(settings, tmp_path / "b", {f"{t}-copy.md": _topic_document(t) for t in topics}).values())
    database = Database.from_settings(settings)
    with database.session() as session:
        repository = CorpusRepository(session, "default")
        repository.add_documents(repository.create("killed"), killed)
        repository.add_documents(repository.create("reference"), reference)
    database.dispose()

    with running_fake_openai(dimension=1536) as fake:
        # One document per batch, so a batch is one embedding request per strategy.
        env = _cli_env(data_dir, fake.url, CHUNKBENCH_CORPUS_BATCH_CHUNKS="1")
        fake.hold_embeddings_after = 3  # the first document done; the second's recursive chunks held

        def held() -> None:
            assert [_status(settings, d) for d in killed] == ["indexed", "embedding", "parsed", "parsed"]

        _kill_when_held(env, fake, ["process", "--corpus", "killed", *PROCESS_ARGS], held)
        assert _points(settings, "fixed_size", killed[1]) > 0  # the second document's half-done work

        resumed = _cli(env, "process", "--corpus", "killed", *PROCESS_ARGS)
        assert resumed.returncode == 0, resumed.stderr
        assert "1 document(s) marked failed" in resumed.stderr
        result = json.loads(resumed.stdout)
        assert (result["skipped"], result["processed"], result["failed"]) == (1, 3, 0)
        uninterrupted = _cli(env, "process", "--corpus", "reference", *PROCESS_ARGS)
        assert uninterrupted.returncode == 0, uninterrupted.stderr
        assert json.loads(uninterrupted.stdout)["processed"] == len(topics)

    after_kill, expected = _snapshot(settings, killed), _snapshot(settings, reference)
    assert after_kill == expected
    assert {item["status"] for item in after_kill} == {"indexed"}
    assert all(len(item["runs"]) == 2 for item in after_kill)  # one run per strategy: the killed one's removed
    assert all(item["points"]["fixed_size"] and item["points"]["recursive"] for item in after_kill)
