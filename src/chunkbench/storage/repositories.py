"""Data access for the metadata store. Every query takes the tenant so no caller can forget it."""

from __future__ import annotations

import builtins  # CorpusRepository has a method named list: its annotations say builtins.list
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Connection, CursorResult, Table, delete, func, insert, select
from sqlalchemy.orm import Session

from chunkbench.errors import CorpusExistsError, CorpusNotFoundError, DocumentNotFoundError, InvalidStateTransitionError
from chunkbench.models import ALLOWED_TRANSITIONS, DocumentState
from chunkbench.storage.schema import CorpusDocumentRow, CorpusRow, DocumentRow, QueryRow, utcnow


class DocumentRepository:
    """Documents of one tenant."""

    def __init__(self, session: Session, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def get_optional(self, document_id: str, *, for_update: bool = False) -> DocumentRow | None:
        """The document, or None; ``for_update`` locks its row until the transaction ends (PostgreSQL; SQLite
        has one writer at a time anyway), so two replicas cannot both move it out of the same state."""
        query = select(DocumentRow).where(DocumentRow.id == document_id, DocumentRow.tenant_id == self.tenant_id)
        return self.session.scalar(query.with_for_update() if for_update else query)

    def get(self, document_id: str, *, for_update: bool = False) -> DocumentRow:
        row = self.get_optional(document_id, for_update=for_update)
        if row is None:
            raise DocumentNotFoundError(
                f"No document with id '{document_id}'. List documents with GET /documents.",
                document_id=document_id,
            )
        return row

    def get_by_filename(self, filename: str) -> DocumentRow | None:
        """The document with this filename, when exactly one has it (the same name in two folders is ambiguous)."""
        rows = self.session.scalars(
            select(DocumentRow)
            .where(DocumentRow.tenant_id == self.tenant_id, DocumentRow.filename == filename)
            .limit(2)
        ).all()
        return rows[0] if len(rows) == 1 else None

    def get_by_source_key(self, source_key: str) -> DocumentRow | None:
        return self.session.scalar(
            select(DocumentRow).where(DocumentRow.tenant_id == self.tenant_id, DocumentRow.source_key == source_key)
        )

    def source_keys_named(self, filename: str) -> list[str]:
        """The source keys of every document with this filename, sorted (what an ambiguous name could mean)."""
        return list(
            self.session.scalars(
                select(DocumentRow.source_key)
                .where(DocumentRow.tenant_id == self.tenant_id, DocumentRow.filename == filename)
                .order_by(DocumentRow.source_key)
            )
        )

    def children(self, document_id: str) -> list[DocumentRow]:
        """The documents found inside this one (a mail's attachments), by source key."""
        return list(
            self.session.scalars(
                select(DocumentRow)
                .where(DocumentRow.tenant_id == self.tenant_id, DocumentRow.parent_id == document_id)
                .order_by(DocumentRow.source_key)
            )
        )

    def with_key_prefix(self, prefix: str) -> list[DocumentRow]:
        """The documents whose source key starts with ``prefix`` (a mail's attachments, nested ones too), by key."""
        return list(
            self.session.scalars(
                select(DocumentRow)
                .where(
                    DocumentRow.tenant_id == self.tenant_id, DocumentRow.source_key.startswith(prefix, autoescape=True)
                )
                .order_by(DocumentRow.source_key)
            )
        )

    def find_by_hash(self, content_hash: str) -> DocumentRow | None:
        return self.session.scalar(
            select(DocumentRow)
            .where(DocumentRow.tenant_id == self.tenant_id, DocumentRow.content_hash == content_hash)
            .order_by(DocumentRow.created_at)
            .limit(1)
        )

    def list(
        self,
        *,
        status: DocumentState | None = None,
        mime_types: Sequence[str] = (),
        corpus: CorpusRow | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[Sequence[DocumentRow], int]:
        """A page of documents, newest first, and the total count under the same filter."""
        where = [DocumentRow.tenant_id == self.tenant_id]
        if status is not None:
            where.append(DocumentRow.status == status.value)
        if mime_types:
            where.append(DocumentRow.mime_type.in_(mime_types))
        if corpus is not None:
            members = select(CorpusDocumentRow.document_id).where(CorpusDocumentRow.corpus_id == corpus.id)
            where.append(DocumentRow.id.in_(members))
        total = self.session.scalar(select(func.count()).select_from(DocumentRow).where(*where)) or 0
        rows = self.session.scalars(
            select(DocumentRow)
            .where(*where)
            .order_by(DocumentRow.created_at.desc(), DocumentRow.id)
            .limit(limit)
            .offset(offset)
        ).all()
        return rows, total

    def add(self, row: DocumentRow) -> DocumentRow:
        row.tenant_id = self.tenant_id
        self.session.add(row)
        self.session.flush()
        return row

    def delete(self, row: DocumentRow) -> None:
        self.session.delete(row)
        self.session.flush()

    @staticmethod
    def transition(row: DocumentRow, new_state: DocumentState, *, error: str | None = None) -> None:
        """Move a document along its lifecycle, refusing moves the state machine does not allow."""
        current = DocumentState(row.status)
        if new_state not in ALLOWED_TRANSITIONS[current]:
            raise InvalidStateTransitionError(
                f"Document '{row.filename}' is '{current.value}' and cannot become '{new_state.value}'.",
                document_id=row.id,
            )
        row.status = new_state.value
        # An attempt starts whenever work on the document begins (parsing, or a (re)process).
        if new_state in (DocumentState.PARSING, DocumentState.CHUNKING):
            row.attempts += 1
        row.error_message = error if new_state is DocumentState.FAILED else None


class CorpusRepository:
    """Corpora of one tenant and their memberships."""

    def __init__(self, session: Session, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def get_optional(self, name: str) -> CorpusRow | None:
        """A corpus by name, else by id."""
        for column in (CorpusRow.name, CorpusRow.id):
            row = self.session.scalar(select(CorpusRow).where(CorpusRow.tenant_id == self.tenant_id, column == name))
            if row is not None:
                return row
        return None

    def get(self, name: str) -> CorpusRow:
        row = self.get_optional(name)
        if row is None:
            raise CorpusNotFoundError(
                f"No corpus named '{name}'. List corpora with GET /corpora or `chunkbench corpora list`.",
                corpus=name,
            )
        return row

    def create(self, name: str, description: str | None = None) -> CorpusRow:
        if self.get_optional(name) is not None:
            raise CorpusExistsError(
                f"A corpus named '{name}' already exists. Add documents to it, or choose another name.", corpus=name
            )
        row = CorpusRow(id=uuid.uuid4().hex, tenant_id=self.tenant_id, name=name, description=description)
        self.session.add(row)
        self.session.flush()
        return row

    def get_or_create(self, name: str) -> CorpusRow:
        return self.get_optional(name) or self.create(name)

    def list(self) -> list[tuple[CorpusRow, int]]:
        """Every corpus of the tenant, by name, with its document count."""
        counts = (
            select(CorpusDocumentRow.corpus_id, func.count().label("n"))
            .group_by(CorpusDocumentRow.corpus_id)
            .subquery()
        )
        rows = self.session.execute(
            select(CorpusRow, func.coalesce(counts.c.n, 0))
            .outerjoin(counts, counts.c.corpus_id == CorpusRow.id)
            .where(CorpusRow.tenant_id == self.tenant_id)
            .order_by(CorpusRow.name)
        ).all()
        return [(row, int(count)) for row, count in rows]

    def document_ids(self, corpus: CorpusRow) -> builtins.list[str]:
        """The member documents' ids, in the order they joined (``add_documents`` keeps a call's order), then by
        source key: never by their random ids alone, which would order a corpus job differently every time."""
        return list(
            self.session.scalars(
                select(CorpusDocumentRow.document_id)
                .join(DocumentRow, DocumentRow.id == CorpusDocumentRow.document_id)
                .where(CorpusDocumentRow.corpus_id == corpus.id)
                .order_by(CorpusDocumentRow.added_at, DocumentRow.source_key, CorpusDocumentRow.document_id)
            )
        )

    def documents(self, corpus: CorpusRow) -> builtins.list[DocumentRow]:
        """The member documents, by source key."""
        return list(
            self.session.scalars(
                select(DocumentRow)
                .join(CorpusDocumentRow, CorpusDocumentRow.document_id == DocumentRow.id)
                .where(CorpusDocumentRow.corpus_id == corpus.id, DocumentRow.tenant_id == self.tenant_id)
                .order_by(DocumentRow.source_key)
            )
        )

    def add_documents(self, corpus: CorpusRow, document_ids: Sequence[str]) -> int:
        """Add documents of this tenant (each must exist); returns how many were not members yet."""
        wanted = list(dict.fromkeys(document_ids))
        if not wanted:
            return 0
        found = set(
            self.session.scalars(
                select(DocumentRow.id).where(DocumentRow.tenant_id == self.tenant_id, DocumentRow.id.in_(wanted))
            )
        )
        missing = [d for d in wanted if d not in found]
        if missing:
            raise DocumentNotFoundError(
                f"No document with id {', '.join(repr(d) for d in missing[:5])}"
                f"{' …' if len(missing) > 5 else ''}. List documents with GET /documents.",
                document_ids=missing,
            )
        present = set(self.document_ids(corpus))
        new = [d for d in wanted if d not in present]
        # Members keep the order they were given: one timestamp per call would tie them (rows made in one flush
        # share the clock's microsecond), so each is a microsecond after the one before.
        joined = utcnow()
        for index, document_id in enumerate(new):
            self.session.add(
                CorpusDocumentRow(
                    corpus_id=corpus.id, document_id=document_id, added_at=joined + timedelta(microseconds=index)
                )
            )
        if new:  # re-adding members changes nothing, not even the corpus's updated_at
            corpus.updated_at = utcnow()
        self.session.flush()
        return len(new)

    def remove_documents(self, corpus: CorpusRow, document_ids: Sequence[str]) -> int:
        """Remove memberships (never the documents); returns how many were members."""
        if not document_ids:
            return 0
        result = cast(  # a DELETE's result is a CursorResult (Session.execute is typed as returning Result)
            CursorResult[Any],
            self.session.execute(
                delete(CorpusDocumentRow).where(
                    CorpusDocumentRow.corpus_id == corpus.id, CorpusDocumentRow.document_id.in_(list(document_ids))
                )
            ),
        )
        removed = int(result.rowcount or 0)
        if removed:
            corpus.updated_at = utcnow()
        self.session.flush()
        return removed

    def corpora_of(self, document_id: str) -> builtins.list[str]:
        """The names of the corpora a document belongs to."""
        return list(
            self.session.scalars(
                select(CorpusRow.name)
                .join(CorpusDocumentRow, CorpusDocumentRow.corpus_id == CorpusRow.id)
                .where(CorpusDocumentRow.document_id == document_id, CorpusRow.tenant_id == self.tenant_id)
                .order_by(CorpusRow.name)
            )
        )

    def delete(self, corpus: CorpusRow) -> None:
        """The corpus and its memberships; its documents stay."""
        self.session.delete(corpus)
        self.session.flush()


@dataclass(frozen=True)
class QueryTarget:
    """The columns of a document that a query reads (not its text or tree)."""

    id: str
    filename: str
    chunk_counts: dict[str, int]
    last_corpus_embedding_model_id: str | None


@dataclass(frozen=True)
class QueryRecord:
    """A query as stored: the ``queries`` row's values other than id, tenant and time."""

    document_id: str
    strategy_name: str
    question: str
    answer: str | None
    config: dict[str, Any]
    sources: list[dict[str, Any]]
    citations: list[int]
    retrieved_chunks: list[dict[str, Any]]
    expansion_tree: list[dict[str, Any]]
    latency_breakdown: dict[str, float]
    token_usage: dict[str, int]


_QUERY_TARGET_COLUMNS = (
    DocumentRow.id,
    DocumentRow.filename,
    DocumentRow.chunk_counts,
    DocumentRow.last_corpus_embedding_model_id,
)
_INSERT_QUERY = insert(cast(Table, QueryRow.__table__))  # the ORM types __table__ as any FromClause


class QueryRepository:
    """The query pipeline's reads and writes for one tenant, as SQLAlchemy Core statements.

    Works on a Session or a bare Connection (the caller commits). Core, not the ORM, because every query
    runs these two statements: the ORM's identity map and unit of work cost several times the SQL itself.
    """

    def __init__(self, connection: Connection | Session, tenant_id: str) -> None:
        self.connection = connection
        self.tenant_id = tenant_id

    def query_target(self, document_id: str) -> QueryTarget:
        """The document's :class:`QueryTarget`; a missing document (or another tenant's) is a 404."""
        row = self.connection.execute(
            select(*_QUERY_TARGET_COLUMNS).where(DocumentRow.id == document_id, DocumentRow.tenant_id == self.tenant_id)
        ).one_or_none()
        if row is None:
            raise DocumentNotFoundError(
                f"No document with id '{document_id}'. List documents with GET /documents.",
                document_id=document_id,
            )
        return QueryTarget(
            id=row.id,
            filename=row.filename,
            chunk_counts=dict(row.chunk_counts or {}),
            last_corpus_embedding_model_id=row.last_corpus_embedding_model_id,
        )

    def add(self, record: QueryRecord, *, query_id: str) -> datetime:
        """Insert ``record`` as query ``query_id`` of this tenant; returns its ``created_at``."""
        created_at = utcnow()
        self.connection.execute(
            _INSERT_QUERY,
            {**vars(record), "id": query_id, "tenant_id": self.tenant_id, "created_at": created_at},
        )
        return created_at
