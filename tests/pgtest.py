"""PostgreSQL databases for the test suite: one migrated template per session, a fresh clone per test.

``CREATE DATABASE … TEMPLATE`` (PostgreSQL 15's WAL_LOG strategy) costs ~30 ms and the forced drop ~15 ms on a quiet
machine, against ~90 ms for a schema per test that has to be migrated each time; on a busy one both take up to a
second (fsyncs). So:

- a test's database only comes into being when something needs it: the ``settings`` fixture, or the first
  connection this process opens to it (``psycopg.connect`` is wrapped). Most tests (parsers, chunkers, metrics)
  never touch a database and pay nothing;
- a background thread clones a few databases ahead and drops used ones; a test's database is a ready clone
  renamed to the name its URL already carries (a catalog update), so the server's work overlaps with the tests'.

A test that starts a ``chunkbench`` subprocess without using ``settings`` must request ``database_url``.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import make_url

from chunkbench.storage.db import create_db_engine, migrate

# Set by `make test`'s second pass (scripts/postgres.sh starts the server); empty = the suite runs on SQLite.
TEST_DATABASE_URL = os.environ.get("CHUNKBENCH_TEST_DATABASE_URL", "")
ON_POSTGRES = bool(TEST_DATABASE_URL)
SQLITE_ONLY = "SQLite-specific by nature (file, pragmas or sqlite3 module); the PostgreSQL pass does not apply"

# Databases of this suite are named cbt_<pid>_…, so a killed run's leftovers can be found and dropped.
_PREFIX = "cbt_"
# How many fresh databases the background thread keeps ready.
_AHEAD = 2


class PostgresTestDatabases:
    """Creates and drops the suite's databases on the server of ``url`` (the role needs CREATEDB)."""

    def __init__(self, url: str) -> None:
        self.base = make_url(url)
        if self.base.get_backend_name() != "postgresql":
            raise ValueError(f"CHUNKBENCH_TEST_DATABASE_URL must be a postgresql+psycopg:// URL, got {url!r}")
        self.base = self.base.set(drivername="postgresql+psycopg")
        self.prefix = f"{_PREFIX}{os.getpid()}_"
        self.admin = self._connect()
        self._drop_leftovers()
        self.template = f"{self.prefix}template"
        self.admin.execute(f'CREATE DATABASE "{self.template}"')
        engine = create_db_engine(self._url(self.template))
        try:
            migrate(engine)
        finally:
            engine.dispose()  # a template must have no open connection while it is cloned
        self._numbers = iter(range(1 << 62))
        self._test_numbers = iter(range(1 << 62))
        self._pending: set[str] = set()
        self._admin_lock = threading.RLock()
        self._ready: deque[str] = deque()
        self._to_drop: deque[str] = deque()
        self._changed = threading.Condition()
        self._stopping = False
        self._worker = threading.Thread(target=self._work, name="pgtest-databases", daemon=True)
        self._worker.start()

    def _connect(self) -> psycopg.Connection:
        dsn = self.base.set(drivername="postgresql").render_as_string(hide_password=False)
        return psycopg.connect(dsn, autocommit=True)

    def _url(self, name: str) -> str:
        return self.base.set(database=name).render_as_string(hide_password=False)

    def _clone(self, connection: psycopg.Connection) -> str:
        name = f"{self.prefix}ready{next(self._numbers)}"
        connection.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return name

    def _work(self) -> None:
        # The thread's own connection: a psycopg connection must not be used by two threads at once.
        connection = self._connect()
        try:
            while True:
                with self._changed:
                    while not self._stopping and not self._to_drop and len(self._ready) >= _AHEAD:
                        self._changed.wait()
                    if self._stopping:
                        return
                    # A test waiting for a database comes before clean-up.
                    dropping = self._to_drop.popleft() if self._to_drop and self._ready else None
                if dropping is not None:
                    with contextlib.suppress(psycopg.Error):  # left for close() to retry
                        connection.execute(f'DROP DATABASE IF EXISTS "{dropping}" WITH (FORCE)')
                    continue
                name = self._clone(connection)
                with self._changed:
                    self._ready.append(name)
                    self._changed.notify_all()
        finally:
            connection.close()

    def reserve(self) -> str:
        """The URL of a fresh database for one test; the database exists once :meth:`ensure` ran for it."""
        with self._admin_lock:
            name = f"{self.prefix}t{next(self._test_numbers)}"
            self._pending.add(name)
        return self._url(name)

    def create(self) -> str:
        """A fresh migrated, empty database that exists now; returns its SQLAlchemy URL."""
        url = self.reserve()
        self.ensure(make_url(url).database)
        return url

    def ensure(self, name: str | None) -> None:
        """Bring the reserved database ``name`` into being, if it is one and does not exist yet."""
        with self._admin_lock:
            if name not in self._pending:
                return
            with self._changed:
                if not self._ready and self._worker.is_alive():
                    self._changed.wait_for(lambda: self._ready or not self._worker.is_alive(), timeout=120)
                ready = self._ready.popleft() if self._ready else None
                self._changed.notify_all()
            if ready is None:  # the worker died (its error is in the log): clone here
                self.admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
            else:
                self.admin.execute(f'ALTER DATABASE "{ready}" RENAME TO "{name}"')
            self._pending.discard(name)

    def connect_creating(self, connect: Callable[..., psycopg.Connection]) -> Callable[..., psycopg.Connection]:
        """``psycopg.connect`` that first brings a reserved database into being when it is the target."""

        def connect_creating(conninfo: str = "", **kwargs: Any) -> psycopg.Connection:
            if self._pending:
                self.ensure(conninfo_to_dict(conninfo, **kwargs).get("dbname"))
            return connect(conninfo, **kwargs)

        return connect_creating

    def drop(self, url: str) -> None:
        """Drop the database of ``url`` in the background, closing whatever connections a test left open to it."""
        with self._admin_lock:
            if make_url(url).database in self._pending:  # never created: nothing to drop
                self._pending.discard(make_url(url).database)
                return
        with self._changed:
            self._to_drop.append(make_url(url).database)
            self._changed.notify_all()

    def close(self) -> None:
        """Stop the background thread and drop every database of this session, the template last."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        self._worker.join(timeout=60)
        pattern = self.prefix.replace("_", r"\_") + "%"
        names = [
            name for (name,) in self.admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (pattern,))
        ]
        for name in sorted(names, key=lambda name: name == self.template):
            with contextlib.suppress(psycopg.Error):
                self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.admin.close()

    def _drop_leftovers(self) -> None:
        # Databases of runs that were killed before their clean-up (their process is gone).
        for (name,) in self.admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (_PREFIX.replace("_", r"\_") + "%",)
        ).fetchall():
            match = re.match(rf"{_PREFIX}(\d+)_", name)
            if match and not _alive(int(match.group(1))):
                with contextlib.suppress(psycopg.Error):
                    self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
