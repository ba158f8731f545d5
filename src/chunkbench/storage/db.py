"""The metadata store: engine, sessions and migrations (Alembic, applied at start)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from chunkbench.config import Settings
from chunkbench.errors import DatabaseUnavailableError

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Key of the PostgreSQL advisory lock held while migrating: replicas starting together migrate one at a time.
MIGRATION_LOCK_KEY = 0x43424D47  # "CBMG"


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL lets the API read while an ingest writes; SQLite leaves foreign keys off unless asked,
    # and the cascades (documents → queries, experiments) depend on them.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # In WAL mode NORMAL cannot corrupt the database; it only lets the last commits before a power
    # cut be lost, and saves an fsync per commit (every query is saved).
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def create_db_engine(url: str, *, pool_size: int = 10, max_overflow: int = 10, connect_timeout_s: int = 10) -> Engine:
    """An engine for any SQLAlchemy URL; SQLite gets WAL, foreign keys and a busy timeout, PostgreSQL a bounded
    pool whose connections are checked before use (a restarted server or a dropped connection costs a reconnect,
    not an error)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    connect_args = {"connect_timeout": connect_timeout_s} if parsed.get_backend_name() == "postgresql" else {}
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=pool_size,
        max_overflow=max_overflow,
        # Servers and proxies close idle connections; recycle before they do.
        pool_recycle=1800,
        connect_args=connect_args,
    )


def describe_location(url: str) -> str:
    """Where a database URL points, without its password: ``host:port/name`` or the SQLite file."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return f"the SQLite file {parsed.database or ':memory:'}"
    host, port = parsed.host or "localhost", parsed.port or "default port"
    return f"{parsed.get_backend_name()} at {host}:{port}/{parsed.database}"


def unavailable(url: str, exc: BaseException) -> DatabaseUnavailableError:
    """The typed error for a database that cannot be reached, naming where it was looked for."""
    detail = str(getattr(exc, "orig", None) or exc).strip()
    reason = detail.splitlines()[0] if detail else type(exc).__name__
    return DatabaseUnavailableError(
        f"Cannot use the database ({describe_location(url)}): {reason}. Check CHUNKBENCH_DATABASE_URL and that "
        "the server is running and reachable.",
        location=describe_location(url),
    )


def is_connection_error(exc: BaseException) -> bool:
    """True for a failure to reach or keep talking to the database server (not for a bad statement)."""
    return isinstance(exc, OperationalError | InterfaceError) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated
    )


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` with the package's Alembic migrations."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # Several replicas starting at once: the first migrates, the others wait here and then find the
            # schema at head (the lock is released when this transaction commits; PostgreSQL DDL is transactional).
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


class Database:
    """Engine plus session factory; one per process (the app and the CLI each build one)."""

    def __init__(self, url: str, **engine_options: int) -> None:
        self.url = url
        self.engine = create_db_engine(url, **engine_options)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @classmethod
    def from_settings(cls, settings: Settings, *, run_migrations: bool = True) -> Database:
        """The settings' database, migrated; :class:`DatabaseUnavailableError` (naming the host) if unreachable."""
        database = cls(
            settings.sqlalchemy_url,
            pool_size=settings.database_pool_size,
            max_overflow=settings.database_max_overflow,
            connect_timeout_s=settings.database_connect_timeout_s,
        )
        if run_migrations:
            try:
                migrate(database.engine)
            except DBAPIError as exc:
                database.dispose()
                if is_connection_error(exc):
                    raise unavailable(settings.sqlalchemy_url, exc) from exc
                raise
        return database

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A unit of work: committed when the block ends, rolled back when it raises."""
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def ping(self) -> bool:
        with self.engine.connect() as connection:
            return connection.execute(text("SELECT 1")).scalar() == 1

    def dispose(self) -> None:
        self.engine.dispose()
