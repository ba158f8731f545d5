"""Chroma's reproduction as a corpus benchmark: the six MiniLM rows are one Experiment, with a Decision and reports.

``chunkbench eval chroma`` is a face of the corpus benchmark, not a side path: Chroma's five corpora are ingested
into the corpus ``chroma-eval`` (source keys ``chatlogs.md`` …), each row is a strategy variant
(``fixed_size_250_125`` = fixed_size pinning chunk_size 250 and overlap 125, recorded in the variants file), the
corpus is processed with the six variants on all-MiniLM-L6-v2 (one corpus job: embedding batched across documents,
what is current is skipped), and the 472 questions are benchmarked over the whole corpus, dense, k=5 — Chroma's
protocol, which is the corpus benchmark's. The table is read back from the Experiment's cells (mean and population
SD of each question's score, in percent, as Chroma publishes), next to the published rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from chunkbench.benchmarking import service
from chunkbench.benchmarking.schemas import BenchmarkIn, QuestionIn, ReferenceIn
from chunkbench.chunking import variants
from chunkbench.config import Settings
from chunkbench.documents import service as documents
from chunkbench.errors import EvaluationError
from chunkbench.evaluation.chroma import CHROMA_MODEL, CHROMA_RETRIEVE, ChromaConfig, load_chroma, published_rows
from chunkbench.evaluation.corpus_scores import SPAN_METRICS
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.indexing import corpus_job
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.jobs.service import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.schema import StrategyRunRow
from chunkbench.storage.vectors import VectorStore

CHROMA_CORPUS = "chroma-eval"
# Where each stage's progress falls in the whole run's bar: ingest is quick, processing embeds every chunk.
_STAGES = {"ingest": (0.0, 0.02), "process": (0.02, 0.7), "benchmark": (0.7, 1.0)}


@dataclass
class ChromaReproduction:
    """The Experiment that reproduced Chroma's rows, the rows (ours next to published) and each stage's seconds."""

    experiment_id: str
    rows: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)
    processed: int = 0
    skipped: int = 0


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
    strategies = [variants.add(settings, config.variant).name for config in configs]
    timings: dict[str, float] = {}

    started = time.perf_counter()
    _stage(progress, "ingest", 0.0, f"ingesting Chroma's {len(corpora)} corpora")
    sources = [documents.SourceFile(folder / "corpora" / f"{name}.md", f"{name}.md") for name in corpora]
    failed = [r for r in documents.ingest_paths(database, settings, sources, tenant_id=tenant_id, corpus=CHROMA_CORPUS)
              if r.error is not None]  # fmt: skip
    if failed:
        raise failed[0].error  # type: ignore[misc]
    timings["ingest"] = time.perf_counter() - started

    started = time.perf_counter()
    request = ProcessIn(strategies=strategies, corpus_model_id=CHROMA_MODEL)
    with database.session() as session:
        plan = corpus_job.plan(session, settings, CHROMA_CORPUS, request, tenant_id=tenant_id)
    processed = corpus_job.run(database, settings, store, plan, _sub(progress, "process"))
    if processed.failed:
        raise EvaluationError(
            f"{processed.failed} of Chroma's corpora failed to process; see chunkbench corpora show {CHROMA_CORPUS}."
        )
    timings["process"] = time.perf_counter() - started

    started = time.perf_counter()
    benchmark = BenchmarkIn(
        corpus=CHROMA_CORPUS, name=f"Chroma reproduction ({CHROMA_MODEL}, n={CHROMA_RETRIEVE})",
        questions=[_question(position, q) for position, q in enumerate(questions)], strategies=strategies,
        retrievers=["dense"], top_k=[CHROMA_RETRIEVE], corpus_model_id=CHROMA_MODEL, judge=False,
    )  # fmt: skip
    row = service.run(database, settings, store, benchmark, tenant_id=tenant_id, progress=_sub(progress, "benchmark"))
    timings["benchmark"] = time.perf_counter() - started

    with database.session() as session:
        experiment = service.experiment_dict(session, row, cells_view="scores")
        chunk_tokens = {name: _mean_chunk_tokens(session, plan.document_ids, name, tenant_id) for name in strategies}
    rows = [
        {
            "name": config.name,
            "strategy": name,
            "chunker": config.chunker,
            "ours": _ours(experiment, name, chunk_tokens[name]),
            "published": published.get((config.chunker, config.chunk_size, config.chunk_overlap)),
        }
        for config, name in zip(configs, strategies, strict=True)
    ]
    return ChromaReproduction(
        row.id, rows, {k: round(v, 2) for k, v in timings.items()}, processed.processed, processed.skipped
    )


def _question(position: int, question: BenchmarkQuestion) -> QuestionIn:
    """A Chroma question for the corpus benchmark: its corpus by source key, its evidence by offsets."""
    return QuestionIn(
        id=f"chroma-{position}",
        question=question.question,
        document_id=f"{question.document_id}.md",
        references=[
            ReferenceIn(content=r.content, start_index=r.start_index, end_index=r.end_index)
            for r in question.references
        ],
    )


def _ours(experiment: dict[str, Any], strategy: str, mean_chunk_tokens: float) -> dict[str, Any]:
    """One row's figures from the Experiment's cells: each metric's mean and population SD in percent."""
    keys = {c["key"] for c in experiment["configurations"] if c["strategy"] == strategy}
    cells = [c for c in experiment["cells"] if c["config_key"] in keys and c["status"] == "ok"]
    ours: dict[str, Any] = {
        name: _percent([float(c["metrics"][name]) for c in cells if c["metrics"].get(name) is not None])
        for name in SPAN_METRICS
    }
    ours.update(
        config_key=next(iter(keys)), questions=len(cells), mean_chunk_tokens=round(mean_chunk_tokens, 1),
        failed=sum(1 for c in experiment["cells"] if c["config_key"] in keys and c["status"] != "ok"),
    )  # fmt: skip
    return ours


def _percent(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "std": 0.0}
    array = np.asarray(values) * 100
    return {"mean": round(float(array.mean()), 4), "std": round(float(array.std()), 4)}


def _mean_chunk_tokens(session: Any, document_ids: Sequence[str], strategy: str, tenant_id: str) -> float:
    """Mean tokens per searchable chunk over the corpus: the newest completed run of each document."""
    runs = session.scalars(
        select(StrategyRunRow)
        .where(
            StrategyRunRow.tenant_id == tenant_id,
            StrategyRunRow.document_id.in_(document_ids),
            StrategyRunRow.strategy_name == strategy,
            StrategyRunRow.corpus_model_id == CHROMA_MODEL,
            StrategyRunRow.status == "completed",
        )
        .order_by(StrategyRunRow.created_at.desc())
    ).all()
    newest: dict[str, StrategyRunRow] = {}
    for run in runs:
        newest.setdefault(run.document_id, run)
    totals = [
        (r.diagnostics.get("tokens", {}).get("total", 0), r.diagnostics.get("chunk_count", 0)) for r in newest.values()
    ]
    chunks = sum(count for _total, count in totals)
    return sum(total for total, _count in totals) / chunks if chunks else 0.0


def _stage(progress: Progress | None, stage: str, fraction: float, message: str) -> None:
    if progress is not None:
        low, high = _STAGES[stage]
        progress(low + (high - low) * fraction, message)


def _sub(progress: Progress | None, stage: str) -> Callable[[float, str], None]:
    """The progress of one stage, placed in its share of the whole run's bar."""
    return lambda fraction, message: _stage(progress, stage, fraction, f"{stage}: {message}")
