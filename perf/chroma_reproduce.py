"""Reproduce Chroma's published all-MiniLM-L6-v2 rows: ``chunkbench eval chroma`` (a corpus benchmark) in a script.

Runs the six configurations of ``chunkbench.evaluation.chroma`` (our ``fixed_size`` for Chroma's
TokenTextSplitter, our ``recursive`` with Chroma's separators for its RecursiveCharacterTextSplitter, each a
strategy variant; n=5, dense MiniLM retrieval across all corpora) through
``benchmarking.chroma_reproduction.reproduce``: the corpora ingested into a corpus, one corpus job, one
Experiment. Prints ours vs published and writes ``perf/results/chroma_reproduce.json``. ``perf/eval.py`` writes
the same file from its own run.

Usage: ``python perf/chroma_reproduce.py [CHROMA_DATA_DIR]`` (a fresh data directory each run: cold).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "chroma_reproduce.json"
METRICS = ("recall", "precision", "precision_omega", "iou")


def run_rows(configs: list[Any], data_dir: Any = None, settings: Any = None) -> Any:
    """``reproduce`` on ``settings`` (default: a fresh temporary data directory); the ChromaReproduction."""
    from chunkbench.benchmarking.chroma_reproduction import reproduce
    from chunkbench.config import Settings
    from chunkbench.storage.db import Database
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import VectorStore

    with tempfile.TemporaryDirectory(prefix="chunkbench-chroma-") as tmp:
        settings = settings or Settings(_env_file=None, data_dir=Path(tmp) / "data")
        database, store = Database.from_settings(settings), VectorStore(settings)
        try:
            return reproduce(database, settings, store, configs, data_dir, tenant_id=DEFAULT_TENANT)
        finally:
            store.close()
            database.dispose()


def write_results(result: Any) -> dict[str, Any]:
    """Write ours vs published (characters) for every configuration; returns what was written."""
    from chunkbench.evaluation.chroma import CHROMA_MODEL, CHROMA_RETRIEVE

    data = {
        "model": CHROMA_MODEL,
        "retrieve": CHROMA_RETRIEVE,
        "retrieval_scope": "all corpora (a corpus benchmark: one Experiment), dense retriever on Qdrant Edge",
        "sd": "population (numpy std, as Chroma)",
        "experiment_id": result.evaluation.experiment_id,
        "seconds": result.evaluation.timings,
        "configs": [
            {
                "name": r["name"],
                "strategy": r["strategy"],
                "chunker": r["chunker"],
                "chunks": r["ours"]["chunks"],
                "mean_chunk_tokens": r["ours"]["mean_chunk_tokens"],
                "ours": {"chars": {m: r["ours"][m] for m in METRICS}},
                "rank": {m: r["ours"][m] for m in ("recall_at_k", "hit_at_k", "mrr", "ndcg_at_k", "tok_at_k")},
                "published": r["published"],
            }
            for r in result.rows
        ],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def print_table(data: dict[str, Any]) -> None:
    """Ours and published (characters), mean ± SD in percent, per configuration."""
    print(f"{data['model']}, n={data['retrieve']}, mean ± sd (%)")
    print(f"{'config':<20} {'source':<14} " + " ".join(f"{m:>16}" for m in METRICS) + "  tokens/chunk")
    for config in data["configs"]:
        ours = config["ours"]["chars"]
        cells = " ".join(f"{ours[m]['mean']:>7.1f} ± {ours[m]['std']:>5.1f}" for m in METRICS)
        print(f"{config['name']:<20} {'ours':<14} {cells}  {config['mean_chunk_tokens']:>8.1f}")
        if config["published"]:
            pub = config["published"]
            cells = " ".join(f"{pub[m]['mean']:>7.1f} ± {pub[m]['std']:>5.1f}" for m in METRICS)
            print(f"{'':<20} {'published':<14} {cells}  {pub['mean_chunk_tokens']:>8.1f}")


def main() -> None:
    """Run every configuration once, print the table and write the JSON results."""
    # Weights come from folders; without these the hub client still tries the network first.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from chunkbench.evaluation.chroma import CHROMA_CONFIGS

    result = run_rows(list(CHROMA_CONFIGS), sys.argv[1] if len(sys.argv) > 1 else None)
    print_table(write_results(result))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
