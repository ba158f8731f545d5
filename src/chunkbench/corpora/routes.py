"""Corpora API: thin translation between HTTP and ``corpora.catalog``."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from chunkbench.corpora import catalog
from chunkbench.corpora.schemas import (
    CorpusDetail,
    CorpusDocumentsAdded,
    CorpusDocumentsIn,
    CorpusIn,
    CorpusSummary,
)
from chunkbench.dependencies import SessionDep, TenantDep
from chunkbench.documents.schemas import DocumentPatch, LanguageChangeOut
from chunkbench.schemas import ErrorOut, Responses, unprocessable

router = APIRouter(prefix="/corpora", tags=["corpora"])

_NOT_FOUND: Responses = {404: {"model": ErrorOut, "description": "Unknown corpus or document"}}


@router.post(
    "",
    response_model=CorpusDetail,
    status_code=status.HTTP_201_CREATED,
    responses={
        **_NOT_FOUND,
        409: {"model": ErrorOut, "description": "A corpus of that name exists"},
        422: unprocessable("An invalid corpus name, or an invalid request"),
    },
)
def create_corpus(body: CorpusIn, session: SessionDep, tenant_id: TenantDep) -> CorpusDetail:
    """Create a corpus, optionally with documents; an unknown document id refuses it whole (nothing written)."""
    contents = catalog.create(
        session, body.name, tenant_id=tenant_id, description=body.description, document_ids=body.document_ids
    )
    return CorpusDetail.of_contents(contents)


@router.get("", response_model=list[CorpusSummary])
def list_corpora(session: SessionDep, tenant_id: TenantDep) -> list[CorpusSummary]:
    """Every corpus of the tenant, by name, with its document count."""
    return [CorpusSummary.of(row, count) for row, count in catalog.get_all(session, tenant_id=tenant_id)]


@router.get("/{name}", response_model=CorpusDetail, responses=_NOT_FOUND)
def get_corpus(name: str, session: SessionDep, tenant_id: TenantDep) -> CorpusDetail:
    """A corpus (by name or id) with its documents."""
    return CorpusDetail.of_contents(catalog.get(session, name, tenant_id=tenant_id))


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT, responses=_NOT_FOUND)
def delete_corpus(name: str, session: SessionDep, tenant_id: TenantDep) -> Response:
    """Delete a corpus; its documents stay."""
    catalog.delete(session, name, tenant_id=tenant_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{name}/documents", response_model=CorpusDocumentsAdded, responses=_NOT_FOUND)
def add_documents(
    name: str, body: CorpusDocumentsIn, session: SessionDep, tenant_id: TenantDep
) -> CorpusDocumentsAdded:
    """Add documents by id; members already there are skipped, an unknown id refuses the whole request."""
    corpus, added, count = catalog.add_documents(session, name, body.document_ids, tenant_id=tenant_id)
    return CorpusDocumentsAdded(corpus=corpus.name, added=added, document_count=count)


@router.delete("/{name}/documents/{document_id}", status_code=status.HTTP_204_NO_CONTENT, responses=_NOT_FOUND)
def remove_document(name: str, document_id: str, session: SessionDep, tenant_id: TenantDep) -> Response:
    """Remove a document from a corpus (404 when it is not a member); the document stays."""
    catalog.remove_documents(session, name, [document_id], tenant_id=tenant_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.put(
    "/{name}/language",
    response_model=LanguageChangeOut,
    responses={**_NOT_FOUND, 400: {"model": ErrorOut, "description": "Not a language code"}},
)
def set_language(name: str, body: DocumentPatch, session: SessionDep, tenant_id: TenantDep) -> LanguageChangeOut:
    """Set the language of every member of the corpus (source ``user``, confidence 1); models that already
    processed one and do not cover the language are named in ``warnings``."""
    corpus, change = catalog.set_language(session, name, body.language, tenant_id=tenant_id)
    return LanguageChangeOut.of(change, corpus.name)
