"""The corpus benchmark of ``perf/corpus_decide.py``, started and watched from the dashboard in a real browser.

Run ``perf/corpus_decide.py --out DIR`` first: it leaves DIR/data with the 103-document corpus ingested and
processed, and DIR/questions.jsonl. This script starts ``chunkbench serve`` on that data directory, opens the
dashboard in Debian's Chromium (Playwright), and as a user would: Benchmarks tab → "a corpus" → the corpus →
uploads the question file → ticks the strategies and retrievers → Run benchmark, then waits for the Experiment,
opens the Decision Board, and saves screenshots under DIR. The wall time from the click to the finished
Experiment and the Decision's summary go into ``perf/results/corpus_decide.json`` under ``dashboard``.

Usage: ``python perf/corpus_dashboard.py DIR [--strategies fixed_size,recursive] [--retrievers dense,bm25,hybrid]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "corpus_decide.json"
CORPUS = "covid-chroma"
CHROMIUM = "/usr/bin/chromium"
STRATEGIES = ("fixed_size", "recursive", "semantic", "contextual_retrieval", "semantic_parent_child")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--retrievers", default="dense,bm25,hybrid")
    parser.add_argument("--timeout-min", type=float, default=60)
    args = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(args.folder / "data"), "PYTHONPATH": str(ROOT / "src")}
    server = subprocess.Popen([sys.executable, "-m", "chunkbench", "serve", "--port", str(port)], env=env)
    try:
        for _ in range(120):
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1440, "height": 900}, base_url=base)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto("/app#benchmarks")
            bench = page.locator("#panel-benchmarks")
            bench.get_by_label("a corpus").check()
            bench.get_by_role("combobox", name="Corpus", exact=True).select_option(CORPUS)
            # A name of its own: a question file already uploaded under the same name would ask to be replaced.
            upload = args.folder / f"questions-{int(time.time())}.jsonl"
            upload.write_bytes((args.folder / "questions.jsonl").read_bytes())
            bench.locator('input[type="file"]').set_input_files(str(upload))
            expect(bench.get_by_role("status").filter(has_text=f"Uploaded {upload.name}")).to_be_visible()
            wanted = set(args.strategies.split(","))
            for strategy in STRATEGIES:
                box = bench.get_by_label(strategy, exact=True)
                if box.count():  # offered only when every document of the corpus was processed with it
                    box.check() if strategy in wanted else box.uncheck()
            for retriever in ("dense", "bm25", "hybrid"):
                box = bench.get_by_label(retriever, exact=True)
                box.check() if retriever in args.retrievers.split(",") else box.uncheck()
            started = time.perf_counter()
            bench.get_by_role("button", name="Run benchmark").click()
            experiment = bench.get_by_role("region", name="Experiment", exact=True)
            expect(experiment.get_by_role("heading", name=f"Experiment: corpus {CORPUS} completed")).to_be_visible(
                timeout=args.timeout_min * 60_000
            )
            seconds = time.perf_counter() - started
            page.screenshot(path=str(args.folder / "dashboard-experiment.png"), full_page=True)
            page.get_by_role("tab", name="Decision Board").click()
            page.wait_for_timeout(1500)
            page.screenshot(path=str(args.folder / "dashboard-decision.png"), full_page=True)
            browser.close()
        [summary, *_] = httpx.get(f"{base}/experiments", params={"corpus": CORPUS}).json()
        stored = httpx.get(f"{base}/benchmarks/{summary['id']}", params={"cells": "scores"}, timeout=120).json()
    finally:
        server.terminate()
        server.wait(timeout=60)
    results = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    results["dashboard"] = {
        "experiment_id": stored["id"],
        "configurations": len(stored["configurations"]),
        "questions": len(stored["questions"]),
        "seconds_click_to_completed": round(seconds, 1),
        "decision_summary": (stored.get("decision") or {}).get("summary"),
        "javascript_errors": errors,
    }
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results["dashboard"], indent=2))


if __name__ == "__main__":
    main()
