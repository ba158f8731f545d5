"""Structured logs: one JSON object per line (servers) or readable text (terminals), each with the request id."""

from __future__ import annotations

import json
import logging
import sys
import warnings
from datetime import UTC, datetime
from typing import Any, Literal

from chunkbench.observability.request_id import current_request_id

LogFormat = Literal["auto", "text", "json"]

# Attributes every LogRecord has; anything else on a record came from ``extra=`` and is logged too (except
# uvicorn's ``color_message``, the message again with terminal colour codes).
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "color_message", "rid",
}  # fmt: skip
# Loggers that log at the configured level; every other library logs warnings and errors only (httpx, for one,
# logs each HTTP call at INFO).
_APP_LOGGERS = ("chunkbench", "uvicorn")
_HANDLER_NAME = "chunkbench"
_WARNINGS_LOGGER = "chunkbench.warnings"


def resolve_log_format(log_format: LogFormat, stream: Any = None) -> Literal["text", "json"]:
    """``auto`` is text on a terminal and JSON otherwise (a service manager, a container, a pipe)."""
    if log_format != "auto":
        return log_format
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return "text" if isatty is not None and isatty() else "json"


def _request_id(record: logging.LogRecord) -> str | None:
    # An explicit ``extra={"request_id": …}`` wins: the 500 handler logs after the middleware has left.
    return getattr(record, "request_id", None) or current_request_id()


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, message, request_id, request fields, extras, exc_info."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": _request_id(record),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in entry and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time level logger [request id] message``, for people reading a terminal."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s%(rid)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        request_id = _request_id(record)
        record.rid = f" [{request_id}]" if request_id else ""
        try:
            return super().format(record)
        finally:
            delattr(record, "rid")  # set above: LogRecord declares no such attribute


def configure_logging(level: str = "INFO", log_format: LogFormat = "auto") -> Literal["text", "json"]:
    """Send every log record (chunkbench's, uvicorn's, libraries') to stderr in one format; returns it.

    Idempotent: a second call replaces the handler it installed instead of adding another.
    """
    resolved = resolve_log_format(log_format)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if resolved == "json" else TextFormatter())
    root = logging.getLogger()
    for existing in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(existing)
    root.addHandler(handler)
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        raise ValueError(f"Unknown log level '{level}': use DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    root.setLevel(max(numeric_level, logging.WARNING))
    for name in _APP_LOGGERS:
        logging.getLogger(name).setLevel(numeric_level)
    # uvicorn's loggers would otherwise print through their own handlers too (lines doubled, not JSON).
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    return resolved


def route_warnings_to_log() -> None:
    """Python warnings (a library's advice, a deprecation) go to the ``chunkbench.warnings`` log at DEBUG instead
    of stderr: they are for developers, and would otherwise land in the middle of a command's output."""
    warnings.showwarning = _log_warning


def _log_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    logging.getLogger(_WARNINGS_LOGGER).debug("%s: %s (%s:%d)", category.__name__, message, filename, lineno)
