"""Reproduce Chroma's published all-MiniLM-L6-v2 rows through the span evaluation, in characters and tokens.

Runs the six configurations of ``chunkbench.evaluation.chroma`` (our ``fixed_size`` for Chroma's
TokenTextSplitter, our ``recursive`` with Chroma's separators for its RecursiveCharacterTextSplitter; n=5,
dense MiniLM retrieval across all corpora through the real indexing and query pipelines) with
``evaluate_spans`` (a throwaway index: it also reports token-level and rank metrics and each stage's time),
prints ours vs published and writes ``bench/results/chroma_reproduce.json``. ``chunkbench eval chroma`` runs
the same rows as a corpus benchmark (an Experiment); ``tests/test_chroma_experiment.py`` pins that both give the
same figures. ``bench/eval.py`` writes the same file from its own run.

Usage: ``python bench/chroma_reproduce.py [DATA_DIR]``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "chroma_reproduce.json"
METRICS = ("recall", "precision", "precision_omega", "iou")


def span_rows(configs: list[Any], data_dir: Any = None, settings: Any = None) -> list[dict[str, Any]]:
    """Each configuration through ``evaluate_spans`` with Chroma's settings (embeddings shared across them)."""
    from chunkbench.embedding.cache import EmbeddingCache
    from chunkbench.evaluation.chroma import CHROMA_MODEL, CHROMA_RETRIEVE, load_chroma, published_rows
    from chunkbench.evaluation.corpus import evaluate_spans

    folder, corpora, questions = load_chroma(data_dir)
    published = published_rows(folder)
    cache = EmbeddingCache()
    return [
        {
            "name": config.name,
            "chunker": config.chunker,
            "ours": evaluate_spans(
                corpora,
                questions,
                strategy=config.strategy,
                params=config.params,
                retriever="dense",
                corpus_model=CHROMA_MODEL,
                n=CHROMA_RETRIEVE,
                scope="corpus",
                settings=settings,
                cache=cache,
            ).to_dict(),
            "published": published.get((config.chunker, config.chunk_size, config.chunk_overlap)),
        }
        for config in configs
    ]


def write_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Write ours vs published (characters and tokens) for every configuration; returns what was written."""
    from chunkbench.evaluation.chroma import CHROMA_MODEL, CHROMA_RETRIEVE

    data = {
        "model": CHROMA_MODEL,
        "retrieve": CHROMA_RETRIEVE,
        "retrieval_scope": "all corpora (as Chroma's collection.query), dense retriever on embedded Qdrant",
        "sd": "population (numpy std, as Chroma)",
        "configs": [
            {
                "name": r["name"],
                "chunker": r["chunker"],
                "params": r["ours"]["config"]["params"],
                "chunks": r["ours"]["chunks"],
                "mean_chunk_tokens": r["ours"]["mean_chunk_tokens"],
                "ours": {"chars": {m: r["ours"][m] for m in METRICS}, "tokens": r["ours"]["tokens"]},
                "rank": {m: r["ours"][m] for m in ("recall_at_k", "hit_at_k", "mrr", "ndcg_at_k", "tok_at_k")},
                "published": r["published"],
                "seconds": round(sum(r["ours"]["timings"].values()), 1),
            }
            for r in results
        ],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def print_table(data: dict[str, Any]) -> None:
    """Ours (characters, tokens) and published, mean ± SD in percent, per configuration."""
    print(f"{data['model']}, n={data['retrieve']}, mean ± sd (%)")
    print(f"{'config':<20} {'source':<14} " + " ".join(f"{m:>16}" for m in METRICS) + "  tokens/chunk")
    for config in data["configs"]:
        for unit in ("chars", "tokens"):
            cells = " ".join(
                f"{config['ours'][unit][m]['mean']:>7.1f} ± {config['ours'][unit][m]['std']:>5.1f}" for m in METRICS
            )
            tokens = f"{config['mean_chunk_tokens']:>8.1f}" if unit == "chars" else ""
            print(f"{config['name']:<20} {'ours/' + unit:<14} {cells}  {tokens}")
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

    results = span_rows(list(CHROMA_CONFIGS), sys.argv[1] if len(sys.argv) > 1 else None)
    print_table(write_results(results))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
