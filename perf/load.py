"""Load: N concurrent clients on loopback against ``POST /v1/query``, with the semantic cache on and off.

The server is a real ``chunkbench serve`` subprocess (its own interpreter: the clients do not share its GIL) on a
fresh data directory, started once per cache mode (``CHUNKBENCH_CACHE_ENABLED=true|false``) on the same data.
The first server indexes the corpus through ``POST /api/index`` with the default serving configuration
(recursive + MiniLM + hybrid, extractive answers: no LLM). Each level runs ``--clients`` threads, each with its
own keep-alive ``httpx.Client``, for ``--duration`` seconds; each client walks the question pool (Chroma's
questions about the corpus) in its own seeded order. A request is timed until its body has arrived; any
non-200 or transport error counts as an error. Before each level the tenant's cache is cleared
(``DELETE /v1/cache``), so a cache-on level starts cold and its figures include the misses that fill it.
One untimed warm-up pass over the pool per server (4 clients) loads the models and fills the extractive
answerer's sentence-embedding cache, so the levels measure the steady state. The server's output goes to
``server-*.log`` in the temporary folder (its tail is printed if it fails). Prints a table and writes
``perf/results/load.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from serving import served_process

ROOT = Path(__file__).resolve().parents[1]
DATA = DEFAULT_CHROMA_DIR
DEFAULT_CORPUS = DATA / "corpora" / "state_of_the_union.md"
QUESTIONS_CSV = DATA / "questions_df.csv"
RESULTS = ROOT / "perf" / "results" / "load.json"
TOP_K = 5
MAX_TOKENS = 256
WARMUP_CLIENTS = 4
REQUEST_TIMEOUT_S = 120.0


def questions_for(corpus: Path, limit: int) -> list[str]:
    """Chroma's questions about ``corpus`` (by its stem), first ``limit``."""
    with QUESTIONS_CSV.open(encoding="utf-8") as handle:
        rows = [row["question"] for row in csv.DictReader(handle) if row["corpus_id"] == corpus.stem]
    if not rows:
        sys.exit(f"No questions for '{corpus.stem}' in {QUESTIONS_CSV}.")
    return rows[:limit]


@contextmanager
def served(data_dir: Path, cache_enabled: bool) -> Iterator[str]:
    """``chunkbench serve`` on ``data_dir`` as its own process on a free loopback port, its output to a log."""
    log_path = data_dir.parent / f"server-{'cache' if cache_enabled else 'nocache'}.log"
    with log_path.open("wb") as log:
        try:
            with served_process(
                data_dir, log=log, CHUNKBENCH_CACHE_ENABLED="true" if cache_enabled else "false",
                CHUNKBENCH_LOG_LEVEL="WARNING",
            ) as base_url:  # fmt: skip
                yield base_url
        except BaseException:
            log.flush()
            print(log_path.read_text(errors="replace")[-3000:], file=sys.stderr)
            raise


@dataclass
class ClientLog:
    latencies_ms: list[float] = field(default_factory=list)
    cached: int = 0
    errors: list[str] = field(default_factory=list)


def client_loop(
    base_url: str, questions: list[str], seed: int, stop_at: float, log: ClientLog, passes: int | None = None
) -> None:
    """One client: its own connection, the pool in its own order, until ``stop_at`` (or ``passes`` over it)."""
    import httpx

    order = questions[:]
    random.Random(seed).shuffle(order)
    position = 0
    with httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT_S) as client:
        while time.monotonic() < stop_at and (passes is None or position < passes * len(order)):
            question = order[position % len(order)]
            position += 1
            started = time.perf_counter()
            try:
                response = client.post("/v1/query", json={"query": question, "top_k": TOP_K, "max_tokens": MAX_TOKENS})
                response.read()
            except httpx.HTTPError as exc:
                log.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                log.errors.append(f"HTTP {response.status_code}: {response.text[:200]}")
                continue
            log.latencies_ms.append(elapsed)
            log.cached += bool(response.json()["cached"])


def warm_up(base_url: str, questions: list[str], log: ClientLog) -> None:
    """Every question once, untimed (``stop_at`` far ahead, one pass)."""
    client_loop(base_url, questions, 0, float("inf"), log, passes=1)


def run_level(base_url: str, questions: list[str], clients: int, duration_s: float) -> dict[str, Any]:
    """``clients`` concurrent clients for ``duration_s`` seconds; the level's figures."""
    import httpx

    httpx.delete(f"{base_url}/v1/cache", timeout=30).raise_for_status()
    logs = [ClientLog() for _ in range(clients)]
    started = time.monotonic()
    stop_at = started + duration_s
    threads = [
        threading.Thread(target=client_loop, args=(base_url, questions, index, stop_at, logs[index]), daemon=True)
        for index in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall_s = time.monotonic() - started  # includes the requests in flight at the deadline
    latencies = [ms for log in logs for ms in log.latencies_ms]
    errors = [error for log in logs for error in log.errors]
    requests = len(latencies) + len(errors)
    return {
        "clients": clients,
        "requests": requests,
        "errors": len(errors),
        "error_samples": errors[:5],
        "cached": sum(log.cached for log in logs),
        "p50_ms": round(float(np.percentile(latencies, 50)), 1) if latencies else None,
        "p95_ms": round(float(np.percentile(latencies, 95)), 1) if latencies else None,
        "throughput_rps": round(len(latencies) / wall_s, 2),
        "wall_s": round(wall_s, 2),
    }


def bench(corpus: Path, questions: list[str], levels: list[int], duration_s: float, data_dir: Path) -> dict:
    import httpx

    results: dict[str, Any] = {}
    index_s = None
    for cache_enabled in (False, True):
        mode = "cache_on" if cache_enabled else "cache_off"
        with served(data_dir, cache_enabled) as base_url:
            if index_s is None:
                started = time.perf_counter()
                with corpus.open("rb") as handle:
                    response = httpx.post(f"{base_url}/api/index", files={"file": (corpus.name, handle)}, timeout=600)
                response.raise_for_status()
                index_s = round(time.perf_counter() - started, 1)
                print(f"indexed {corpus.name}: {response.json()['message']} ({index_s} s)")
            warm = [ClientLog() for _ in range(WARMUP_CLIENTS)]
            threads = [
                threading.Thread(target=warm_up, args=(base_url, questions[i::WARMUP_CLIENTS], warm[i]))
                for i in range(WARMUP_CLIENTS)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if any(log.errors for log in warm):
                raise RuntimeError(f"warm-up failed: {[log.errors[:1] for log in warm if log.errors]}")
            rows = []
            for clients in levels:
                row = run_level(base_url, questions, clients, duration_s)
                rows.append(row)
                print(
                    f"  {mode:<9} clients {clients:>2}: {row['requests']} requests, {row['errors']} errors, "
                    f"p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, {row['throughput_rps']} req/s"
                )
            results[mode] = rows
    return {"index_s": index_s, "results": results}


def print_table(result: dict[str, Any]) -> None:
    print(f"{'cache':<6}{'clients':>8}{'requests':>10}{'errors':>8}{'cached':>8}{'p50 ms':>9}{'p95 ms':>9}{'req/s':>8}")
    for mode, label in (("cache_off", "off"), ("cache_on", "on")):
        for row in result["results"][mode]:
            print(
                f"{label:<6}{row['clients']:>8}{row['requests']:>10}{row['errors']:>8}{row['cached']:>8}"
                f"{row['p50_ms']:>9.1f}{row['p95_ms']:>9.1f}{row['throughput_rps']:>8.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="document to index (%(default)s)")
    parser.add_argument("--clients", default="1,4,8", help="concurrent clients per level, comma-separated")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per level")
    parser.add_argument("--questions", type=int, default=24, help="size of the question pool")
    args = parser.parse_args()
    if not args.corpus.is_file():
        sys.exit(f"No corpus file {args.corpus}; pass --corpus FILE.")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    levels = [int(value) for value in args.clients.split(",")]
    questions = questions_for(args.corpus, args.questions)
    print(f"load: {len(questions)} questions about {args.corpus.name}, clients {levels}, {args.duration:g} s each")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chunkbench-load-") as tmp:
        measured = bench(args.corpus, questions, levels, args.duration, Path(tmp) / "data")
    total_s = time.perf_counter() - started
    print()
    print_table(measured)
    errors = sum(row["errors"] for rows in measured["results"].values() for row in rows)
    result = {
        "server": "chunkbench serve subprocess (uvicorn, one process), loopback",
        "corpus": args.corpus.name,
        "serving_config": "recursive + all-MiniLM-L6-v2 + hybrid, extractive answers (no LLM)",
        "questions": len(questions),
        "top_k": TOP_K,
        "max_tokens": MAX_TOKENS,
        "duration_s_per_level": args.duration,
        "note": "cache cleared before each level: cache-on figures include the misses that fill it",
        **measured,
        "total_errors": errors,
        "total_runtime_s": round(total_s, 1),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)} (total {total_s:.0f} s)")
    if errors:
        sys.exit(f"{errors} request(s) failed")


if __name__ == "__main__":
    main()
