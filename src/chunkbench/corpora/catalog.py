"""Corpora service: create, list, show, delete a corpus and change its members. Routes and CLI call only this.

A corpus holds document ids; a document may belong to several corpora. Deleting a corpus deletes its memberships,
never a document; deleting a document removes it from every corpus (the database cascades).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from chunkbench.documents import library
from chunkbench.errors import NotInCorpusError
from chunkbench.models import corpus_name
from chunkbench.storage.repositories import CorpusRepository
from chunkbench.storage.schema import CorpusRow, DocumentRow


@dataclass(frozen=True)
class CorpusContents:
    """A corpus and its member documents (by source key)."""

    corpus: CorpusRow
    documents: list[DocumentRow]


def create(
    session: Session,
    name: str,
    *,
    tenant_id: str,
    description: str | None = None,
    document_ids: Sequence[str] = (),
) -> CorpusContents:
    """A new corpus with these documents; an unknown id refuses the whole request (nothing is written)."""
    corpora = CorpusRepository(session, tenant_id)
    # The name is checked before anything is written; the caller's transaction rolls the row back if a
    # document id is unknown.
    corpus = corpora.create(corpus_name(name), (description or "").strip() or None)
    corpora.add_documents(corpus, document_ids)
    return CorpusContents(corpus, corpora.documents(corpus))


def get_all(session: Session, *, tenant_id: str) -> list[tuple[CorpusRow, int]]:
    """Every corpus of the tenant, by name, with its document count."""
    return CorpusRepository(session, tenant_id).list()


def get(session: Session, name: str, *, tenant_id: str) -> CorpusContents:
    """A corpus (by name or id) with its documents."""
    corpora = CorpusRepository(session, tenant_id)
    corpus = corpora.get(name)
    return CorpusContents(corpus, corpora.documents(corpus))


def delete(session: Session, name: str, *, tenant_id: str) -> CorpusRow:
    """Delete a corpus and its memberships; its documents stay."""
    corpora = CorpusRepository(session, tenant_id)
    corpus = corpora.get(name)
    corpora.delete(corpus)
    return corpus


def add_documents(
    session: Session, name: str, document_ids: Sequence[str], *, tenant_id: str
) -> tuple[CorpusRow, int, int]:
    """Add documents to a corpus: ``(the corpus, how many were not members yet, its document count)``."""
    corpora = CorpusRepository(session, tenant_id)
    corpus = corpora.get(name)
    added = corpora.add_documents(corpus, document_ids)
    return corpus, added, len(corpora.document_ids(corpus))


def remove_documents(
    session: Session, name: str, document_ids: Sequence[str], *, tenant_id: str
) -> tuple[CorpusRow, int, int]:
    """Remove documents from a corpus (never the documents themselves); any non-member refuses the whole request.

    Returns ``(the corpus, how many were removed, its document count)``.
    """
    corpora = CorpusRepository(session, tenant_id)
    corpus = corpora.get(name)
    members = set(corpora.document_ids(corpus))
    strangers = [document_id for document_id in dict.fromkeys(document_ids) if document_id not in members]
    if strangers:
        raise NotInCorpusError(
            f"Not in corpus '{corpus.name}': {', '.join(strangers)}. Show its members with GET /corpora/{corpus.name} "
            f"or `chunkbench corpora show '{corpus.name}'`.",
            corpus=corpus.name,
            document_ids=strangers,
        )
    removed = corpora.remove_documents(corpus, document_ids)
    return corpus, removed, len(members) - removed


def set_language(session: Session, name: str, code: str, *, tenant_id: str) -> tuple[CorpusRow, library.LanguageChange]:
    """Set the language of every member of a corpus (``documents.library.set_language``)."""
    corpora = CorpusRepository(session, tenant_id)
    corpus = corpora.get(name)
    return corpus, library.set_language(session, corpora.document_ids(corpus), code, tenant_id=tenant_id)
