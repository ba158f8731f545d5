"""The FastAPI application: routers, error mapping, request ids, metrics and access logging."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.utils import is_body_allowed_for_status_code
from sqlalchemy.exc import DBAPIError, IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException

from chunkbench import __version__, job_kinds
from chunkbench.admin.routes import router as admin_router
from chunkbench.benchmarking.routes import router as benchmarks_router
from chunkbench.config import Settings, get_settings
from chunkbench.corpora.routes import router as corpora_router
from chunkbench.documents.routes import router as documents_router
from chunkbench.errors import ChunkbenchError, RateLimitedError
from chunkbench.evaluation.routes import router as questions_router
from chunkbench.extensions import load_extensions
from chunkbench.guard.body_limit import MULTIPART_OVERHEAD_BYTES, BodySizeLimit
from chunkbench.indexing.routes import router as processing_router
from chunkbench.jobs.queue import make_runner
from chunkbench.jobs.routes import router as jobs_router
from chunkbench.llm.local_server import start_for_app
from chunkbench.metrics import RATE_LIMITED
from chunkbench.observability.middleware import ObservabilityMiddleware
from chunkbench.observability.request_id import REQUEST_ID_HEADER, request_id_of
from chunkbench.observability.routes import router as observability_router
from chunkbench.rag import guarded_query
from chunkbench.rag.routes import chat_router
from chunkbench.rag.routes import router as rag_router
from chunkbench.recovery import recover_dead_owners
from chunkbench.retrieval.routes import router as queries_router
from chunkbench.retrieval.routes import serving_router
from chunkbench.schemas import HealthOut
from chunkbench.storage.db import Database, is_connection_error, unavailable
from chunkbench.storage.migration import legacy_pending
from chunkbench.storage.vectors import close_vector_stores, get_vector_store
from chunkbench.tenants.auth import authenticate
from chunkbench.web.routes import mount_dashboard

logger = logging.getLogger("chunkbench")


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; the database is opened and migrated when the app starts."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # First the strategies (built-in, installed packages', plugins, variants), so a request may name one before
        # anything looks a strategy up; a broken one (PluginError, ChunkingError naming it) stops the start before
        # anything opens.
        loaded, defined = load_extensions(settings)
        if loaded:
            logger.info("loaded %d plugin(s) from %s: %s", len(loaded), settings.plugins_dir, [p.name for p in loaded])
        if defined:
            logger.info("strategy variants from %s: %s", settings.resolved_strategies_file, [c.name for c in defined])
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        # CHUNKBENCH_LLM_MODEL_PATH: llama.cpp in this process, pointed at by the LLM settings, stopped with the app.
        llm_server = await run_in_threadpool(start_for_app, settings)
        database = Database.from_settings(settings)
        recover_dead_owners(database, settings)
        app.state.database = database
        if not settings.qdrant_url and legacy_pending(settings):
            # Old embedded data (qdrant-client's local mode) becomes Qdrant Edge before the first request.
            logger.warning("migrating %s to Qdrant Edge at %s", settings.qdrant_legacy_path, settings.qdrant_path)
            app.state.vector_store = await run_in_threadpool(get_vector_store, settings, progress=_log_migration())
        # The job kinds this process runs, then its runner: the task queue on PostgreSQL (with a worker here unless
        # CHUNKBENCH_WORKER=off), the job thread on SQLite.
        job_kinds.register_all()
        app.state.jobs = make_runner(database, settings, worker=settings.worker, recover=job_kinds.recover_worker)
        try:
            yield
        finally:
            app.state.jobs.shutdown(wait=True)
            close_vector_stores()
            database.dispose()
            if llm_server is not None:
                llm_server.stop()

    app = FastAPI(
        title="chunkbench",
        version=__version__,
        description="Which way of chunking your documents answers best, at what cost.",
        lifespan=lifespan,
        # Every route of every router needs a key with CHUNKBENCH_AUTH=on, unless listed in auth.PUBLIC_PATHS.
        dependencies=[Depends(authenticate)],
    )
    app.state.settings = settings
    app.state.semantic_cache = guarded_query.build_cache(settings)
    app.include_router(documents_router)
    app.include_router(corpora_router)
    app.include_router(processing_router)
    app.include_router(jobs_router)
    app.include_router(admin_router)
    app.include_router(questions_router)
    app.include_router(queries_router)
    app.include_router(chat_router)
    app.include_router(serving_router)
    app.include_router(benchmarks_router)
    app.include_router(observability_router)
    app.include_router(rag_router)
    mount_dashboard(app)
    _install_error_handlers(app)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=max(settings.max_upload_bytes, settings.max_question_file_bytes) + MULTIPART_OVERHEAD_BYTES,
        limit_mb=settings.max_upload_mb,
    )
    # Added last = outermost of the app's middleware: it sees every response, whatever answers it.
    app.add_middleware(ObservabilityMiddleware)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/app")

    @app.get("/health", response_model=HealthOut, tags=["health"])
    def health(request: Request) -> HealthOut:
        """Liveness plus a database ping."""
        database_ok = request.app.state.database.ping()
        return HealthOut(status="ok" if database_ok else "degraded", version=__version__)

    return app


def _log_migration() -> Any:
    """A migration progress callback that logs every tenth of the way."""
    logged = [-1]

    def report(done: int, total: int, collection: str) -> None:
        tenth = done * 10 // total if total else 10
        if tenth > logged[0]:
            logged[0] = tenth
            logger.warning("migration to Qdrant Edge: %d of %d points (%s)", done, total, collection)

    return report


def _error_response(request: Request, status_code: int, body: dict[str, Any], code: str) -> JSONResponse:
    """An error body carrying the request id; the code names the error in the metrics."""
    request.state.error_code = code
    return JSONResponse(status_code=status_code, content={**body, "request_id": request_id_of(request)})


def _status_code_name(status_code: int) -> str:
    """``not_found`` for 404, ``method_not_allowed`` for 405: the error code of a bare HTTP status."""
    try:
        phrase = HTTPStatus(status_code).phrase
    except ValueError:
        return f"http_{status_code}"
    return phrase.lower().replace(" ", "_").replace("-", "_").replace("'", "")


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ChunkbenchError)
    async def domain_error(request: Request, exc: ChunkbenchError) -> JSONResponse:
        if isinstance(exc, RateLimitedError):  # counted where the refusal becomes a 429
            RATE_LIMITED.inc()
        response = _error_response(request, exc.status_code, exc.to_dict(), exc.code)
        if exc.headers:  # WWW-Authenticate on a 401, Retry-After on a 429
            response.headers.update(exc.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own body (``detail``: the list of errors), plus the request id.
        return _error_response(request, 422, {"detail": jsonable_encoder(exc.errors())}, "validation_error")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # Unknown paths (404), wrong methods (405) and HTTPExceptions raised by dependencies.
        code = _status_code_name(exc.status_code)
        if not is_body_allowed_for_status_code(exc.status_code):
            request.state.error_code = code
            return Response(status_code=exc.status_code, headers=exc.headers)
        response = _error_response(request, exc.status_code, {"detail": exc.detail}, code)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    @app.exception_handler(IntegrityError)
    async def integrity_error(request: Request, exc: IntegrityError) -> JSONResponse:
        # Two writers raced on the same row (e.g. the same filename uploaded twice at once).
        logger.warning("integrity error: %s", exc.orig)
        body = {"error": "conflict", "message": "A concurrent change touched the same record; retry."}
        return _error_response(request, 409, body, "conflict")

    @app.exception_handler(DBAPIError)
    async def database_error(request: Request, exc: DBAPIError) -> JSONResponse:
        if is_connection_error(exc):
            # The database server is down or unreachable: a 503 naming it, not a traceback.
            logger.error("database unavailable: %s", exc.orig)
            error = unavailable(request.app.state.settings.sqlalchemy_url, exc)
            return JSONResponse(status_code=error.status_code, content=error.to_dict())
        return await unexpected_error(request, exc)

    @app.exception_handler(Exception)
    async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
        # Starlette answers unhandled errors outside every middleware: the request id comes from the request
        # state (the contextvar is already reset), and the header is set here.
        request_id = request_id_of(request)
        logger.exception("unhandled error", exc_info=exc, extra={"request_id": request_id})
        return JSONResponse(
            status_code=500,
            content={"error": "internal_error", "message": "Unexpected server error; see the server log.",
                     "request_id": request_id},
            headers={REQUEST_ID_HEADER: request_id} if request_id else None,
        )  # fmt: skip
