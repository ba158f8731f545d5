"""Chroma's reproduction as a corpus benchmark: Chroma's MiniLM rows are one Experiment, with a Decision and reports.

``chunkbench eval chroma`` is a face of the corpus benchmark (``corpus_eval``): Chroma's five corpora are ingested
into the corpus ``chroma-eval`` (source keys ``chatlogs.md`` …), each row is a strategy variant
(``fixed_size_250_125`` = fixed_size pinning chunk_size 250 and overlap 125, recorded in the variants file), the
corpus is processed with the rows' variants on all-MiniLM-L6-v2 as one corpus job, and the 472 questions are
benchmarked over the whole corpus, dense, k=5 — Chroma's protocol, which is the corpus benchmark's. The rows are
read back from the Experiment's cells, next to the published ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkbench.benchmarking import corpus_eval
from chunkbench.chunking import variants
from chunkbench.config import Settings
from chunkbench.documents.discovery import SourceFile
from chunkbench.errors import EvaluationError
from chunkbench.evaluation.chroma import CHROMA_MODEL, CHROMA_RETRIEVE, ChromaConfig, load_chroma, published_rows
from chunkbench.progress import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.vectors import VectorStore

CHROMA_CORPUS = "chroma-eval"


@dataclass
class ChromaReproduction:
    """The Experiment that reproduced Chroma's rows, the rows (ours next to published) and the corpus job."""

    evaluation: corpus_eval.CorpusEvaluation
    rows: list[dict[str, Any]]


def reproduce(
    database: Database,
    settings: Settings,
    store: VectorStore,
    configs: Sequence[ChromaConfig],
    data_dir: Path | str | None = None,
    *,
    tenant_id: str,
    progress: Progress | None = None,
) -> ChromaReproduction:
    """Ingest, process and benchmark Chroma's corpora with ``configs`` (see the module docstring)."""
    if not configs:
        raise EvaluationError("No Chroma configuration to run.")
    folder, corpora, questions = load_chroma(data_dir)
    published = published_rows(folder)
    strategies = [variants.add(settings, config.variant).name.value for config in configs]
    # Questions name their corpus by id (its file stem): the benchmark finds the document by that stem.
    evaluation = corpus_eval.evaluate(
        database, settings, store, corpus=CHROMA_CORPUS,
        sources=[SourceFile(folder / "corpora" / f"{name}.md", f"{name}.md") for name in corpora],
        questions=questions, strategies=strategies, corpus_model=CHROMA_MODEL, retriever="dense",
        top_k=CHROMA_RETRIEVE, scope="corpus", name=f"Chroma reproduction ({CHROMA_MODEL}, n={CHROMA_RETRIEVE})",
        tenant_id=tenant_id, progress=progress,
        # Chroma embedded ClusterSemanticChunker's pieces with the row's model: MiniLM is the Boundary model too.
        boundary_model=CHROMA_MODEL,
    )  # fmt: skip
    rows = [
        {
            "name": config.name,
            "strategy": strategy,
            "chunker": config.chunker,
            "ours": corpus_eval.figures(evaluation.experiment, strategy),
            "published": published.get((config.chunker, config.chunk_size, config.chunk_overlap)),
        }
        for config, strategy in zip(configs, strategies, strict=True)
    ]
    return ChromaReproduction(evaluation, rows)
