"""Jobs as tasks, through the real app on both databases: on SQLite the process's job thread runs them, on
PostgreSQL procrastinate does (a worker in the API process here; `chunkbench worker` processes in
test_workers.py). A corpus job spreads over batches of documents × strategies and a closing task, records every
attempt, moves its progress while a batch is embedded, stops within seconds of a Cancel, refuses a worker whose
strategies differ, and a failing task fails its job naming it (after three attempts on the queue)."""

from __future__ import annotations

import re
import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.embedding.registry import DEFAULT_MODEL_ID, get_spec
from chunkbench.embedding.roles import embed_query
from chunkbench.jobs import execution
from chunkbench.jobs.tasks import execute
from chunkbench.storage.schema import DEFAULT_TENANT, JobRow
from chunkbench.storage.vectors import get_vector_store
from pgtest import ON_POSTGRES

# Every sentence differs (corpus, document, position): no chunk text repeats, within a test or across the tests of
# this process, so none is read from the embedding cache's memory layer and the embedding takes its real time.
SENTENCE = "The river {n} of {name} rises in the hills in spring {i} and falls slowly through the autumn fields. "


def _corpus(client: TestClient, name: str, count: int, sentences: int = 40) -> list[str]:
    ids = []
    for n in range(count):
        text = f"# River {n}\n\n" + "".join(SENTENCE.format(n=n, name=name, i=i) for i in range(sentences))
        uploaded = client.post("/documents", files={"file": (f"river-{n}.md", text.encode())})
        assert uploaded.status_code == 201, uploaded.text
        ids.append(uploaded.json()["document"]["id"])
    assert client.post("/corpora", json={"name": name}).status_code == 201
    assert client.post(f"/corpora/{name}/documents", json={"document_ids": ids}).status_code == 200
    return ids


def _job(client: TestClient, job_id: str) -> dict:
    return client.get(f"/jobs/{job_id}").json()


@pytest.mark.model
def test_a_corpus_job_spreads_over_batches_and_strategies_and_keeps_its_history(settings: Settings):
    settings.corpus_task_documents = 2
    body = {"strategies": ["fixed_size", "recursive"], "params": {"fixed_size": {"chunk_size": 60, "chunk_overlap": 0}}}
    with TestClient(create_app(settings)) as client:
        ids = _corpus(client, "rivers", 5)
        accepted = client.post("/corpora/rivers/process", json=body).json()
        client.app.state.jobs.wait_idle(timeout=300)
        job = _job(client, accepted["job_id"])
        assert job["status"] == "succeeded", job["error"]
        assert [t["label"] for t in job["tasks"]] == [
            "documents 1–2 of 5 · fixed_size", "documents 1–2 of 5 · recursive",
            "documents 3–4 of 5 · fixed_size", "documents 3–4 of 5 · recursive",
            "documents 5–5 of 5 · fixed_size", "documents 5–5 of 5 · recursive",
            "closing",
        ]  # fmt: skip
        assert {t["status"] for t in job["tasks"]} == {"succeeded"}
        # The history: the first task (it planned and fanned out), each batch, the closing task; one attempt each.
        assert job["attempts"][0]["task"] == "process_corpus"
        assert len(job["attempts"]) == 8 and {a["outcome"] for a in job["attempts"]} == {"succeeded"}
        assert all(a["worker"] and a["finished_at"] for a in job["attempts"])
        # On PostgreSQL it went through procrastinate: the job row names its queue job.
        with client.app.state.database.session() as session:
            assert (session.get(JobRow, accepted["job_id"]).queue_job_id is not None) == ON_POSTGRES

        result = job["result"]
        assert (result["documents"], result["processed"], result["failed"], result["skipped"]) == (5, 5, 0, 0)
        assert [s["strategy"] for s in result["strategies"]] == ["fixed_size", "recursive"]
        store = get_vector_store(settings)
        for strategy in result["strategies"]:
            assert [d["document_id"] for d in strategy["documents"]] == ids  # in the corpus's order
            points = sum(
                store.count_document(strategy["strategy"], result["corpus_model_id"], tenant_id=DEFAULT_TENANT,
                                     document_id=document_id)
                for document_id in ids
            )  # fmt: skip
            assert strategy["chunks"] == points > 0
        assert result["chunks"] == sum(s["chunks"] for s in result["strategies"])

        # The same request run now (one process, no tasks) reports the same figures: all of it is current.
        again = client.post("/corpora/rivers/process", params={"wait": "true"}, json=body).json()
        assert (again["skipped"], again["processed"]) == (5, 0)
        assert [s["skipped"] for s in again["strategies"]] == [5, 5]


@pytest.mark.model
def test_a_corpus_job_cancelled_two_seconds_in_ends_cancelled_and_its_progress_moved(settings: Settings):
    """The reported bug: a 3-document corpus job cancelled 1.9 s after it started said "cancelling…", ran to the
    end and was recorded succeeded, its progress at 0 % all along."""
    settings.embedding_step_chunks = 16  # a step of MiniLM takes a fraction of a second: progress moves often
    body = {"strategies": ["fixed_size"], "params": {"fixed_size": {"chunk_size": 20, "chunk_overlap": 0}}}
    # The model loaded before the clock starts: on a loaded machine its first load alone can take the two seconds.
    embed_query(get_spec(DEFAULT_MODEL_ID), "warm up", settings)
    with TestClient(create_app(settings)) as client:
        ids = _corpus(client, "slow", 3, sentences=600)  # ~2,000 chunks, all new: 10 s of MiniLM at best here
        accepted = client.post("/corpora/slow/process", json=body).json()
        seen: list[float] = []
        started = None
        while True:
            job = _job(client, accepted["job_id"])
            seen.append(job["progress"])
            if job["status"] == "running" and started is None:
                started = time.monotonic()
            if started is not None and time.monotonic() - started >= 2.0:
                break
            assert job["status"] in ("queued", "running"), job
            time.sleep(0.1)
        cancelled = client.post(f"/jobs/{accepted['job_id']}/cancel")
        assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelling"
        client.app.state.jobs.wait_idle(timeout=120)
        job = _job(client, accepted["job_id"])
        assert job["status"] == "cancelled", job
        said = re.fullmatch(
            r"Cancelled after (\d) of 3 documents \((\d+) chunks indexed\); the finished documents are kept\. "
            r"Process the corpus again to do the other (\d): the finished ones are skipped\.",
            job["error"]["message"],
        )
        assert said is not None, job["error"]["message"]
        done, chunks, other = (int(group) for group in said.groups())
        assert done < 3 and other == 3 - done  # it stopped before the end
        assert max(seen) > 0.0  # it moved before the end
        # Nothing half-done: each document is indexed with all its points, or as it was with none.
        statuses = [client.get(f"/documents/{d}").json()["status"] for d in ids]
        assert sorted(statuses) == ["indexed"] * done + ["parsed"] * (3 - done)
        assert sum(c["points"] for c in get_vector_store(settings).list_collections()) == chunks


def test_a_worker_with_other_strategies_refuses_the_job(settings: Settings):
    gate = threading.Event()
    execution.register_kind("hold", lambda call, progress, stop: {"released": gate.wait(timeout=120)})
    with TestClient(create_app(settings)) as client:
        held = client.app.state.jobs.submit(kind="hold", tenant_id=DEFAULT_TENANT, document_id=None, request={},
                                            payload={})  # fmt: skip
        _corpus(client, "planned", 1)
        accepted = client.post("/corpora/planned/process", json={"strategies": ["fixed_size"]}).json()
        # As if another process with another strategy registry had planned it.
        with client.app.state.database.session() as session:
            session.execute(update(JobRow).where(JobRow.id == accepted["job_id"]).values(strategy_registry="0" * 32))
        gate.set()
        client.app.state.jobs.wait_idle(timeout=120)
        assert _job(client, held.id)["status"] == "succeeded"
        job = _job(client, accepted["job_id"])
        assert job["status"] == "failed" and job["error"]["error"] == "strategy_registry_mismatch"
        assert "install the same strategy packages, plugins folder" in job["error"]["message"]


def test_a_task_that_keeps_failing_fails_its_job_naming_the_task(settings: Settings):
    tries: list[str] = []

    def plan(call, progress, stop):
        return execution.FanOut(
            [execution.Task("flaky", {"n": n}, f"batch {n}", group="cells", size=1) for n in (1, 2)]
        )

    def flaky(call, args, progress, stop):
        tries.append(f"batch {args['n']}")
        if args["n"] == 2:
            raise RuntimeError("the disk is full")
        return {"units": 1}

    def close(call, outcomes):
        failed = [o for o in outcomes if o.status == "failed"]
        if failed:
            raise execution.JobTaskFailedError(f"{failed[0].label}: {failed[0].error['message']}", task=failed[0].label)
        return {"ok": True}

    execution.register_kind("flaky", execution.JobKind(plan, {"flaky": flaky}, close))
    with TestClient(create_app(settings)) as client:
        row = client.app.state.jobs.submit(kind="flaky", tenant_id=DEFAULT_TENANT, document_id=None, request={},
                                           payload={})  # fmt: skip
        client.app.state.jobs.wait_idle(timeout=120)
        job = _job(client, row.id)
    assert job["status"] == "failed" and job["error"]["error"] == "task_failed"
    assert job["error"]["message"] == "batch 2: batch 2: unexpected error: the disk is full"
    # The queue tries a crashing task three times in all; the job thread of one process once (no one else would).
    expected = 3 if ON_POSTGRES else 1
    assert tries.count("batch 2") == expected and tries.count("batch 1") == 1
    outcomes = [a["outcome"] for a in job["attempts"] if a["task"] == "batch 2"]
    assert outcomes == ["retrying"] * (expected - 1) + ["failed"]
    assert [t["status"] for t in job["tasks"]] == ["succeeded", "failed", "failed"]  # the closing task failed it


@pytest.mark.model
def test_a_task_run_twice_changes_nothing(settings: Settings):
    with TestClient(create_app(settings)) as client:
        _corpus(client, "twice", 2)
        accepted = client.post("/corpora/twice/process", json={"strategies": ["fixed_size"]}).json()
        client.app.state.jobs.wait_idle(timeout=300)
        before = _job(client, accepted["job_id"])
        database = client.app.state.database
        for task_id in [None, *(t.id for t in _task_rows(database, accepted["job_id"]))]:
            execute(database, settings, accepted["job_id"], task_id, worker="again", dispatch=_no_dispatch)
        after = _job(client, accepted["job_id"])
    assert after == before


def _task_rows(database, job_id):
    with database.session() as session:
        return execution.tasks_of(session, job_id)


def _no_dispatch(job_id, task_id, lock):
    raise AssertionError("an ended task must not start another")


def test_readiness_and_metrics_report_the_queue(settings: Settings):
    with TestClient(create_app(settings)) as client:
        ready = client.get("/health/ready").json()
        assert ready["queue"] == {
            "backend": "procrastinate" if ON_POSTGRES else "in-process",
            "depth": 0, "running": 0, "workers": 1, "stalled": 0,
        }  # fmt: skip
        metrics = client.get("/metrics").text
        for name in ("chunkbench_queue_depth", "chunkbench_queue_running", "chunkbench_workers_seen",
                     "chunkbench_queue_stalled"):  # fmt: skip
            assert f"\n{name} " in metrics
        assert "\nchunkbench_workers_seen 1.0" in metrics


@pytest.mark.skipif(ON_POSTGRES, reason="the job thread of one process: SQLite's runner")
@pytest.mark.model
def test_on_sqlite_the_job_thread_runs_the_same_tasks_in_order(settings: Settings):
    settings.corpus_task_documents = 1
    with TestClient(create_app(settings)) as client:
        _corpus(client, "ordered", 3)
        accepted = client.post("/corpora/ordered/process", json={"strategies": ["fixed_size"]}).json()
        client.app.state.jobs.wait_idle(timeout=300)
        job = _job(client, accepted["job_id"])
    starts = [a["started_at"] for a in job["attempts"]]
    assert starts == sorted(starts) and len({a["worker"] for a in job["attempts"]}) == 1


def test_a_cancel_that_comes_after_the_last_safe_point_is_said_not_dropped(settings: Settings):
    started, gate = threading.Event(), threading.Event()

    def no_safe_point_left(call, progress, stop):
        started.set()
        gate.wait(timeout=120)  # the work is past its last stop check: it finishes whatever the row says
        return {"finished": True}

    execution.register_kind("late", no_safe_point_left)
    with TestClient(create_app(settings)) as client:
        row = client.app.state.jobs.submit(kind="late", tenant_id=DEFAULT_TENANT, document_id=None, request={},
                                           payload={})  # fmt: skip
        assert started.wait(timeout=60)
        assert client.post(f"/jobs/{row.id}/cancel").json()["status"] == "cancelling"
        gate.set()
        client.app.state.jobs.wait_idle(timeout=60)
        job = _job(client, row.id)
    assert (job["status"], job["result"]) == ("succeeded", {"finished": True})
    assert job["message"] == (
        "done: the work had finished before the Cancel reached a safe point; its results are kept"
    )


class _Killed(Exception):
    """The worker died right after a commit, before it started what that commit recorded."""


def test_a_task_killed_after_its_commit_starts_what_it_had_recorded_when_it_runs_again(settings: Settings):
    def plan(call, progress, stop):
        return execution.FanOut([execution.Task("part", {"n": n}, f"part {n}", group="parts", size=1) for n in (1, 2)])

    execution.register_kind(
        "parts",
        execution.JobKind(plan, {"part": lambda call, args, progress, stop: {"units": 1}}, lambda c, o: {"ok": 2}),
    )

    def killed(job_id, task_id, lock):
        raise _Killed

    with TestClient(create_app(settings)) as client:
        database = client.app.state.database
        with database.session() as session:
            job_id = execution.record(session, kind="parts", tenant_id=DEFAULT_TENANT, document_id=None, request={},
                                 payload={}).id  # fmt: skip
        with pytest.raises(_Killed):  # the tasks are recorded, none was started
            execute(database, settings, job_id, worker="first", dispatch=killed)
        started: list[tuple[str, str | None, str]] = []
        execute(database, settings, job_id, worker="retry", dispatch=lambda *task: started.append(task))
        parts = [t.id for t in _task_rows(database, job_id)]
        assert [task_id for _, task_id, _ in started] == parts  # started now, the plan not run again
        assert len({lock for _, _, lock in started}) == 2
        # The last part is killed after its end was committed, before it started the closing task.
        execute(database, settings, job_id, parts[0], worker="retry", dispatch=_no_dispatch)
        with pytest.raises(_Killed):
            execute(database, settings, job_id, parts[1], worker="first", dispatch=killed)
        closing: list[tuple[str, str | None, str]] = []
        execute(database, settings, job_id, parts[1], worker="retry", dispatch=lambda *task: closing.append(task))
        [(_, close_id, lock)] = closing
        assert lock == job_id
        execute(database, settings, job_id, close_id, worker="retry", dispatch=_no_dispatch)
        job = _job(client, job_id)
    assert (job["status"], job["result"]) == ("succeeded", {"ok": 2})
    assert [a["outcome"] for a in job["attempts"]] == ["succeeded"] * 4


def test_a_stall_timeout_not_above_the_heartbeat_is_refused():
    # Such a worker would see its own running tasks as stalled, recover its own documents and run them again.
    refused = r"CHUNKBENCH_WORKER_STALLED_S \(5\.0\) must exceed CHUNKBENCH_WORKER_HEARTBEAT"
    with pytest.raises(ValueError, match=refused):
        Settings(_env_file=None, worker_heartbeat_s=10, worker_stalled_s=5)


@pytest.mark.postgres
@pytest.mark.model
@pytest.mark.skipif(not ON_POSTGRES, reason="the API's own queue worker: PostgreSQL's")
def test_the_api_starts_a_new_worker_when_its_own_stopped(settings: Settings):
    """A worker of the API process stops when the database is out of reach (as `chunkbench worker` does, exiting 3):
    the API lives on, so it starts a new one at its next heartbeat, and jobs run again."""
    settings.worker_heartbeat_s, settings.worker_stalled_s = 0.2, 1.0
    with TestClient(create_app(settings)) as client:
        runner = client.app.state.jobs
        stopped = runner._worker
        stopped.stop(wait=True)
        assert not stopped.alive
        deadline = time.monotonic() + 30
        while runner._worker is stopped or not runner._worker.alive:
            assert time.monotonic() < deadline, "no new worker started"
            time.sleep(0.05)
        _corpus(client, "again", 1)
        accepted = client.post("/corpora/again/process", json={"strategies": ["fixed_size"]}).json()
        runner.wait_idle(timeout=300)
        assert _job(client, accepted["job_id"])["status"] == "succeeded"
