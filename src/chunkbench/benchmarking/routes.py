"""Benchmarks and Experiments API (docs/api.md): thin translation between HTTP and ``benchmarking.benchmarks``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import HTMLResponse

from chunkbench.benchmarking import benchmarks, runner
from chunkbench.benchmarking.experiment_schemas import ExperimentOut
from chunkbench.benchmarking.report.render import chart_index, render_chart
from chunkbench.benchmarking.schemas import (
    BenchmarkIn,
    ChartOut,
    CompareOut,
    CostEstimateOut,
    DecisionOut,
    ExperimentSummary,
)
from chunkbench.dependencies import DatabaseDep, SessionDep, SettingsDep, TenantDep, VectorStoreDep
from chunkbench.jobs.routes import run_or_submit
from chunkbench.jobs.schemas import JobOut
from chunkbench.limits import MAX_NEIGHBORS
from chunkbench.schemas import ErrorOut, JobAccepted
from chunkbench.storage.schema import JobRow

router = APIRouter(tags=["benchmarks"])
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut},
    404: {"model": ErrorOut},
    409: {"model": ErrorOut},
}


class SvgResponse(Response):
    media_type = "image/svg+xml"


class BenchmarkAccepted(JobAccepted):
    experiment_id: str
    experiment_url: str


def _job(experiment_id: str, tenant_id: str, document_id: str | None) -> dict[str, Any]:
    """What a job that runs an Experiment is submitted with (its worker reads the Experiment from the id)."""
    return {
        "kind": runner.JOB_KIND,
        "tenant_id": tenant_id,
        "document_id": document_id,  # None for a corpus benchmark
        "request": {"experiment_id": experiment_id},
        "payload": {"experiment_id": experiment_id},
    }


def _accepted(experiment_id: str) -> Callable[[JobRow], BenchmarkAccepted]:
    """The 202 body of a benchmark submitted as a job: where to poll the job and read its Experiment."""
    return lambda job: BenchmarkAccepted(
        job_id=job.id,
        status=job.status,
        status_url=f"/jobs/{job.id}",
        experiment_id=experiment_id,
        experiment_url=f"/benchmarks/{experiment_id}",
    )


@router.post(
    "/benchmarks",
    response_model=BenchmarkAccepted | CostEstimateOut | ExperimentOut,
    # An Experiment's cells keep only the fields they have (a failed cell has no answer).
    response_model_exclude_unset=True,
    status_code=status.HTTP_202_ACCEPTED,
    responses={200: {"description": "dry_run estimate, or the finished Experiment with wait=true"}, **_ERRORS},
)
def start_benchmark(
    body: BenchmarkIn,
    request: Request,
    response: Response,
    session: SessionDep,
    database: DatabaseDep,
    settings: SettingsDep,
    store: VectorStoreDep,
    tenant_id: TenantDep,
    wait: bool = Query(False, description="Run now and return the Experiment instead of a job"),
) -> Any:
    """Run a benchmark (202 + a job to poll), or estimate it with ``dry_run`` (200)."""
    if body.dry_run:
        response.status_code = status.HTTP_200_OK
        return benchmarks.estimate(session, settings, body, tenant_id=tenant_id)
    experiment = benchmarks.start(database, settings, body, tenant_id=tenant_id).experiment

    def run_now() -> dict[str, Any]:
        row = runner.execute(database, settings, store, experiment.id, tenant_id=tenant_id)
        return benchmarks.experiment_dict(session, benchmarks.get(session, row.id, tenant_id=tenant_id))

    return run_or_submit(
        request, response, wait=wait, work=run_now, accepted=_accepted(experiment.id),
        **_job(experiment.id, tenant_id, experiment.document_id),
    )  # fmt: skip


@router.post("/benchmarks/{experiment_id}/resume", response_model=BenchmarkAccepted, status_code=202, responses=_ERRORS)
def resume_benchmark(
    experiment_id: str,
    request: Request,
    database: DatabaseDep,
    tenant_id: TenantDep,
) -> BenchmarkAccepted:
    """Run the cells an interrupted or failed Experiment has not finished; the finished ones are kept."""
    row = benchmarks.prepare_resume(database, experiment_id, tenant_id=tenant_id)
    return _accepted(row.id)(request.app.state.jobs.submit(**_job(row.id, tenant_id, row.document_id)))


@router.post("/benchmarks/{experiment_id}/cancel", response_model=JobOut, status_code=202, responses=_ERRORS)
def cancel_benchmark(experiment_id: str, request: Request, session: SessionDep, tenant_id: TenantDep) -> JobOut:
    """Cancel the job running the Experiment: no new cell starts, the ones in flight are kept, and the Experiment
    ends ``interrupted`` (resume it to finish); 409 when no job of this server runs it (a CLI run: Ctrl-C)."""
    job = benchmarks.running_job(session, experiment_id, tenant_id=tenant_id)
    return JobOut.model_validate(request.app.state.jobs.cancel(job.id, tenant_id=tenant_id))


@router.get(
    "/benchmarks/{experiment_id}", response_model=ExperimentOut, response_model_exclude_unset=True, responses=_ERRORS
)
def get_benchmark(
    experiment_id: str,
    session: SessionDep,
    tenant_id: TenantDep,
    cells: benchmarks.CellsView = Query(
        "full", description="'scores': cells without retrieved text, answers and Expansion Trees (much smaller)"
    ),
) -> dict[str, Any]:
    """The Experiment: plan, provenance, every cell, aggregates and the Decision (partial while running)."""
    row = benchmarks.get(session, experiment_id, tenant_id=tenant_id)
    return benchmarks.experiment_dict(session, row, cells_view=cells)


@router.get("/benchmarks/{experiment_id}/decision", response_model=DecisionOut, responses=_ERRORS)
def decide_at_budget(
    experiment_id: str,
    session: SessionDep,
    tenant_id: TenantDep,
    budget: int | None = Query(
        None, ge=1, description="Context tokens to cut every configuration to; default: the smallest median tok@k"
    ),
) -> DecisionOut:
    """The Decision made again at another context budget from the stored cells (nothing is stored)."""
    return DecisionOut.model_validate(
        benchmarks.decide_again(session, experiment_id, tenant_id=tenant_id, budget=budget)
    )


# HTML (exempt from a response_model); ``view=json`` answers the export file, the JSON of GET /benchmarks/{id}.
@router.get("/benchmarks/{experiment_id}/report", response_class=HTMLResponse, responses=_ERRORS)
def benchmark_report(
    experiment_id: str,
    session: SessionDep,
    store: VectorStoreDep,
    tenant_id: TenantDep,
    view: Literal["managerial", "technical", "json"] = "managerial",
) -> Response:
    """A self-contained HTML report (no CDN), or the JSON export with ``view=json``."""
    text = benchmarks.report(session, store, experiment_id, view=view, tenant_id=tenant_id)
    return Response(text, media_type="application/json") if view == "json" else HTMLResponse(text)


@router.get("/benchmarks/{experiment_id}/charts", response_model=list[ChartOut], responses=_ERRORS)
def list_charts(experiment_id: str, session: SessionDep, tenant_id: TenantDep) -> list[ChartOut]:
    """The charts of an Experiment the dashboard shows (the reports' charts): name, kind, metric and URL."""
    row = benchmarks.get(session, experiment_id, tenant_id=tenant_id)
    return [
        ChartOut(**entry, url=f"/benchmarks/{experiment_id}/charts/{entry['name']}")
        for entry in chart_index(benchmarks.experiment_dict(session, row))
    ]


@router.get(
    "/benchmarks/{experiment_id}/charts/{name}",
    response_class=SvgResponse,
    responses={200: {"content": {"image/svg+xml": {}}, "description": "The chart as SVG"}, **_ERRORS},
)
def benchmark_chart(experiment_id: str, name: str, session: SessionDep, tenant_id: TenantDep) -> Response:
    """One chart of the Experiment as SVG, drawn by the reports' chart code (404 naming the charts there are)."""
    row = benchmarks.get(session, experiment_id, tenant_id=tenant_id)
    # The whole Experiment: a curve rescores the retrieved chunks, and a 404 lists every chart there is.
    return SvgResponse(render_chart(benchmarks.experiment_dict(session, row), name))


@router.delete("/benchmarks/{experiment_id}", status_code=204, responses=_ERRORS)
def delete_benchmark(experiment_id: str, session: SessionDep, tenant_id: TenantDep) -> Response:
    benchmarks.delete(session, experiment_id, tenant_id=tenant_id)
    return Response(status_code=204)


@router.get("/experiments", response_model=list[ExperimentSummary])
def list_experiments(
    session: SessionDep,
    tenant_id: TenantDep,
    document_id: str | None = Query(None, description="One-document Experiments of this document"),
    corpus: str | None = Query(None, description="Corpus Experiments of this corpus (name or id)"),
    corpus_model_id: str | None = Query(None, description="Experiments with this Corpus model (on any axis)"),
    boundary_model_id: str | None = None,
    strategy: str | None = None,
    neighbor_prev: int | None = Query(None, ge=0, le=MAX_NEIGHBORS),
    neighbor_next: int | None = Query(None, ge=0, le=MAX_NEIGHBORS),
    status_: str | None = Query(None, alias="status"),
    limit: int = Query(100, ge=1, le=1000),
) -> list[ExperimentSummary]:
    """Experiments newest first, filtered as the Decision Board needs."""
    return benchmarks.get_all(
        session, tenant_id=tenant_id, document_id=document_id, corpus=corpus, corpus_model_id=corpus_model_id,
        boundary_model_id=boundary_model_id, strategy=strategy, neighbor_prev=neighbor_prev,
        neighbor_next=neighbor_next, status=status_, limit=limit,
    )  # fmt: skip


@router.get("/experiments/compare", response_model=CompareOut, responses=_ERRORS)
def compare_experiments(a: str, b: str, session: SessionDep, tenant_id: TenantDep) -> CompareOut:
    """Two Experiments side by side, with warnings when they differ in document, models or neighbours."""
    return benchmarks.compare(session, a, b, tenant_id=tenant_id)


@router.post("/admin/cost-estimate", response_model=CostEstimateOut, responses=_ERRORS, tags=["admin"])
def cost_estimate(
    body: BenchmarkIn, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep
) -> CostEstimateOut:
    """The same estimate as ``POST /benchmarks {dry_run: true}`` (docs/api.md)."""
    return benchmarks.estimate(session, settings, body, tenant_id=tenant_id)
