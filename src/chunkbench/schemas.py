"""API models shared by every domain."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorOut(BaseModel):
    """The body of every error response: a stable code, a message that says what to do, details."""

    error: str
    message: str
    details: dict[str, Any] | None = None
    request_id: str | None = None
