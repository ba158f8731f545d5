"""Experiments: start, resume, read, aggregate, decide, compare, estimate (docs/benchmarks.md).

The same functions serve the API, the CLI and the dashboard. An Experiment's full view (the dict the
report renders and the JSON export writes) is built by ``experiment_dict`` from the row and its cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import Any, Literal

import numpy as np
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from chunkbench.benchmarking import aggregation, claims, experiments, planning, pricing, pruning, runner
from chunkbench.benchmarking.breakdowns import breakdowns
from chunkbench.benchmarking.decision_ranking import EQUIVALENCE_MARGIN
from chunkbench.benchmarking.experiment_schemas import CellScores
from chunkbench.benchmarking.experiments import ExperimentNotFoundError, cells, get  # noqa: F401  (the error is re-exported)
from chunkbench.benchmarking.model import BenchmarkConfig, Experiment, ExperimentQuestion
from chunkbench.benchmarking.schemas import (
    METRIC_DIRECTIONS,
    BenchmarkIn,
    CompareOut,
    CostEstimateOut,
    ExperimentSummary,
)
from chunkbench.benchmarking.verdicts import with_verdict
from chunkbench.config import Settings
from chunkbench.errors import ExperimentStateError, JobNotActiveError, NotFoundError
from chunkbench.jobs.execution import ACTIVE
from chunkbench.progress import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.schema import BenchmarkCellRow, DocumentRow, ExperimentRow, JobRow
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.tokens import count_tokens

RESUMABLE = ("interrupted", "failed")
CellsView = Literal["full", "scores"]


@dataclass(frozen=True)
class Started:
    """A benchmark recorded and ready to run (``runner.execute`` here, or a job), and the plan it was recorded from."""

    experiment: ExperimentRow
    plan: planning.BenchmarkPlan


def start(database: Database, settings: Settings, request: BenchmarkIn, *, tenant_id: str) -> Started:
    """Plan a benchmark and record its Experiment (running, no cell yet): the one way every face starts one."""
    with database.session() as session:
        plan = planning.plan(session, settings, request, tenant_id=tenant_id)
    return Started(experiments.create(database, settings, plan), plan)


def run(
    database: Database,
    settings: Settings,
    store: VectorStore,
    request: BenchmarkIn,
    *,
    tenant_id: str,
    progress: Progress | None = None,
) -> ExperimentRow:
    """Start a benchmark and run it to the end in this process (the API can run the same Experiment as a job)."""
    started = start(database, settings, request, tenant_id=tenant_id)
    return runner.execute(database, settings, store, started.experiment.id, tenant_id=tenant_id, progress=progress)


def prepare_resume(database: Database, experiment_id: str, *, tenant_id: str) -> ExperimentRow:
    """Check that an Experiment can be resumed (interrupted, failed, or running in a process that is gone);
    raises 409 otherwise."""
    with database.session() as session:
        row = get(session, experiment_id, tenant_id=tenant_id)
        if claims.orphaned(row):
            row.status = "interrupted"
        if row.status not in RESUMABLE:
            raise ExperimentStateError(
                f"Experiment '{experiment_id}' is {row.status}; only interrupted or failed runs can be resumed.",
                experiment_id=experiment_id,
                status=row.status,
            )
        session.expunge(row)
        return row


def running_job(session: Session, experiment_id: str, *, tenant_id: str) -> JobRow:
    """The job that runs (or will run) the Experiment; 404 for an unknown Experiment, 409 when no job does."""
    row = get(session, experiment_id, tenant_id=tenant_id)
    jobs = session.scalars(
        select(JobRow).where(JobRow.tenant_id == tenant_id, JobRow.kind == "benchmark", JobRow.status.in_(ACTIVE))
    ).all()
    # The request is JSON: matched here, portable across SQLite and PostgreSQL (few jobs are active at once).
    job = next((job for job in jobs if job.request.get("experiment_id") == experiment_id), None)
    if job is None:
        raise JobNotActiveError(
            f"Experiment '{experiment_id}' is {row.status} and no job of this server is running it: a run started "
            "with `chunkbench bench run` stops with Ctrl-C where it runs.",
            experiment_id=experiment_id,
            status=row.status,
        )
    return job


def estimate(session: Session, settings: Settings, request: BenchmarkIn, *, tenant_id: str) -> CostEstimateOut:
    """The dry run (docs/benchmarks.md): what the benchmark would run and cost, validated like the real thing."""
    plan = planning.plan(session, settings, request, tenant_id=tenant_id)
    questions = len(plan.questions)
    avg_context = int(np.mean([c.top_k for c in plan.configurations]) * _mean_chunk_tokens(plan, settings))
    estimate_ = pricing.estimate_cost(
        questions=questions,
        configurations=len(plan.configurations),
        chunk_tokens_to_embed=0,  # the chunks are already embedded and indexed
        question_tokens=sum(count_tokens(q.question) for q in plan.questions),
        answer_model=settings.llm_model if settings.llm_configured else None,
        answer_provider=pricing.llm_provider(settings),
        judge=plan.config.judge,
        judge_repeats=plan.config.judge_repeats,
        embedding_model=plan.corpus.id,
        embedding_provider=plan.corpus.provider,
        avg_context_tokens=avg_context,
        settings=settings,
    )
    notes = [f"{len(plan.configurations)} configurations × {questions} questions = {plan.cells} cells."]
    if plan.config.prune is not None:
        sizes = pruning.rung_sizes(questions, plan.config.prune)
        notes.append(
            f"Pruning on: the first rung scores {len(plan.configurations)} × {sizes[0]} = "
            f"{len(plan.configurations) * sizes[0]} cells; the {len(sizes) - 1} rung(s) after score only the "
            f"configurations not ruled out, so the run scores between that and {plan.cells} cells (priced: at most)."
        )
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


# The chunk size a cost estimate assumes for a run that records none: the strategies' own size default.
_USUAL_CHUNK_TOKENS = 512


def _mean_chunk_tokens(plan: planning.BenchmarkPlan, settings: Settings) -> float:
    # A run's recorded params hold its chunk_size; a strategy without one (semantic) is counted at the usual size.
    fallback = float(settings.chunk_size or _USUAL_CHUNK_TOKENS)
    sizes = [float(run["params"].get("chunk_size", fallback)) for run in plan.strategy_runs.values()]
    return float(np.mean(sizes)) if sizes else fallback


# ------------------------------------------------------------------------------------------- reading


def experiment_dict(session: Session, row: ExperimentRow, *, cells_view: CellsView = "full") -> dict[str, Any]:
    """The whole Experiment as one JSON-ready dict: what ``GET /benchmarks/{id}``, reports and exports give;
    with ``cells_view="scores"`` each cell keeps only its ids, status, metrics, latency and tokens."""
    experiment = Experiment.from_row(row)
    document = session.get(DocumentRow, row.document_id) if row.document_id is not None else None
    finished = cells(session, row.id)
    results = [cell.model_dump(mode="json") for cell in finished]
    if cells_view == "scores":
        results = [CellScores.model_validate(result).model_dump(mode="json") for result in results]
    view: dict[str, Any] = {
        "id": experiment.id,
        "name": experiment.name,
        "status": experiment.status,
        "error": experiment.error,
        "created_at": _iso(experiment.created_at),
        "started_at": _iso(experiment.started_at),
        "finished_at": _iso(experiment.finished_at),
        # A corpus Experiment has no one document: its documents are under "corpus".
        "document": {
            "id": experiment.document_id,
            "filename": document.filename if document else None,
            "tokens": count_tokens(document.parsed_text) if document is not None else None,
        },
    }
    if experiment.document_id is None:
        view["corpus"] = _corpus_view(session, experiment)
    view |= {
        "config": experiment.config.model_dump(mode="json"),
        "provenance": experiment.provenance,
        "configurations": [c.model_dump(mode="json") for c in experiment.configurations],
        "questions": [
            ExperimentQuestion.of(q, with_documents=experiment.spans_documents).model_dump(mode="json")
            for q in experiment.questions
        ],
        "progress": {"cells_done": len(results), "cells_total": experiment.cells_total},
        "cells": results,
        "aggregate": experiment.aggregate,
        # The verdict is written at reading, so an Experiment decided under older wording says today's words.
        "decision": with_verdict(experiment.decision) if experiment.decision else None,
        "cost": experiment.cost,
        # Models of the grid that do not cover a document's language (the Decision names none built on them).
        "warnings": list(experiment.provenance.get("warnings") or []),
    }
    metric = (experiment.decision or {}).get("metric") or experiment.config.primary_metric
    if metric is not None:
        recorded = (experiment.provenance.get("corpus") or {}).get("documents") or []
        keys = {d["id"]: d.get("source_key") for d in recorded}
        split = breakdowns(
            experiment.questions, experiment.configurations, finished, metric=metric,
            documents={d: keys.get(d) for d in experiment.document_ids},
            languages=experiment.provenance.get("languages"),
        )  # fmt: skip
        if len(split) > 1:  # documents or categories to show
            view["breakdowns"] = split
    if experiment.pruning is not None:
        view["pruning"] = experiment.pruning
    return view


def decide_again(session: Session, experiment_id: str, *, tenant_id: str, budget: int | None) -> dict[str, Any]:
    """The Decision made again from a completed Experiment's stored cells at another context ``budget`` (None: the
    default, the smallest median tok@k), with its verdict; nothing is stored. 409 while it has no Decision."""
    row = get(session, experiment_id, tenant_id=tenant_id)
    experiment = Experiment.from_row(row)
    metric = (experiment.decision or {}).get("metric") or experiment.config.primary_metric
    if experiment.status != "completed" or not experiment.aggregate or metric is None:
        raise ExperimentStateError(
            f"Experiment '{experiment_id}' is {experiment.status} and has no Decision to make again at another "
            "budget; wait for it to complete (or resume it).",
            experiment_id=experiment_id,
            status=experiment.status,
        )
    pruned = set(experiment.pruned_keys)
    seed = experiment.config.seed
    decision = aggregation.decision_for(
        experiment.questions, [c for c in experiment.configurations if c.key not in pruned], cells(session, row.id),
        experiment.aggregate, metric=metric, seed=seed,
        resamples=int(experiment.provenance.get("bootstrap_resamples", 2000)), budget=budget,
        with_documents=experiment.spans_documents, warnings=experiment.provenance.get("warnings") or (),
        # The margin the Experiment was decided with (a Decision stored before it: the default).
        equivalence_margin=float((experiment.decision or {}).get("equivalence_margin", EQUIVALENCE_MARGIN)),
    )  # fmt: skip
    return with_verdict(decision)


def _corpus_view(session: Session, experiment: Experiment) -> dict[str, Any]:
    """A corpus Experiment's corpus: its id (None once deleted), name and documents (source key, filename; None
    for one deleted since), in the Experiment's order."""
    rows = {
        row.id: row
        for row in session.execute(
            select(DocumentRow.id, DocumentRow.source_key, DocumentRow.filename).where(
                DocumentRow.tenant_id == experiment.tenant_id, DocumentRow.id.in_(list(experiment.document_ids))
            )
        )
    }
    recorded = {d["id"]: d for d in (experiment.provenance.get("corpus") or {}).get("documents") or []}
    documents = []
    for document_id in experiment.document_ids:
        found = rows.get(document_id)
        documents.append({
            "id": document_id,
            "source_key": found.source_key if found else recorded.get(document_id, {}).get("source_key"),
            "filename": found.filename if found else None,
        })  # fmt: skip
    return {"id": experiment.corpus_id, "name": experiment.corpus_name, "documents": documents}


def _iso(value: Any) -> str | None:
    """UTC to the second (SQLite hands datetimes back without their zone; they were stored in UTC)."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def summary(session: Session, row: ExperimentRow, cells_done: int | None = None) -> ExperimentSummary:
    experiment = Experiment.from_row(row)
    config = experiment.config
    if cells_done is None:
        cells_done = session.scalar(
            select(func.count()).select_from(BenchmarkCellRow).where(BenchmarkCellRow.experiment_id == row.id)
        )
    document = session.get(DocumentRow, row.document_id) if row.document_id is not None else None
    decision = experiment.decision or {}
    return ExperimentSummary(
        id=experiment.id,
        name=experiment.name,
        status=experiment.status,
        document_id=experiment.document_id,
        document_name=document.filename if document else None,
        corpus_id=experiment.corpus_id,
        corpus_name=experiment.corpus_name,
        documents=len(experiment.document_ids),
        corpus_models=list(config.models),
        strategies=list(experiment.strategies),
        retrievers=list(config.retrievers),
        corpus_model_id=experiment.corpus_model_id,
        boundary_model_id=experiment.boundary_model_id,
        neighbor_prev=config.neighbor_prev,
        neighbor_next=config.neighbor_next,
        questions=len(experiment.questions),
        cells_done=int(cells_done or 0),
        cells_total=experiment.cells_total,
        primary_metric=config.primary_metric,
        best=decision.get("best"),
        decision_status=decision.get("status"),
        created_at=experiment.created_at,
        finished_at=experiment.finished_at,
    )


def get_all(
    session: Session,
    *,
    tenant_id: str,
    document_id: str | None = None,
    corpus: str | None = None,
    corpus_model_id: str | None = None,
    boundary_model_id: str | None = None,
    strategy: str | None = None,
    neighbor_prev: int | None = None,
    neighbor_next: int | None = None,
    status: str | None = None,
    limit: int = 100,
) -> list[ExperimentSummary]:
    """Experiments newest first, filtered as the Decision Board needs: ``document_id`` selects one-document
    Experiments, ``corpus`` (a name or id) corpus Experiments, ``corpus_model_id`` any that has the model."""
    statement = select(ExperimentRow).where(ExperimentRow.tenant_id == tenant_id)
    if document_id is not None:
        statement = statement.where(ExperimentRow.document_id == document_id)
    if corpus is not None:
        statement = statement.where(or_(ExperimentRow.corpus_name == corpus, ExperimentRow.corpus_id == corpus))
    if boundary_model_id is not None:
        statement = statement.where(ExperimentRow.boundary_embedding_model_id == boundary_model_id)
    if status is not None:
        statement = statement.where(ExperimentRow.status == status)
    rows = session.scalars(statement.order_by(ExperimentRow.created_at.desc())).all()

    # JSON members are filtered here: portable across SQLite and PostgreSQL, and the lists are short.
    def wanted(row: ExperimentRow) -> bool:
        config = BenchmarkConfig.model_validate(row.benchmark_config)
        return (
            (strategy is None or strategy in row.strategies_used)
            and (corpus_model_id is None or corpus_model_id in (config.models or (row.embedding_model_id,)))
            and (neighbor_prev is None or config.neighbor_prev == neighbor_prev)
            and (neighbor_next is None or config.neighbor_next == neighbor_next)
        )

    selected = [row for row in rows if wanted(row)][:limit]
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
    rows = get(session, a_id, tenant_id=tenant_id), get(session, b_id, tenant_id=tenant_id)
    a, b = (Experiment.from_row(row) for row in rows)
    warnings: list[str] = []
    if not _same_documents(a, b):
        warnings.append("Different documents: the figures are not paired.")
    models = [", ".join(e.config.models or (e.corpus_model_id or "—",)) for e in (a, b)]
    if models[0] != models[1]:
        warnings.append(f"Different Corpus models ({models[0]} vs {models[1]}).")
    if a.boundary_model_id != b.boundary_model_id:
        warnings.append(f"Different Boundary models ({a.boundary_model_id} vs {b.boundary_model_id}).")
    neighbours = [(e.config.neighbor_prev, e.config.neighbor_next) for e in (a, b)]
    if neighbours[0] != neighbours[1]:
        warnings.append(f"Different Neighbor Expansion (±{neighbours[0]} vs ±{neighbours[1]}).")
    if [q.question for q in a.questions] != [q.question for q in b.questions]:
        warnings.append("Different questions: compare means, not per-question results.")
    keys = list(dict.fromkeys([*a.aggregate, *b.aggregate]))
    metrics = list(METRIC_DIRECTIONS)
    table = []
    for key in keys:
        row: dict[str, Any] = {"config_key": key}
        for name in metrics:
            value_a = (a.aggregate.get(key) or {}).get("metrics", {}).get(name, {}).get("mean")
            value_b = (b.aggregate.get(key) or {}).get("metrics", {}).get(name, {}).get("mean")
            row[name] = {
                "a": value_a,
                "b": value_b,
                "delta": None if value_a is None or value_b is None else value_b - value_a,
            }
        table.append(row)
    return CompareOut(
        a=summary(session, rows[0]), b=summary(session, rows[1]), metrics=metrics, rows=table, warnings=warnings
    )


def _same_documents(a: Experiment, b: Experiment) -> bool:
    """Whether two Experiments searched the same documents: the same contents (corpus hash) where both recorded
    it, else (rows from before corpora) the same document ids."""
    hashes = [(e.provenance.get("corpus") or {}).get("hash") for e in (a, b)]
    return hashes[0] == hashes[1] if all(hashes) else a.document_ids == b.document_ids


def boundaries(store: VectorStore, row: ExperimentRow, *, tenant_id: str) -> dict[str, list[tuple[int, int]]]:
    """Each benchmarked strategy's chunk ranges of a one-document Experiment's document (the report's
    chunk-boundary view); a corpus Experiment has no one document to draw them on."""
    out: dict[str, list[tuple[int, int]]] = {}
    if row.document_id is None:
        return out
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


def report(
    session: Session,
    store: VectorStore | None,
    experiment_id: str,
    *,
    view: Literal["managerial", "technical", "json"] = "managerial",
    budget: int | None = None,
    tenant_id: str,
) -> str:
    """An Experiment's self-contained HTML report (``managerial`` or ``technical``, the latter with each strategy's
    chunk boundaries on the document, read from ``store``) or its JSON export (``json``): what the API, the CLI and a
    Workspace write."""
    from chunkbench.benchmarking.report.render import experiment_json, render_report

    row = get(session, experiment_id, tenant_id=tenant_id)
    experiment = experiment_dict(session, row)
    if view == "json":
        return experiment_json(experiment)
    document = session.get(DocumentRow, row.document_id) if row.document_id is not None else None
    assert store is not None or view != "technical", "the technical report reads the chunk boundaries from the store"
    return render_report(
        experiment, view=view, document_text=document.parsed_text if document is not None else None,
        boundaries=boundaries(store, row, tenant_id=tenant_id) if store is not None and view == "technical" else None,
        budget=budget,
    )  # fmt: skip
