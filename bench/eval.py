"""Evaluation benchmarks: wall time of each stage, one section per measured command.

Section ``benchmark_concurrency``: a benchmark of 20 State of the Union questions × 2 strategies with an LLM
answering and judging through a local OpenAI-compatible server that takes 200 ms per call, run serially and with
bounded concurrency; the speed-up is what concurrency buys when cells wait on an LLM.

Section ``eval_chroma``: ``chunkbench eval chroma`` for each of Chroma's six MiniLM configurations, split
into chunk / embed / index / retrieve / score. The configurations run in order in one process and share the
embedding cache, as ``eval chroma`` does, so a configuration's embed time counts only chunk texts no earlier
configuration embedded; the model is loaded before timing starts. The run also refreshes
``bench/results/chroma_reproduce.json`` (the reproduction table) from the same results.

Results go to ``bench/results/eval.json`` as ``{section name: section}``; running a section replaces only
that section, so other sections (other scripts or later additions here) are kept.

Usage: ``python bench/eval.py [SECTION ...]`` (default: every section).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "eval.json"
STAGES = ("chunk", "embed", "index", "retrieve", "score")
LLM_LATENCY_S = 0.2  # the scripted LLM's answer time (issue: "a scripted LLM with 200 ms latency")
CONCURRENCY_LEVELS = (1, 8, 16)


def eval_chroma() -> dict[str, Any]:
    """Stage wall times of ``eval chroma`` per configuration; prints the table."""
    sys.path.insert(0, str(ROOT / "bench"))
    import chroma_reproduce
    from chunkbench.config import Settings
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.service import embed_texts
    from chunkbench.evaluation.chroma import CHROMA_CONFIGS, CHROMA_MODEL, run_chroma

    settings = Settings()
    embed_texts(get_spec(CHROMA_MODEL), ["warm-up"], "query", settings)  # model load outside the timings
    started = time.perf_counter()
    results = run_chroma(list(CHROMA_CONFIGS), settings=settings)
    total = time.perf_counter() - started
    chroma_reproduce.print_table(chroma_reproduce.write_results(results))

    rows = [
        {
            "config": r["name"],
            "chunks": r["ours"]["chunks"],
            "questions": r["ours"]["questions"],
            "seconds": r["ours"]["timings"],
            "total": round(sum(r["ours"]["timings"].values()), 2),
        }
        for r in results
    ]
    print(f"\neval chroma stage wall times (s), {rows[0]['questions']} questions, shared embedding cache")
    print(f"{'config':<20} {'chunks':>7} " + " ".join(f"{s:>9}" for s in STAGES) + f" {'total':>9}")
    for row in rows:
        cells = " ".join(f"{row['seconds'][s]:>9.2f}" for s in STAGES)
        print(f"{row['config']:<20} {row['chunks']:>7} {cells} {row['total']:>9.2f}")
    print(f"all configurations: {total:.1f}s")
    return {
        "what": "chunkbench eval chroma, MiniLM on CPU, n=5, dense, embedded Qdrant; configs in order, one "
        "process, embeddings shared across configs (model loaded before timing)",
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "configs": rows,
        "total_seconds": round(total, 1),
    }


def benchmark_concurrency() -> dict[str, Any]:
    """Benchmark wall time against a scripted LLM answering in 200 ms: serial vs bounded concurrency."""
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from fastapi.testclient import TestClient

    from chunkbench.app import create_app
    from chunkbench.config import Settings
    from chunkbench.evaluation.datasets import chroma_dir
    from chunkbench.evaluation.questions import load_question_set
    from chunkbench.llm.prompts import JUDGE_SYSTEM_PROMPT
    from fake_openai import Reply, running_fake_openai

    verdict = json.dumps({"context_relevance": 7, "answer_similarity": 6, "faithfulness": 8, "hallucination": False,
                          "reasoning": "scripted"})  # fmt: skip

    def responder(body: dict[str, Any]) -> Reply:
        time.sleep(LLM_LATENCY_S)
        judged = body["messages"][0]["content"] == JUDGE_SYSTEM_PROMPT
        return Reply(verdict if judged else "A scripted answer [Source 1].")

    data = chroma_dir()
    corpus = (data / "corpora" / "state_of_the_union.md").read_bytes()
    questions = [
        q.to_dict()
        for q in load_question_set(data / "questions_df.csv").questions
        if q.document_id == "state_of_the_union"
    ][:20]
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp,
        running_fake_openai(responder=responder) as llm,
    ):
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data", llm_base_url=llm.url, llm_model="fake-model",
                            llm_max_retries=0)  # fmt: skip
        with TestClient(create_app(settings)) as client:
            document = client.post("/documents", files={"file": ("sotu.md", corpus)}).json()["document"]
            client.post(f"/documents/{document['id']}/process", params={"wait": "true"},
                        json={"strategies": ["fixed_size", "recursive"]})  # fmt: skip
            for concurrency in CONCURRENCY_LEVELS:
                body = {"document_id": document["id"], "questions": questions, "concurrency": concurrency}
                started = time.perf_counter()
                response = client.post("/benchmarks", params={"wait": "true"}, json=body)
                seconds = time.perf_counter() - started
                assert response.status_code == 200, response.text
                experiment = response.json()
                rows.append(
                    {"concurrency": concurrency, "cells": len(experiment["cells"]), "seconds": round(seconds, 2)}
                )
    serial = rows[0]["seconds"]
    for row in rows:
        row["speedup"] = round(serial / row["seconds"], 2)
    print(f"\nbenchmark wall time, scripted LLM {LLM_LATENCY_S * 1000:.0f} ms per call (answer + judge per cell)")
    print(f"{'concurrency':>11} {'cells':>6} {'seconds':>8} {'× serial':>9}")
    for row in rows:
        print(f"{row['concurrency']:>11} {row['cells']:>6} {row['seconds']:>8.2f} {row['speedup']:>9.2f}")
    return {"llm_latency_ms": LLM_LATENCY_S * 1000, "rows": rows}


SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "eval_chroma": eval_chroma,
    "benchmark_concurrency": benchmark_concurrency,
}


def main() -> None:
    """Run the chosen sections and merge them into ``bench/results/eval.json``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    chosen = sys.argv[1:] or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown section(s) {unknown}; known: {list(SECTIONS)}")
    existing = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    for name in chosen:
        existing[name] = SECTIONS[name]()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(existing, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
