"""Which process runs an Experiment: claims, runs whose process is gone, and marking those interrupted."""

from __future__ import annotations

import threading

from sqlalchemy import select

from chunkbench.storage.db import Database
from chunkbench.storage.ownership import process_alive, this_process
from chunkbench.storage.schema import ExperimentRow

# Experiments this process has claimed and not finished. A "running" row naming this host and pid that is not
# in here was claimed by an earlier process with the same pid: in a restarted container pids repeat.
_CLAIMED_HERE: set[str] = set()
_CLAIMED_LOCK = threading.Lock()


def claim(row: ExperimentRow) -> None:
    """Record this process as the one running the Experiment."""
    me = this_process()
    row.runner_host, row.runner_pid = me.host, me.pid
    with _CLAIMED_LOCK:
        _CLAIMED_HERE.add(row.id)


# The runner of an Experiment run as tasks of the queue: its workers may be on any host, and the queue, not this
# process-liveness check, recovers a stopped one (its task is retried elsewhere), so no process judges it orphaned.
QUEUE_RUNNER = "task queue"


def claim_for_queue(row: ExperimentRow) -> None:
    """Record the task queue as what runs the Experiment."""
    row.runner_host, row.runner_pid = QUEUE_RUNNER, None


def release(experiment_id: str) -> None:
    with _CLAIMED_LOCK:
        _CLAIMED_HERE.discard(experiment_id)


def orphaned(row: ExperimentRow) -> bool:
    """A running Experiment whose process on this host is gone (killed, crashed); another host's run is
    assumed alive, since its process cannot be checked from here."""
    if row.runner_host == QUEUE_RUNNER:
        return False
    if row.status != "running" or row.runner_pid is None:
        return row.status == "running"
    me = this_process()
    if (row.runner_host, row.runner_pid) == (me.host, me.pid):
        with _CLAIMED_LOCK:
            return row.id not in _CLAIMED_HERE
    return process_alive(row.runner_host, row.runner_pid) is False


_INTERRUPTED = {"error": "interrupted", "message": "The process running it stopped mid-run. Resume it to finish."}


def fail_interrupted(database: Database) -> int:
    """Mark running Experiments whose process is gone as interrupted (resumable); returns how many."""
    with database.session() as session:
        rows = session.scalars(select(ExperimentRow).where(ExperimentRow.status == "running")).all()
        stopped = [row for row in rows if orphaned(row)]
        for row in stopped:
            row.status, row.error = "interrupted", dict(_INTERRUPTED)
        return len(stopped)
