"""The arena: chunkbench's strategies and the splitters of the libraries teams run, side by side on Chroma's corpora.

One corpus Experiment through the product's own path (``benchmarking/corpus_eval.py``: ingest → one corpus job →
one benchmark with its Decision): Chroma's five corpora, its 472 questions with exact evidence spans, every row at
the same size (250 cl100k tokens, no overlap, where the strategy has such parameters), all-MiniLM-L6-v2 as the
Corpus and the Boundary model, dense retrieval of 5 chunks over the whole corpus (Chroma's protocol). Each row is a
strategy variant named ``arena_<strategy>`` pinning those parameters. Prints recall, precision, IoU (characters,
mean over the questions, %), the context a question costs (tok@k) and the Decision's verdict; writes
``perf/results/arena.json``.

Usage: ``python perf/arena.py [--data-dir DIR] [--only name,name]``. A data folder that already holds the corpus
and some rows (``--data-dir``) skips what is current; its embedding cache makes a re-run warm, so the timings of a
warm run say so.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "arena.json"
SIZE = 250
# (strategy, the parameters that put it at SIZE tokens without overlap): chunkbench's own first, then the libraries'.
ROWS: list[tuple[str, dict[str, Any]]] = [
    ("fixed_size", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("recursive", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("table_aware", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("semantic", {"max_tokens": SIZE}),
    ("cluster_semantic", {"max_chunk_size": SIZE, "min_chunk_size": 50}),
    ("langchain_token", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("langchain_recursive", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("llamaindex_sentence", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("chonkie_token", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("chonkie_recursive", {"chunk_size": SIZE}),
    ("chonkie_sentence", {"chunk_size": SIZE, "chunk_overlap": 0}),
    ("semchunk", {"chunk_size": SIZE, "overlap": 0}),
    ("text_splitter", {"capacity": SIZE, "overlap": 0}),
    ("docling_hybrid", {"max_tokens": SIZE}),
]
METRICS = ("recall", "precision", "iou")


def run(data_dir: Path, rows: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Ingest, process and benchmark Chroma's corpora with ``rows`` in ``data_dir``; what was measured."""
    from chunkbench.benchmarking import corpus_eval
    from chunkbench.chunking import variants
    from chunkbench.chunking.base import Variant, strategy_class
    from chunkbench.chunking.library_strategies import listing
    from chunkbench.config import Settings
    from chunkbench.documents.discovery import SourceFile
    from chunkbench.evaluation.chroma import CHROMA_MODEL, CHROMA_RETRIEVE, load_chroma
    from chunkbench.storage.db import Database
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import VectorStore

    settings = Settings(_env_file=None, data_dir=data_dir)
    database, store = Database.from_settings(settings), VectorStore(settings)
    folder, corpora, questions = load_chroma(None)
    names = [variants.add(settings, Variant(f"arena_{s}", s, params)).name.value for s, params in rows]
    started = time.perf_counter()
    try:
        evaluation = corpus_eval.evaluate(
            database, settings, store, corpus="chroma-arena",
            sources=[SourceFile(folder / "corpora" / f"{name}.md", f"{name}.md") for name in corpora],
            questions=questions, strategies=names, corpus_model=CHROMA_MODEL, boundary_model=CHROMA_MODEL,
            retriever="dense", top_k=CHROMA_RETRIEVE, scope="corpus",
            name=f"The arena: chunkbench and the libraries on Chroma's corpora ({SIZE} tokens, n={CHROMA_RETRIEVE})",
            tenant_id=DEFAULT_TENANT,
        )  # fmt: skip
    finally:
        store.close()
        database.dispose()
    decision = evaluation.experiment.get("decision") or {}
    table = []
    for (strategy, params), name in zip(rows, names, strict=True):
        figures = corpus_eval.figures(evaluation.experiment, name)
        library = listing(strategy_class(strategy))
        table.append({
            "strategy": strategy, "variant": name, "params": params,
            "library": library.get("library", "chunkbench"), "library_version": library.get("library_version"),
            **{m: figures[m] for m in METRICS}, "tok_at_k": figures["tok_at_k"],
            "chunks": figures["chunks"], "mean_chunk_tokens": figures["mean_chunk_tokens"],
            "questions": figures["questions"], "failed": figures["failed"],
        })  # fmt: skip
    return {
        "model": CHROMA_MODEL,
        "retrieve": CHROMA_RETRIEVE,
        "size_tokens": SIZE,
        "experiment_id": evaluation.experiment_id,
        "seconds": {**evaluation.timings, "total": round(time.perf_counter() - started, 1)},
        "verdict": decision.get("verdict"),
        "rows": sorted(table, key=lambda r: (-r["recall"]["mean"], r["strategy"])),
    }


def print_table(data: dict[str, Any]) -> None:
    print(f"{data['model']}, {data['size_tokens']} tokens, n={data['retrieve']}, mean over 472 questions (%)")
    print(f"{'strategy':<22} {'library':<26} {'recall':>7} {'precision':>9} {'IoU':>6} {'tok@k':>7} {'tokens':>7}")
    for row in data["rows"]:
        library = row["library"] + (f" {row['library_version']}" if row["library_version"] else "")
        print(
            f"{row['strategy']:<22} {library:<26} {row['recall']['mean']:>7.1f} {row['precision']['mean']:>9.1f} "
            f"{row['iou']['mean']:>6.1f} {row['tok_at_k']['mean']:>7.0f} {row['mean_chunk_tokens']:>7.1f}"
        )
    print(f"Verdict: {data['verdict']}")
    print(f"seconds: {data['seconds']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="a data folder to use (and keep); default: a fresh one")
    parser.add_argument("--only", help="comma-separated strategies of ROWS to run")
    args = parser.parse_args()
    rows = ROWS if not args.only else [r for r in ROWS if r[0] in args.only.split(",")]
    if args.data_dir is not None:
        data = run(args.data_dir, rows)
    else:
        with tempfile.TemporaryDirectory(prefix="chunkbench-arena-") as tmp:
            data = run(Path(tmp) / "data", rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print_table(data)


if __name__ == "__main__":
    main()
