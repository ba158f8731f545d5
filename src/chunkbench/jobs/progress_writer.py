"""The progress writer of a running task: throttled progress (its own and its job's) and the stop check.

Separate from ``jobs.tasks`` (which runs a task and records how it ended) because this is what the work itself
calls, many times a second, while it runs: every write is throttled and every Cancel is read from the job's row.
"""

from __future__ import annotations

import threading
import time

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from chunkbench.jobs.execution import CLOSE, TASK_ENDED, JobStatus
from chunkbench.storage.db import Database
from chunkbench.storage.schema import JobRow, JobTaskRow

_PROGRESS_WRITE_INTERVAL_S = 0.5
# How often a running job reads its own row to see a Cancel made by any process (API replica, CLI, dashboard).
_CANCEL_POLL_S = 1.0


class Writer:
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
            refresh_progress(session, self._job_id, latest=f"{label}: {message}")

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


def refresh_progress(session: Session, job_id: str, *, latest: str | None = None) -> None:
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
