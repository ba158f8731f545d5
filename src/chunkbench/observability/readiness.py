"""Readiness: can this process serve requests now (database and vector store reachable)?"""

from __future__ import annotations

import logging

from chunkbench import __version__
from chunkbench.config import Settings
from chunkbench.jobs.queue import queue_stats
from chunkbench.metrics import QUEUE_DEPTH, QUEUE_RUNNING, QUEUE_STALLED, WORKERS_SEEN
from chunkbench.observability.schemas import QueueOut, ReadinessCheckOut, ReadinessOut
from chunkbench.storage.db import Database
from chunkbench.storage.vectors import get_vector_store

logger = logging.getLogger(__name__)


def readiness(database: Database, settings: Settings) -> ReadinessOut:
    """Ping the database and the vector store and say whether an LLM is configured; never raises."""
    checks = {
        "database": _database_check(database),
        "vector_store": _vector_store_check(settings),
        "llm": _llm_check(settings),
    }
    failing = [name for name, check in checks.items() if not check.ok]
    queue = None if "database" in failing else _queue(database, settings)
    return ReadinessOut(
        status="not_ready" if failing else "ready", version=__version__, failing=failing, queue=queue, **checks
    )


def _queue(database: Database, settings: Settings) -> QueueOut | None:
    try:
        return QueueOut(**queue_stats(database, settings))
    except Exception:  # e.g. a database not migrated to the queue's tables yet: readiness reports, never raises
        logger.warning("could not read the job queue", exc_info=True)
        return None


def update_queue_gauges(database: Database, settings: Settings) -> None:
    """The queue's figures into the gauges ``/metrics`` exports (read at each scrape: they are the database's)."""
    if (queue := _queue(database, settings)) is None:
        return
    QUEUE_DEPTH.set(queue.depth)
    QUEUE_RUNNING.set(queue.running)
    WORKERS_SEEN.set(queue.workers)
    QUEUE_STALLED.set(queue.stalled)


def _database_check(database: Database) -> ReadinessCheckOut:
    backend = database.engine.url.get_backend_name()
    try:
        answered = database.ping()
    except Exception as exc:  # readiness reports every failure instead of raising it
        return ReadinessCheckOut(ok=False, detail=f"{backend}: {type(exc).__name__}: {_first_line(exc)}")
    if not answered:
        return ReadinessCheckOut(ok=False, detail=f"{backend}: SELECT 1 gave an unexpected answer")
    return ReadinessCheckOut(ok=True, detail=f"{backend} answers SELECT 1")


def _vector_store_check(settings: Settings) -> ReadinessCheckOut:
    where = settings.qdrant_url or "embedded"
    try:
        # The process's own store: opening it (the embedded folder lock) is part of being ready.
        get_vector_store(settings).ping()
    except Exception as exc:  # a locked folder or an unreachable server is a finding, not a 500
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return ReadinessCheckOut(ok=False, detail=f"Qdrant ({where}): {_first_line(message)}")
    return ReadinessCheckOut(ok=True, detail=f"Qdrant ({where}) answers")


def _llm_check(settings: Settings) -> ReadinessCheckOut:
    # Not probed: an LLM outage degrades answers (GET /admin/health shows it) but must not take replicas out
    # of the load balancer, where they still serve documents, retrieval and extractive answers.
    if settings.llm_configured:
        return ReadinessCheckOut(ok=True, detail=f"configured: model '{settings.llm_model}' (not probed)")
    return ReadinessCheckOut(ok=True, detail="not configured: answers are extractive")


def _first_line(error: object) -> str:
    # Driver errors (psycopg, SQLAlchemy) append SQL and documentation links on further lines.
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
