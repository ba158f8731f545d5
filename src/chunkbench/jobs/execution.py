"""Jobs: the record, the kinds, and the API to submit, read back and cancel them.

A job is a registered *kind* and a JSON *payload* (``register_kind``), so any process that registered the same
kinds can run it: the process that accepted it (``jobs.local.JobRunner``, a thread: SQLite, one machine) or a
``chunkbench worker`` of the PostgreSQL task queue (``jobs.queue``). Either way ``jobs.tasks.execute`` runs it — the
one code path for the work itself; only the queue differs. Each run of it is an attempt in ``job_attempts``: the
job's history (task, worker, start, end, outcome).
"""

from __future__ import annotations

import os
import socket
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError, InvalidRequestError, JobNotActiveError, NotFoundError
from chunkbench.progress import Progress, StopCheck
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import as_utc, owner_gone
from chunkbench.storage.schema import JobAttemptRow, JobRow, JobTaskRow, utcnow


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
            close_attempts(session, row.id, "lost", row.error, every=True)
        return len(stale)


def close_attempts(
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


CLOSE = "close"
TASK_ENDED = ("succeeded", "failed", "cancelled")


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
