"""Processing and strategies API: thin translation between HTTP and ``indexing.processing``."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Query, Request, Response, status

from chunkbench.chunking import library_strategies
from chunkbench.chunking.base import all_strategies
from chunkbench.dependencies import DatabaseDep, SessionDep, SettingsDep, TenantDep, VectorStoreDep
from chunkbench.indexing import corpus_job, processing, sizes
from chunkbench.indexing.schemas import (
    CorpusProcessOut,
    ProcessAccepted,
    ProcessIn,
    ProcessOut,
    SizeWarningOut,
    StrategyInfo,
    StrategyRunOut,
)
from chunkbench.jobs.routes import run_or_submit
from chunkbench.progress import never_stop, no_progress
from chunkbench.schemas import ErrorOut
from chunkbench.storage.schema import JobRow

router = APIRouter(tags=["processing"])


@router.post(
    "/documents/{document_id}/process",
    response_model=ProcessOut | ProcessAccepted,
    status_code=status.HTTP_202_ACCEPTED,
    responses={200: {"model": ProcessOut}, 400: {"model": ErrorOut}, 404: {"model": ErrorOut}},
)
def process_document(
    document_id: str,
    body: ProcessIn,
    request: Request,
    response: Response,
    session: SessionDep,
    database: DatabaseDep,
    settings: SettingsDep,
    store: VectorStoreDep,
    tenant_id: TenantDep,
    wait: bool = Query(False, description="Run now and return the result instead of a job"),
) -> ProcessOut | ProcessAccepted:
    """Chunk, embed and index a document with the chosen strategies (202 + a job to poll, or 200 with wait)."""
    process_plan = processing.plan(session, settings, document_id, body, tenant_id=tenant_id)
    return run_or_submit(
        request, response, wait=wait,
        work=lambda: processing.run(database, settings, store, process_plan, no_progress, never_stop),
        accepted=_accepted(process_plan.size_warnings),
        kind=processing.JOB_KIND, payload={"document_id": document_id, "body": body.model_dump(mode="json")},
        tenant_id=tenant_id, request=process_plan.describe(), document_id=document_id,
    )  # fmt: skip


def _accepted(size_warnings: tuple[sizes.SizeWarning, ...]) -> Callable[[JobRow], ProcessAccepted]:
    """The 202 body of processing submitted as a job: where to poll it, and the plan's size warnings."""
    return lambda job: ProcessAccepted(
        job_id=job.id, status=job.status, status_url=f"/jobs/{job.id}",
        size_warnings=[SizeWarningOut(**w.to_dict()) for w in size_warnings],
    )  # fmt: skip


@router.post(
    "/corpora/{name}/process",
    response_model=CorpusProcessOut | ProcessAccepted,
    status_code=status.HTTP_202_ACCEPTED,
    responses={200: {"model": CorpusProcessOut}, 400: {"model": ErrorOut}, 404: {"model": ErrorOut}},
)
def process_corpus(
    name: str,
    body: ProcessIn,
    request: Request,
    response: Response,
    session: SessionDep,
    database: DatabaseDep,
    settings: SettingsDep,
    store: VectorStoreDep,
    tenant_id: TenantDep,
    wait: bool = Query(False, description="Run now and return the result instead of a job"),
) -> CorpusProcessOut | ProcessAccepted:
    """Process every document of a corpus as one job: current ones skipped, failing ones recorded, resumable."""
    corpus_plan = corpus_job.plan(session, settings, name, body, tenant_id=tenant_id)
    return run_or_submit(
        request, response, wait=wait,
        work=lambda: corpus_job.run(database, settings, store, corpus_plan, no_progress, never_stop),
        accepted=_accepted(corpus_plan.request.size_warnings),
        kind=corpus_job.JOB_KIND,
        payload={"corpus": corpus_plan.corpus_name, "body": body.model_dump(mode="json")}, tenant_id=tenant_id,
        request=corpus_plan.describe(), document_id=None, corpus_id=corpus_plan.corpus_id,
    )  # fmt: skip


@router.get("/strategies", response_model=list[StrategyInfo], responses={400: {"model": ErrorOut}})
def list_strategies(
    session: SessionDep,
    corpus_model: str | None = Query(None, description="Size defaults for this Corpus model (default: Admin role)"),
) -> list[StrategyInfo]:
    """The strategies with their parameters' JSON Schema (defaults, bounds), and their size defaults and the
    largest sizes the Corpus model reads whole."""
    spec = sizes.corpus_spec(session, corpus_model)
    return [
        StrategyInfo(
            name=cls.name,
            description=cls.description,
            needs_boundary_model=cls.needs_boundary,
            expands_neighbours=cls.expands_neighbours,
            has_parents=cls.has_parents,
            params_schema=cls.params_model.model_json_schema(),
            variant_of=cls.variant.base if cls.variant else None,
            pinned_params=dict(cls.variant.params) if cls.variant else {},
            in_default_set=cls.in_default_set,
            **library_strategies.listing(cls),
            corpus_model_id=spec.id,
            **sizes.model_sizes(cls.name, spec),
        )
        for cls in all_strategies()
    ]


@router.get("/documents/{document_id}/runs", response_model=list[StrategyRunOut], responses={404: {"model": ErrorOut}})
def list_runs(document_id: str, session: SessionDep, tenant_id: TenantDep) -> list[StrategyRunOut]:
    """Every strategy run on the document, newest first: parameters, models, diagnostics, errors."""
    return [StrategyRunOut.model_validate(row) for row in processing.runs(session, document_id, tenant_id=tenant_id)]
