"""Documents API: thin translation between HTTP and ``documents.library`` / ``documents.ingest``."""

from __future__ import annotations

from fastapi import APIRouter, File, Query, Response, UploadFile, status
from fastapi.responses import PlainTextResponse

from chunkbench.dependencies import DatabaseDep, SessionDep, SettingsDep, TenantDep
from chunkbench.documents import ingest, library
from chunkbench.documents.ingest_results import IngestOutcome
from chunkbench.documents.schemas import (
    DocumentDetail,
    DocumentPage,
    DocumentPatch,
    DocumentSummary,
    FormatOut,
    IndexDirectoryIn,
    IndexDirectoryOut,
    IngestOut,
    LanguageChangeOut,
)
from chunkbench.models import DocumentState
from chunkbench.schemas import ErrorOut, Responses, unprocessable

router = APIRouter(prefix="/documents", tags=["documents"])

_ERRORS: Responses = {
    400: {"model": ErrorOut, "description": "Unreadable, corrupt, encrypted, scanned or empty file"},
    413: {"model": ErrorOut, "description": "File larger than CHUNKBENCH_MAX_UPLOAD_MB"},
    415: {"model": ErrorOut, "description": "Unsupported file type, or its converter is not installed"},
    422: unprocessable(
        "A scanned PDF without a text layer (run OCR first, or set CHUNKBENCH_OCR=on), a PDF with too little text, "
        "or an invalid request"
    ),
    503: {"model": ErrorOut, "description": "OCR is on, but Tesseract or one of its language packs is not installed"},
}


@router.post("", response_model=IngestOut, status_code=status.HTTP_201_CREATED, responses=_ERRORS)
def upload_document(
    response: Response,
    database: DatabaseDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    file: UploadFile = File(..., description="A file of a supported type: GET /documents/formats lists them"),
) -> IngestOut:
    """Upload a document: it is parsed into a section tree and markdown, or refused with a reason.

    Its source key is the filename: the same filename again replaces the old document (keeping its corpora);
    the same bytes again change nothing (200). A mail's (.eml, .msg) attachments are ingested as documents of their
    own, listed under ``attachments`` (source key ``{mail}//{filename}``, ``parent_id`` the mail).
    """
    result = ingest.ingest_upload(database, settings, file.file, file.filename or "", tenant_id=tenant_id)
    if result.outcome is IngestOutcome.UNCHANGED:
        response.status_code = status.HTTP_200_OK
    return IngestOut.of(result)


@router.get("/formats", response_model=list[FormatOut])
def list_formats() -> list[FormatOut]:
    """Every file type the server ingests (the parser registry, plugins included), by suffix."""
    return [FormatOut.of(suffix, parser) for suffix, parser in ingest.formats()]


@router.get("", response_model=DocumentPage, responses={404: {"model": ErrorOut, "description": "Unknown corpus"}})
def list_documents(
    session: SessionDep,
    tenant_id: TenantDep,
    status_filter: DocumentState | None = Query(None, alias="status"),
    mime_type: list[str] = Query([], description="Only these MIME types (repeat the parameter for several)"),
    corpus: str | None = Query(None, description="Only the members of this corpus (name or id)"),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0),
) -> DocumentPage:
    rows, total = library.get_all(
        session,
        tenant_id=tenant_id,
        status=status_filter,
        mime_types=mime_type,
        corpus=corpus,
        limit=limit,
        offset=offset,
    )
    return DocumentPage(items=[DocumentSummary.of(row) for row in rows], total=total, limit=limit, offset=offset)


@router.post(
    "/index-directory",
    response_model=IndexDirectoryOut,
    responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}, 422: unprocessable("An invalid corpus name")},
)
def index_directory(
    body: IndexDirectoryIn,
    database: DatabaseDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
) -> IndexDirectoryOut:
    """Ingest every supported file under a folder of the data directory, each keyed by its path below that folder;
    each file fails on its own, and every file not read is listed as skipped with its reason (hidden, unsupported
    type, empty, too large, not a regular file, unreadable). With ``corpus``, every file ingested joins it."""
    results = ingest.index_directory(database, settings, body.path, tenant_id=tenant_id, corpus=body.corpus)
    return IndexDirectoryOut.of(body.path, results)


@router.get("/{document_id}", response_model=DocumentDetail, responses={404: {"model": ErrorOut}})
def get_document(
    document_id: str,
    session: SessionDep,
    tenant_id: TenantDep,
    preview_chars: int = Query(5000, ge=0, description="Markdown preview length; 0 = whole markdown"),
) -> DocumentDetail:
    """Metadata, the corpora it belongs to, section tree, headings and a markdown preview."""
    row = library.get(session, document_id, tenant_id=tenant_id)
    return DocumentDetail.of_row(row, preview_chars, library.corpora_of(session, row.id, tenant_id=tenant_id))


@router.patch(
    "/{document_id}",
    response_model=LanguageChangeOut,
    responses={400: {"model": ErrorOut, "description": "Not a language code"}, 404: {"model": ErrorOut}},
)
def patch_document(
    document_id: str, body: DocumentPatch, session: SessionDep, tenant_id: TenantDep
) -> LanguageChangeOut:
    """Set the document's language (source ``user``, confidence 1); models that already processed it and do not
    cover the new language are named in ``warnings`` (nothing is re-processed)."""
    return LanguageChangeOut.of(library.set_language(session, [document_id], body.language, tenant_id=tenant_id))


@router.get("/{document_id}/markdown", response_class=PlainTextResponse, responses={404: {"model": ErrorOut}})
def get_markdown(document_id: str, session: SessionDep, tenant_id: TenantDep) -> PlainTextResponse:
    """The whole markdown the chunkers work on."""
    row = library.get(session, document_id, tenant_id=tenant_id)
    return PlainTextResponse(row.parsed_text, media_type="text/markdown; charset=utf-8")


@router.delete("/{document_id}", status_code=status.HTTP_204_NO_CONTENT, responses={404: {"model": ErrorOut}})
def delete_document(document_id: str, database: DatabaseDep, settings: SettingsDep, tenant_id: TenantDep) -> Response:
    """Delete a document and everything that hangs on it (queries, experiments, runs, vectors, a mail's attachments)."""
    library.delete(database, settings, document_id, tenant_id=tenant_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
