"""What the metadata store holds of a tenant's question files, read directly (as tests once read data_dir/files)."""

from __future__ import annotations

from chunkbench.config import Settings
from chunkbench.storage.db import Database
from chunkbench.storage.question_files import QuestionFileRepository
from chunkbench.storage.schema import DEFAULT_TENANT


def stored_question_file(settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> bytes | None:
    """The bytes stored under ``name``, or None when the tenant has no such file."""
    database = Database(settings.sqlalchemy_url)
    try:
        with database.session() as session:
            row = QuestionFileRepository(session, tenant_id).get(name)
            return None if row is None else row.content
    finally:
        database.dispose()


def stored_question_names(settings: Settings, tenant_id: str = DEFAULT_TENANT) -> list[str]:
    """The names of the tenant's question files, sorted."""
    database = Database(settings.sqlalchemy_url)
    try:
        with database.session() as session:
            return [row.name for row in QuestionFileRepository(session, tenant_id).list()]
    finally:
        database.dispose()
