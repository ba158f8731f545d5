"""API models of jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class JobAttemptOut(BaseModel):
    """One run of one of the job's tasks by one worker: the job's history (``lost``: its worker stopped, killed or
    cut off, and the task was run again)."""

    model_config = ConfigDict(from_attributes=True)

    task: str
    attempt: int
    worker: str
    started_at: datetime
    finished_at: datetime | None
    outcome: Literal["running", "succeeded", "failed", "cancelled", "retrying", "lost"]
    error: dict[str, Any] | None = None


class JobTaskOut(BaseModel):
    """A task of a job that spread over the queue (batches of documents × strategy, then the closing task)."""

    model_config = ConfigDict(from_attributes=True)

    label: str
    status: str
    progress: float
    message: str | None = None


class JobOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    kind: str
    status: str
    document_id: str | None
    corpus_id: str | None = None
    progress: float
    message: str | None
    request: dict[str, Any]
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    # Its tasks (when it fanned out) and every attempt of them, oldest first: GET /jobs/{id} only (lists leave them
    # out).
    tasks: list[JobTaskOut] = []
    attempts: list[JobAttemptOut] = []
