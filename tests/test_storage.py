"""Metadata store: migrations, SQLite pragmas, cascades, lifecycle rules."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, select, text
from sqlalchemy.exc import IntegrityError

from chunkbench.errors import CorpusExistsError, DocumentNotFoundError, InvalidStateTransitionError
from chunkbench.models import DocumentState
from chunkbench.storage.db import MIGRATIONS_DIR, Database
from chunkbench.storage.repositories import CorpusRepository, DocumentRepository
from chunkbench.storage.schema import Base, DocumentRow, QueryRow, is_orm_object
from pgtest import ON_POSTGRES, SQLITE_ONLY


@pytest.fixture
def database(settings):
    db = Database.from_settings(settings)
    yield db
    db.dispose()


def _document(**overrides) -> DocumentRow:
    values = dict(
        id="d1", filename="a.txt", content_hash="h", file_size=1, mime_type="text/plain", parsed_text="x",
        document_tree={"root": {"node_type": "document"}}, chunk_counts={}, status="parsed", attempts=0,
    )  # fmt: skip
    values.update(overrides)
    return DocumentRow(**values)


def test_migrations_create_the_seed_tables_and_match_the_orm(database):
    tables = set(inspect(database.engine).get_table_names())
    assert {"documents", "queries", "experiments", "app_settings", "alembic_version"} <= tables
    with database.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_name": is_orm_object})
        diff = compare_metadata(context, Base.metadata)
    assert diff == [], f"ORM and migrations disagree: {diff}"


@pytest.mark.skipif(ON_POSTGRES, reason=SQLITE_ONLY)
def test_sqlite_runs_in_wal_mode_with_foreign_keys(database):
    with database.engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_migrating_twice_is_a_no_op(settings, database):
    Database.from_settings(settings).dispose()  # second start on the same file
    with database.engine.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert version == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def test_deleting_a_document_cascades_to_its_queries(database):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
        session.add(QueryRow(id="q1", tenant_id="default", document_id="d1", strategy_name="fixed_size", question="?"))
    with database.session() as session:
        repo = DocumentRepository(session, "default")
        repo.delete(repo.get("d1"))
    with database.session() as session:
        assert session.scalar(select(QueryRow).where(QueryRow.id == "q1")) is None


def test_unknown_status_is_refused_by_the_database(database):
    with pytest.raises(IntegrityError), database.session() as session:
        DocumentRepository(session, "default").add(_document(status="exploded"))


def test_filename_is_unique_per_tenant_only(database):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
        DocumentRepository(session, "other").add(_document(id="d2"))
    with pytest.raises(IntegrityError), database.session() as session:
        DocumentRepository(session, "default").add(_document(id="d3"))


def test_tenants_do_not_see_each_others_documents(database):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
    with database.session() as session:
        rows, total = DocumentRepository(session, "other").list()
        assert (list(rows), total) == ([], 0)
        assert DocumentRepository(session, "other").get_by_filename("a.txt") is None


def test_lifecycle_counts_attempts_and_keeps_the_error():
    row = _document(status=DocumentState.PARSED.value)
    DocumentRepository.transition(row, DocumentState.CHUNKING)
    DocumentRepository.transition(row, DocumentState.FAILED, error="embedding server down")
    assert (row.status, row.error_message, row.attempts) == ("failed", "embedding server down", 1)
    DocumentRepository.transition(row, DocumentState.CHUNKING)
    DocumentRepository.transition(row, DocumentState.EMBEDDING)
    assert (row.attempts, row.error_message) == (2, None)


def test_lifecycle_refuses_skipping_stages():
    row = _document(status=DocumentState.PARSED.value)
    with pytest.raises(InvalidStateTransitionError) as info:
        DocumentRepository.transition(row, DocumentState.INDEXED)
    assert info.value.status_code == 409


def test_timestamps_come_back_aware_in_utc_from_either_database(database):
    from datetime import UTC, datetime, timedelta, timezone

    # Written as 12:30 at UTC+02:00, i.e. 10:30 UTC; SQLite keeps no zone, PostgreSQL converts to its session zone.
    written = datetime(2026, 3, 1, 12, 30, tzinfo=timezone(timedelta(hours=2)))
    with database.session() as session:
        DocumentRepository(session, "default").add(_document(created_at=written, updated_at=written))
    with database.session() as session:
        row = session.get(DocumentRow, "d1")
        assert row.created_at == datetime(2026, 3, 1, 10, 30, tzinfo=UTC) and row.created_at.tzinfo is UTC
        assert row.created_at < datetime.now(UTC)  # comparable with aware values: no TypeError on SQLite


def test_corpus_membership_survives_neither_side_but_deletes_only_itself(database):
    with database.session() as session:
        DocumentRepository(session, "default").add(_document())
        DocumentRepository(session, "default").add(_document(id="d2", filename="b.txt"))
        DocumentRepository(session, "other").add(_document(id="d3", filename="c.txt"))
        corpora = CorpusRepository(session, "default")
        first, second = corpora.create("papers"), corpora.create("all")
        assert corpora.add_documents(first, ["d1", "d2", "d1"]) == 2
        assert corpora.add_documents(first, ["d2"]) == 0  # already a member
        assert corpora.add_documents(second, ["d2"]) == 1  # a document may belong to several corpora
        with pytest.raises(DocumentNotFoundError):
            corpora.add_documents(first, ["d3"])  # another tenant's document is not found
        with pytest.raises(CorpusExistsError):
            corpora.create("papers")
    with database.session() as session:
        corpora = CorpusRepository(session, "default")
        assert [(row.name, count) for row, count in corpora.list()] == [("all", 1), ("papers", 2)]
        assert corpora.corpora_of("d2") == ["all", "papers"]
        assert CorpusRepository(session, "other").get_optional("papers") is None
        DocumentRepository(session, "default").delete(DocumentRepository(session, "default").get("d1"))
    with database.session() as session:
        corpora = CorpusRepository(session, "default")
        assert corpora.document_ids(corpora.get("papers")) == ["d2"]  # the deleted document left the corpus
        corpora.delete(corpora.get("papers"))
    with database.session() as session:
        assert DocumentRepository(session, "default").get("d2").id == "d2"  # deleting a corpus kept the document
        assert CorpusRepository(session, "default").corpora_of("d2") == ["all"]


def test_the_same_filename_in_two_folders_is_two_documents(database):
    with database.session() as session:
        repo = DocumentRepository(session, "default")
        repo.add(_document(source_key="a/notes.txt", filename="notes.txt"))
        repo.add(_document(id="d2", source_key="b/notes.txt", filename="notes.txt"))
        assert repo.get_by_source_key("b/notes.txt").id == "d2"
        assert repo.get_by_filename("notes.txt") is None  # ambiguous: the source key tells them apart
    with pytest.raises(IntegrityError), database.session() as session:
        DocumentRepository(session, "default").add(_document(id="d3", source_key="a/notes.txt"))
