"""Jobs: record, run (here or on a worker of the task queue), report progress and history, read back.

A job is a registered *kind* and a JSON *payload* (``register_kind``), so any process that registered the same
kinds can run it: the process that accepted it (:class:`JobRunner`, a thread: SQLite, one machine) or a
``chunkbench worker`` of the PostgreSQL task queue (``jobs.queue``). Either way :func:`execute` runs it — the one
code path for the work itself; only the queue differs. Each run of it is an attempt in ``job_attempts``: the job's
history (task, worker, start, end, outcome).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import CursorResult, func, select, update
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.errors import (
    ChunkbenchError,
    InvalidRequestError,
    JobCancelledError,
    JobNotActiveError,
    NotFoundError,
)
from chunkbench.progress import Progress, StopCheck
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import Heartbeat, as_utc, lease_until, owner_gone, this_process
from chunkbench.storage.schema import JobAttemptRow, JobRow, JobTaskRow, utcnow

logger = logging.getLogger(__name__)

_PROGRESS_WRITE_INTERVAL_S = 0.5
# How often a running job reads its own row to see a Cancel made by any process (API replica, CLI, dashboard).
_CANCEL_POLL_S = 1.0


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"  # asked to stop; the work stops at its next safe point
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE = (JobStatus.QUEUED.value, JobStatus.RUNNING.value, JobStatus.CANCELLING.value)
ENDED = (JobStatus.SUCCEEDED.value, JobStatus.FAILED.value, JobStatus.CANCELLED.value)


class JobNotFoundError(NotFoundError):
    code = "job_not_found"


class UnknownJobKindError(InvalidRequestError):
    code = "unknown_job_kind"


class RegistryMismatchError(ChunkbenchError):
    """A worker's strategies (built-ins, installed packages, plugins, variants) are not the ones the job was planned
    with: running it there could cut other chunks than the API promised."""

    status_code = 409
    code = "strategy_registry_mismatch"


class JobTaskFailedError(ChunkbenchError):
    """A task of a fanned-out job failed for good (a domain error, or an unexpected one on every attempt): the job
    fails, naming the task (its documents or cells) and the error."""

    status_code = 500
    code = "task_failed"


@dataclass(frozen=True)
class JobCall:
    """What a job kind's handlers get besides their progress callback and stop check."""

    database: Database
    settings: Settings | None
    job_id: str
    tenant_id: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Task:
    """A piece of a job that fans out, run by any worker: the kind's task handler ``name`` on ``args`` (JSON).

    Tasks sharing a ``lock`` never run at once (the strategies of one batch of documents: each claims the same
    documents). ``size`` units of ``group`` (documents of a strategy, cells) are what progress counts."""

    name: str
    args: dict[str, Any]
    label: str
    group: str = ""
    size: int = 0
    lock: str | None = None


@dataclass(frozen=True)
class FanOut:
    """What a job's first task returns when the job spreads over tasks; the kind's ``close`` runs after them all."""

    tasks: list[Task]


@dataclass(frozen=True)
class TaskOutcome:
    """How a task ended, as its job's closing task reads it."""

    label: str
    args: dict[str, Any]
    status: str
    result: dict[str, Any] | None
    error: dict[str, Any] | None


Handler = Callable[[JobCall, Progress, StopCheck], "dict[str, Any] | FanOut"]
TaskHandler = Callable[[JobCall, dict[str, Any], Progress, StopCheck], dict[str, Any]]
CloseHandler = Callable[[JobCall, list[TaskOutcome]], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    """A kind of job: ``run`` is its first task (it returns the result, or a FanOut of tasks); ``tasks`` the
    handlers of those tasks by name; ``close`` turns their outcomes into the job's result (or raises
    JobCancelledError / a domain error, which end the job so)."""

    run: Handler
    tasks: dict[str, TaskHandler] = field(default_factory=dict)
    close: CloseHandler | None = None


_KINDS: dict[str, JobKind] = {}


def register_kind(kind: str, handler: Handler | JobKind) -> None:
    """Make ``kind`` runnable by this process (the API and every worker register the same kinds at start)."""
    _KINDS[kind] = handler if isinstance(handler, JobKind) else JobKind(handler)


def kind_of(kind: str) -> JobKind:
    try:
        return _KINDS[kind]
    except KeyError:
        raise UnknownJobKindError(
            f"This process cannot run jobs of kind '{kind}': it registers {sorted(_KINDS) or 'none'}. Run the "
            "worker from the same chunkbench installation as the API.",
            kind=kind,
        ) from None


# The fingerprint of this process's strategy registry (``chunking.base.registry_fingerprint``, handed over by the
# composition root, ``job_kinds``, which knows the strategies: this layer does not). A job records the one it was
# planned with; a worker whose fingerprint differs refuses it.
_fingerprint: Callable[[], str] | None = None


def set_registry_fingerprint(fingerprint: Callable[[], str]) -> None:
    global _fingerprint
    _fingerprint = fingerprint


def registry_fingerprint() -> str | None:
    return _fingerprint() if _fingerprint is not None else None


def elapsed_ms(call: JobCall) -> int:
    """Milliseconds since the job started (its first task), for a closing task's result."""
    with call.database.session() as session:
        started = session.scalar(select(JobRow.started_at).where(JobRow.id == call.job_id))
    return int((utcnow() - as_utc(started)).total_seconds() * 1000) if started is not None else 0


def worker_name() -> str:
    """This process as a job attempt names it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def get(session: Session, job_id: str, *, tenant_id: str) -> JobRow:
    row = session.scalar(select(JobRow).where(JobRow.id == job_id, JobRow.tenant_id == tenant_id))
    if row is None:
        raise JobNotFoundError(f"No job with id '{job_id}'.", job_id=job_id)
    return row


def get_all(session: Session, *, tenant_id: str, document_id: str | None = None, limit: int = 50) -> Sequence[JobRow]:
    query = select(JobRow).where(JobRow.tenant_id == tenant_id)
    if document_id is not None:
        query = query.where(JobRow.document_id == document_id)
    return session.scalars(query.order_by(JobRow.created_at.desc()).limit(limit)).all()


def attempts(session: Session, job_id: str) -> list[JobAttemptRow]:
    """A job's history: every attempt of its task, oldest first."""
    return list(
        session.scalars(
            select(JobAttemptRow)
            .where(JobAttemptRow.job_id == job_id)
            .order_by(JobAttemptRow.started_at, JobAttemptRow.attempt, JobAttemptRow.id)
        )
    )


def fail_interrupted(database: Database) -> int:
    """Jobs left queued or running by a process that is gone can never finish: say so.

    Only jobs run by the accepting process are this process's to judge (owner dead on this host, or lease ran out);
    a job of the task queue is the queue's (a stalled one is retried on another worker), and another replica's live
    jobs on a shared database are left alone. Returns how many were failed.
    """
    with database.session() as session:
        rows = session.scalars(select(JobRow).where(JobRow.status.in_(ACTIVE), JobRow.queue_job_id.is_(None))).all()
        stale = [
            row for row in rows if owner_gone(row.owner_host, row.owner_pid, row.owner_token, row.lease_expires_at)
        ]
        for row in stale:
            row.status, row.finished_at = JobStatus.FAILED.value, utcnow()
            row.error = {
                "error": "interrupted",
                "message": "The process running this job stopped before it finished; submit it again.",
            }
            row.lease_expires_at = None
            _close_attempts(session, row.id, "lost", row.error, every=True)
        return len(stale)


def _close_attempts(
    session: Session,
    job_id: str,
    outcome: str,
    error: dict[str, Any] | None,
    *,
    task_id: str | None = None,
    every: bool = False,
) -> None:
    """Attempts still ``running`` of a task (or, ``every``, of the whole job) whose runner is gone (killed): they
    end ``outcome``."""
    where = [JobAttemptRow.job_id == job_id, JobAttemptRow.outcome == "running"]
    if not every:
        where.append(JobAttemptRow.task_id.is_(None) if task_id is None else JobAttemptRow.task_id == task_id)
    session.execute(update(JobAttemptRow).where(*where).values(outcome=outcome, finished_at=utcnow(), error=error))


def record(
    session: Session,
    *,
    kind: str,
    tenant_id: str,
    document_id: str | None,
    request: dict[str, Any],
    payload: dict[str, Any],
    corpus_id: str | None = None,
) -> JobRow:
    """A queued job row (the caller's runner then starts it)."""
    kind_of(kind)  # a kind no process here can run is refused now, not left queued
    row = JobRow(
        id=uuid.uuid4().hex,
        tenant_id=tenant_id,
        kind=kind,
        status=JobStatus.QUEUED.value,
        document_id=document_id,
        corpus_id=corpus_id,
        progress=0.0,
        request=request,
        payload=payload,
        strategy_registry=registry_fingerprint(),
    )
    session.add(row)
    return row


def mark_cancelling(database: Database, job_id: str, *, tenant_id: str) -> JobRow:
    """Ask a queued or running job to stop at its next safe point; 404 for an unknown job, 409 for one that ended.

    The row says ``cancelling`` until the work stops: whichever process runs it reads its row within a second."""
    with database.session() as session:
        row = get(session, job_id, tenant_id=tenant_id)
        # Conditional: a job that ends meanwhile keeps its final status instead of turning "cancelling".
        marked = cast(  # an UPDATE's result is a CursorResult (Session.execute is typed as returning Result)
            CursorResult[Any],
            session.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status.in_(ACTIVE))
                .values(status=JobStatus.CANCELLING.value, message="cancelling: stopping at the next safe point")
            ),
        ).rowcount
        session.refresh(row)
        if not marked:
            raise JobNotActiveError(
                f"Job '{job_id}' has already {row.status}; there is nothing to cancel.",
                job_id=job_id,
                status=row.status,
            )
        return row


# Starts a task of a job: ``dispatch(job_id, task_id, lock)`` (task_id None: the job's first task). The runner's:
# the job thread's queue, or the task queue.
Dispatch = Callable[[str, "str | None", "str | None"], object]  # whatever it returns (a queue's job id) is unused


class _Writer:
    """A running task's writes: throttled progress (its own and its job's), the stop check (a local flag or the job's
    row read back: a Cancel made by any process), the end."""

    def __init__(
        self, database: Database, job_id: str, task_id: str | None, local_stop: threading.Event | None
    ) -> None:
        self._database = database
        self._job_id = job_id
        self._task_id = task_id
        self._local_stop = local_stop
        self._last_write = 0.0
        self._last_poll = 0.0
        self._cancelled = False

    def progress(self, fraction: float, message: str) -> None:
        now = time.monotonic()
        if now - self._last_write < _PROGRESS_WRITE_INTERVAL_S:
            return
        self._last_write = now
        fraction = max(0.0, min(fraction, 1.0))
        with self._database.session() as session:
            if self._task_id is None:
                # Only a running job's progress moves: a cancelling one keeps saying so until it stops.
                session.execute(
                    update(JobRow)
                    .where(JobRow.id == self._job_id, JobRow.status == JobStatus.RUNNING.value)
                    .values(progress=fraction, message=message)
                )
                return
            session.execute(
                update(JobTaskRow).where(JobTaskRow.id == self._task_id).values(progress=fraction, message=message)
            )
            label = session.scalar(select(JobTaskRow.label).where(JobTaskRow.id == self._task_id))
            _refresh_progress(session, self._job_id, latest=f"{label}: {message}")

    def stop(self) -> bool:
        if self._cancelled or (self._local_stop is not None and self._local_stop.is_set()):
            return True
        now = time.monotonic()
        if now - self._last_poll >= _CANCEL_POLL_S:
            self._last_poll = now
            with self._database.session() as session:
                status = session.scalar(select(JobRow.status).where(JobRow.id == self._job_id))
            self._cancelled = status in (JobStatus.CANCELLING.value, JobStatus.CANCELLED.value, None)
        return self._cancelled


def _refresh_progress(session: Session, job_id: str, *, latest: str | None = None) -> None:
    """A fanned-out job's progress from its tasks: the share of their units done, and per group how many units
    the ended tasks finished (``fixed_size 32/50 · recursive 16/50 · 5120 chunks``: documents per strategy)."""
    tasks = session.scalars(select(JobTaskRow).where(JobTaskRow.job_id == job_id, JobTaskRow.name != CLOSE)).all()
    if not tasks:
        return
    total = sum(t.size for t in tasks) or len(tasks)
    done = sum((t.size or 1) * (1.0 if t.status in TASK_ENDED else t.progress) for t in tasks)
    groups: dict[str, list[int]] = {}
    chunks = 0
    for t in tasks:
        counted = groups.setdefault(t.group_name, [0, 0])
        counted[1] += t.size
        if t.status in TASK_ENDED:
            counted[0] += int((t.result or {}).get("units", t.size if t.status == "succeeded" else 0))
            chunks += int((t.result or {}).get("chunks", 0))
    counts = " · ".join(f"{group} {d}/{n}" if group else f"{d}/{n}" for group, (d, n) in groups.items())
    message = f"{counts} · {chunks} chunks" + (f" · {latest}" if latest else "")
    session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.status == JobStatus.RUNNING.value)
        .values(progress=min(done / total, 1.0), message=message[:1000])
    )


CLOSE = "close"
TASK_ENDED = ("succeeded", "failed", "cancelled")


def execute(
    database: Database,
    settings: Settings | None,
    job_id: str,
    task_id: str | None = None,
    *,
    worker: str,
    dispatch: Dispatch,
    attempt: int = 1,
    final: bool = True,
    local_stop: threading.Event | None = None,
) -> None:
    """Run one task of job ``job_id`` (``task_id`` None: its first task), whichever process does it, recording the
    attempt and how it ended; the job ends with its last task (or its closing task, once every other one ended).

    A task that has ended is left alone (a task run twice changes nothing). A job cancelled while queued still runs:
    its work stops at its first safe point and says what it kept. A domain error ends the task at once (running it
    again would fail the same way); any other error is retried while ``final`` is False (it is re-raised for the
    queue to retry), and fails the task on the last attempt, naming the error.
    """
    with database.session() as session:
        row = session.get(JobRow, job_id)
        task = session.get(JobTaskRow, task_id) if task_id is not None else None
        if row is None or (task_id is not None and task is None):
            return
        ended = (task.status in TASK_ENDED) if task is not None else (row.status in ENDED or row.payload is None)
        fanned_out = task is None and session.scalar(select(func.count()).where(JobTaskRow.job_id == job_id))
        if ended or fanned_out:
            # Run twice (a retry after a kill): nothing of it runs again, but what it should have started after its
            # commit (its job's tasks, the closing task) is started, in case the kill came in between.
            follow = [] if row.status in ENDED else _unstarted(session, job_id)
    if ended or fanned_out:
        for job, then, lock in follow:
            dispatch(job, then, lock)
        return
    with database.session() as session:
        row = session.get(JobRow, job_id)
        task = session.get(JobTaskRow, task_id) if task_id is not None else None
        assert row is not None
        kind, tenant_id, payload, planned_with = row.kind, row.tenant_id, dict(row.payload or {}), row.strategy_registry
        label = task.label if task is not None else kind
        # An attempt of this task still "running" belongs to a worker that stopped without ending it: it was lost.
        _close_attempts(session, job_id, "lost", _LOST, task_id=task_id)
        attempt_id = uuid.uuid4().hex
        session.add(
            JobAttemptRow(
                id=attempt_id, job_id=job_id, task_id=task_id, task=label[:255], attempt=attempt, worker=worker,
                worker_token=this_process().token, outcome="running",
            )
        )  # fmt: skip
        if task is not None:
            task.status = "running"
        session.execute(
            update(JobRow).where(JobRow.id == job_id, JobRow.started_at.is_(None)).values(started_at=utcnow())
        )
        session.execute(
            update(JobRow)
            .where(JobRow.id == job_id, JobRow.status == JobStatus.QUEUED.value)
            .values(status=JobStatus.RUNNING.value, message="started")
        )
        task_name, task_args = (task.name, dict(task.args)) if task is not None else (None, {})
    writer = _Writer(database, job_id, task_id if task_name != CLOSE else None, local_stop)
    call = JobCall(database, settings, job_id, tenant_id, payload)
    ends_job = task_id is None or task_name == CLOSE

    def end(outcome: str, error: dict[str, Any] | None = None, result: dict[str, Any] | None = None) -> None:
        """Record the attempt's and the task's end; a job's first or closing task also ends the job."""
        follow: list[tuple[str, str | None, str]] = []
        with database.session() as session:
            session.execute(
                update(JobAttemptRow)
                .where(JobAttemptRow.id == attempt_id)
                .values(outcome=outcome, finished_at=utcnow(), error=error)
            )
            if ends_job:
                status = {"succeeded": JobStatus.SUCCEEDED, "cancelled": JobStatus.CANCELLED}.get(outcome)
                values: dict[str, Any] = {"status": (status or JobStatus.FAILED).value, "finished_at": utcnow()}
                values |= {"error": error, "result": result}
                if outcome == "succeeded":
                    # A Cancel that came after the last safe point (the work was done) is not silently dropped.
                    late = session.scalar(select(JobRow.status).where(JobRow.id == job_id)) == JobStatus.CANCELLING
                    values |= {"progress": 1.0, "message": _FINISHED_FIRST if late else "done"}
                elif outcome == "cancelled":
                    values["message"] = "cancelled"
                session.execute(update(JobRow).where(JobRow.id == job_id).values(**values))
                if task_id is not None:
                    session.execute(
                        update(JobTaskRow).where(JobTaskRow.id == task_id).values(status=outcome, result=result)
                    )
            else:
                session.execute(
                    update(JobTaskRow)
                    .where(JobTaskRow.id == task_id)
                    .values(status=outcome, error=error, result=result, progress=1.0)
                )
                _refresh_progress(session, job_id)
                follow = _close_when_done(session, job_id)
        for job, then, lock in follow:
            dispatch(job, then, lock)

    try:
        here = registry_fingerprint()
        if planned_with is not None and here is not None and planned_with != here:
            raise RegistryMismatchError(
                f"Worker {worker} has other strategies than the process that planned this job (registry "
                f"{here[:12]} here, {planned_with[:12]} planned): install the same strategy packages, plugins folder "
                "(CHUNKBENCH_PLUGINS_DIR) and variants file on every worker, restart it, and submit the job again.",
                worker=worker,
            )
        job_kind = kind_of(kind)
        if task_name is None:
            result: dict[str, Any] | FanOut = job_kind.run(call, writer.progress, writer.stop)
        elif task_name == CLOSE:
            assert job_kind.close is not None
            result = job_kind.close(call, _outcomes(database, job_id))
        else:
            result = job_kind.tasks[task_name](call, task_args, writer.progress, writer.stop)
    except JobCancelledError as exc:
        end("cancelled", exc.to_dict())
    except ChunkbenchError as exc:
        end("failed", exc.to_dict())
    except Exception as exc:  # a bug or a lost connection must still end the job, not leave it "running" forever
        logger.exception("job %s, %s (attempt %d on %s) crashed", job_id, label, attempt, worker)
        error = {"error": "internal_error", "message": f"{label}: unexpected error: {exc}"}
        if not final:
            with database.session() as session:
                session.execute(
                    update(JobAttemptRow)
                    .where(JobAttemptRow.id == attempt_id)
                    .values(outcome="retrying", finished_at=utcnow(), error=error)
                )
            raise
        end("failed", {**error, "attempts": attempt})
    else:
        if isinstance(result, FanOut):
            _fan_out(database, job_id, result, attempt_id, dispatch)
        else:
            end("succeeded", None, result)


_FINISHED_FIRST = "done: the work had finished before the Cancel reached a safe point; its results are kept"
_LOST = {"error": "worker_lost", "message": "The worker running this attempt stopped before it finished."}


def _fan_out(database: Database, job_id: str, fan: FanOut, attempt_id: str, dispatch: Dispatch) -> None:
    """Record a job's tasks (and end the first task's attempt) in one transaction, then start them."""
    rows = []
    for position, task in enumerate(fan.tasks):
        task_id = uuid.uuid4().hex
        rows.append(
            JobTaskRow(
                id=task_id, job_id=job_id, position=position, name=task.name, label=task.label[:255], args=task.args,
                group_name=task.group, size=task.size, status="queued", lock=f"{job_id}:{task.lock or task_id}",
            )
        )  # fmt: skip
    with database.session() as session:
        session.add_all(rows)
        session.execute(
            update(JobAttemptRow)
            .where(JobAttemptRow.id == attempt_id)
            .values(outcome="succeeded", finished_at=utcnow(), error=None)
        )
        session.execute(
            update(JobRow)
            .where(JobRow.id == job_id, JobRow.status == JobStatus.RUNNING.value)
            .values(message=f"{len(rows)} tasks queued")
        )
        follow = _close_when_done(session, job_id) if not rows else []
    for row in rows:
        dispatch(job_id, row.id, row.lock)
    for job, then, lock in follow:
        dispatch(job, then, lock)


def _unstarted(session: Session, job_id: str) -> list[tuple[str, str | None, str]]:
    """The job's tasks still queued (and its closing task, once due), to start again: a task queued twice runs once
    (its lock; it ends once), so starting one that is already queued costs nothing."""
    queued = session.scalars(
        select(JobTaskRow)
        .where(JobTaskRow.job_id == job_id, JobTaskRow.status == "queued")
        .order_by(JobTaskRow.position)
    ).all()
    return [(job_id, t.id, t.lock) for t in queued] or _close_when_done(session, job_id)


def _close_when_done(session: Session, job_id: str) -> list[tuple[str, str | None, str]]:
    """Once every task of the job has ended, its closing task (recorded here, started by the caller after the
    commit); the job row is locked so that of two tasks ending at once only one records it."""
    session.execute(select(JobRow.id).where(JobRow.id == job_id).with_for_update())
    tasks = session.scalars(select(JobTaskRow).where(JobTaskRow.job_id == job_id)).all()
    if any(t.name == CLOSE for t in tasks) or any(t.status not in TASK_ENDED for t in tasks):
        return []
    close = JobTaskRow(
        id=uuid.uuid4().hex, job_id=job_id, position=len(tasks), name=CLOSE, label="closing", args={}, status="queued",
        lock=job_id,
    )  # fmt: skip
    session.add(close)
    return [(job_id, close.id, close.lock)]


def _outcomes(database: Database, job_id: str) -> list[TaskOutcome]:
    with database.session() as session:
        tasks = session.scalars(
            select(JobTaskRow)
            .where(JobTaskRow.job_id == job_id, JobTaskRow.name != CLOSE)
            .order_by(JobTaskRow.position)
        ).all()
        return [TaskOutcome(t.label, dict(t.args), t.status, t.result, t.error) for t in tasks]


def tasks_of(session: Session, job_id: str) -> list[JobTaskRow]:
    """A job's tasks in order (none: the job did not fan out)."""
    return list(session.scalars(select(JobTaskRow).where(JobTaskRow.job_id == job_id).order_by(JobTaskRow.position)))


class Jobs(ABC):
    """What the faces use: submit a job, cancel it, wait for the queue (tests), stop. A runner records the job, then
    starts it its own way (``_start``)."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def submit(
        self,
        *,
        kind: str,
        tenant_id: str,
        document_id: str | None,
        request: dict[str, Any],
        payload: dict[str, Any],
        corpus_id: str | None = None,
    ) -> JobRow:
        """Record a queued job of a registered kind (``payload``: what its worker re-plans it from; ``request``: what
        clients see of it) and start it."""
        with self._database.session() as session:
            row = record(
                session, kind=kind, tenant_id=tenant_id, document_id=document_id, request=request, payload=payload,
                corpus_id=corpus_id,
            )  # fmt: skip
            self._own(row)
        self._start(row)
        return row

    @abstractmethod
    def _own(self, row: JobRow) -> None:
        """What the runner writes on the new row before it is committed."""

    @abstractmethod
    def _start(self, row: JobRow) -> None: ...

    def cancel(self, job_id: str, *, tenant_id: str) -> JobRow:
        # The row says cancelling; whichever process runs the job reads it within a second and stops at its next
        # safe point, and a job still waiting stops at its first (running it once says what it kept: nothing).
        return mark_cancelling(self._database, job_id, tenant_id=tenant_id)

    @abstractmethod
    def wait_idle(self, timeout: float = 60.0) -> None: ...

    @abstractmethod
    def shutdown(self, wait: bool = True) -> None: ...


class JobRunner(Jobs):
    """Runs jobs one at a time in a background thread of the process that accepted them (the embedded default:
    processing is CPU-bound and the embedded vector store takes one writer). The process owns its jobs' rows
    (host, pid, token) and renews their lease, so another process on the same database recovers them only once
    this one is gone."""

    def __init__(self, database: Database, settings: Settings | None = None, *, lease_s: float = 60.0) -> None:
        super().__init__(database)
        self._settings = settings
        self._lease_s = lease_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunkbench-job")
        # The stop flag of each job this process runs and has not finished: set by ``cancel`` here (another
        # process's Cancel is read from the row by the running task itself).
        self._stops: dict[str, threading.Event] = {}
        # Queued jobs wait in this process too: every job it owns keeps its lease while the runner lives.
        self._heartbeat = Heartbeat(self._renew_leases, lease_s / 3, name="chunkbench-job-lease").start()

    def _renew_leases(self) -> None:
        with self._database.session() as session:
            mine = (JobRow.owner_token == this_process().token, JobRow.status.in_(ACTIVE))
            session.execute(update(JobRow).where(*mine).values(lease_expires_at=lease_until(self._lease_s)))

    def cancel(self, job_id: str, *, tenant_id: str) -> JobRow:
        row = super().cancel(job_id, tenant_id=tenant_id)
        if (stop := self._stops.get(job_id)) is not None:
            stop.set()
        return row

    def _own(self, row: JobRow) -> None:
        me = this_process()
        row.owner_host, row.owner_pid, row.owner_token = me.host, me.pid, me.token
        row.lease_expires_at = lease_until(self._lease_s)

    def _start(self, row: JobRow) -> None:
        self._stops[row.id] = threading.Event()
        self._dispatch(row.id, None, None)

    def _dispatch(self, job_id: str, task_id: str | None, _lock: str | None) -> None:
        # One thread, first in first out: a job's tasks run in order, then its closing task (locks hold trivially).
        self._executor.submit(self._run, job_id, task_id)

    def _run(self, job_id: str, task_id: str | None) -> None:
        stop = self._stops.setdefault(job_id, threading.Event())
        try:
            execute(
                self._database, self._settings, job_id, task_id, worker=worker_name(), dispatch=self._dispatch,
                local_stop=stop,
            )  # fmt: skip
        except Exception:  # execute ends the task itself; this only keeps the thread alive (e.g. database gone)
            logger.exception("job %s could not be run", job_id)
        finally:
            with self._database.session() as session:
                ended = session.scalar(select(JobRow.status).where(JobRow.id == job_id)) in ENDED
            if ended:
                self._stops.pop(job_id, None)

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=False)
        self._heartbeat.stop()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until every job submitted so far has finished, the tasks they fanned out included (tests, orderly
        shutdown)."""
        deadline = time.monotonic() + timeout
        while True:
            marker: Future[None] = self._executor.submit(lambda: None)
            marker.result(timeout=max(0.0, deadline - time.monotonic()))
            if not self._stops:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self._stops)} job(s) still active after {timeout} s")
