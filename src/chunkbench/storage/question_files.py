"""Data access for ``question_files``: a tenant's question files, their bytes as given, in the metadata store.

Every write is one statement or one row update in the caller's transaction, so a reader sees a file's old bytes or
its new ones, never half of either, on every replica; names and contents are validated by the caller
(``evaluation.question_sets``). The caller commits.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from chunkbench.storage.schema import QuestionFileRow, utcnow

# INSERT … ON CONFLICT DO NOTHING on the two stores chunkbench runs on: two writers of one new name cannot both
# insert it, and the loser learns so from the row count instead of an IntegrityError that ends its transaction.
# Typed as the dialects' own Insert (with on_conflict_*): the inferred join of the two is the generic Insert.
_INSERTS: dict[str, Callable[..., sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


def content_hash(content: bytes) -> str:
    """sha256 of a file's bytes, hex (what ``question_files.content_hash`` holds)."""
    return hashlib.sha256(content).hexdigest()


class QuestionFileRepository:
    """The question files of one tenant, within the caller's session."""

    def __init__(self, session: Session, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def get(self, name: str, *, for_update: bool = False) -> QuestionFileRow | None:
        """The file, or None; ``for_update`` locks its row until the transaction ends (PostgreSQL), so two replicas
        editing one set one change at a time cannot lose either change."""
        query = select(QuestionFileRow).where(QuestionFileRow.tenant_id == self.tenant_id, QuestionFileRow.name == name)
        if for_update:
            query = query.with_for_update()
        # Another statement of this session may have rewritten the row: read what the database holds.
        return self.session.scalar(query.execution_options(populate_existing=True))

    def exists(self, name: str) -> bool:
        return (
            self.session.scalar(
                select(QuestionFileRow.id).where(
                    QuestionFileRow.tenant_id == self.tenant_id, QuestionFileRow.name == name
                )
            )
            is not None
        )

    def list(self) -> list[QuestionFileRow]:
        """Every file of the tenant, by name in code-point order (as a folder listing sorted them; a database's
        collation might order them otherwise)."""
        rows = self.session.scalars(select(QuestionFileRow).where(QuestionFileRow.tenant_id == self.tenant_id)).all()
        return sorted(rows, key=lambda row: row.name)

    def insert(self, name: str, content: bytes, *, at: datetime | None = None) -> QuestionFileRow | None:
        """Add a file; None when the tenant has one of that name already (written by another replica meanwhile
        too). ``at``: its creation and modification time (an imported file keeps its old one)."""
        when = at or utcnow()
        values = {
            "id": uuid.uuid4().hex,
            "tenant_id": self.tenant_id,
            "name": name,
            "content": content,
            "content_hash": content_hash(content),
            "size_bytes": len(content),
            "created_at": when,
            "updated_at": when,
        }
        dialect = self.session.get_bind().dialect.name
        if dialect in _INSERTS:
            statement = _INSERTS[dialect](QuestionFileRow).values(**values)
            # Session.execute is typed as returning Result; an INSERT's is a CursorResult, which has rowcount.
            result = cast(
                CursorResult[Any],
                self.session.execute(statement.on_conflict_do_nothing(index_elements=["tenant_id", "name"])),
            )
            return self.get(name) if result.rowcount else None
        if self.exists(name):
            return None
        row = QuestionFileRow(**values)
        self.session.add(row)
        self.session.flush()
        return row

    def replace(self, row: QuestionFileRow, content: bytes) -> QuestionFileRow:
        """New bytes for an existing file (one UPDATE of the row: content, hash and size change together)."""
        row.content = content
        row.content_hash = content_hash(content)
        row.size_bytes = len(content)
        row.updated_at = utcnow()
        self.session.flush()
        return row

    def delete(self, name: str) -> bool:
        """Remove the file; True if it existed."""
        result = cast(  # a DELETE's result is a CursorResult (Session.execute is typed as returning Result)
            CursorResult[Any],
            self.session.execute(
                delete(QuestionFileRow).where(QuestionFileRow.tenant_id == self.tenant_id, QuestionFileRow.name == name)
            ),
        )
        self.session.flush()
        return bool(result.rowcount)
