"""``chunkbench serve`` as a real process: what ``make run`` starts answers uploads and serves /docs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest
from sqlalchemy import select

from chunkbench.storage.db import create_db_engine
from chunkbench.storage.schema import DocumentRow
from netutil import free_port


@pytest.fixture
def server(tmp_path, database_url):
    port = free_port()
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(tmp_path / "data"), "CHUNKBENCH_PORT": str(port)}
    process = subprocess.Popen(
        [sys.executable, "-m", "chunkbench", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            if process.poll() is not None:
                pytest.fail(f"server exited: {process.stdout.read().decode()}")
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            pytest.fail("server did not come up within 30 s")
        yield base, tmp_path / "data"
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_served_app_accepts_uploads_and_documents_itself(server, settings):
    base, data_dir = server
    assert settings.data_dir == data_dir  # so settings name the database the server process uses
    # The first upload imports the parsers in the server process: on a busy machine that outlasts httpx's 5 s.
    with httpx.Client(base_url=base, timeout=120) as http:
        assert "swagger" in http.get("/docs").text.lower()
        response = http.post("/documents", files={"file": ("a.md", b"# Title\n\nBody text here.")})
        assert response.status_code == 201, response.text
        assert response.json()["document"]["heading_count"] == 1
        # Stored in the metadata store the environment names: the SQLite file, or the test's PostgreSQL database.
        engine = create_db_engine(settings.sqlalchemy_url)
        with engine.connect() as connection:
            assert connection.execute(select(DocumentRow.filename)).scalars().all() == ["a.md"]
        engine.dispose()
        refused = http.post("/documents", files={"file": ("a.exe", b"MZ")})
        assert refused.status_code == 415
        assert http.get("/documents").json()["total"] == 1
