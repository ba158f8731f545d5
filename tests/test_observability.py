"""Observability through the real app: /metrics per route template, X-Request-ID on every response, JSON logs,
liveness and readiness (against a really dropped database and an unreachable Qdrant), LLM token counts."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text

from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.llm.client import LlmClient
from chunkbench.observability.logs import JsonFormatter, TextFormatter, configure_logging, resolve_log_format
from fake_openai import Reply, running_fake_openai
from netutil import free_port
from real_llm import RecordingProxy

POSTGRES_URL = os.environ.get("CHUNKBENCH_TEST_POSTGRES_URL", "postgresql+psycopg://ci:ci@127.0.0.1:5432/ci")
DOCUMENT_ROUTE = "/documents/{document_id}"


def samples(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of ``GET /metrics``, keyed by name and labels, parsed with prometheus_client's own parser."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(snapshot: dict, name: str, **labels: str) -> float:
    return snapshot.get((name, frozenset(labels.items())), 0.0)


def upload(client: TestClient) -> str:
    response = client.post("/documents", files={"file": ("notes.md", b"# Notes\n\nSome text to keep.")})
    assert response.status_code == 201, response.text
    return response.json()["document"]["id"]


# ----------------------------------------------------------------------------------------------------- metrics


def test_metrics_count_a_document_route_under_its_template_and_a_404_as_an_error(client: TestClient) -> None:
    document_id = upload(client)
    before = samples(client)

    assert client.get(f"/documents/{document_id}").status_code == 200
    assert client.get("/documents/no-such-document").status_code == 404
    assert client.get("/documents/no-such-document").status_code == 404

    after = samples(client)
    requests = "chunkbench_http_requests_total"
    ok = {"route": DOCUMENT_ROUTE, "method": "GET", "status": "200"}
    missing = {"route": DOCUMENT_ROUTE, "method": "GET", "status": "404"}
    assert value(after, requests, **ok) - value(before, requests, **ok) == 1
    assert value(after, requests, **missing) - value(before, requests, **missing) == 2
    errors = {"route": DOCUMENT_ROUTE, "method": "GET", "error": "document_not_found"}
    assert (
        value(after, "chunkbench_http_errors_total", **errors) - value(before, "chunkbench_http_errors_total", **errors)
        == 2
    )
    # The 200 is not an error, and no raw path became a label.
    assert not any(dict(labels).get("error") in {"2xx", "ok"} for _, labels in after)
    assert not any(document_id in str(labels) or "no-such-document" in str(labels) for _, labels in after)


def test_latency_histogram_counts_each_request_in_its_bucket_and_every_one_above(client: TestClient) -> None:
    name = "chunkbench_http_request_duration_seconds"
    labels = {"route": "/health/live", "method": "GET"}
    before = samples(client)
    assert client.get("/health/live").status_code == 200
    after = samples(client)

    assert value(after, f"{name}_count", **labels) - value(before, f"{name}_count", **labels) == 1
    assert value(after, f"{name}_sum", **labels) > value(before, f"{name}_sum", **labels)
    bounds = sorted(
        float(dict(key)["le"]) for metric, key in after if metric == f"{name}_bucket" and set(labels.items()) <= key
    )
    assert len(bounds) == 14  # the 13 LATENCY_BUCKETS and +Inf
    moved = [
        value(after, f"{name}_bucket", **labels, le=_le(b)) - value(before, f"{name}_bucket", **labels, le=_le(b))
        for b in bounds
    ]
    # Cumulative buckets: 0 below the request's duration, 1 from its bucket up to +Inf.
    assert moved[-1] == 1
    assert all(step in (0, 1) for step in moved)
    assert moved == sorted(moved)


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


def test_unknown_paths_share_one_label_and_errors_without_a_code_use_their_status_name(client: TestClient) -> None:
    before = samples(client)
    assert client.get("/no/such/path/12345").status_code == 404
    assert client.delete("/health/live").status_code == 405
    after = samples(client)

    unmatched = {"route": "unmatched", "method": "GET", "error": "not_found"}
    assert (
        value(after, "chunkbench_http_errors_total", **unmatched)
        - value(before, "chunkbench_http_errors_total", **unmatched)
        == 1
    )
    wrong_method = {"route": "/health/live", "method": "DELETE", "error": "method_not_allowed"}
    assert (
        value(after, "chunkbench_http_errors_total", **wrong_method)
        == value(before, "chunkbench_http_errors_total", **wrong_method) + 1
    )
    assert not any("12345" in str(labels) for _, labels in after)
    # Static files are counted under their mount, not per file.
    assert client.get("/app/static/app.js").status_code == 200
    static = {"route": "/app/static/{path}", "method": "GET", "status": "200"}
    assert value(samples(client), "chunkbench_http_requests_total", **static) >= 1


def test_metrics_is_not_in_the_openapi_schema_and_health_probes_are(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "/metrics" not in paths
    assert {"/health", "/health/live", "/health/ready"} <= set(paths)


# -------------------------------------------------------------------------------------------------- request id


def test_request_id_is_echoed_when_well_formed_and_generated_otherwise(client: TestClient) -> None:
    sent = "trace-7f3a:Root=1-abc/def+x"
    assert client.get("/health/live", headers={"X-Request-ID": sent}).headers["x-request-id"] == sent

    generated = [client.get("/health/live").headers["x-request-id"] for _ in range(2)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", rid) for rid in generated)
    assert generated[0] != generated[1]

    for malformed in ("a" * 129, "has space", 'quote"', "semi;colon", "new\tline"):
        echoed = client.get("/health/live", headers={"X-Request-ID": malformed}).headers["x-request-id"]
        assert echoed != malformed
        assert re.fullmatch(r"[0-9a-f]{32}", echoed)
    assert client.get("/health/live", headers={"X-Request-ID": "b" * 128}).headers["x-request-id"] == "b" * 128


def _app_with_failing_route(settings: Settings) -> FastAPI:
    app = create_app(settings)

    def explode() -> None:
        raise RuntimeError("a bug in a route")

    def chatty() -> dict[str, str]:
        logging.getLogger("chunkbench.tests").warning("inside the route")
        return {"ok": "yes"}

    app.add_api_route("/test/explode", explode)
    app.add_api_route("/test/chatty", chatty)
    return app


def test_error_bodies_carry_the_request_id_of_their_response(settings: Settings) -> None:
    with TestClient(_app_with_failing_route(settings), raise_server_exceptions=False) as client:
        not_found = client.get("/documents/missing", headers={"X-Request-ID": "req-404"})
        assert not_found.status_code == 404
        assert not_found.json()["error"] == "document_not_found"
        assert not_found.json()["request_id"] == not_found.headers["x-request-id"] == "req-404"

        invalid = client.get("/documents", params={"limit": "many"})
        assert invalid.status_code == 422
        assert invalid.json()["detail"][0]["loc"] == ["query", "limit"]
        assert invalid.json()["request_id"] == invalid.headers["x-request-id"]

        unknown = client.get("/nowhere")
        assert unknown.status_code == 404
        assert unknown.json() == {"detail": "Not Found", "request_id": unknown.headers["x-request-id"]}

        before = samples(client)
        crashed = client.get("/test/explode", headers={"X-Request-ID": "req-500"})
        assert crashed.status_code == 500
        assert crashed.json() == {
            "error": "internal_error",
            "message": "Unexpected server error; see the server log.",
            "request_id": "req-500",
        }
        assert crashed.headers["x-request-id"] == "req-500"
        labels = {"route": "/test/explode", "method": "GET", "error": "internal_error"}
        assert (
            value(samples(client), "chunkbench_http_errors_total", **labels)
            == value(before, "chunkbench_http_errors_total", **labels) + 1
        )

        static = client.get("/app/static/app.js")
        assert static.status_code == 200 and re.fullmatch(r"[0-9a-f]{32}", static.headers["x-request-id"])


# -------------------------------------------------------------------------------------------------------- logs


@pytest.fixture
def json_log_lines() -> Iterator[io.StringIO]:
    """Everything the ``chunkbench`` loggers write at INFO and above, through the JSON formatter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("chunkbench")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_log_lines_parse_and_carry_the_request_id(settings: Settings, json_log_lines: io.StringIO) -> None:
    with TestClient(_app_with_failing_route(settings), raise_server_exceptions=False) as client:
        assert client.get("/test/chatty", headers={"X-Request-ID": "req-chatty"}).status_code == 200
        assert client.get("/documents/missing", headers={"X-Request-ID": "req-missing"}).status_code == 404
        assert client.get("/test/explode", headers={"X-Request-ID": "req-crash"}).status_code == 500
        assert client.get("/health/live", headers={"X-Request-ID": "req-probe"}).status_code == 200

    lines = _lines(json_log_lines)
    by_request: dict[str, list[dict]] = {}
    for line in lines:
        assert {"ts", "level", "logger", "message", "request_id"} <= set(line)
        by_request.setdefault(line["request_id"], []).append(line)

    # A line written inside a sync route (a thread-pool thread) still knows its request.
    inside = [line for line in by_request["req-chatty"] if line["logger"] == "chunkbench.tests"]
    assert inside == [
        {"ts": inside[0]["ts"], "level": "WARNING", "logger": "chunkbench.tests", "message": "inside the route",
         "request_id": "req-chatty"}
    ]  # fmt: skip
    access = {line["request_id"]: line for line in lines if line["logger"] == "chunkbench.access"}
    assert access["req-chatty"]["route"] == "/test/chatty"
    assert access["req-chatty"]["status"] == 200 and access["req-chatty"]["method"] == "GET"
    assert access["req-chatty"]["message"].startswith("GET /test/chatty 200 ")
    assert isinstance(access["req-chatty"]["duration_ms"], float)
    assert access["req-missing"] | {"ts": None, "duration_ms": None, "message": None} == {
        "ts": None, "level": "INFO", "logger": "chunkbench.access", "message": None, "request_id": "req-missing",
        "method": "GET", "route": DOCUMENT_ROUTE, "path": "/documents/missing", "status": 404,
        "duration_ms": None, "error": "document_not_found",
    }  # fmt: skip
    assert access["req-crash"]["level"] == "ERROR" and access["req-crash"]["status"] == 500
    # The traceback of the 500 is logged once, with the request id and exc_info.
    crash = [line for line in by_request["req-crash"] if line["message"] == "unhandled error"]
    assert len(crash) == 1 and "RuntimeError: a bug in a route" in crash[0]["exc_info"]
    # Probes are only logged at DEBUG.
    assert "req-probe" not in access


def test_formats_resolve_and_configure_logging_installs_one_handler() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert resolve_log_format("auto", Terminal()) == "text"
    assert resolve_log_format("auto", io.StringIO()) == "json"
    assert resolve_log_format("text", io.StringIO()) == "text"
    assert resolve_log_format("json", Terminal()) == "json"

    root, app_logger = logging.getLogger(), logging.getLogger("chunkbench")
    saved = list(root.handlers), root.level, app_logger.level, logging.getLogger("uvicorn").level
    try:
        assert configure_logging("warning", "json") == "json"
        assert configure_logging("debug", "text") == "text"
        ours = [h for h in root.handlers if h.get_name() == "chunkbench"]
        assert len(ours) == 1 and isinstance(ours[0].formatter, TextFormatter)
        assert app_logger.level == logging.DEBUG and logging.getLogger("uvicorn").level == logging.DEBUG
        assert root.level == logging.WARNING  # libraries stay quiet
        with pytest.raises(ValueError, match="Unknown log level 'chatty'"):
            configure_logging("chatty", "text")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        app_logger.setLevel(saved[2])
        logging.getLogger("uvicorn").setLevel(saved[3])

    record = logging.LogRecord("chunkbench.x", logging.INFO, __file__, 1, "hello %s", ("you",), None)
    record.request_id = "rid-1"
    assert TextFormatter().format(record).endswith("INFO    chunkbench.x [rid-1] hello you")


@pytest.mark.slow
def test_serve_with_json_logs_writes_only_json_lines_with_one_access_line_per_request(
    tmp_path: Path, database_url: str
) -> None:
    port = free_port()
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(tmp_path / "data"), "CHUNKBENCH_PORT": str(port)}
    process = subprocess.Popen(
        [sys.executable, "-m", "chunkbench", "serve", "--log-format", "json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read().decode()
            try:
                if httpx.get(f"{base}/health/live", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "server did not come up"
                time.sleep(0.2)
        response = httpx.get(f"{base}/documents/abc", headers={"X-Request-ID": "served-1"})
        assert response.status_code == 404 and response.headers["x-request-id"] == "served-1"
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)

    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.strip()]
    served = [line for line in lines if line["request_id"] == "served-1"]
    assert [(line["logger"], line["route"], line["status"]) for line in served] == [
        ("chunkbench.access", DOCUMENT_ROUTE, 404)
    ]
    # uvicorn's own lines come through the same JSON handler, without their terminal-colour copy; its access
    # log is off.
    started = [line for line in lines if line["logger"] == "uvicorn.error" and "Uvicorn running" in line["message"]]
    assert len(started) == 1 and "color_message" not in started[0]
    assert not any(line["logger"] == "uvicorn.access" for line in lines)


# ---------------------------------------------------------------------------------------------- live and ready


def test_liveness_and_readiness_on_a_healthy_app(client: TestClient) -> None:
    live = client.get("/health/live")
    assert live.status_code == 200 and live.json()["status"] == "alive"
    ready = client.get("/health/ready")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready" and body["failing"] == []
    assert body["database"]["ok"] and body["vector_store"]["ok"]
    assert body["llm"] == {"ok": True, "detail": "not configured: answers are extractive"}
    # The old /health keeps its shape.
    assert client.get("/health").json()["status"] == "ok"


def test_readiness_reports_a_configured_llm_without_probing_it(settings: Settings) -> None:
    with running_fake_openai() as server:
        settings.llm_base_url, settings.llm_model = server.url, "fake-model"
        with TestClient(create_app(settings)) as client:
            body = client.get("/health/ready").json()
        assert body["llm"] == {"ok": True, "detail": "configured: model 'fake-model' (not probed)"}
        assert server.requests == []


def test_readiness_is_503_when_the_sqlite_database_is_gone(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "db"
    settings.database_url = f"sqlite:///{folder / 'chunkbench.db'}"
    with TestClient(create_app(settings)) as client:
        assert client.get("/health/ready").status_code == 200
        before = samples(client)
        # Drop the database for real: close its connections, delete it, and put a file where its folder was.
        client.app.state.database.dispose()
        shutil.rmtree(folder)
        folder.write_text("not a folder")

        ready = client.get("/health/ready")
        assert ready.status_code == 503
        body = ready.json()
        assert body["status"] == "not_ready" and body["failing"] == ["database"]
        assert body["database"]["ok"] is False
        assert body["database"]["detail"].startswith("sqlite: OperationalError: ")
        assert "unable to open database file" in body["database"]["detail"]
        assert body["vector_store"]["ok"] is True
        # Liveness does not touch the database.
        assert client.get("/health/live").status_code == 200
        labels = {"route": "/health/ready", "method": "GET", "error": "not_ready"}
        assert (
            value(samples(client), "chunkbench_http_errors_total", **labels)
            == value(before, "chunkbench_http_errors_total", **labels) + 1
        )


def _postgres_or_skip() -> None:
    try:
        with create_engine(POSTGRES_URL).connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:  # no server here: the SQLite variant still runs
        pytest.skip(f"PostgreSQL at {POSTGRES_URL} is not reachable: {exc}")


@pytest.mark.slow
def test_readiness_is_503_when_the_postgresql_database_is_dropped(settings: Settings) -> None:
    _postgres_or_skip()
    name = f"chunkbench_ready_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        settings.database_url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
        with TestClient(create_app(settings)) as client:
            assert client.get("/health/ready").status_code == 200
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
            ready = client.get("/health/ready")
            assert ready.status_code == 503
            body = ready.json()
            assert body["failing"] == ["database"]
            assert body["database"]["detail"].startswith("postgresql: OperationalError: ")
            assert name in body["database"]["detail"]
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_readiness_is_503_when_the_qdrant_server_is_unreachable(settings: Settings) -> None:
    settings.qdrant_url = f"http://127.0.0.1:{free_port()}"
    settings.qdrant_timeout_s = 2
    with TestClient(create_app(settings)) as client:
        ready = client.get("/health/ready")
    assert ready.status_code == 503
    body = ready.json()
    assert body["failing"] == ["vector_store"]
    assert body["vector_store"]["detail"].startswith(f"Qdrant ({settings.qdrant_url}): ")
    assert body["database"]["ok"] is True


# ---------------------------------------------------------------------------------------------------- LLM tokens


def _tokens(kind: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("chunkbench_llm_tokens_total", {"kind": kind}) or 0.0


def test_llm_token_usage_is_counted_by_kind(tmp_path: Path, real_llm: RecordingProxy) -> None:
    settings = Settings(
        _env_file=None, data_dir=tmp_path / "data", llm_base_url=real_llm.url, llm_model=real_llm.model,
        llm_max_tokens=32, llm_max_retries=0,
    )  # fmt: skip
    client = LlmClient(settings)
    # Each kind rises by exactly what the server counted, reply by reply.
    for question in ("Name a colour.", "Name a fruit, in one word."):
        prompt, completion = _tokens("prompt"), _tokens("completion")
        result = client.chat([{"role": "user", "content": question}])
        usage = real_llm.chats[-1].usage
        assert (result.prompt_tokens, result.completion_tokens) == usage
        assert (_tokens("prompt") - prompt, _tokens("completion") - completion) == usage
    assert len(real_llm.chats) == 2


def test_a_reply_without_usage_counts_no_tokens_and_an_empty_answer_still_counts(tmp_path: Path) -> None:
    with running_fake_openai() as server:
        settings = Settings(
            _env_file=None, data_dir=tmp_path / "data", llm_base_url=server.url, llm_model="fake-model",
            llm_max_retries=0,
        )  # fmt: skip
        client = LlmClient(settings)
        prompt, completion = _tokens("prompt"), _tokens("completion")
        server.script(Reply(usage=None), Reply(content="", usage=(5, 1)))
        client.chat([{"role": "user", "content": "hi"}])  # no usage block: nothing counted
        assert (_tokens("prompt") - prompt, _tokens("completion") - completion) == (0, 0)
        with pytest.raises(Exception, match="empty answer"):
            client.chat([{"role": "user", "content": "hi"}])
        # An empty answer was still paid for.
        assert (_tokens("prompt") - prompt, _tokens("completion") - completion) == (5, 1)
