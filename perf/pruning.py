"""Cheaper grids: one real grid run whole and pruned (successive halving), cells scored, wall time, same winner?

The document is Chroma's chatlogs corpus (``evaluation/data/chroma_chunking_eval/corpora/chatlogs.md``, 40 KB) with
its 56 questions and evidence spans. It is processed with eight strategy variants (fixed_size and recursive at
100, 200, 400 and 800 tokens, declared in the data directory's ``strategies.toml``) and benchmarked on
``variants × {dense, bm25} × k {1, 3, 5}`` = 48 configurations, retrieval only, ranked on IoU (Chroma's headline
metric), once unpruned and once per pruning setting, each a ``chunkbench bench run`` in the same data directory.

Results go to ``perf/results/pruning.json``: per run the cells scored, the Experiment's own run time (started to
finished) and the command's wall time, the Decision's status and best, and for pruned runs what each rung stopped.

Usage: ``python perf/pruning.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR

ROOT = Path(__file__).resolve().parents[1]
SHARED = DEFAULT_CHROMA_DIR
RESULTS = ROOT / "perf" / "results" / "pruning.json"
SIZES = (100, 200, 400, 800)
VARIANTS = [f"fixed_size_{s}" for s in SIZES] + [f"recursive_{s}" for s in SIZES]
GRID = ["--retrievers", "dense,bm25", "--top-k", "1,3,5", "--no-answers", "--metric", "iou"]
SETTINGS = {
    "pruned, eta 3": ["--prune", "--prune-eta", "3"],
    "pruned, eta 2": ["--prune", "--prune-eta", "2"],
}


def write_inputs(folder: Path) -> int:
    """The document, its questions (JSONL) and the variants file under ``folder``; returns the question count."""
    sys.path.insert(0, str(ROOT / "src"))
    from chunkbench.evaluation.datasets import load_chroma_questions

    (folder / "chatlogs.md").write_text((SHARED / "corpora" / "chatlogs.md").read_text(encoding="utf-8"), "utf-8")
    questions = [q for q in load_chroma_questions() if q.document_id == "chatlogs"]
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for position, question in enumerate(questions):
            record = {
                "id": f"chatlogs-{position}",
                "question": question.question,
                "references": [
                    {"content": r.content, "start_index": r.start_index, "end_index": r.end_index}
                    for r in question.references
                ],
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    lines = []
    for size in SIZES:  # Chroma's own settings: no overlap for the fixed-size chunker
        lines += [f"[variants.fixed_size_{size}]", 'base = "fixed_size"', f"chunk_size = {size}", "chunk_overlap = 0"]
        lines += [f"[variants.recursive_{size}]", 'base = "recursive"', f"chunk_size = {size}", ""]
    (data / "strategies.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(questions)


def _chunkbench(env: dict[str, str], *args: str) -> tuple[float, str]:
    """Run one CLI command; its wall time and stdout. A failure stops the benchmark with the command's output."""
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "chunkbench", *args], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"chunkbench {' '.join(args)} exited {completed.returncode}:\n{completed.stderr[-4000:]}")
    return seconds, completed.stdout


def _seconds(experiment: dict[str, Any]) -> float:
    started, finished = (datetime.fromisoformat(experiment[k].rstrip("Z")) for k in ("started_at", "finished_at"))
    return (finished - started).total_seconds()


def _summary(name: str, wall: float, experiment: dict[str, Any]) -> dict[str, Any]:
    decision = experiment.get("decision") or {}
    pruning = experiment.get("pruning") or {}
    stopped = {p["config_key"] for p in pruning.get("pruned") or ()}
    return {
        "run": name,
        "configurations": len(experiment["configurations"]),
        "cells_scored": len(experiment["cells"]),
        "cells_grid": experiment["progress"]["cells_total"],
        "run_s": _seconds(experiment),
        "command_s": round(wall, 1),
        "decision_status": decision.get("status"),
        "best": decision.get("best"),
        "leader": decision.get("leader"),
        "cannot_tell_cause": (decision.get("cannot_tell") or {}).get("cause"),
        "contenders": list(decision.get("contenders") or []),
        "survivors": [c["key"] for c in experiment["configurations"] if c["key"] not in stopped],
        "pruned": len(pruning.get("pruned") or []),
        "rungs": [
            {k: rung[k] for k in ("rung", "questions", "configurations", "leader", "ruled_out")}
            for rung in pruning.get("rungs") or []
        ],
        "rule": pruning.get("rule"),
        "experiment_id": experiment["id"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="chunkbench-pruning-"))
    folder.mkdir(parents=True, exist_ok=True)
    questions = write_inputs(folder)
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(folder / "data"), "PYTHONPATH": str(ROOT / "src")}
    ingest_s, _ = _chunkbench(env, "ingest", str(folder / "chatlogs.md"), "--json")
    process_s, _ = _chunkbench(env, "process", "chatlogs.md", "--strategies", ",".join(VARIANTS), "--json")
    base = ["bench", "run", "chatlogs.md", "-q", str(folder / "questions.jsonl"), "--strategies", ",".join(VARIANTS)]
    runs = []
    for name, extra in {"unpruned": [], **SETTINGS}.items():
        wall, output = _chunkbench(env, *base, *GRID, *extra, "--json")
        runs.append(_summary(name, wall, json.loads(output)))
    whole = runs[0]
    for run in runs:
        same = run["best"] == whole["best"] and run["decision_status"] == whole["decision_status"]
        run["same_best_as_unpruned"] = same
        run["same_leader_as_unpruned"] = run["leader"] == whole["leader"]
        # Did pruning stop a configuration the whole run's Decision still counts as a contender?
        run["unpruned_contenders_kept"] = set(whole["contenders"]) <= set(run["survivors"])
        run["cells_share"] = round(run["cells_scored"] / whole["cells_scored"], 3)
    result = {
        "document": "chroma chatlogs.md",
        "questions": questions,
        "grid": {"strategies": VARIANTS, "retrievers": ["dense", "bm25"], "top_k": [1, 3, 5], "metric": "iou"},
        "prepare_s": {"ingest": round(ingest_s, 1), "process": round(process_s, 1)},
        "runs": runs,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    header = f"{'run':<16}{'configs':>8}{'cells':>8}{'share':>7}{'run s':>8}{'cmd s':>8}  {'decision':<34}"
    print(f"{header}{'leader':<26}contenders kept")
    for run in runs:
        status = f"{run['decision_status']} ({run['best'] or run['cannot_tell_cause']})"
        print(
            f"{run['run']:<16}{run['configurations']:>8}{run['cells_scored']:>8}{run['cells_share']:>7.2f}"
            f"{run['run_s']:>8.0f}{run['command_s']:>8.1f}  {status:<34}{run['leader']:<26}"
            f"{run['unpruned_contenders_kept']}"
        )
    for run in runs[1:]:
        print(f"{run['run']}: " + "; ".join(f"rung {r['rung']} ({r['questions']} q): {len(r['ruled_out'])} stopped"
                                            for r in run["rungs"]))  # fmt: skip


if __name__ == "__main__":
    main()
