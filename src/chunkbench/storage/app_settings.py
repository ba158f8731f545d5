"""Data access for ``app_settings``: key/value pairs changed at run time (model roles, thresholds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from chunkbench.storage.schema import AppSettingRow, utcnow

# Typed as the dialects' own Insert (with on_conflict_*): the inferred join of the two is the generic Insert.
_UPSERTS: dict[str, Callable[..., sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


class AppSettingsRepository:
    """Reads and writes ``app_settings`` rows within the caller's session (the caller commits)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""
        return self.session.scalar(select(AppSettingRow.value).where(AppSettingRow.key == key))

    def get_many(self, prefix: str) -> dict[str, str]:
        """Every key starting with ``prefix``, with its value."""
        rows = self.session.execute(
            select(AppSettingRow.key, AppSettingRow.value).where(AppSettingRow.key.startswith(prefix, autoescape=True))
        )
        return {key: value for key, value in rows}

    def set(self, key: str, value: str) -> None:
        """Insert or replace the value under ``key``."""
        dialect = self.session.get_bind().dialect.name
        if dialect in _UPSERTS:
            # One statement: two writers of a new key cannot both insert it and fail on the primary key.
            insert = _UPSERTS[dialect](AppSettingRow).values(key=key, value=value, updated_at=utcnow())
            self.session.execute(
                insert.on_conflict_do_update(
                    index_elements=[AppSettingRow.key],
                    set_={"value": insert.excluded.value, "updated_at": insert.excluded.updated_at},
                )
            )
            return
        row = self.session.get(AppSettingRow, key)
        if row is None:
            self.session.add(AppSettingRow(key=key, value=value))
        else:
            row.value = value
        self.session.flush()

    def delete(self, key: str) -> bool:
        """Remove ``key``; True if it existed."""
        # Session.execute is typed as returning Result; a DELETE's is a CursorResult, which has rowcount.
        result = cast(CursorResult[Any], self.session.execute(delete(AppSettingRow).where(AppSettingRow.key == key)))
        self.session.flush()
        return bool(result.rowcount)
