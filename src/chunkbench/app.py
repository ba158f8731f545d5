"""The FastAPI application: routers, error mapping, request logging."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy.exc import DBAPIError, IntegrityError

from chunkbench import __version__
from chunkbench.admin.routes import router as admin_router
from chunkbench.benchmarking import runner as benchmarks
from chunkbench.benchmarking.routes import router as benchmarks_router
from chunkbench.chunking import service as processing
from chunkbench.chunking.routes import router as processing_router
from chunkbench.config import Settings, get_settings
from chunkbench.documents.routes import router as documents_router
from chunkbench.errors import ChunkbenchError
from chunkbench.evaluation.routes import router as questions_router
from chunkbench.jobs import service as jobs
from chunkbench.jobs.routes import router as jobs_router
from chunkbench.retrieval.routes import chat_router, serving_router
from chunkbench.retrieval.routes import router as queries_router
from chunkbench.storage.db import Database, is_connection_error, unavailable
from chunkbench.storage.vectors import close_vector_stores
from chunkbench.web import routes as web

logger = logging.getLogger("chunkbench")


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; the database is opened and migrated when the app starts."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        database = Database.from_settings(settings)
        interrupted = jobs.fail_interrupted(database) + processing.fail_interrupted(database)
        if interrupted:
            logger.warning("%d job(s)/document(s) of a previous run were interrupted: marked failed", interrupted)
        if stopped := benchmarks.fail_interrupted(database):
            logger.warning("%d benchmark(s) stopped mid-run: marked interrupted (resume them)", stopped)
        app.state.database = database
        app.state.jobs = jobs.JobRunner(database)
        try:
            yield
        finally:
            app.state.jobs.shutdown(wait=True)
            close_vector_stores()
            database.dispose()

    app = FastAPI(
        title="chunkbench",
        version=__version__,
        description="Which way of chunking your documents answers best, at what cost.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.include_router(documents_router)
    app.include_router(processing_router)
    app.include_router(jobs_router)
    app.include_router(admin_router)
    app.include_router(questions_router)
    app.include_router(queries_router)
    app.include_router(chat_router)
    app.include_router(serving_router)
    app.include_router(benchmarks_router)
    web.mount(app)
    _install_error_handlers(app)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/app")

    @app.get("/health", tags=["health"])
    def health(request: Request) -> dict[str, str]:
        """Liveness plus a database ping."""
        database_ok = request.app.state.database.ping()
        return {"status": "ok" if database_ok else "degraded", "version": __version__}

    return app


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ChunkbenchError)
    async def domain_error(_request: Request, exc: ChunkbenchError) -> JSONResponse:
        return JSONResponse(status_code=exc.status_code, content=exc.to_dict())

    @app.exception_handler(IntegrityError)
    async def integrity_error(_request: Request, exc: IntegrityError) -> JSONResponse:
        # Two writers raced on the same row (e.g. the same filename uploaded twice at once).
        logger.warning("integrity error: %s", exc.orig)
        return JSONResponse(
            status_code=409,
            content={"error": "conflict", "message": "A concurrent change touched the same record; retry."},
        )

    @app.exception_handler(DBAPIError)
    async def database_error(request: Request, exc: DBAPIError) -> JSONResponse:
        if is_connection_error(exc):
            # The database server is down or unreachable: a 503 naming it, not a traceback.
            logger.error("database unavailable: %s", exc.orig)
            error = unavailable(request.app.state.settings.sqlalchemy_url, exc)
            return JSONResponse(status_code=error.status_code, content=error.to_dict())
        return await unexpected_error(request, exc)

    @app.exception_handler(Exception)
    async def unexpected_error(_request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error", exc_info=exc)
        return JSONResponse(
            status_code=500,
            content={"error": "internal_error", "message": "Unexpected server error; see the server log."},
        )
