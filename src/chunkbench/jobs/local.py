"""The in-process runner: JobRunner, the job thread of the process that accepted the jobs (the embedded default).

Separate from ``jobs.execution`` (what every runner shares) and beside ``jobs.queue`` (the PostgreSQL task queue):
a runner only decides where and when ``jobs.tasks.execute`` runs a job's tasks.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy import select, update

from chunkbench.config import Settings
from chunkbench.jobs.execution import ACTIVE, ENDED, Jobs, worker_name
from chunkbench.jobs.tasks import execute
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import Heartbeat, lease_until, this_process
from chunkbench.storage.schema import JobRow

logger = logging.getLogger(__name__)


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
