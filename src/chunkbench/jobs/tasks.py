"""Running a job's tasks: execute() (one attempt of one task, whichever runner has it), a first task's fan-out into
tasks, and the closing task once they all ended.

Separate from ``jobs.execution`` (the job record, its kinds and the API to submit, read and cancel it) because this
is the one code path both runners call (``jobs.local.JobRunner`` in process, ``jobs.queue`` on a worker): it records
each attempt and how it ended, and starts what follows through the runner's ``Dispatch``.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError, JobCancelledError
from chunkbench.jobs.execution import (
    CLOSE,
    ENDED,
    TASK_ENDED,
    FanOut,
    JobCall,
    JobStatus,
    RegistryMismatchError,
    TaskOutcome,
    close_attempts,
    kind_of,
    registry_fingerprint,
)
from chunkbench.jobs.progress_writer import Writer, refresh_progress
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import this_process
from chunkbench.storage.schema import JobAttemptRow, JobRow, JobTaskRow, utcnow

logger = logging.getLogger(__name__)


# Starts a task of a job: ``dispatch(job_id, task_id, lock)`` (task_id None: the job's first task). The runner's:
# the job thread's queue, or the task queue.
Dispatch = Callable[[str, "str | None", "str | None"], object]  # whatever it returns (a queue's job id) is unused


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
        close_attempts(session, job_id, "lost", _LOST, task_id=task_id)
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
    writer = Writer(database, job_id, task_id if task_name != CLOSE else None, local_stop)
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
                refresh_progress(session, job_id)
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
