"""Data access for the metadata store. Every query takes the tenant so no caller can forget it."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from chunkbench.errors import DocumentNotFoundError, InvalidStateTransitionError
from chunkbench.models import ALLOWED_TRANSITIONS, DocumentState
from chunkbench.storage.schema import DocumentRow


class DocumentRepository:
    """Documents of one tenant."""

    def __init__(self, session: Session, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def get_optional(self, document_id: str) -> DocumentRow | None:
        return self.session.scalar(
            select(DocumentRow).where(DocumentRow.id == document_id, DocumentRow.tenant_id == self.tenant_id)
        )

    def get(self, document_id: str) -> DocumentRow:
        row = self.get_optional(document_id)
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
