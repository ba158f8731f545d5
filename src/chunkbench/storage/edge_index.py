"""HNSW graphs for Qdrant Edge shards, built without making a request wait.

``EdgeShard.optimize()`` builds the graph, but it blocks and holds Python's GIL for the whole build (measured:
a Python thread got 2 of its 10 ms ticks during a 6 s optimize), so a background *thread* would freeze every
request of the process. The build therefore runs in a child process, on a copy of the shard's folder: the
engine copies the folder (writers wait, readers do not), the child loads the copy and optimizes it, the engine
replays onto the copy the writes made meanwhile and swaps it in (readers wait only for the swap of a handle).
Until the swap, searches run on the live shard, whose unindexed segment is searched exhaustively.

A build is due after bulk writes: :class:`HnswBuilder` waits until a shard has had no write for
:data:`QUIET_S` seconds, then asks the engine whether the shard is large enough (``qdrant_hnsw_min_points``).
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)

QUIET_S = 2.0  # seconds without a write to a shard before its build starts (bulk writes come in bursts)
# The child: lowest priority, so a build on a shared machine never starves requests.
CHILD_SCRIPT = (
    "import os, sys\n"
    "os.nice(19)\n"
    "from qdrant_edge import EdgeShard\n"
    "shard = EdgeShard.load(sys.argv[1])\n"
    "shard.optimize()\n"
    "shard.flush()\n"
    "shard.close()\n"
)


class ReadWriteLock:
    """Many readers or one writer (the writer waits for the readers inside to leave; new readers wait for it)."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._condition:
            while self._writer:
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                self._condition.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._condition:
            while self._writer:
                self._condition.wait()
            self._writer = True
            while self._readers:
                self._condition.wait()
        try:
            yield
        finally:
            with self._condition:
                self._writer = False
                self._condition.notify_all()


class IndexedEngine(Protocol):
    def build_index(self, name: str, run_child: Any) -> bool: ...


class HnswBuilder:
    """One background thread per store: builds each shard's graph once writes to it have paused."""

    def __init__(self, engine: IndexedEngine, *, min_points: int, quiet_s: float | None = None) -> None:
        self.engine = engine
        self.min_points = min_points
        self.quiet_s = QUIET_S if quiet_s is None else quiet_s
        self.builds = 0  # completed swaps (tests, benchmarks)
        self._due: dict[str, float] = {}  # shard → time of its last write
        self._building: str | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._cancelled = False
        self._stopped = False
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None

    def note(self, name: str) -> None:
        """Shard ``name`` was written: (re)start its quiet period."""
        with self._condition:
            if self._stopped:
                return
            self._due[name] = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="chunkbench-hnsw", daemon=True)
                self._thread.start()
            self._condition.notify_all()

    def cancel(self, name: str) -> None:
        """Forget ``name`` (it is being deleted); a build of it in progress is stopped."""
        with self._condition:
            self._due.pop(name, None)
            if self._building == name:
                self._kill()

    def close(self) -> None:
        with self._condition:
            self._stopped = True
            self._due.clear()
            self._kill()
            self._condition.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=30)

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is due or building (tests and benchmarks); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._due or self._building is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(timeout=min(left, 0.1))
        return True

    def _kill(self) -> None:
        self._cancelled = True
        if self._child is not None and self._child.poll() is None:
            self._child.kill()

    def _next(self) -> str | None:
        """The shard whose quiet period is over, waiting for one; None once stopped."""
        with self._condition:
            while not self._stopped:
                now = time.monotonic()
                ready = [name for name, last in self._due.items() if now - last >= self.quiet_s]
                if ready:
                    name = min(ready, key=self._due.__getitem__)
                    del self._due[name]
                    self._building, self._cancelled = name, False
                    return name
                waits = [self.quiet_s - (now - last) for last in self._due.values()]
                self._condition.wait(timeout=min(waits) if waits else None)
            return None

    def _run(self) -> None:
        while (name := self._next()) is not None:
            try:
                if self.engine.build_index(name, self._run_child):
                    self.builds += 1
                    logger.info("built the HNSW graph of %s", name)
            except Exception:  # a failed build leaves the shard as it was: searched exactly
                logger.exception("building the HNSW graph of %s failed", name)
            finally:
                with self._condition:
                    self._building = None
                    self._condition.notify_all()

    def _run_child(self, folder: Path) -> bool:
        """Optimize the shard copy in ``folder`` in a child process; False if it failed or was stopped."""
        with self._condition:
            if self._cancelled or self._stopped:
                return False
            self._child = subprocess.Popen(
                [sys.executable, "-c", CHILD_SCRIPT, str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            child = self._child
        _, stderr = child.communicate()  # waits without the GIL
        with self._condition:
            self._child = None
            stopped = self._cancelled or self._stopped
        if child.returncode != 0 and not stopped:
            logger.error("the HNSW build of %s failed: %s", folder.name, stderr.decode(errors="replace")[-2000:])
        return child.returncode == 0 and not stopped
