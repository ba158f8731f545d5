"""Admin API for question files (seed 000 §11 ``/admin/questions*``): thin translation to ``evaluation.service``."""

from __future__ import annotations

from fastapi import APIRouter, File, Query, Response, UploadFile, status

from chunkbench.dependencies import DatabaseDep, SessionDep, SettingsDep, TenantDep
from chunkbench.evaluation import service
from chunkbench.evaluation.schemas import (
    GenerateIn,
    GenerateOut,
    QuestionFileOut,
    QuestionSetOut,
    QuestionUploadOut,
)
from chunkbench.evaluation.synthetic import GenerationOptions
from chunkbench.schemas import ErrorOut, unprocessable

router = APIRouter(
    prefix="/admin/questions",
    tags=["admin", "questions"],
    responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}},
)
_INVALID_SET = unprocessable("A question file that is not a valid question set, or an invalid request")


@router.get("", response_model=list[QuestionFileOut])
def list_question_files(settings: SettingsDep, tenant_id: TenantDep) -> list[QuestionFileOut]:
    """The tenant's question files with sizes and question counts (or why they cannot be read)."""
    return [QuestionFileOut.of(info) for info in service.list_question_files(settings, tenant_id)]


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
    settings: SettingsDep,
    tenant_id: TenantDep,
    file: UploadFile = File(..., description="Seed JSON (.json), JSON lines (.jsonl) or Chroma CSV (.csv)"),
    name: str | None = Query(None, description="Store under this name instead of the upload's file name"),
    overwrite: bool = Query(False, description="Replace a file of the same name (else 409)"),
) -> QuestionUploadOut:
    """Upload a question file: validated before it is written (422 lists every problem); 201 new, 200 replaced."""
    # One byte over the limit is enough to refuse: never read an oversized upload whole.
    content = file.file.read(settings.max_question_file_bytes + 1)
    info, replaced = service.save_question_file(
        settings, name or file.filename or "", content, overwrite=overwrite, tenant_id=tenant_id
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
    result, info = service.generate_question_file(
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
    threshold: float | None = Query(None, gt=0, le=1, description="Fuzzy-match similarity (default: Settings)"),
) -> QuestionSetOut:
    """The parsed questions; with ``document_id``, every reference's placement in those documents."""
    question_set = service.read_question_file(settings, name, tenant_id)
    report = None
    if document_id:
        report = service.validate_against_database(
            session,
            question_set,
            tenant_id=tenant_id,
            document_names=document_id,
            threshold=threshold if threshold is not None else settings.question_match_threshold,
        )
    return QuestionSetOut.of(service.file_info(settings, name, tenant_id), question_set, report)


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT)
def delete_question_file(name: str, settings: SettingsDep, tenant_id: TenantDep) -> Response:
    service.delete_question_file(settings, name, tenant_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
