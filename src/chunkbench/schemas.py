"""API models shared by every domain."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorOut(BaseModel):
    """The body of every error response: a stable code, a message that says what to do, details."""

    error: str
    message: str
    details: dict[str, Any] | None = None
    request_id: str | None = None


class HealthOut(BaseModel):
    """``GET /health``: liveness plus a database ping."""

    status: str = Field(description="ok, or degraded when the database does not answer")
    version: str


class ValidationErrorOut(BaseModel):
    """FastAPI's body for a request that fails validation (422)."""

    detail: list[dict[str, Any]] | str


# The type of a route's ``responses=`` (FastAPI's own annotation): a dict literal keyed by status codes alone is
# inferred as dict[int, …], which dict's invariance keeps from matching it.
Responses = dict[int | str, dict[str, Any]]


def unprocessable(description: str) -> dict[str, Any]:
    """The ``responses=`` entry for a route whose 422 is either a domain error or a validation error: declaring
    422 replaces FastAPI's own validation-error response, so both bodies are declared."""
    return {"model": ErrorOut | ValidationErrorOut, "description": description}


class JobAccepted(BaseModel):
    """The 202 body of work accepted as a background job (processing, benchmarks): where to follow it."""

    job_id: str
    status: str
    status_url: str
