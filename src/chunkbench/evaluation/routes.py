"""Admin API for question files (docs/api.md ``/admin/questions*``): thin, over ``evaluation.question_sets``."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, File, Query, Response, UploadFile, status
from fastapi.responses import PlainTextResponse

from chunkbench.dependencies import DatabaseDep, SessionDep, SettingsDep, TenantDep
from chunkbench.evaluation import authoring, question_sets
from chunkbench.evaluation.schemas import (
    GenerateIn,
    GenerateOut,
    QuestionFileOut,
    QuestionIn,
    QuestionSetOut,
    QuestionUploadOut,
    ReferenceIn,
)
from chunkbench.evaluation.synthetic import GenerationOptions
from chunkbench.schemas import ErrorOut, Responses, unprocessable

router = APIRouter(
    prefix="/admin/questions",
    tags=["admin", "questions"],
    responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}},
)
_INVALID_SET = unprocessable("A question file that is not a valid question set, or an invalid request")


@router.get("", response_model=list[QuestionFileOut])
def list_question_files(session: SessionDep, settings: SettingsDep, tenant_id: TenantDep) -> list[QuestionFileOut]:
    """The tenant's question files with sizes and question counts (or why they cannot be read)."""
    return [QuestionFileOut.of(info) for info in question_sets.list_question_files(session, settings, tenant_id)]


@router.post(
    "",
    response_model=QuestionUploadOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        409: {"model": ErrorOut},
        413: {"model": ErrorOut},
        422: _INVALID_SET,
    },
)
def upload_question_file(
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    file: UploadFile = File(..., description="Question JSON (.json), JSON lines (.jsonl) or Chroma CSV (.csv)"),
    name: str | None = Query(None, description="Store under this name instead of the upload's file name"),
    overwrite: bool = Query(False, description="Replace a file of the same name (else 409)"),
) -> QuestionUploadOut:
    """Upload a question file: validated before it is written (422 lists every problem); 201 new, 200 replaced."""
    # One byte over the limit is enough to refuse: never read an oversized upload whole.
    content = file.file.read(settings.max_question_file_bytes + 1)
    info, replaced = question_sets.save_question_file(
        session, settings, name or file.filename or "", content, overwrite=overwrite, tenant_id=tenant_id
    )
    if replaced:
        response.status_code = status.HTTP_200_OK
    return QuestionUploadOut(file=QuestionFileOut.of(info), replaced=replaced)


@router.post(
    "/generate",
    response_model=GenerateOut,
    status_code=status.HTTP_201_CREATED,
    responses={409: {"model": ErrorOut}, 502: {"model": ErrorOut}, 503: {"model": ErrorOut}},
)
def generate_questions(
    body: GenerateIn, database: DatabaseDep, settings: SettingsDep, tenant_id: TenantDep
) -> GenerateOut:
    """Generate questions with exact excerpts from a document with the configured LLM (503 without one)."""
    options = GenerationOptions(
        count=body.count,
        seed=body.seed,
        match_threshold=settings.question_match_threshold,
        excerpt_min_similarity=(
            settings.synthetic_excerpt_min_similarity
            if body.excerpt_min_similarity is None
            else body.excerpt_min_similarity
        ),
        duplicate_similarity=(
            settings.synthetic_duplicate_similarity if body.duplicate_similarity is None else body.duplicate_similarity
        ),
    )
    result, info = question_sets.generate_question_file(
        database, settings, body.document_id, options, tenant_id=tenant_id, out=body.out, overwrite=body.overwrite
    )
    return GenerateOut.of(result, info, body.count)


@router.get(
    "/{name}",
    response_model=QuestionSetOut,
    responses={422: _INVALID_SET},
)
def get_question_file(
    name: str,
    session: SessionDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    document_id: list[str] | None = Query(None, description="Validate the evidence against these documents"),
    validate: bool = Query(False, description="Validate against the documents the set names (no document_id)"),
    threshold: float | None = Query(None, gt=0, le=1, description="Fuzzy-match similarity (default: Settings)"),
) -> QuestionSetOut:
    """The parsed questions; with ``document_id`` (or ``validate``), every reference's placement in the documents."""
    question_set = question_sets.read_question_file(session, settings, name, tenant_id)
    report = None
    if document_id or validate:
        report = question_sets.validate_against_database(
            session,
            question_set,
            tenant_id=tenant_id,
            document_names=document_id or (),
            threshold=threshold if threshold is not None else settings.question_match_threshold,
        )
    return QuestionSetOut.of(question_sets.file_info(session, settings, name, tenant_id), question_set, report)


# The file as stored, for a download (not JSON to read: exempt from a response model like the markdown route).
_MEDIA_TYPES = {".json": "application/json", ".csv": "text/csv"}


@router.get("/{name}/download", response_class=PlainTextResponse)
def download_question_file(name: str, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep) -> Response:
    """The question file's bytes, as an attachment named like the file."""
    content = question_sets.question_file_content(session, settings, name, tenant_id)
    # A name may hold any letter (never a quote): an ASCII fallback, and the exact name in RFC 5987 form.
    fallback = re.sub(r"[^ -~]", "_", name)
    return Response(
        content,
        media_type=f"{_MEDIA_TYPES.get(Path(name).suffix.lower(), 'application/x-ndjson')}; charset=utf-8",
        headers={"content-disposition": f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name)}"},
    )


# ----------------------------------------------------------------------- authoring, one change at a time
_AUTHORING: Responses = {404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: _INVALID_SET}


@router.post("/{name}/questions", response_model=QuestionSetOut, status_code=201, responses=_AUTHORING)
def add_question(
    name: str, body: QuestionIn, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep
) -> QuestionSetOut:
    """Append a question to the set (a new .json set is created): its evidence must be placed in the documents it
    names (offsets select their content exactly), else 422 and nothing is written."""
    authored = authoring.add_question(session, settings, name, body.model_dump(exclude_none=True), tenant_id=tenant_id)
    return QuestionSetOut.of(authored.info, authored.question_set, authored.report)


@router.post(
    "/{name}/questions/{question_id}/references", response_model=QuestionSetOut, status_code=201, responses=_AUTHORING
)
def add_reference(
    name: str, question_id: str, body: ReferenceIn, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep
) -> QuestionSetOut:
    """Add evidence to a question of the set, placed as a new question's is."""
    authored = authoring.add_reference(
        session, settings, name, question_id, body.model_dump(exclude_none=True), tenant_id=tenant_id
    )
    return QuestionSetOut.of(authored.info, authored.question_set, authored.report)


@router.delete("/{name}/questions/{question_id}", response_model=QuestionSetOut, responses=_AUTHORING)
def remove_question(
    name: str, question_id: str, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep
) -> QuestionSetOut:
    """Remove a question with its evidence (not the set's only one: delete the file instead)."""
    authored = authoring.remove_question(session, settings, name, question_id, tenant_id=tenant_id)
    return QuestionSetOut.of(authored.info, authored.question_set, authored.report)


@router.delete(
    "/{name}/questions/{question_id}/references/{reference_index}", response_model=QuestionSetOut, responses=_AUTHORING
)
def remove_reference(
    name: str, question_id: str, reference_index: int, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep
) -> QuestionSetOut:
    """Remove one piece of a question's evidence (numbered from 0, as in validation results)."""
    authored = authoring.remove_reference(session, settings, name, question_id, reference_index, tenant_id=tenant_id)
    return QuestionSetOut.of(authored.info, authored.question_set, authored.report)


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT)
def delete_question_file(name: str, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep) -> Response:
    question_sets.delete_question_file(session, settings, name, tenant_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
