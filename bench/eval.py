"""Evaluation benchmarks: wall time of each stage, one section per measured command.

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


SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {"eval_chroma": eval_chroma}


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
