"""Jobs: create, run in a worker thread, report progress, read back."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from chunkbench.errors import ChunkbenchError, JobCancelledError, JobNotActiveError, NotFoundError
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import Heartbeat, lease_until, owner_gone, this_process
from chunkbench.storage.schema import JobRow, utcnow

logger = logging.getLogger(__name__)

# A progress callback: fraction done in [0, 1] and a short message ("embedding semantic chunks").
Progress = Callable[[float, str], None]
# Whether the job was cancelled: long work asks it at its safe points (between cells, documents, strategies) and
# then raises JobCancelledError, keeping what it finished.
StopCheck = Callable[[], bool]
# A job's work: gets the progress callback and the stop check, returns the result (JSON-ready).
Work = Callable[[Progress, StopCheck], dict[str, Any]]
_PROGRESS_WRITE_INTERVAL_S = 0.5


def never_stop() -> bool:
    """The stop check of work no one can cancel (run inline, with ``?wait=true``; the CLI stops on Ctrl-C)."""
    return False


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"  # asked to stop; the work stops at its next safe point
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobNotFoundError(NotFoundError):
    code = "job_not_found"


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


ACTIVE = (JobStatus.QUEUED.value, JobStatus.RUNNING.value, JobStatus.CANCELLING.value)


def fail_interrupted(database: Database) -> int:
    """Jobs left queued or running by a process that is gone can never finish: say so.

    Only jobs whose owner is dead (same host) or whose lease ran out are failed; another replica's live jobs
    on a shared database are left alone. Returns how many were failed.
    """
    with database.session() as session:
        rows = session.scalars(select(JobRow).where(JobRow.status.in_(ACTIVE))).all()
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
        return len(stale)


class JobRunner:
    """Runs jobs one at a time in a background thread (processing is CPU-bound and the embedded
    vector store takes one writer), persisting status and throttled progress in the jobs table."""

    def __init__(self, database: Database, *, lease_s: float = 60.0) -> None:
        self._database = database
        self._lease_s = lease_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunkbench-job")
        # The stop flag of each job this process owns and has not finished: set by ``cancel`` here, or by the
        # heartbeat when another replica marked the job cancelling in the shared database.
        self._stops: dict[str, threading.Event] = {}
        # Queued jobs wait in this process too: every job it owns keeps its lease while the runner lives.
        self._heartbeat = Heartbeat(self._renew_leases, lease_s / 3, name="chunkbench-job-lease").start()

    def _renew_leases(self) -> None:
        with self._database.session() as session:
            mine = (JobRow.owner_token == this_process().token, JobRow.status.in_(ACTIVE))
            session.execute(update(JobRow).where(*mine).values(lease_expires_at=lease_until(self._lease_s)))
            cancelling = session.scalars(
                select(JobRow.id).where(*mine, JobRow.status == JobStatus.CANCELLING.value)
            ).all()
        for job_id in cancelling:
            if (stop := self._stops.get(job_id)) is not None:
                stop.set()

    def cancel(self, job_id: str, *, tenant_id: str) -> JobRow:
        """Ask a queued or running job to stop at its next safe point (the work decides where: between cells,
        documents or strategies, keeping what it finished); 404 for an unknown job, 409 for one that has ended.

        The row says ``cancelling`` until the work stops; a job of another replica stops when that replica's
        heartbeat reads it (within a third of the lease)."""
        with self._database.session() as session:
            row = get(session, job_id, tenant_id=tenant_id)
            # Conditional: a job that ends meanwhile keeps its final status instead of turning "cancelling".
            marked = session.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status.in_(ACTIVE))
                .values(status=JobStatus.CANCELLING.value, message="cancelling: stopping at the next safe point")
            ).rowcount
            session.refresh(row)
            if not marked:
                raise JobNotActiveError(
                    f"Job '{job_id}' has already {row.status}; there is nothing to cancel.",
                    job_id=job_id,
                    status=row.status,
                )
        if (stop := self._stops.get(job_id)) is not None:
            stop.set()
        return row

    def submit(
        self,
        *,
        kind: str,
        tenant_id: str,
        document_id: str | None,
        request: dict[str, Any],
        work: Work,
        corpus_id: str | None = None,
    ) -> JobRow:
        """Record a queued job and start it; ``work`` gets a progress callback and a stop check (True once the
        job is cancelled: it then raises JobCancelledError) and returns the result."""
        with self._database.session() as session:
            row = JobRow(
                id=uuid.uuid4().hex,
                tenant_id=tenant_id,
                kind=kind,
                status=JobStatus.QUEUED.value,
                document_id=document_id,
                corpus_id=corpus_id,
                progress=0.0,
                request=request,
                owner_host=(me := this_process()).host,
                owner_pid=me.pid,
                owner_token=me.token,
                lease_expires_at=lease_until(self._lease_s),
            )
            session.add(row)
        stop = self._stops[row.id] = threading.Event()
        self._executor.submit(self._run, row.id, work, stop)
        return row

    def _set(self, job_id: str, **values: Any) -> None:
        with self._database.session() as session:
            session.execute(update(JobRow).where(JobRow.id == job_id).values(**values))

    def _run(self, job_id: str, work: Work, stop: threading.Event) -> None:
        try:
            self._work(job_id, work, stop)
        finally:
            self._stops.pop(job_id, None)

    def _work(self, job_id: str, work: Work, stop: threading.Event) -> None:
        # A job cancelled while queued still runs: its work stops at its first safe point and says what it kept.
        with self._database.session() as session:
            session.execute(update(JobRow).where(JobRow.id == job_id).values(started_at=utcnow()))
            session.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status == JobStatus.QUEUED.value)
                .values(status=JobStatus.RUNNING.value, message="started")
            )
        last_write = 0.0

        def progress(fraction: float, message: str) -> None:
            nonlocal last_write
            now = time.monotonic()
            if now - last_write >= _PROGRESS_WRITE_INTERVAL_S:
                last_write = now
                self._set(job_id, progress=max(0.0, min(fraction, 1.0)), message=message)

        try:
            result = work(progress, stop.is_set)
        except JobCancelledError as exc:
            self._set(job_id, status=JobStatus.CANCELLED.value, finished_at=utcnow(), message="cancelled",
                      error=exc.to_dict())  # fmt: skip
        except ChunkbenchError as exc:
            self._set(job_id, status=JobStatus.FAILED.value, finished_at=utcnow(), error=exc.to_dict())
        except Exception as exc:  # a bug must still end the job, not leave it "running" forever
            logger.exception("job %s crashed", job_id)
            self._set(
                job_id,
                status=JobStatus.FAILED.value,
                finished_at=utcnow(),
                error={"error": "internal_error", "message": f"Unexpected error: {exc}"},
            )
        else:
            self._set(
                job_id,
                status=JobStatus.SUCCEEDED.value,
                finished_at=utcnow(),
                progress=1.0,
                message="done",
                result=result,
            )

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=False)
        self._heartbeat.stop()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until every job submitted so far has finished (tests, orderly shutdown)."""
        marker: Future[None] = self._executor.submit(lambda: None)
        marker.result(timeout=timeout)
