"""`chunkbench worker` processes on the real PostgreSQL task queue, writing to one Qdrant server (the REST test
server over Qdrant Edge), with an API that only enqueues (`serve --no-worker`): a corpus job spreads over both
workers; a worker SIGKILLed between the vector upsert and the database commit (a fault point, not a timing) has its
task retried by the other once its heartbeat stops, and the corpus ends indexed exactly once, as a clean run leaves
it, with the kill in the job's history; a Cancel stops the tasks on every worker, and a restarted worker resumes
nothing that was cancelled; a worker cut off from the database stops, saying why, and its task is retried."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

import chunkbench
from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.errors import NotFoundError
from chunkbench.faults import MARKER_VARIABLE, POINT_VARIABLE, RELEASE_VARIABLE
from chunkbench.jobs.commands import EXIT_DATABASE_LOST
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import VectorStore
from fake_openai import FakeOpenAI, running_fake_openai
from pgtest import ON_POSTGRES
from tcp_proxy import TcpProxy
from test_benchmarks import QUESTIONS, _figures, processed_handbook

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.model,  # the benchmark test processes its handbook with MiniLM in this process (the API's)
    pytest.mark.skipif(not ON_POSTGRES, reason="the task queue is PostgreSQL's (procrastinate)"),
]

MODEL = "text-embedding-3-small"
BODY = {
    "strategies": ["fixed_size", "recursive"],
    "corpus_model_id": MODEL,
    "params": {"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}},
}
DOCUMENTS = 50
QUEUE_TIMING = {"CHUNKBENCH_WORKER_HEARTBEAT_S": "0.5", "CHUNKBENCH_WORKER_STALLED_S": "3",
                "CHUNKBENCH_WORKER_POLL_S": "0.2"}  # fmt: skip


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai(dimension=1536) as server:
        yield server


@pytest.fixture
def api(settings: Settings, fake: FakeOpenAI, qdrant_rest_url: str) -> Iterator[TestClient]:
    """The API of `chunkbench serve --no-worker`: it plans and enqueues, the worker processes run the jobs."""
    settings.worker = False
    settings.qdrant_url = qdrant_rest_url
    settings.openai_base_url, settings.openai_api_key = fake.url, "sk-test"
    settings.corpus_task_documents = 5
    with TestClient(create_app(settings)) as client:
        yield client
        for collection in VectorStore(settings).list_collections():
            VectorStore(settings).delete_collection(collection["name"])


class Workers:
    """`chunkbench worker` processes of one test, each with its own data folder."""

    def __init__(self, tmp_path: Path, settings: Settings, fake: FakeOpenAI) -> None:
        self.tmp_path, self.settings, self.fake = tmp_path, settings, fake
        self.processes: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str, **extra: str) -> subprocess.Popen[str]:
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CHUNKBENCH_")},
            "PYTHONPATH": str(Path(chunkbench.__file__).parents[1]), "HF_HUB_OFFLINE": "1",
            "CHUNKBENCH_DATABASE_URL": self.settings.database_url, "CHUNKBENCH_QDRANT_URL": self.settings.qdrant_url,
            "CHUNKBENCH_DATA_DIR": str(self.tmp_path / f"worker-{name}"),
            "CHUNKBENCH_OPENAI_BASE_URL": self.fake.url, "CHUNKBENCH_OPENAI_API_KEY": "sk-test",
            **QUEUE_TIMING, **extra,
        }  # fmt: skip
        process = subprocess.Popen(
            [sys.executable, "-m", "chunkbench", "worker", "--name", name], env=environment,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.processes[name] = process
        return process

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def workers(tmp_path: Path, settings: Settings, fake: FakeOpenAI, api: TestClient) -> Iterator[Workers]:
    running = Workers(tmp_path, settings, fake)
    try:
        yield running
    finally:
        running.stop()


def _corpus(client: TestClient, name: str, count: int) -> list[str]:
    ids = []
    for n in range(count):
        text = f"# Note {n}\n\n" + f"Item {n} of the ledger moved from shelf {n % 7} to shelf {n % 5}. " * 12
        uploaded = client.post("/documents", files={"file": (f"{name}-{n:02}.md", text.encode())})
        assert uploaded.status_code == 201, uploaded.text
        ids.append(uploaded.json()["document"]["id"])
    assert client.post("/corpora", json={"name": name}).status_code == 201
    assert client.post(f"/corpora/{name}/documents", json={"document_ids": ids}).status_code == 200
    return ids


def _wait(client: TestClient, job_id: str, until: tuple[str, ...], timeout_s: float = 300) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = client.get(f"/jobs/{job_id}").json()
        if job["status"] in until:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job still {job['status']} after {timeout_s} s: {job['message']}")


def _points(settings: Settings, ids: list[str]) -> dict[tuple[str, str], int]:
    """Each (strategy, document)'s points on the server (0 where its collection was never made)."""
    store = VectorStore(settings)

    def count(strategy: str, document_id: str) -> int:
        try:
            return store.count_document(strategy, MODEL, tenant_id=DEFAULT_TENANT, document_id=document_id)
        except NotFoundError:
            return 0

    return {(strategy, d): count(strategy, d) for strategy in BODY["strategies"] for d in ids}


def _wait_for_file(path: Path, process: subprocess.Popen[str], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"the worker ended ({process.returncode}): {process.stdout.read()[-3000:]}")
        assert time.monotonic() < deadline, "the fault point was never reached"
        time.sleep(0.05)


def test_a_worker_killed_between_upsert_and_commit_is_retried_by_the_other_and_nothing_is_indexed_twice(
    api: TestClient, workers: Workers, settings: Settings, tmp_path: Path
):
    ids = _corpus(api, "ledger", DOCUMENTS)
    marker = tmp_path / "at-the-fault-point"
    doomed = workers.start("doomed", **{POINT_VARIABLE: "after_upsert", MARKER_VARIABLE: str(marker)})
    workers.start("survivor")
    accepted = api.post("/corpora/ledger/process", json=BODY).json()
    _wait_for_file(marker, doomed)
    doomed.send_signal(signal.SIGKILL)  # its points of one batch are written, their runs not recorded
    doomed.wait(timeout=30)

    job = _wait(api, accepted["job_id"], ("succeeded", "failed", "cancelled"))
    assert job["status"] == "succeeded", job["error"]
    assert job["result"]["failed"] == 0 and job["result"]["documents"] == DOCUMENTS
    # The kill is in the history: one attempt of the doomed worker was lost, and the survivor ran that task again.
    lost = [a for a in job["attempts"] if a["outcome"] == "lost"]
    assert len(lost) == 1 and lost[0]["worker"] == "doomed"
    again = [a for a in job["attempts"] if a["task"] == lost[0]["task"] and a["outcome"] == "succeeded"]
    assert [a["worker"] for a in again] == ["survivor"]
    assert {a["worker"] for a in job["attempts"]} == {"doomed", "survivor"}  # the job spread over both

    # Every document indexed once: its points are what a clean single-worker run of the same corpus writes.
    killed_run = _points(settings, ids)
    assert all(count > 0 for count in killed_run.values())
    statuses = {api.get(f"/documents/{d}").json()["status"] for d in ids}
    assert statuses == {"indexed"}
    for document_id in ids:
        counts = api.get(f"/documents/{document_id}").json()["chunk_counts"]
        assert {s: killed_run[s, document_id] for s in BODY["strategies"]} == counts

    for collection in VectorStore(settings).list_collections():
        VectorStore(settings).delete_collection(collection["name"])
    clean_ids = _corpus(api, "clean", DOCUMENTS)
    clean = _wait(api, api.post("/corpora/clean/process", json=BODY).json()["job_id"], ("succeeded", "failed"))
    assert clean["status"] == "succeeded", clean["error"]
    clean_run = _points(settings, clean_ids)
    assert sorted(clean_run.values()) == sorted(killed_run.values())
    assert sum(clean_run.values()) == sum(killed_run.values()) == job["result"]["chunks"]


def test_cancel_stops_the_tasks_on_every_worker_and_a_restarted_worker_resumes_nothing(
    api: TestClient, workers: Workers, settings: Settings
):
    ids = _corpus(api, "stopped", DOCUMENTS)
    first, second = workers.start("first"), workers.start("second")
    accepted = api.post("/corpora/stopped/process", json=BODY).json()
    # Both workers have a task in hand before the Cancel.
    deadline = time.monotonic() + 300
    while {a["worker"] for a in api.get(f"/jobs/{accepted['job_id']}").json()["attempts"]} < {"first", "second"}:
        assert time.monotonic() < deadline, "the job never reached both workers"
        time.sleep(0.1)
    assert api.post(f"/jobs/{accepted['job_id']}/cancel").json()["status"] == "cancelling"
    job = _wait(api, accepted["job_id"], ("cancelled", "succeeded", "failed"))
    assert job["status"] == "cancelled"
    assert job["error"]["message"].startswith("Cancelled after ")
    assert {t["status"] for t in job["tasks"]} <= {"succeeded", "cancelled"}
    assert any(t["status"] == "cancelled" for t in job["tasks"])
    done = sum(1 for d in ids if api.get(f"/documents/{d}").json()["status"] == "indexed")
    assert done < DOCUMENTS  # it stopped: not everything was processed

    # Restarted, the workers find nothing to resume: the job and its tasks stay as the Cancel left them.
    workers.stop()
    assert first.returncode == second.returncode == 0
    before = _points(settings, ids)
    workers.start("restarted")
    time.sleep(3)  # several polls of the queue
    after = api.get(f"/jobs/{accepted['job_id']}").json()
    assert after["status"] == "cancelled" and after["tasks"] == job["tasks"]
    assert not any(a["worker"] == "restarted" for a in after["attempts"])
    assert _points(settings, ids) == before
    assert api.get("/health/ready").json()["queue"]["depth"] == 0


def test_a_worker_killed_mid_benchmark_has_its_cells_run_again_and_the_figures_equal_a_clean_run(
    api: TestClient, workers: Workers, settings: Settings, tmp_path: Path
):
    document_id = processed_handbook(api)  # in the API process (wait=true), onto the server
    marker = tmp_path / "at-the-fault-point"
    cells = {"CHUNKBENCH_BENCHMARK_TASK_CELLS": "3"}  # the worker running the first task shares the cells out
    doomed = workers.start("doomed", **cells, **{POINT_VARIABLE: "after_cell", MARKER_VARIABLE: str(marker)})
    workers.start("survivor", **cells)
    body = {"document_id": document_id, "questions": QUESTIONS, "retrievers": ["dense", "hybrid"]}
    accepted = api.post("/benchmarks", json=body).json()
    _wait_for_file(marker, doomed)
    doomed.send_signal(signal.SIGKILL)  # one cell of its task written, the others not
    doomed.wait(timeout=30)

    job = _wait(api, accepted["job_id"], ("succeeded", "failed", "cancelled"))
    assert job["status"] == "succeeded", job["error"]
    lost = [a for a in job["attempts"] if a["outcome"] == "lost"]
    assert len(lost) == 1 and lost[0]["worker"] == "doomed"
    assert [a["worker"] for a in job["attempts"] if a["task"] == lost[0]["task"] and a["outcome"] == "succeeded"] == [
        "survivor"
    ]
    experiment = api.get(f"/benchmarks/{accepted['experiment_id']}").json()
    assert experiment["status"] == "completed" and len(experiment["cells"]) == 20  # 5 questions × 2 × 2, each once

    clean = api.post("/benchmarks", params={"wait": "true"}, json=body).json()  # one process, no kill
    assert _figures(experiment) == _figures(clean)


def test_a_worker_that_loses_the_database_exits_saying_so_and_its_task_is_retried_by_another(
    api: TestClient, workers: Workers, settings: Settings, tmp_path: Path
):
    ids = _corpus(api, "cut", 10)
    database = make_url(settings.database_url)
    marker, release = tmp_path / "at-the-fault-point", tmp_path / "go-on"
    with TcpProxy((database.host, database.port or 5432)) as proxy:
        through_proxy = database.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        cut_off = workers.start(
            "cut-off", CHUNKBENCH_DATABASE_URL=through_proxy,
            **{POINT_VARIABLE: "after_upsert", MARKER_VARIABLE: str(marker), RELEASE_VARIABLE: str(release)},
        )  # fmt: skip
        accepted = api.post("/corpora/cut/process", json=BODY).json()
        _wait_for_file(marker, cut_off)
        proxy.cut()  # its points of one batch are written, their runs not yet recorded
        release.touch()
        output, _ = cut_off.communicate(timeout=180)
    assert cut_off.returncode == EXIT_DATABASE_LOST, output[-3000:]
    assert "Worker cut-off" in output and "the tasks it had in hand are retried by another worker" in output
    assert "Traceback" not in output.split("Worker cut-off")[-1]  # it ends on its message, not on a stack

    workers.start("survivor")
    job = _wait(api, accepted["job_id"], ("succeeded", "failed", "cancelled"))
    assert job["status"] == "succeeded", job["error"]
    lost = [a for a in job["attempts"] if a["outcome"] == "lost"]
    assert [a["worker"] for a in lost] == ["cut-off"]
    assert [a["worker"] for a in job["attempts"] if a["task"] == lost[0]["task"] and a["outcome"] == "succeeded"] == [
        "survivor"
    ]
    points = _points(settings, ids)
    assert {api.get(f"/documents/{d}").json()["status"] for d in ids} == {"indexed"}
    for document_id in ids:
        counts = api.get(f"/documents/{document_id}").json()["chunk_counts"]
        assert counts == {s: points[s, document_id] for s in BODY["strategies"]}  # nothing written twice
    assert sum(points.values()) == job["result"]["chunks"]
