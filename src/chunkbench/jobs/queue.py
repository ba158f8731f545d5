"""Jobs on a real task queue: procrastinate on the PostgreSQL metadata store (no other service).

With ``CHUNKBENCH_DATABASE_URL`` on PostgreSQL every job is a procrastinate job of the task ``chunkbench.run_job``
(queue ``chunkbench``, locked by the chunkbench job id so two workers never run the same job at once). Any
``chunkbench worker`` that reaches the database and the vector store runs it, through the same
:func:`chunkbench.jobs.tasks.execute` the embedded default calls in process. procrastinate gives what the
hand-written job threads and leases did, and more: retries (an unexpected error is tried again, three attempts in
all), stalled-job recovery through worker heartbeats (a killed worker's job is retried on another once its
heartbeat is older than ``CHUNKBENCH_WORKER_STALLED_S``), priorities and queues.

The schema is procrastinate's own (``procrastinate_jobs``, ``procrastinate_workers``, …), applied by chunkbench's
migration 0011 inside the same advisory-locked ``migrate()``; it is pinned to procrastinate 3.10 (a later
procrastinate needs its SQL migrations applied by a later chunkbench migration).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import cast

import procrastinate
import psycopg
from procrastinate import RetryStrategy
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url

from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError
from chunkbench.jobs.execution import ACTIVE, Jobs, worker_name
from chunkbench.jobs.local import JobRunner
from chunkbench.jobs.tasks import execute
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import Heartbeat
from chunkbench.storage.schema import JobAttemptRow, JobRow

logger = logging.getLogger(__name__)

TASK = "chunkbench.run_job"
QUEUE = "chunkbench"
# Three attempts in all: a domain error fails the job at once (``execute``); a crash, a lost database connection or
# a killed worker is tried again, twice.
MAX_ATTEMPTS = 3


# Takes over what a worker known to be gone had claimed (by its process token): ``job_kinds.recover_worker``.
Recover = Callable[[Database, Settings, str], None]


class QueueUnavailableError(ChunkbenchError):
    status_code = 503
    code = "queue_unavailable"


class DatabaseLostError(ChunkbenchError):
    """A worker that could not reach PostgreSQL for the stall timeout stops (``chunkbench worker`` exits 3)."""

    status_code = 503
    code = "database_lost"


def conninfo(database_url: str) -> str:
    """The libpq connection string of a SQLAlchemy PostgreSQL URL (``postgresql+psycopg://…`` → ``postgresql://…``)."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def _define(app: procrastinate.App) -> None:
    @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=RetryStrategy(max_attempts=MAX_ATTEMPTS - 1))
    def run_job(context: procrastinate.JobContext, job_id: str, task_id: str | None = None) -> None:
        resources: _Resources = context.additional_context["resources"]
        attempt = context.job.attempts + 1
        execute(
            resources.database, resources.settings, job_id, task_id, worker=context.worker_name or worker_name(),
            dispatch=resources.dispatch, attempt=attempt, final=attempt >= MAX_ATTEMPTS,
        )  # fmt: skip


class _Deferrer:
    """Puts chunkbench tasks on the queue from synchronous code (the API's requests, a worker's tasks)."""

    def __init__(self, database_url: str) -> None:
        self._app = procrastinate.App(
            connector=procrastinate.SyncPsycopgConnector(conninfo=conninfo(database_url), min_size=1, max_size=4)
        )
        _define(self._app)
        self._app.open()

    def __call__(self, job_id: str, task_id: str | None, lock: str | None) -> int:
        task = self._app.configure_task(TASK, queue=QUEUE, lock=lock or (job_id if task_id is None else None))
        return task.defer(job_id=job_id, task_id=task_id)

    def close(self) -> None:
        self._app.close()


class _Resources:
    def __init__(self, database: Database, settings: Settings, dispatch: _Deferrer) -> None:
        self.database = database
        self.settings = settings
        self.dispatch = dispatch


class QueueRunner(Jobs):
    """Submits jobs to the procrastinate queue; with ``worker=True`` it also runs a worker in this process (the API
    of one machine), otherwise ``chunkbench worker`` processes do the work (``serve --no-worker``)."""

    def __init__(
        self, database: Database, settings: Settings, *, worker: bool = True, recover: Recover | None = None
    ) -> None:
        super().__init__(database)
        self._settings = settings
        self._deferrer = _Deferrer(database.url)
        self._recover = recover
        self._worker: Worker | None = None
        self._keeper: Heartbeat | None = None
        if worker:
            self._worker = self._new_worker()
            self._keeper = Heartbeat(self._keep_worker, settings.worker_heartbeat_s, name="chunkbench-worker-keeper")
            self._keeper.start()

    def _new_worker(self) -> Worker:
        return Worker(self._database, self._settings, name=f"api@{worker_name()}", recover=self._recover).start()

    def _keep_worker(self) -> None:
        """The API's own worker stops when the database is out of reach for the stall timeout (as a ``chunkbench
        worker`` does); this process lives on, so a new worker starts here, one try per heartbeat until it runs."""
        if self._worker is not None and not self._worker.alive:
            logger.warning("the worker of this API stopped (%s): starting a new one", self._worker.error)
            self._worker = self._new_worker()

    def _own(self, row: JobRow) -> None:
        """Nothing: the queue owns the job (no process lease; a stalled task is retried by another worker)."""

    def _start(self, row: JobRow) -> None:
        try:
            queue_job_id = self._deferrer(row.id, None, None)
        except Exception as exc:
            with self._database.session() as session:
                failed = session.get(JobRow, row.id)
                assert failed is not None  # inserted before it was deferred
                failed.status, failed.error = "failed", {"error": "queue_unavailable", "message": str(exc)}
            raise QueueUnavailableError(
                f"The job could not be queued ({exc}). Check that PostgreSQL is reachable (every chunkbench process "
                "migrates it when it starts), then submit it again.",
                job_id=row.id,
            ) from exc
        with self._database.session() as session:
            queued = session.get(JobRow, row.id)
            assert queued is not None  # inserted before it was deferred
            queued.queue_job_id = queue_job_id
        row.queue_job_id = queue_job_id

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until no job of this database is queued, running or cancelling (tests, orderly shutdown)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._database.session() as session:
                active = session.scalar(select(func.count()).select_from(JobRow).where(JobRow.status.in_(ACTIVE)))
            if not active:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{active} job(s) still active after {timeout} s")
            time.sleep(0.05)

    def shutdown(self, wait: bool = True) -> None:
        if self._keeper is not None:
            self._keeper.stop()
        if self._worker is not None:
            self._worker.stop(wait=wait)
        self._deferrer.close()


class Worker:
    """A procrastinate worker (its own event loop, in a thread) that runs chunkbench jobs with this process's
    database, settings and vector store; it also retries the jobs of workers whose heartbeat stopped."""

    def __init__(
        self,
        database: Database,
        settings: Settings,
        *,
        concurrency: int = 1,
        name: str | None = None,
        queues: list[str] | None = None,
        once: bool = False,
        recover: Recover | None = None,
    ) -> None:
        self._database = database
        self._recover = recover
        self._settings = settings
        self._concurrency = concurrency
        self.name = name or worker_name()
        self._queues = queues or [QUEUE]
        self._once = once
        self._app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=conninfo(database.url), min_size=1, max_size=4)
        )
        _define(self._app)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self.error: BaseException | None = None
        # Set when the worker stopped because the database was out of reach (``_watch_database``).
        self.lost: DatabaseLostError | None = None

    def start(self) -> Worker:
        self._thread = threading.Thread(target=self.run, name=f"chunkbench-worker-{self.name}", daemon=True)
        self._thread.start()
        self._started.wait(timeout=30)
        return self

    def run(self) -> None:
        """Run until stopped (or, with ``once``, until the queue is empty); blocks."""
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            # procrastinate stops by itself when its connections fail (a heartbeat or a fetch that cannot reach the
            # database), and its shutdown fails too: with the database out of reach, that is the cause, said once.
            if self.lost is None and not isinstance(exc, KeyboardInterrupt) and not _reachable(self._database.url):
                self.lost = DatabaseLostError(
                    f"Worker {self.name} lost the database ({exc}) and stopped; the tasks it had in hand are retried "
                    "by another worker. Check the database and the network, then start it again.",
                    worker=self.name,
                )
            self.error = self.lost or exc
            if self.lost is None:
                logger.exception("worker %s stopped", self.name)
                raise
        finally:
            self._started.set()
        if self.lost is not None:
            self.error = self.lost

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        settings = self._settings
        deferrer = _Deferrer(self._database.url)
        async with self._app.open_async():
            self._main = asyncio.current_task()
            self._started.set()
            side = [asyncio.create_task(self._watch_database())]
            if not self._once:
                side.append(asyncio.create_task(self._retry_stalled()))
            try:
                await self._app.run_worker_async(
                    queues=self._queues,
                    name=self.name,
                    concurrency=self._concurrency,
                    wait=not self._once,
                    install_signal_handlers=False,
                    update_heartbeat_interval=settings.worker_heartbeat_s,
                    stalled_worker_timeout=settings.worker_stalled_s,
                    fetch_job_polling_interval=settings.worker_poll_s,
                    abort_job_polling_interval=settings.worker_poll_s,
                    additional_context={"resources": _Resources(self._database, settings, deferrer)},
                )
            except asyncio.CancelledError:
                pass
            finally:
                for task in side:
                    task.cancel()
                with contextlib.suppress(Exception):  # its pool's connections may be gone with the database
                    deferrer.close()

    async def _watch_database(self) -> None:
        """Every heartbeat, one query on a new connection. Once the database has been out of reach for the stall
        timeout (by then the other workers take this one for gone and retry its tasks), the worker stops and says
        why, instead of retrying connections for ever: its task in hand fails at its next read of the database (its
        cancel check, within a second), and nothing it did without recording it is lost (the retry redoes it)."""
        settings = self._settings
        target = conninfo(self._database.url)
        out_since: float | None = None
        while True:
            await asyncio.sleep(settings.worker_heartbeat_s)
            try:
                await asyncio.wait_for(_ping(target), timeout=max(settings.worker_heartbeat_s, 1.0))
            except Exception as exc:
                out_since = out_since or time.monotonic()
                out_for = time.monotonic() - out_since
                logger.warning("worker %s: the database is out of reach (%.0f s): %s", self.name, out_for, exc)
                if out_for >= settings.worker_stalled_s:
                    self.lost = DatabaseLostError(
                        f"Worker {self.name} could not reach the database for {out_for:.0f} s ({exc}) and stopped; "
                        "the tasks it had in hand are retried by another worker. Check the database and the network, "
                        "then start it again.",
                        worker=self.name,
                    )
                    assert self._main is not None
                    self._main.cancel()
                    return
            else:
                out_since = None

    async def _retry_stalled(self) -> None:
        """Every heartbeat: the tasks of workers whose heartbeat is older than the stall timeout are retried, once
        what their worker had claimed (documents mid-processing) is recovered, so the retry finds them free."""
        manager = self._app.job_manager
        while True:
            await asyncio.sleep(self._settings.worker_heartbeat_s)
            try:
                stalled = await manager.get_stalled_jobs(seconds_since_heartbeat=self._settings.worker_stalled_s)
                for job in stalled:
                    kwargs = job.task_kwargs
                    logger.warning(
                        "task %s of job %s: its worker stopped; retried", kwargs.get("task_id"), kwargs.get("job_id")
                    )
                    task_id = cast("str | None", kwargs.get("task_id"))  # as run_job's defer() wrote it
                    await asyncio.to_thread(self._recover_lost, str(kwargs.get("job_id")), task_id)
                    await manager.retry_job(job)
            except Exception:  # the database may be briefly unreachable: the next round tries again
                logger.warning("could not check for stalled tasks", exc_info=True)

    def _recover_lost(self, job_id: str, task_id: str | None) -> None:
        for token in lost_workers(self._database, job_id, task_id):
            if self._recover is not None:
                self._recover(self._database, self._settings, token)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, wait: bool = True) -> None:
        if self._loop is not None and self._main is not None and not self._loop.is_closed():
            # The loop may close meanwhile: the worker has then already stopped.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._main.cancel)
        if wait and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)


async def _ping(target: str) -> None:
    async with await psycopg.AsyncConnection.connect(target, connect_timeout=2) as connection:
        await connection.execute("SELECT 1")


def _reachable(database_url: str) -> bool:
    try:
        with psycopg.connect(conninfo(database_url), connect_timeout=2) as connection:
            connection.execute("SELECT 1")
    except Exception:
        return False
    return True


def make_runner(database: Database, settings: Settings, *, worker: bool = True, recover: Recover | None = None) -> Jobs:
    """The job runner of this process: the task queue on PostgreSQL, the in-process job thread on SQLite."""
    if database.engine.dialect.name == "postgresql":
        return QueueRunner(database, settings, worker=worker, recover=recover)
    return JobRunner(database, settings, lease_s=settings.processing_lease_s)


def lost_workers(database: Database, job_id: str, task_id: str | None) -> list[str]:
    """The process tokens of the workers whose attempt at this task is still "running" (they stopped)."""
    where = [JobAttemptRow.job_id == job_id, JobAttemptRow.outcome == "running"]
    where.append(JobAttemptRow.task_id.is_(None) if task_id is None else JobAttemptRow.task_id == task_id)
    with database.session() as session:
        return [t for t in session.scalars(select(JobAttemptRow.worker_token).where(*where)) if t]


def queue_stats(database: Database, settings: Settings) -> dict[str, int | str]:
    """What the queue holds now, for ``/health/ready`` and ``/metrics``: tasks waiting, tasks running, workers seen
    (a heartbeat within ``worker_stalled_s``), and stalled tasks (running on a worker whose heartbeat stopped: they
    are retried on another). On SQLite the job thread of each process is the queue: its queued and running jobs."""
    with database.session() as session:
        if database.engine.dialect.name != "postgresql":
            counts = dict(
                session.execute(
                    select(JobRow.status, func.count()).where(JobRow.status.in_(ACTIVE)).group_by(JobRow.status)
                ).all()
            )
            running = counts.get("running", 0) + counts.get("cancelling", 0)
            return {"backend": "in-process", "depth": counts.get("queued", 0), "running": running, "workers": 1,
                    "stalled": 0}  # fmt: skip
        row = session.execute(
            text(
                "SELECT"
                " (SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo' AND queue_name = :queue),"
                " (SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing' AND queue_name = :queue),"
                " (SELECT count(*) FROM procrastinate_workers"
                "   WHERE last_heartbeat > now() - make_interval(secs => :stalled)),"
                " (SELECT count(*) FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w ON w.id = j.worker_id"
                "   WHERE j.status = 'doing' AND j.queue_name = :queue AND (w.id IS NULL"
                "   OR w.last_heartbeat < now() - make_interval(secs => :stalled)))"
            ),
            {"queue": QUEUE, "stalled": settings.worker_stalled_s},
        ).one()
    return {"backend": "procrastinate", "depth": row[0], "running": row[1], "workers": row[2], "stalled": row[3]}
