"""Every GET route that answers JSON declares a typed response model: clients (the dashboard among them) and the
OpenAPI schema see the fields it returns, and FastAPI checks them."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi.responses import HTMLResponse, PlainTextResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.routing import BaseRoute

from chunkbench.app import create_app
from chunkbench.benchmarking.routes import SvgResponse
from chunkbench.config import Settings

# Answers that are not JSON (a page, a file's text, a chart) have no response model to declare.
NOT_JSON = (HTMLResponse, PlainTextResponse, SvgResponse)


def _api_routes(routes: list[BaseRoute]) -> Iterator[APIRoute]:
    """Every APIRoute, also those of included routers (FastAPI ≥ 0.16x keeps them behind ``original_router``)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _api_routes(included.routes)


def _typed(annotation: Any) -> bool:
    """A pydantic model, or a list, union or annotation of typed ones: not a bare dict or Any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _typed(get_args(annotation)[0])
    if origin in (list, Union, types.UnionType):
        return all(_typed(argument) for argument in get_args(annotation))
    return False


def test_every_json_get_route_has_a_typed_response_model(tmp_path) -> None:
    app = create_app(Settings(_env_file=None, data_dir=tmp_path / "data"))
    routes = [route for route in _api_routes(app.routes) if "GET" in route.methods and route.include_in_schema]
    json_routes = [
        route
        for route in routes
        if not (isinstance(route.response_class, type) and issubclass(route.response_class, NOT_JSON))
    ]
    assert len(json_routes) >= 20  # the walk found the routers' routes
    untyped = [f"GET {route.path} ({route.endpoint.__module__})" for route in json_routes
               if not _typed(route.response_model)]  # fmt: skip
    assert untyped == []


def test_the_check_refuses_a_bare_dict() -> None:
    class Out(BaseModel):
        a: int

    assert _typed(Out) and _typed(list[Out]) and _typed(Out | list[Out])
    assert not _typed(dict[str, Any]) and not _typed(dict[str, str]) and not _typed(None)
