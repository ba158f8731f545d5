"""Cancelling jobs through the real app (MiniLM or a local fake embedder, embedded Qdrant, SQLite/PostgreSQL): a
benchmark stops at its next cell and resumes to the figures of an uninterrupted run, a corpus job at its next
document and a processing job at its next strategy, each keeping what it finished; a job of another replica
stops when its owner's heartbeat reads the request; ended and unknown jobs are clear errors."""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

from chunkbench.benchmarking import experiments, planning, runner
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.errors import JobCancelledError
from chunkbench.indexing import corpus_job, processing
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.jobs import execution
from chunkbench.jobs.local import JobRunner
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT, JobRow
from chunkbench.storage.vectors import get_vector_store
from test_benchmarks import QUESTIONS, _benchmark, _figures, document_id  # noqa: F401  (the fixture)
from test_corpus_processing import BODY, REMOTE_MODEL, corpus_ids, fake, remote_client  # noqa: F401  (fixtures)


def _hold(client: TestClient) -> threading.Event:
    """Occupy the app's one job worker until the returned event is set: what is submitted next stays queued."""
    gate = threading.Event()
    execution.register_kind("hold", lambda call, progress, stop: {"released": gate.wait(timeout=120)})
    client.app.state.jobs.submit(kind="hold", tenant_id=DEFAULT_TENANT, document_id=None, request={}, payload={})
    return gate


def _job(client: TestClient, job_id: str) -> dict:
    return client.get(f"/jobs/{job_id}").json()


@pytest.mark.model
def test_a_benchmark_cancelled_before_its_first_cell_is_interrupted_and_resumes(client, document_id):  # noqa: F811
    gate = _hold(client)
    try:
        accepted = client.post("/benchmarks", json={"document_id": document_id, "questions": QUESTIONS}).json()
        cancelled = client.post(f"/benchmarks/{accepted['experiment_id']}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        assert cancelled.json()["id"] == accepted["job_id"] and cancelled.json()["status"] == "cancelling"
    finally:
        gate.set()
    client.app.state.jobs.wait_idle()

    job = _job(client, accepted["job_id"])
    assert job["status"] == "cancelled" and job["error"]["error"] == "cancelled"
    assert job["error"]["message"].startswith("Cancelled after 0 of 10 cells")
    experiment = client.get(f"/benchmarks/{accepted['experiment_id']}").json()
    assert experiment["status"] == "interrupted" and experiment["cells"] == []
    assert experiment["error"]["message"] == job["error"]["message"]
    # Nothing runs it any more: cancelling again is refused, with what to do for a CLI run.
    again = client.post(f"/benchmarks/{accepted['experiment_id']}/cancel")
    assert again.status_code == 409 and again.json()["error"] == "job_not_active"
    assert "Ctrl-C" in again.json()["message"]
    assert client.post(f"/jobs/{accepted['job_id']}/cancel").json()["error"] == "job_not_active"

    resumed = client.post(f"/benchmarks/{accepted['experiment_id']}/resume")
    assert resumed.status_code == 202
    client.app.state.jobs.wait_idle()
    assert client.get(f"/benchmarks/{accepted['experiment_id']}").json()["status"] == "completed"


@pytest.mark.model
def test_a_cancelled_benchmark_stops_at_the_next_cell_and_resumes_to_the_same_figures(
    client,
    settings,
    document_id,  # noqa: F811
):
    database = client.app.state.database
    store = get_vector_store(settings)
    with database.session() as session:
        plan = planning.plan(
            session, settings, BenchmarkIn(document_id=document_id, questions=QUESTIONS, concurrency=1),
            tenant_id=DEFAULT_TENANT,
        )  # fmt: skip
    experiment_id = experiments.create(database, settings, plan).id
    reported: list[str] = []

    with pytest.raises(JobCancelledError) as raised:
        runner.execute(
            database, settings, store, experiment_id, tenant_id=DEFAULT_TENANT,
            progress=lambda fraction, message: reported.append(message),
            stop=lambda: "3/10 cells" in reported,  # cancelled once the third cell is written
        )  # fmt: skip
    assert raised.value.details == {"cells_done": 3, "cells_total": 10}
    partial = client.get(f"/benchmarks/{experiment_id}").json()
    assert partial["status"] == "interrupted" and partial["progress"]["cells_done"] == 3
    assert partial["error"]["message"] == (
        "Cancelled after 3 of 10 cells; the finished cells are kept. Resume the Experiment to run the other 7."
    )

    assert client.post(f"/benchmarks/{experiment_id}/resume").status_code == 202
    client.app.state.jobs.wait_idle()
    done = client.get(f"/benchmarks/{experiment_id}").json()
    assert done["status"] == "completed" and len(done["cells"]) == 10
    assert _figures(done) == _figures(_benchmark(client, document_id).json())


def test_a_corpus_job_stops_at_the_next_document_and_the_next_run_skips_what_it_finished(
    remote_client,  # noqa: F811
    corpus_ids,  # noqa: F811
    settings,
):
    client = remote_client
    settings.corpus_batch_chunks = 1  # one document per batch: the job can stop after each
    database = client.app.state.database
    with database.session() as session:
        plan = corpus_job.plan(session, settings, "nature", ProcessIn(**BODY), tenant_id=DEFAULT_TENANT)
    reported: list[str] = []
    with pytest.raises(JobCancelledError) as raised:
        corpus_job.run(
            database, settings, get_vector_store(settings), plan,
            lambda fraction, message: reported.append(message),
            lambda: any(message.startswith("1/4 documents") for message in reported),
        )  # fmt: skip
    details = raised.value.details
    assert (details["documents_done"], details["documents_total"]) == (1, 4)
    # New this session: how many chunks the finished documents indexed, as the message says.
    assert f"({details['chunks_indexed']} chunks indexed)" in raised.value.message
    assert raised.value.message.startswith("Cancelled after 1 of 4 documents (")
    statuses = [client.get(f"/documents/{d}").json()["status"] for d in corpus_ids]
    assert statuses == ["indexed", "parsed", "parsed", "parsed"]  # nothing half-done

    again = client.post("/corpora/nature/process", params={"wait": "true"}, json=BODY).json()
    assert (again["skipped"], again["processed"], again["failed"]) == (1, 3, 0)
    store = get_vector_store(settings)
    for member in corpus_ids:
        counts = client.get(f"/documents/{member}").json()["chunk_counts"]
        for strategy in BODY["strategies"]:
            assert counts[strategy] == store.count_document(
                strategy, REMOTE_MODEL, tenant_id=DEFAULT_TENANT, document_id=member
            )


def test_a_queued_corpus_job_cancelled_changes_nothing(remote_client, corpus_ids):  # noqa: F811
    client = remote_client
    gate = _hold(client)
    try:
        job_id = client.post("/corpora/nature/process", json=BODY).json()["job_id"]
        assert client.post(f"/jobs/{job_id}/cancel").json()["status"] == "cancelling"
    finally:
        gate.set()
    client.app.state.jobs.wait_idle()
    job = _job(client, job_id)
    assert job["status"] == "cancelled" and job["result"] is None
    assert job["error"]["message"].startswith("Cancelled after 0 of 4 documents")
    assert {client.get(f"/documents/{d}").json()["status"] for d in corpus_ids} == {"parsed"}


@pytest.mark.model
def test_processing_stops_at_the_next_strategy(client, settings):
    text = "# Notes\n\n" + "The river rises in spring and falls in autumn. " * 40
    notes = client.post("/documents", files={"file": ("notes.md", text.encode())}).json()["document"]["id"]
    with client.app.state.database.session() as session:
        plan = processing.plan(
            session, settings, notes, ProcessIn(strategies=["fixed_size", "recursive"]), tenant_id=DEFAULT_TENANT
        )
    answers = iter([False])  # not cancelled when it starts, cancelled from then on
    with pytest.raises(JobCancelledError) as raised:
        processing.run(client.app.state.database, settings, get_vector_store(settings), plan,
                       lambda fraction, message: None, lambda: next(answers, True))  # fmt: skip
    assert raised.value.message == (
        "Cancelled after 1 of 2 strategies (fixed_size done; the document is indexed). Process it with recursive "
        "to finish."
    )
    document = client.get(f"/documents/{notes}").json()
    assert document["status"] == "indexed" and list(document["chunk_counts"]) == ["fixed_size"]

    # Cancelled while queued: the document is not touched at all.
    gate = _hold(client)
    try:
        accepted = client.post(f"/documents/{notes}/process", json={"strategies": ["recursive"]}).json()
        client.post(f"/jobs/{accepted['job_id']}/cancel")
    finally:
        gate.set()
    client.app.state.jobs.wait_idle()
    job = _job(client, accepted["job_id"])
    assert job["status"] == "cancelled"
    assert job["error"]["message"] == "Cancelled before processing started; nothing changed. Run recursive again."
    assert list(client.get(f"/documents/{notes}").json()["chunk_counts"]) == ["fixed_size"]


def test_ended_and_unknown_jobs_cannot_be_cancelled(client):
    assert client.post("/jobs/nope/cancel").status_code == 404
    gate = _hold(client)
    gate.set()
    client.app.state.jobs.wait_idle()
    [held] = client.get("/jobs").json()
    response = client.post(f"/jobs/{held['id']}/cancel")
    assert response.status_code == 409
    assert response.json()["message"] == f"Job '{held['id']}' has already succeeded; there is nothing to cancel."
    assert client.post("/benchmarks/nope/cancel").status_code == 404


def test_a_job_of_another_replica_stops_when_its_heartbeat_reads_the_request(settings):
    database = Database.from_settings(settings)
    owner = JobRunner(database, lease_s=0.3)  # its heartbeat beats every 0.1 s
    other = JobRunner(database)  # another replica on the same database

    def work(call, progress, stop):
        deadline = time.monotonic() + 60
        while not stop() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise JobCancelledError("stopped at a safe point")

    try:
        execution.register_kind("test", work)
        row = owner.submit(kind="test", tenant_id=DEFAULT_TENANT, document_id=None, request={}, payload={})
        # The other replica has no stop flag for it: only the shared row says "cancelling".
        assert other.cancel(row.id, tenant_id=DEFAULT_TENANT).status == "cancelling"
        owner.wait_idle(timeout=60)
        with database.session() as session:
            job = session.get(JobRow, row.id)
            assert (job.status, job.error["message"]) == ("cancelled", "stopped at a safe point")
    finally:
        owner.shutdown()
        other.shutdown()
        database.dispose()
