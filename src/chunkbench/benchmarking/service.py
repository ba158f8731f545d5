"""Experiments: start, resume, read, aggregate, decide, compare, estimate (seed 000 §10).

The same functions serve the API, the CLI and the dashboard. An Experiment's full view (the dict the
report renders and the JSON export writes) is built by ``experiment_dict`` from the row and its cells.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any, Literal

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from chunkbench.benchmarking import cost as pricing
from chunkbench.benchmarking import runner
from chunkbench.benchmarking.experiments import ExperimentNotFoundError, cells, get  # noqa: F401  (the error is re-exported)
from chunkbench.benchmarking.model import question_from_json
from chunkbench.benchmarking.schemas import (
    METRIC_DIRECTIONS,
    BenchmarkIn,
    CompareOut,
    CostEstimateOut,
    ExperimentSummary,
)
from chunkbench.config import Settings
from chunkbench.errors import ExperimentStateError, NotFoundError
from chunkbench.jobs.service import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.schema import BenchmarkCellRow, DocumentRow, ExperimentRow
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.tokens import count_tokens

RESUMABLE = ("interrupted", "failed")
# What a cell keeps in the "scores" view of an Experiment: enough for per-question heat, without the retrieved
# text, answers and Expansion Trees that make up most of its size.
SCORE_FIELDS = ("question_id", "config_key", "status", "error", "metrics", "latency_ms", "tokens")
CellsView = Literal["full", "scores"]


def run(
    database: Database,
    settings: Settings,
    store: VectorStore,
    request: BenchmarkIn,
    *,
    tenant_id: str,
    progress: Progress | None = None,
) -> ExperimentRow:
    """Plan, record and run a benchmark to the end (the CLI's path; the API runs ``execute`` as a job)."""
    with database.session() as session:
        plan = runner.plan(session, settings, request, tenant_id=tenant_id)
    row = runner.create(database, settings, plan)
    return runner.execute(database, settings, store, row.id, tenant_id=tenant_id, progress=progress)


def prepare_resume(database: Database, experiment_id: str, *, tenant_id: str) -> ExperimentRow:
    """Check that an Experiment can be resumed (interrupted, failed, or running in a process that is gone);
    raises 409 otherwise."""
    with database.session() as session:
        row = get(session, experiment_id, tenant_id=tenant_id)
        if runner.orphaned(row):
            row.status = "interrupted"
        if row.status not in RESUMABLE:
            raise ExperimentStateError(
                f"Experiment '{experiment_id}' is {row.status}; only interrupted or failed runs can be resumed.",
                experiment_id=experiment_id,
                status=row.status,
            )
        session.expunge(row)
        return row


def estimate(session: Session, settings: Settings, request: BenchmarkIn, *, tenant_id: str) -> CostEstimateOut:
    """The dry run (seed 000 §10.5): what the benchmark would run and cost, validated like the real thing."""
    plan = runner.plan(session, settings, request, tenant_id=tenant_id)
    questions = len(plan.questions)
    avg_context = int(np.mean([c.top_k for c in plan.configurations]) * _mean_chunk_tokens(plan, settings))
    estimate_ = pricing.estimate_cost(
        questions=questions,
        configurations=len(plan.configurations),
        chunk_tokens_to_embed=0,  # the chunks are already embedded and indexed
        question_tokens=sum(count_tokens(q.question) for q in plan.questions),
        answer_model=settings.llm_model if settings.llm_configured else None,
        answer_provider=pricing.llm_provider(settings),
        judge=plan.judge,
        judge_repeats=plan.judge_repeats,
        embedding_model=plan.corpus.id,
        embedding_provider=plan.corpus.provider,
        avg_context_tokens=avg_context,
        settings=settings,
    )
    notes = [f"{len(plan.configurations)} configurations × {questions} questions = {plan.cells} cells."]
    if not settings.llm_configured:
        notes.append("No LLM configured: answers are extractive and the judge is off, so the run costs nothing.")
    return CostEstimateOut(
        configurations=len(plan.configurations),
        questions=questions,
        cells=plan.cells,
        llm_calls=estimate_.answer_calls + estimate_.judge_calls,
        items=estimate_.items(),
        total_usd=estimate_.total_usd,
        known_usd=estimate_.known_usd,
        prices_as_of=estimate_.prices_as_of,
        warnings=estimate_.warnings,
        notes=notes,
    )


def _mean_chunk_tokens(plan: runner.BenchmarkPlan, settings: Settings) -> float:
    sizes = [float(run["params"].get("chunk_size", settings.chunk_size)) for run in plan.strategy_runs.values()]
    return float(np.mean(sizes)) if sizes else float(settings.chunk_size)


# ------------------------------------------------------------------------------------------- reading


def experiment_dict(session: Session, row: ExperimentRow, *, cells_view: CellsView = "full") -> dict[str, Any]:
    """The whole Experiment as one JSON-ready dict: what ``GET /benchmarks/{id}``, reports and exports give;
    with ``cells_view="scores"`` each cell keeps only its ids, status, metrics, latency and tokens."""
    document = session.get(DocumentRow, row.document_id)
    results = cells(session, row.id)
    if cells_view == "scores":
        results = [{name: result.get(name) for name in SCORE_FIELDS} for result in results]
    return {
        "id": row.id,
        "name": row.name,
        "status": row.status,
        "error": row.error,
        "created_at": _iso(row.created_at),
        "started_at": _iso(row.started_at),
        "finished_at": _iso(row.finished_at),
        "document": {
            "id": row.document_id,
            "filename": document.filename if document else None,
            "tokens": count_tokens(document.parsed_text) if document is not None else None,
        },
        "config": row.benchmark_config,
        "provenance": row.provenance,
        "configurations": row.configurations,
        "questions": row.questions,
        "progress": {"cells_done": len(results), "cells_total": len(row.configurations) * len(row.questions)},
        "cells": results,
        "aggregate": row.aggregate_metrics,
        "decision": row.decision,
        "cost": row.cost,
    }


def _iso(value: Any) -> str | None:
    """UTC to the second (SQLite hands datetimes back without their zone; they were stored in UTC)."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def summary(session: Session, row: ExperimentRow, cells_done: int | None = None) -> ExperimentSummary:
    config = row.benchmark_config or {}
    if cells_done is None:
        cells_done = session.scalar(
            select(func.count()).select_from(BenchmarkCellRow).where(BenchmarkCellRow.experiment_id == row.id)
        )
    document = session.get(DocumentRow, row.document_id)
    decision = row.decision or {}
    return ExperimentSummary(
        id=row.id,
        name=row.name,
        status=row.status,
        document_id=row.document_id,
        document_name=document.filename if document else None,
        strategies=row.strategies_used,
        retrievers=config.get("retrievers", []),
        corpus_model_id=row.embedding_model_id,
        boundary_model_id=row.boundary_embedding_model_id,
        neighbor_prev=int(config.get("neighbor_prev", 0)),
        neighbor_next=int(config.get("neighbor_next", 0)),
        questions=len(row.questions),
        cells_done=int(cells_done or 0),
        cells_total=len(row.configurations) * len(row.questions),
        primary_metric=config.get("primary_metric"),
        best=decision.get("best"),
        decision_status=decision.get("status"),
        created_at=row.created_at,
        finished_at=row.finished_at,
    )


def get_all(
    session: Session,
    *,
    tenant_id: str,
    document_id: str | None = None,
    corpus_model_id: str | None = None,
    boundary_model_id: str | None = None,
    strategy: str | None = None,
    neighbor_prev: int | None = None,
    neighbor_next: int | None = None,
    status: str | None = None,
    limit: int = 100,
) -> list[ExperimentSummary]:
    """Experiments newest first, filtered as the Decision Board needs."""
    statement = select(ExperimentRow).where(ExperimentRow.tenant_id == tenant_id)
    if document_id is not None:
        statement = statement.where(ExperimentRow.document_id == document_id)
    if corpus_model_id is not None:
        statement = statement.where(ExperimentRow.embedding_model_id == corpus_model_id)
    if boundary_model_id is not None:
        statement = statement.where(ExperimentRow.boundary_embedding_model_id == boundary_model_id)
    if status is not None:
        statement = statement.where(ExperimentRow.status == status)
    rows = session.scalars(statement.order_by(ExperimentRow.created_at.desc())).all()
    # JSON members are filtered here: portable across SQLite and PostgreSQL, and the lists are short.
    selected = [
        row
        for row in rows
        if (strategy is None or strategy in row.strategies_used)
        and (neighbor_prev is None or int(row.benchmark_config.get("neighbor_prev", 0)) == neighbor_prev)
        and (neighbor_next is None or int(row.benchmark_config.get("neighbor_next", 0)) == neighbor_next)
    ][:limit]
    counts = dict(
        session.execute(
            select(BenchmarkCellRow.experiment_id, func.count())
            .where(BenchmarkCellRow.experiment_id.in_([row.id for row in selected]))
            .group_by(BenchmarkCellRow.experiment_id)
        ).all()
    )
    return [summary(session, row, counts.get(row.id, 0)) for row in selected]


def compare(session: Session, a_id: str, b_id: str, *, tenant_id: str) -> CompareOut:
    """Two Experiments side by side on every metric, per configuration key, with what makes them incomparable."""
    a, b = get(session, a_id, tenant_id=tenant_id), get(session, b_id, tenant_id=tenant_id)
    warnings: list[str] = []
    if a.document_id != b.document_id:
        warnings.append("Different documents: the figures are not paired.")
    if a.embedding_model_id != b.embedding_model_id:
        warnings.append(f"Different Corpus models ({a.embedding_model_id} vs {b.embedding_model_id}).")
    if a.boundary_embedding_model_id != b.boundary_embedding_model_id:
        warnings.append(
            f"Different Boundary models ({a.boundary_embedding_model_id} vs {b.boundary_embedding_model_id})."
        )
    neighbours = [
        (e.benchmark_config.get("neighbor_prev", 0), e.benchmark_config.get("neighbor_next", 0)) for e in (a, b)
    ]
    if neighbours[0] != neighbours[1]:
        warnings.append(f"Different Neighbor Expansion (±{neighbours[0]} vs ±{neighbours[1]}).")
    if [question_from_json(q).question for q in a.questions] != [question_from_json(q).question for q in b.questions]:
        warnings.append("Different questions: compare means, not per-question results.")
    keys = list(dict.fromkeys([*a.aggregate_metrics, *b.aggregate_metrics]))
    metrics = list(METRIC_DIRECTIONS)
    rows = []
    for key in keys:
        row: dict[str, Any] = {"config_key": key}
        for name in metrics:
            value_a = (a.aggregate_metrics.get(key) or {}).get("metrics", {}).get(name, {}).get("mean")
            value_b = (b.aggregate_metrics.get(key) or {}).get("metrics", {}).get(name, {}).get("mean")
            row[name] = {
                "a": value_a,
                "b": value_b,
                "delta": None if value_a is None or value_b is None else value_b - value_a,
            }
        rows.append(row)
    return CompareOut(a=summary(session, a), b=summary(session, b), metrics=metrics, rows=rows, warnings=warnings)


def boundaries(store: VectorStore, row: ExperimentRow, *, tenant_id: str) -> dict[str, list[tuple[int, int]]]:
    """Each benchmarked strategy's chunk ranges of the document (the report's chunk-boundary view)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for strategy in row.strategies_used:
        try:
            payloads = store.scroll_document(
                strategy, row.embedding_model_id or "", tenant_id=tenant_id, document_id=row.document_id,
                include_parents=False,
            )  # fmt: skip
        except NotFoundError:  # the collection was deleted since: the report shows what it can
            continue
        out[strategy] = sorted((int(p["start_index"]), int(p["end_index"])) for p in payloads)
    return out


def delete(session: Session, experiment_id: str, *, tenant_id: str) -> None:
    row = get(session, experiment_id, tenant_id=tenant_id)
    if row.status == "running":
        raise ExperimentStateError(f"Experiment '{experiment_id}' is running; wait for it to finish.")
    session.delete(row)
