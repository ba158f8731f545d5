"""Data access for the metadata store. Every query takes the tenant so no caller can forget it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, insert, select
from sqlalchemy.orm import Session

from chunkbench.errors import DocumentNotFoundError, InvalidStateTransitionError
from chunkbench.models import ALLOWED_TRANSITIONS, DocumentState
from chunkbench.storage.schema import DocumentRow, QueryRow, utcnow


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
        return self.session.scalar(
            select(DocumentRow).where(DocumentRow.tenant_id == self.tenant_id, DocumentRow.filename == filename)
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
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[Sequence[DocumentRow], int]:
        """A page of documents, newest first, and the total count under the same filter."""
        where = [DocumentRow.tenant_id == self.tenant_id]
        if status is not None:
            where.append(DocumentRow.status == status.value)
        if mime_types:
            where.append(DocumentRow.mime_type.in_(mime_types))
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
_INSERT_QUERY = insert(QueryRow.__table__)


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
