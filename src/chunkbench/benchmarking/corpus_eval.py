"""Span evaluations as faces of the corpus benchmark: documents → a corpus → one corpus job → one Experiment.

``chunkbench eval spans`` and ``eval chroma`` used to chunk, index and score on a throwaway index of their own.
They now run the product's one path: the documents are ingested into a corpus, processed by a corpus job (what is
current is skipped), and the questions are benchmarked as an Experiment with its Decision and reports. Their
tables are read back from the Experiment's cells: each metric's mean and population SD over the questions, in
percent for the span metrics (as Chroma publishes them).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.benchmarking import benchmarks
from chunkbench.benchmarking.schemas import BenchmarkIn, QuestionIn, ReferenceIn
from chunkbench.benchmarking.scoring import RANK_METRICS, SPAN_METRICS
from chunkbench.chunking import variants
from chunkbench.chunking.base import Variant, strategy_class
from chunkbench.config import Settings
from chunkbench.documents import ingest
from chunkbench.documents.discovery import SourceFile
from chunkbench.errors import EvaluationError
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.indexing import corpus_job
from chunkbench.indexing.schemas import CorpusProcessOut, ProcessIn
from chunkbench.progress import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.schema import StrategyRunRow
from chunkbench.storage.vectors import VectorStore

# Where each stage's progress falls in the whole run's bar: ingest is quick, processing embeds every chunk.
_STAGES = {"ingest": (0.0, 0.02), "process": (0.02, 0.7), "benchmark": (0.7, 1.0)}


@dataclass
class CorpusEvaluation:
    """What one evaluation ran: its Experiment (the "scores" view), the corpus job's outcome, each stage's time."""

    experiment: dict[str, Any]
    processed: CorpusProcessOut
    timings: dict[str, float]

    @property
    def experiment_id(self) -> str:
        return str(self.experiment["id"])


def evaluate(
    database: Database,
    settings: Settings,
    store: VectorStore,
    *,
    corpus: str,
    sources: Sequence[SourceFile],
    questions: Sequence[BenchmarkQuestion],
    strategies: Sequence[str],
    corpus_model: str,
    retriever: str,
    top_k: int,
    scope: str,
    name: str,
    tenant_id: str,
    progress: Progress | None = None,
    boundary_model: str | None = None,
) -> CorpusEvaluation:
    """Ingest ``sources`` into ``corpus``, process it with ``strategies`` on ``corpus_model``, and benchmark
    ``questions`` (each naming its document by source key, id or stem) with one retriever at one k, retrieval
    only (no answers, no judge); ``boundary_model``: the Boundary model of the strategies needing one (default: the
    configured role)."""
    # The whole request is checked before any work: a bad retriever, k or scope must not cost a corpus job first.
    try:
        benchmark = BenchmarkIn(
            corpus=corpus, name=name, questions=[_question(q) for q in questions], strategies=list(strategies),
            retrievers=[retriever], top_k=[top_k], corpus_model_id=corpus_model, judge=False, scope=scope,
            answers=False,  # Chroma's protocol grades retrieval only: no answer is made
        )  # fmt: skip
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise EvaluationError(f"Invalid evaluation: {problems}.") from None
    timings: dict[str, float] = {}
    started = time.perf_counter()
    _stage(progress, "ingest", 0.0, f"ingesting {len(sources)} documents")
    # Verbatim: the evidence offsets count characters of the raw files, so the documents are exactly those texts.
    ingested = ingest.ingest_paths(database, settings, sources, tenant_id=tenant_id, corpus=corpus, verbatim=True)
    if failed := [result.error for result in ingested if result.error is not None]:
        raise failed[0]
    timings["ingest"] = time.perf_counter() - started

    started = time.perf_counter()
    request = ProcessIn(strategies=list(strategies), corpus_model_id=corpus_model, boundary_model_id=boundary_model)
    with database.session() as session:
        plan = corpus_job.plan(session, settings, corpus, request, tenant_id=tenant_id)
    processed = corpus_job.run(database, settings, store, plan, _sub(progress, "process"))
    if processed.failed:
        raise EvaluationError(
            f"{processed.failed} document(s) of the corpus '{corpus}' failed to process; "
            f"see chunkbench corpora show {corpus}."
        )
    timings["process"] = time.perf_counter() - started

    started = time.perf_counter()
    row = benchmarks.run(
        database, settings, store, benchmark, tenant_id=tenant_id, progress=_sub(progress, "benchmark")
    )
    timings["benchmark"] = time.perf_counter() - started
    with database.session() as session:
        experiment = benchmarks.experiment_dict(session, row, cells_view="scores")
        experiment["chunk_stats"] = {
            strategy: chunk_stats(session, plan.document_ids, strategy, corpus_model, tenant_id)
            for strategy in strategies
        }
    return CorpusEvaluation(experiment, processed, {stage: round(s, 2) for stage, s in timings.items()})


def _question(question: BenchmarkQuestion) -> QuestionIn:
    """A loaded question for the corpus benchmark: its document by name, its evidence by offsets and content."""
    return QuestionIn(
        id=question.id,
        question=question.question,
        expected_answer=question.expected_answer,
        document_id=question.document_id,
        references=[
            ReferenceIn(
                content=ref.content, start_index=ref.start_index, end_index=ref.end_index, document=ref.document
            )
            for ref in question.references
        ],
    )


def figures(experiment: dict[str, Any], strategy: str) -> dict[str, Any]:
    """One strategy's figures from the Experiment's cells: span and rank metrics as percent (mean, population SD),
    tok@k in tokens, how many questions were scored and failed, its chunks and their mean tokens."""
    keys = {c["key"] for c in experiment["configurations"] if c["strategy"] == strategy}
    cells = [c for c in experiment["cells"] if c["config_key"] in keys]
    scored = [c for c in cells if c["status"] == "ok"]

    def summary(metric: str, scale: float) -> dict[str, float]:
        values = np.asarray([float(c["metrics"][metric]) for c in scored if c["metrics"].get(metric) is not None])
        if not len(values):
            return {"mean": 0.0, "std": 0.0}
        return {"mean": round(float(values.mean()) * scale, 4), "std": round(float(values.std()) * scale, 4)}

    stats = experiment["chunk_stats"][strategy]
    return {
        **{metric: summary(metric, 100.0) for metric in (*SPAN_METRICS, *RANK_METRICS)},
        "tok_at_k": summary("tok_at_k", 1.0),
        "config_key": next(iter(keys)),
        "questions": len(scored),
        "failed": len(cells) - len(scored),
        "chunks": stats["chunks"],
        "mean_chunk_tokens": stats["mean_tokens"],
    }


def chunk_stats(session: Session, document_ids: Sequence[str], strategy: str, model: str, tenant_id: str) -> dict:
    """Searchable chunks and their mean tokens over the corpus: the newest completed run of each document."""
    runs = session.scalars(
        select(StrategyRunRow)
        .where(
            StrategyRunRow.tenant_id == tenant_id,
            StrategyRunRow.document_id.in_(document_ids),
            StrategyRunRow.strategy_name == strategy,
            StrategyRunRow.corpus_model_id == model,
            StrategyRunRow.status == "completed",
        )
        .order_by(StrategyRunRow.created_at.desc())
    ).all()
    newest: dict[str, StrategyRunRow] = {}
    for run in runs:
        newest.setdefault(run.document_id, run)
    tokens = sum(run.diagnostics.get("tokens", {}).get("total", 0) for run in newest.values())
    chunks = sum(run.diagnostics.get("chunk_count", 0) for run in newest.values())
    return {"chunks": chunks, "mean_tokens": round(tokens / chunks, 1) if chunks else 0.0}


def strategy_for(settings: Settings, strategy: str, params: dict[str, Any]) -> str:
    """The strategy to run: ``strategy`` itself without parameters, else a variant pinning them (declared in the
    variants file): ``fixed_size_250_125`` when every value is a whole number, else ``recursive_p<hash>``."""
    base = strategy_class(strategy).name.value
    if not params:
        return base
    values = list(params.values())
    suffix = "_".join(str(v) for v in values)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values) or len(base + suffix) > 47:
        suffix = "p" + hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8]
    return variants.add(settings, Variant(f"{base}_{suffix}", base, params)).name.value


def corpus_for(path: Path) -> str:
    """The corpus an evaluation of ``path`` ingests into: ``eval-`` and the folder's or file's name."""
    slug = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "documents"
    return f"eval-{slug}"[:64].rstrip("-")


def _stage(progress: Progress | None, stage: str, fraction: float, message: str) -> None:
    if progress is not None:
        low, high = _STAGES[stage]
        progress(low + (high - low) * fraction, message)


def _sub(progress: Progress | None, stage: str) -> Callable[[float, str], None]:
    """The progress of one stage, placed in its share of the whole run's bar."""
    return lambda fraction, message: _stage(progress, stage, fraction, f"{stage}: {message}")
