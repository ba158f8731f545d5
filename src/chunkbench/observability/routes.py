"""``GET /metrics`` (Prometheus text format) and the liveness and readiness probes."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from chunkbench import __version__
from chunkbench.dependencies import DatabaseDep, SettingsDep
from chunkbench.observability import readiness
from chunkbench.observability.schemas import LivenessOut, ReadinessOut

router = APIRouter(tags=["health"])


@router.get("/metrics", include_in_schema=False)
async def metrics(database: DatabaseDep, settings: SettingsDep) -> Response:
    """Every chunkbench metric of this process (``chunkbench.metrics``) plus the process's own, and
    the job queue's figures (read from the database now)."""
    await run_in_threadpool(readiness.update_queue_gauges, database, settings)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


@router.get("/health/live", response_model=LivenessOut)
async def live() -> LivenessOut:
    """Liveness: the process answers; no dependency is touched, so this is always 200."""
    return LivenessOut(version=__version__)


@router.get("/health/ready", response_model=ReadinessOut, responses={503: {"model": ReadinessOut}})
async def ready(request: Request, database: DatabaseDep, settings: SettingsDep) -> JSONResponse:
    """Readiness: the database answers ``SELECT 1`` and the vector store answers; 503 names the failing parts."""
    # Pings block (a database connect can wait for a timeout): off the event loop.
    result = await run_in_threadpool(readiness.readiness, database, settings)
    if result.failing:
        request.state.error_code = "not_ready"
    return JSONResponse(result.model_dump(mode="json"), status_code=503 if result.failing else 200)
