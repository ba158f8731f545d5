"""Serves the dashboard: ``/app`` is the page, ``/app/static/*`` its scripts and styles (no CDN, no build step)."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from chunkbench import __version__, limits

STATIC_DIR = Path(__file__).parent / "static"
LIMITS = {
    "max_top_k": limits.MAX_TOP_K,
    "max_candidate_k": limits.MAX_CANDIDATE_K,
    "max_neighbors": limits.MAX_NEIGHBORS,
    "max_question_chars": limits.MAX_QUESTION_CHARS,
}

router = APIRouter(include_in_schema=False)


@router.get("/app", response_class=HTMLResponse)
def dashboard() -> HTMLResponse:
    # The version in asset URLs makes a browser fetch new scripts after an upgrade instead of a stale cache.
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8").replace("{{version}}", __version__)
    # The bounds the API enforces, written once in chunkbench.limits: the forms read them instead of copies.
    page = page.replace("{{limits}}", json.dumps(LIMITS))
    return HTMLResponse(page, headers={"Cache-Control": "no-cache"})


@router.get("/app/", include_in_schema=False)
def dashboard_slash() -> RedirectResponse:
    return RedirectResponse("/app")


def mount_dashboard(app: FastAPI) -> None:
    """Add the dashboard page and its static files to ``app``."""
    app.include_router(router)
    app.mount("/app/static", StaticFiles(directory=STATIC_DIR), name="dashboard-static")
