"""API models of the liveness and readiness probes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class LivenessOut(BaseModel):
    """The process is up and serving; nothing else was touched."""

    status: Literal["alive"] = "alive"
    version: str


class ReadinessCheckOut(BaseModel):
    """One dependency as the readiness probe found it."""

    ok: bool = Field(description="False when this part keeps the process from serving")
    detail: str = Field(description="What was checked, or the error")


class QueueOut(BaseModel):
    """The job queue: procrastinate on PostgreSQL (every worker's), the process's job thread on SQLite."""

    backend: Literal["procrastinate", "in-process"]
    depth: int = Field(description="Tasks waiting for a worker")
    running: int = Field(description="Tasks running now")
    workers: int = Field(description="Workers whose heartbeat is recent (CHUNKBENCH_WORKER_STALLED_S)")
    stalled: int = Field(description="Tasks running on a worker whose heartbeat stopped: they are retried elsewhere")


class ReadinessOut(BaseModel):
    """Whether this process can serve requests now: 200 when ready, 503 naming the failing parts when not."""

    status: Literal["ready", "not_ready"]
    version: str
    failing: list[str] = Field(description="Names of the checks that failed (empty when ready)")
    database: ReadinessCheckOut
    vector_store: ReadinessCheckOut
    llm: ReadinessCheckOut = Field(
        description="Configured or not; never probed (answers fall back to extractive without it), always ok"
    )
    queue: QueueOut | None = Field(None, description="The job queue now (absent when the database does not answer)")
