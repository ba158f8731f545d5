"""Jobs API: poll the progress and result of background work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query, Request, Response, status
from pydantic import BaseModel

from chunkbench.dependencies import SessionDep, TenantDep
from chunkbench.jobs import execution
from chunkbench.jobs.schemas import JobAttemptOut, JobOut, JobTaskOut
from chunkbench.schemas import ErrorOut
from chunkbench.storage.schema import JobRow

router = APIRouter(prefix="/jobs", tags=["jobs"])


def run_or_submit(
    request: Request,
    response: Response,
    /,
    *,
    wait: bool,
    work: Callable[[], Any],
    accepted: Callable[[JobRow], BaseModel],
    **job: Any,
) -> Any:
    """The one way a route runs work now or as a job: ``work()`` here (``wait``: 200 with its result), else a job
    submitted with ``job`` (kind, tenant, payload …) and 202 with ``accepted(job)``, the body that says where to poll
    it. The job's worker plans again from the payload, so both run the same work."""
    if wait:
        response.status_code = status.HTTP_200_OK
        return work()
    return accepted(request.app.state.jobs.submit(**job))


@router.get("/{job_id}", response_model=JobOut, responses={404: {"model": ErrorOut}})
def get_job(job_id: str, session: SessionDep, tenant_id: TenantDep) -> JobOut:
    """Status, progress (0–1), message, the result or error once finished, its tasks and its history: every attempt
    of every task (task, worker, start, end, outcome)."""
    job = JobOut.model_validate(execution.get(session, job_id, tenant_id=tenant_id))
    job.tasks = [JobTaskOut.model_validate(task) for task in execution.tasks_of(session, job_id)]
    job.attempts = [JobAttemptOut.model_validate(attempt) for attempt in execution.attempts(session, job_id)]
    return job


@router.post(
    "/{job_id}/cancel",
    response_model=JobOut,
    status_code=status.HTTP_202_ACCEPTED,
    responses={404: {"model": ErrorOut}, 409: {"model": ErrorOut}},
)
def cancel_job(job_id: str, request: Request, tenant_id: TenantDep) -> JobOut:
    """Stop a queued or running job at its next cell, document or strategy (``cancelling`` until then, then
    ``cancelled``); what it finished is kept and running it again (or resuming the Experiment) does the rest."""
    return JobOut.model_validate(request.app.state.jobs.cancel(job_id, tenant_id=tenant_id))


@router.get("", response_model=list[JobOut])
def list_jobs(
    session: SessionDep,
    tenant_id: TenantDep,
    document_id: str | None = Query(None),
    limit: int = Query(50, ge=1, le=500),
) -> list[JobOut]:
    """Recent jobs, newest first."""
    rows = execution.get_all(session, tenant_id=tenant_id, document_id=document_id, limit=limit)
    return [JobOut.model_validate(row) for row in rows]
