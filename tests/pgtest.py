"""PostgreSQL databases for the test suite: one migrated template per session, a cheap clone per test.

``CREATE DATABASE … TEMPLATE`` (PostgreSQL 15's WAL_LOG strategy) costs ~30 ms and the forced drop ~15 ms here,
against ~90 ms for a schema per test that has to be migrated each time.
"""

from __future__ import annotations

import contextlib
import os
import re

import psycopg
from sqlalchemy.engine import make_url

from chunkbench.storage.db import create_db_engine, migrate

# Set by `make test`'s second pass (scripts/postgres.sh starts the server); empty = the suite runs on SQLite.
TEST_DATABASE_URL = os.environ.get("CHUNKBENCH_TEST_DATABASE_URL", "")
ON_POSTGRES = bool(TEST_DATABASE_URL)
SQLITE_ONLY = "SQLite-specific by nature (file, pragmas or sqlite3 module); the PostgreSQL pass does not apply"

# Databases of this suite are named cbt_<pid>_…, so a killed run's leftovers can be found and dropped.
_PREFIX = "cbt_"


class PostgresTestDatabases:
    """Creates and drops the suite's databases on the server of ``url`` (the role needs CREATEDB)."""

    def __init__(self, url: str) -> None:
        self.base = make_url(url)
        if self.base.get_backend_name() != "postgresql":
            raise ValueError(f"CHUNKBENCH_TEST_DATABASE_URL must be a postgresql+psycopg:// URL, got {url!r}")
        self.base = self.base.set(drivername="postgresql+psycopg")
        self.prefix = f"{_PREFIX}{os.getpid()}_"
        self.admin = psycopg.connect(
            self.base.set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True
        )
        self._drop_leftovers()
        self.template = f"{self.prefix}template"
        self.admin.execute(f'CREATE DATABASE "{self.template}"')
        engine = create_db_engine(self._url(self.template))
        try:
            migrate(engine)
        finally:
            engine.dispose()  # a template must have no open connection while it is cloned

    def _url(self, name: str) -> str:
        return self.base.set(database=name).render_as_string(hide_password=False)

    def create(self, suffix: str) -> str:
        """A fresh migrated, empty database; returns its SQLAlchemy URL."""
        name = f"{self.prefix}{suffix}"
        self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return self._url(name)

    def drop(self, url: str) -> None:
        """Drop the database of ``url``, closing whatever connections a test left open to it; if that fails
        (a backend that cannot be ended yet), :meth:`close` drops it at the end of the session instead."""
        with contextlib.suppress(psycopg.Error):
            self.admin.execute(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')

    def close(self) -> None:
        for (name,) in self.admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (self.prefix.replace("_", r"\_") + "%",)
        ).fetchall():
            self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.admin.close()

    def _drop_leftovers(self) -> None:
        # Databases of runs that were killed before their clean-up (their process is gone).
        for (name,) in self.admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (_PREFIX.replace("_", r"\_") + "%",)
        ).fetchall():
            match = re.match(rf"{_PREFIX}(\d+)_", name)
            if match and not _alive(int(match.group(1))):
                self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
