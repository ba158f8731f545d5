"""One corpus Experiment start to finish in this process, for tests/test_repeatable_runs.py: ingest the files in
the order given, process them, benchmark them, print the Experiment and each question's raw rankings as JSON on
stdout.

Usage: ``CHUNKBENCH_DATA_DIR=DIR python tests/repeat_run.py QUESTIONS FILE...``
"""

from __future__ import annotations

import json
import sys

from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import get_settings
from chunkbench.embedding import roles
from chunkbench.embedding.registry import get_spec
from chunkbench.retrieval.search import retrieve
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import get_vector_store

CORPUS = "sites"
MODEL = "all-MiniLM-L6-v2"
STRATEGIES = "fixed_size,recursive"
PARAMS = ["fixed_size.chunk_size=24", "fixed_size.chunk_overlap=0", "recursive.chunk_size=40"]


def chunkbench(*args: str) -> str:
    """Run one CLI command here; its stdout (a failure exits with the command's output)."""
    result = CliRunner().invoke(app, list(args))
    if result.exit_code != 0:
        raise SystemExit(f"chunkbench {' '.join(args)} exited {result.exit_code}:\n{result.output}\n{result.exception}")
    return result.stdout


def rankings(questions: list[str]) -> dict[str, dict[str, list[list]]]:
    """Each question's dense, BM25 and hybrid ranking of fixed_size chunks, as [document name, chunk index, score]
    with the score unrounded (what a cell stores is rounded to 6 places: it cannot show an exact tie)."""
    settings = get_settings()
    spec = get_spec(MODEL)
    store = get_vector_store(settings)
    found: dict[str, dict[str, list[list]]] = {}
    for question in questions:
        vector = roles.embed_query(spec, question, settings)
        found[question] = {}
        for retriever in ("dense", "bm25", "hybrid"):
            hits = retrieve(
                store, settings, strategy="fixed_size", corpus_spec=spec, retriever=retriever, question=question,
                query_vector=vector, tenant_id=DEFAULT_TENANT, document_id=None, limit=12, score_floor=None,
            )  # fmt: skip
            found[question][retriever] = [[hit.document_name, hit.chunk_index, hit.score] for hit in hits]
    return found


def main() -> None:
    questions, *files = sys.argv[1:]
    chunkbench("ingest", *files, "--corpus", CORPUS, "--verbatim", "--json")
    params = [arg for param in PARAMS for arg in ("--param", param)]
    chunkbench("process", "--corpus", CORPUS, "--strategies", STRATEGIES, "--corpus-model", MODEL, *params, "--json")
    run = ["bench", "run", "--corpus", CORPUS, "-q", questions, "--retrievers", "dense,bm25,hybrid", "--top-k", "1,3",
           "--prev", "1", "--next", "1", "--corpus-model", MODEL, "--no-judge", "--json"]  # fmt: skip
    experiment = json.loads(chunkbench(*run))
    asked = [question["question"] for question in experiment["questions"]]
    json.dump({"experiment": experiment, "rankings": rankings(asked)}, sys.stdout)


if __name__ == "__main__":
    main()
