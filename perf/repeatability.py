"""Runs that repeat: one corpus Experiment of COVID-QA, benchmarked twice in two processes, compared byte for byte.

A subset of the COVID-QA papers (``../shared/data/covid_qa/``) is ingested verbatim as a corpus and processed
once; then ``chunkbench bench run`` runs twice, each time in a new process with another ``PYTHONHASHSEED``, with
dense, BM25 and hybrid retrieval. The two Experiments' aggregates (latency aside: it is a measurement of the
machine) and Decisions are compared as canonical JSON, byte for byte, and so is every cell's metrics, answer and
retrieved chunks. Hybrid fusion with ``RRF_K = 2`` gives many exactly equal scores; the table counts the hits
whose (stored) score equals the next hit's, the ties whose order the store now fixes.

Results go to ``perf/results/repeatability.json``.

Usage: ``python perf/repeatability.py [--papers 10] [--questions 100] [--strategies fixed_size,recursive]
[--no-answers] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COVID = ROOT.parent / "shared" / "data" / "covid_qa"
RESULTS = ROOT / "perf" / "results" / "repeatability.json"
CORPUS = "covid-repeat"
TIMING = {"latency_ms_p50", "latency_ms_p95", "latency_ms_stages"}


def write_subset(folder: Path, papers: int, questions: int) -> tuple[int, int]:
    """The first ``papers`` papers under ``folder/documents/covid_qa`` and the first ``questions`` questions about
    them in ``folder/questions.jsonl``; returns how many of each."""
    documents = folder / "documents" / "covid_qa"
    documents.mkdir(parents=True, exist_ok=True)
    chosen: list[str] = []
    for line in (COVID / "documents.jsonl").read_text(encoding="utf-8").splitlines()[:papers]:
        record = json.loads(line)
        (documents / f"{record['document_id']}.txt").write_text(record["text"], encoding="utf-8")
        chosen.append(str(record["document_id"]))
    kept = []
    for line in (COVID / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if str(record["document_id"]) in chosen and len(kept) < questions:
            record["id"] = f"covid-{record['id']}"
            record["document_id"] = f"covid_qa/{record['document_id']}.txt"
            kept.append(record)
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for record in kept:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(chosen), len(kept)


def chunkbench(env: dict[str, str], *args: str) -> tuple[float, str]:
    """Run one CLI command in a new process; its wall time and stdout (a failure stops the benchmark)."""
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "chunkbench", *args], env=env, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise SystemExit(f"chunkbench {' '.join(args)} exited {completed.returncode}:\n{completed.stderr[-4000:]}")
    return time.perf_counter() - started, completed.stdout


def figures(experiment: dict[str, Any]) -> dict[str, str]:
    """What must repeat, as canonical JSON: the aggregates (latency aside), the Decision, the cells (metrics,
    answer, retrieved chunks in rank order) and, apart, the retrieved chunks' stored scores: Qdrant sums a BM25
    query's terms in a per-process order, so a BM25 score may differ in its last float32 bit, and its 6 stored
    places in the last one when it sits on a rounding boundary."""
    aggregate = {
        key: {name: value for name, value in values.items() if name not in TIMING}
        for key, values in experiment["aggregate"].items()
    }
    cells = sorted(experiment["cells"], key=lambda cell: (cell["config_key"], cell["question_id"]))
    graded = [
        [cell["config_key"], cell["question_id"], cell["status"], cell["metrics"], cell["answer"],
         [[c.get("document_id"), c["chunk_index"], c["role"]] for c in cell["retrieved"]]]
        for cell in cells
    ]  # fmt: skip
    return {
        "aggregates": json.dumps(aggregate, sort_keys=True),
        "decision": json.dumps(experiment["decision"], sort_keys=True),
        "cells": json.dumps(graded, sort_keys=True),
        "scores": json.dumps([[c["score"] for c in cell["retrieved"]] for cell in cells]),
    }


def tied_hits(experiment: dict[str, Any]) -> dict[str, int]:
    """Per retriever: hits whose stored score equals the next hit's in the same cell."""
    counts: dict[str, int] = {}
    for cell in experiment["cells"]:
        retriever = cell["config_key"].split("/")[1]
        scores = [c["score"] for c in cell["retrieved"] if c["role"] == "hit"]
        tied = sum(1 for a, b in itertools.pairwise(scores) if a is not None and a == b)
        counts[retriever] = counts.get(retriever, 0) + tied
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=10)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--strategies", default="fixed_size,recursive")
    parser.add_argument("--retrievers", default="dense,bm25,hybrid")
    parser.add_argument("--answers", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="chunkbench-repeat-"))
    papers, questions = write_subset(folder, args.papers, args.questions)
    env = {key: value for key, value in os.environ.items() if not key.startswith("CHUNKBENCH_")}
    env.update(CHUNKBENCH_DATA_DIR=str(folder / "data"), PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")
    stages: dict[str, float] = {}
    stages["ingest"], _ = chunkbench(env, "ingest", str(folder / "documents"), "--corpus", CORPUS, "--verbatim")
    stages["process"], _ = chunkbench(env, "process", "--corpus", CORPUS, "--strategies", args.strategies)
    answers = "--answers" if args.answers else "--no-answers"
    run = ["bench", "run", "--corpus", CORPUS, "-q", str(folder / "questions.jsonl"), "--strategies", args.strategies,
           "--retrievers", args.retrievers, "--no-judge", answers, "--json"]  # fmt: skip
    experiments = []
    for attempt, seed in enumerate(("1", "2"), start=1):
        stages[f"benchmark {attempt}"], output = chunkbench({**env, "PYTHONHASHSEED": seed}, *run)
        experiments.append(json.loads(output))
    first, second = (figures(experiment) for experiment in experiments)
    identical = {part: first[part] == second[part] for part in first}
    configurations = []
    for key, values in experiments[0]["aggregate"].items():
        again = experiments[1]["aggregate"][key]
        configurations.append(
            {
                "configuration": key,
                "recall": [values["metrics"]["recall"]["mean"], again["metrics"]["recall"]["mean"]],
                "mrr": [values["metrics"]["mrr"]["mean"], again["metrics"]["mrr"]["mean"]],
                "identical": json.dumps({n: v for n, v in values.items() if n not in TIMING}, sort_keys=True)
                == json.dumps({n: v for n, v in again.items() if n not in TIMING}, sort_keys=True),
            }
        )
    decisions = [experiment["decision"] or {} for experiment in experiments]
    result = {
        "papers": papers,
        "questions": questions,
        "strategies": args.strategies.split(","),
        "retrievers": args.retrievers.split(","),
        "answers": args.answers,
        "cells": len(experiments[0]["cells"]),
        "identical": identical,
        "sha256": {part: hashlib.sha256(text.encode()).hexdigest()[:16] for part, text in first.items()},
        "configurations": configurations,
        "verdicts": [{"status": d.get("status"), "best": d.get("best"), "leader": d.get("leader")} for d in decisions],
        "tied_hits": tied_hits(experiments[0]),
        "stages_s": {name: round(value, 1) for name, value in stages.items()},
        "experiment_ids": [experiment["id"] for experiment in experiments],
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{papers} COVID-QA papers, {questions} questions, {result['cells']} cells per run")
    print(f"{'configuration':<26}{'recall 1':>10}{'recall 2':>10}{'MRR 1':>9}{'MRR 2':>9}  identical")
    for row in configurations:
        (r1, r2), (m1, m2) = row["recall"], row["mrr"]
        print(f"{row['configuration']:<26}{r1:>10.4f}{r2:>10.4f}{m1:>9.4f}{m2:>9.4f}  {row['identical']}")
    for attempt, verdict in enumerate(result["verdicts"], start=1):
        print(f"verdict {attempt}: {verdict['status']} (best {verdict['best']}, leader {verdict['leader']})")
    print("byte-identical: " + ", ".join(f"{part} {same}" for part, same in identical.items()))
    print("hits tied with the next hit (run 1): " + ", ".join(f"{k} {v}" for k, v in result["tied_hits"].items()))
    print("stages (s): " + ", ".join(f"{name} {value:.1f}" for name, value in result["stages_s"].items()))


if __name__ == "__main__":
    main()
