"""A real ``chunkbench serve`` process for the benchmarks that measure over HTTP (query_pipeline.py, load.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parents[1]


def child_env(**settings: str) -> dict[str, str]:
    """This environment (offline hub, OpenMP settings), the repository's sources on the path, plus ``settings``."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
        **settings,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served_process(
    data_dir: Path, *, timeout_s: float = 180, log: IO[bytes] | None = None, **settings: str
) -> Iterator[str]:
    """``chunkbench serve`` on ``data_dir`` (and ``CHUNKBENCH_*`` ``settings``) as its own process on a free
    loopback port; yields its base URL once ``/health`` answers, stops it afterwards."""
    port = free_port()
    env = child_env(CHUNKBENCH_DATA_DIR=str(data_dir), CHUNKBENCH_PORT=str(port), **settings)
    output = {"stdout": log, "stderr": subprocess.STDOUT} if log is not None else {}
    process = subprocess.Popen([sys.executable, "-m", "chunkbench", "serve"], env=env, **output)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"chunkbench serve exited with {process.returncode}")
            try:
                if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"chunkbench serve did not come up within {timeout_s:.0f} s")
            time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=60)
