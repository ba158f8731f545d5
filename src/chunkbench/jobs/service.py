"""Jobs: create, run in a worker thread, report progress, read back."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from chunkbench.errors import ChunkbenchError, NotFoundError
from chunkbench.storage.db import Database
from chunkbench.storage.schema import JobRow, utcnow

logger = logging.getLogger(__name__)

# A progress callback: fraction done in [0, 1] and a short message ("embedding semantic chunks").
Progress = Callable[[float, str], None]
_PROGRESS_WRITE_INTERVAL_S = 0.5


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


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


def fail_interrupted(database: Database) -> int:
    """Jobs left queued or running by a previous process can never finish: say so."""
    with database.session() as session:
        result = session.execute(
            update(JobRow)
            .where(JobRow.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]))
            .values(
                status=JobStatus.FAILED.value,
                finished_at=utcnow(),
                error={"error": "interrupted", "message": "The server stopped before this job finished."},
            )
        )
        return result.rowcount or 0


class JobRunner:
    """Runs jobs one at a time in a background thread (processing is CPU-bound and the embedded
    vector store takes one writer), persisting status and throttled progress in the jobs table."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunkbench-job")

    def submit(
        self,
        *,
        kind: str,
        tenant_id: str,
        document_id: str | None,
        request: dict[str, Any],
        work: Callable[[Progress], dict[str, Any]],
    ) -> JobRow:
        """Record a queued job and start it; ``work`` gets a progress callback and returns the result."""
        with self._database.session() as session:
            row = JobRow(
                id=uuid.uuid4().hex,
                tenant_id=tenant_id,
                kind=kind,
                status=JobStatus.QUEUED.value,
                document_id=document_id,
                progress=0.0,
                request=request,
            )
            session.add(row)
        self._executor.submit(self._run, row.id, work)
        return row

    def _set(self, job_id: str, **values: Any) -> None:
        with self._database.session() as session:
            session.execute(update(JobRow).where(JobRow.id == job_id).values(**values))

    def _run(self, job_id: str, work: Callable[[Progress], dict[str, Any]]) -> None:
        self._set(job_id, status=JobStatus.RUNNING.value, started_at=utcnow(), message="started")
        last_write = 0.0

        def progress(fraction: float, message: str) -> None:
            nonlocal last_write
            now = time.monotonic()
            if now - last_write >= _PROGRESS_WRITE_INTERVAL_S:
                last_write = now
                self._set(job_id, progress=max(0.0, min(fraction, 1.0)), message=message)

        try:
            result = work(progress)
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

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until every job submitted so far has finished (tests, orderly shutdown)."""
        marker: Future[None] = self._executor.submit(lambda: None)
        marker.result(timeout=timeout)
