"""Documents service: list, show, delete, resolve a reference, set the language. Routes and CLI call only this
(and ``documents.ingest``, which stores what they read here).

A document's identity within its tenant is its **source key** (``documents.ingest`` says how it is made); a mail's
attachments are documents of their own whose keys extend the mail's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.documents import language_detection
from chunkbench.embedding.registry import REGISTRY, language_warnings
from chunkbench.errors import AmbiguousDocumentError, DocumentNotFoundError
from chunkbench.models import DocumentState
from chunkbench.storage import corpus_generation
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import CorpusRepository, DocumentRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import get_vector_store

_AMBIGUOUS_SHOWN = 10
# An attachment's source key is its mail's, this separator, and its filename (``inbox/a.eml//report.pdf``). A real
# file's key can never hold it: every key is cleaned of empty path parts (``ingest._clean_source_key``).
ATTACHMENT_SEPARATOR = "//"


def detect_language(text: str) -> str:
    """ISO 639-1 code of the text's language, or ``und`` (``documents.language_detection.detect_text``)."""
    return language_detection.detect_text(text)[0]


def attachments_of(repo: DocumentRepository, source_key: str) -> list[DocumentRow]:
    """The documents found inside the one stored under ``source_key``, nested ones too (their keys extend its)."""
    return repo.with_key_prefix(f"{source_key}{ATTACHMENT_SEPARATOR}")


def attachment_source_key(parent_key: str, filename: str) -> str:
    """The source key of a file found inside the document stored under ``parent_key``."""
    return f"{parent_key}{ATTACHMENT_SEPARATOR}{filename}"


def forget_vectors(database: Database, settings: Settings, tenant_id: str, document_id: str) -> None:
    """A document's vectors removed once its row is gone (deleted or replaced, by ``documents.ingest`` too)."""
    # After the SQL commit (DESIGN: deletes flip SQL first): a crash in between leaves unreachable
    # vectors of a document that no longer exists, never a document without its vectors.
    get_vector_store(settings).delete_document(tenant_id, document_id)
    # Bumped again: an answer cached between the commit and now could still have seen those vectors.
    with database.session() as session:
        corpus_generation.bump(session, tenant_id)


def get_all(
    session: Session,
    *,
    tenant_id: str,
    status: DocumentState | None = None,
    mime_types: Sequence[str] = (),
    corpus: str | None = None,
    limit: int = 100,
    offset: int = 0,
):
    """A page of documents (only the members of ``corpus``, by name or id, when given) and the total."""
    member_of = CorpusRepository(session, tenant_id).get(corpus) if corpus is not None else None
    return DocumentRepository(session, tenant_id).list(
        status=status, mime_types=mime_types, corpus=member_of, limit=limit, offset=offset
    )


def get(session: Session, document_id: str, *, tenant_id: str) -> DocumentRow:
    return DocumentRepository(session, tenant_id).get(document_id)


def corpora_of(session: Session, document_id: str, *, tenant_id: str) -> list[str]:
    """The names of the corpora a document belongs to."""
    return CorpusRepository(session, tenant_id).corpora_of(document_id)


def delete(database: Database, settings: Settings, document_id: str, *, tenant_id: str) -> DocumentRow:
    """Delete a document and its attachments (a mail's files are part of it); their queries, experiments and runs
    go with them (cascade), then their vectors."""
    with database.session() as session:
        repo = DocumentRepository(session, tenant_id)
        row = repo.get(document_id)
        attachments = attachments_of(repo, row.source_key)
        gone = [document_id, *(child.id for child in attachments)]
        for child in attachments:
            repo.delete(child)
        repo.delete(row)
        corpus_generation.bump(session, tenant_id)
    for gone_id in gone:
        forget_vectors(database, settings, tenant_id, gone_id)
    return row


def resolve(session: Session, reference: str, *, tenant_id: str) -> DocumentRow:
    """A document by id, by source key, or by a filename that only one document has (the CLI's ``DOC``)."""
    repo = DocumentRepository(session, tenant_id)
    row = repo.get_optional(reference) or repo.get_by_source_key(reference) or repo.get_by_filename(reference)
    if row is not None:
        return row
    keys = repo.source_keys_named(reference)
    if keys:  # the filename is there, but more than once
        shown = ", ".join(keys[:_AMBIGUOUS_SHOWN]) + (" …" if len(keys) > _AMBIGUOUS_SHOWN else "")
        raise AmbiguousDocumentError(
            f"{len(keys)} documents are named '{reference}': {shown}. Name one by its source key or id.",
            filename=reference,
            source_keys=keys,
        )
    raise DocumentNotFoundError(
        f"No document with the id, source key or filename '{reference}'. List documents with "
        "`chunkbench documents list` or GET /documents.",
        document=reference,
    )


@dataclass
class LanguageChange:
    """Documents whose language a user set, and what the models that already processed them cannot read."""

    language: str
    documents: list[DocumentRow]
    warnings: list[str]


def set_language(session: Session, document_ids: Sequence[str], code: str, *, tenant_id: str) -> LanguageChange:
    """Set documents' language (source ``user``, confidence 1); an unknown code is a 400 before anything changes.

    Nothing is re-processed: a Corpus or Boundary model that already processed a document and does not cover the
    new language is named in the warnings (process again with a model that covers it).
    """
    language = language_detection.user_code(code)
    repo = DocumentRepository(session, tenant_id)
    rows = [repo.get(document_id) for document_id in dict.fromkeys(document_ids)]
    for row in rows:
        row.language = language
        row.language_confidence = 1.0
        row.language_source = language_detection.LanguageSource.USER.value
    return LanguageChange(language, rows, _processed_warnings(session, rows, tenant_id))


def _processed_warnings(session: Session, rows: Sequence[DocumentRow], tenant_id: str) -> list[str]:
    """The language warnings of the models that built the documents' completed runs, from their language now."""
    by_name = {row.id: row.source_key for row in rows}
    used = session.execute(
        select(StrategyRunRow.document_id, StrategyRunRow.corpus_model_id, StrategyRunRow.boundary_model_id)
        .where(StrategyRunRow.tenant_id == tenant_id)
        .where(StrategyRunRow.document_id.in_(list(by_name)))
        .where(StrategyRunRow.status == "completed")
        .distinct()
    ).all()
    documents: dict[tuple[str, str], dict[str, str | None]] = {}  # (role, model) → source key → language
    language_of = {row.id: row.language for row in rows}
    for document_id, corpus_model, boundary_model in used:
        for role, model_id in (("corpus", corpus_model), ("boundary", boundary_model)):
            if model_id is not None:
                documents.setdefault((role, model_id), {})[by_name[document_id]] = language_of[document_id]
    warnings: list[str] = []
    for (role, model_id), named in sorted(documents.items()):  # sorted: the same order every time
        spec = REGISTRY.get(model_id)
        if spec is not None:
            warnings.extend(w.message for w in language_warnings(role, spec, dict(sorted(named.items()))))
    return warnings
