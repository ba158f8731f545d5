"""Who owns long-running work: the process identity recorded on rows, liveness checks and lease renewal.

Several API replicas (and CLI processes) may share one database. A row that is being worked on records its
owner (host, pid and a per-process token) and a lease (``lease_expires_at``) the owner keeps renewing. At
start-up a process recovers only the work whose owner is provably dead (same host, process gone) or whose
lease ran out (another host stopped renewing), never a live replica's work.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProcessIdentity:
    """This process as rows record it: ``token`` tells apart two processes that got the same pid (a restarted
    container is often pid 1 again)."""

    host: str
    pid: int
    token: str


_IDENTITY: ProcessIdentity | None = None
_IDENTITY_LOCK = threading.Lock()


def this_process() -> ProcessIdentity:
    """The identity of the running process (a new token after a fork)."""
    global _IDENTITY
    with _IDENTITY_LOCK:
        if _IDENTITY is None or _IDENTITY.pid != os.getpid():
            _IDENTITY = ProcessIdentity(socket.gethostname(), os.getpid(), uuid.uuid4().hex)
        return _IDENTITY


def process_alive(host: str | None, pid: int | None) -> bool | None:
    """Whether the process ``pid`` on ``host`` still runs; ``None`` when that cannot be told from here
    (another host, or no pid recorded)."""
    if host is None or pid is None or host != socket.gethostname():
        return None
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def as_utc(moment: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite gives them back naive)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def lease_until(lease_s: float, now: datetime | None = None) -> datetime:
    """When a lease taken or renewed now runs out."""
    return (now or datetime.now(UTC)) + timedelta(seconds=lease_s)


def owner_gone(
    host: str | None,
    pid: int | None,
    token: str | None,
    lease_expires_at: datetime | None,
    *,
    now: datetime | None = None,
) -> bool:
    """Whether work recorded with this owner and lease can be taken over: no owner recorded (rows written
    before leases existed), a lease that ran out, or an owner on this host that is provably dead."""
    me = this_process()
    if token == me.token:
        return False  # our own work, in progress
    if token is None or lease_expires_at is None:
        return True
    if as_utc(lease_expires_at) <= (now or datetime.now(UTC)):
        return True
    if host == me.host and pid == me.pid:
        return True  # an earlier process that had our pid (another token): gone
    return process_alive(host, pid) is False


class Heartbeat:
    """Calls ``renew`` every ``interval_s`` seconds in a daemon thread while work runs (a lease renewal);
    a failing renewal is logged and retried at the next beat, it never stops the work."""

    def __init__(self, renew: Callable[[], None], interval_s: float, *, name: str = "chunkbench-heartbeat") -> None:
        self._renew = renew
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=name, daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._renew()
            except Exception:  # the database may be briefly locked or unreachable; the next beat retries
                logger.warning("lease renewal failed", exc_info=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._interval_s + 5)

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
