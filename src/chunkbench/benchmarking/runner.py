"""The benchmark runner (docs/benchmarks.md): an Experiment's unfinished cells, run side by side, then its figures."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, cast

import numpy as np
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from chunkbench.benchmarking import aggregation, claims, experiments, pruning, scoring
from chunkbench.benchmarking.cells import CellContext, run_cell
from chunkbench.benchmarking.model import CellResult, Configuration, Experiment
from chunkbench.benchmarking.schemas import METRIC_DIRECTIONS
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.errors import ChunkbenchError, JobCancelledError
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.faults import fault_point
from chunkbench.llm.client import get_llm_client
from chunkbench.progress import Progress, StopCheck, never_stop
from chunkbench.storage.db import Database
from chunkbench.storage.schema import BenchmarkCellRow, DocumentRow, ExperimentRow, utcnow
from chunkbench.storage.vectors import VectorStore

# Running an Experiment as a background job (``job_kinds``).
JOB_KIND = "benchmark"


def execute(
    database: Database,
    settings: Settings,
    store: VectorStore,
    experiment_id: str,
    *,
    tenant_id: str,
    progress: Progress | None = None,
    stop: StopCheck = never_stop,
) -> ExperimentRow:
    """Run every cell of the Experiment that has no result yet, then aggregate and decide.

    Failed cells are retried on a resume. An unreachable LLM stops the run (status ``failed``, resumable)
    instead of failing every remaining cell one by one. Once ``stop`` says so (its job was cancelled), no new
    cell starts: the ones in flight are written, the Experiment is ``interrupted`` (resumable) and
    JobCancelledError says how far it got.
    """
    try:
        return _execute(database, settings, store, experiment_id, tenant_id=tenant_id, progress=progress, stop=stop)
    finally:
        claims.release(experiment_id)


def _execute(
    database: Database,
    settings: Settings,
    store: VectorStore,
    experiment_id: str,
    *,
    tenant_id: str,
    progress: Progress | None,
    stop: StopCheck,
) -> ExperimentRow:
    report = progress or (lambda fraction, message: None)
    experiment, done = _start(database, experiment_id, tenant_id=tenant_id)
    configurations, questions, config = experiment.configurations, experiment.questions, experiment.config
    context = _context(database, settings, store, experiment, tenant_id=tenant_id)
    total = len(configurations) * len(questions)
    finished = len(done)
    report(finished / total if total else 1.0, f"{finished}/{total} cells")

    def run(todo: list[tuple[Configuration, BenchmarkQuestion]]) -> None:
        """Run ``todo``'s cells; a stop, a crash or an unreachable LLM leave the Experiment resumable."""
        nonlocal finished
        try:
            written = _run_cells(
                context, experiment_id, todo, config.concurrency or settings.benchmark_concurrency,
                lambda n: report((finished + n) / total, f"{finished + n}/{total} cells"), stop,
            )  # fmt: skip
        except ChunkbenchError as exc:
            _set_status(database, experiment_id, "failed", error=exc.to_dict())
            raise
        except BaseException as exc:  # a crash or Ctrl-C: the finished cells stay, the run can be resumed
            message = f"Stopped before every cell finished ({type(exc).__name__})."
            _set_status(database, experiment_id, "interrupted", error={"error": "interrupted", "message": message})
            raise
        finished += written
        if written < len(todo):
            cancelled = _cancelled(finished, total)
            _set_status(database, experiment_id, "interrupted", error=cancelled.to_dict())
            raise cancelled

    if config.prune is None:
        run([(c, q) for c in configurations for q in questions if (c.key, q.id) not in done])
    else:
        _run_rungs(database, experiment, done, run)
    report(1.0, "aggregating")
    return aggregation.finalize(database, settings, experiment_id, tenant_id=tenant_id)


def _start(database: Database, experiment_id: str, *, tenant_id: str, queued: bool = False) -> tuple[Experiment, set]:
    """The run begins: the cells that did not end ok are dropped (a resume runs them again), the Experiment reads
    running, claimed by this process (``queued``: by the task queue, whose workers may be anywhere); returns it and
    the (configuration key, question id) of the cells it already has."""
    with database.session() as session:
        row = experiments.get(session, experiment_id, tenant_id=tenant_id)
        experiment = Experiment.from_row(row)
        session.execute(
            delete(BenchmarkCellRow).where(
                BenchmarkCellRow.experiment_id == experiment_id, BenchmarkCellRow.status != "ok"
            )
        )
        done = _written(session, experiment_id)
        row.status, row.error, row.finished_at = "running", None, None
        if queued:
            claims.claim_for_queue(row)
        else:
            claims.claim(row)
    return experiment, done


def _written(session: Session, experiment_id: str) -> set[tuple[str, str]]:
    return set(
        session.execute(
            select(BenchmarkCellRow.config_key, BenchmarkCellRow.question_id).where(
                BenchmarkCellRow.experiment_id == experiment_id
            )
        ).all()
    )


def _context(
    database: Database, settings: Settings, store: VectorStore, experiment: Experiment, *, tenant_id: str
) -> CellContext:
    """What every cell of the run shares: models, the judge, each (strategy, model)'s chunking, expected answers."""
    questions, config = experiment.questions, experiment.config
    with database.session() as session:
        row = experiments.get(session, experiment.id, tenant_id=tenant_id)
        document_ids = experiment.document_ids
        # cast: every Experiment row records its Corpus model when it is created (experiments.create).
        corpora = {
            model_id: roles.resolve_corpus_model(session, model_id)
            for model_id in config.models or (cast(str, row.embedding_model_id),)
        }
        lengths = _text_lengths(session, document_ids, tenant_id=tenant_id)
    strategies = dict.fromkeys(c.strategy.value for c in experiment.configurations)
    return CellContext(
        database, settings, store, tenant_id, document_ids, corpora, next(iter(corpora)),
        get_llm_client(settings) if config.judge else None, config.judge_repeats,
        {
            (strategy, model_id): scoring.Chunking.from_payloads(
                lengths,
                [
                    payload for document_id in document_ids
                    for payload in store.scroll_document(strategy, model_id, tenant_id=tenant_id,
                                                         document_id=document_id, include_parents=False)
                ],
            )
            for strategy in strategies for model_id in corpora
        },
        {
            model_id: _expected_vectors(questions, corpus, settings) if config.answer_mode != "none" else {}
            for model_id, corpus in corpora.items()
        },
        config.scope,
        config.answer_mode != "none",
    )  # fmt: skip


# ----------------------------------------------------------- the same run as tasks of the queue (job_kinds)


def begin(database: Database, experiment_id: str, *, tenant_id: str) -> tuple[Experiment, list[tuple[str, str]]]:
    """A queued run's first task: the run begins (as ``execute`` begins it) and returns the cells left to run, in
    the order ``execute`` runs them, for the tasks to share out."""
    experiment, done = _start(database, experiment_id, tenant_id=tenant_id, queued=True)
    todo = [(c.key, q.id) for c in experiment.configurations for q in experiment.questions if (c.key, q.id) not in done]
    return experiment, todo


def run_some(
    database: Database,
    settings: Settings,
    store: VectorStore,
    experiment_id: str,
    cells: Sequence[tuple[str, str]],
    *,
    tenant_id: str,
    progress: Progress,
    stop: StopCheck,
) -> int:
    """One task of a queued run: these cells, but those already written (a task run again after its worker was
    killed runs only what it had not written). Returns how many it wrote; JobCancelledError when ``stop`` cut it
    short (the written cells are kept)."""
    with database.session() as session:
        experiment = Experiment.from_row(experiments.get(session, experiment_id, tenant_id=tenant_id))
        done = _written(session, experiment_id)
    by_key = {c.key: c for c in experiment.configurations}
    by_id = {q.id: q for q in experiment.questions}
    todo = [(by_key[key], by_id[question]) for key, question in cells if (key, question) not in done]
    if not todo:
        return 0
    config = experiment.config
    context = _context(database, settings, store, experiment, tenant_id=tenant_id)
    written = _run_cells(
        context, experiment_id, todo, config.concurrency or settings.benchmark_concurrency,
        lambda n: progress(n / len(todo), f"{n}/{len(todo)} cells"), stop,
    )  # fmt: skip
    if written < len(todo):
        raise JobCancelledError(f"Cancelled after {written} of {len(todo)} cells of this task.", cells_done=written)
    return written


def close(
    database: Database, settings: Settings, experiment_id: str, *, tenant_id: str, failure: ChunkbenchError | None
) -> ExperimentRow:
    """A queued run's closing task: with every cell written, aggregate and decide (``execute``'s end); a task that
    failed fails the run (resumable), and a cancelled one leaves it interrupted, saying how far it got."""
    if failure is not None:
        _set_status(database, experiment_id, "failed", error=failure.to_dict())
        raise failure
    with database.session() as session:
        experiment = Experiment.from_row(experiments.get(session, experiment_id, tenant_id=tenant_id))
        finished = len(_written(session, experiment_id))
    total = len(experiment.configurations) * len(experiment.questions)
    if finished < total:
        cancelled = _cancelled(finished, total)
        _set_status(database, experiment_id, "interrupted", error=cancelled.to_dict())
        raise cancelled
    return aggregation.finalize(database, settings, experiment_id, tenant_id=tenant_id)


def _run_rungs(
    database: Database,
    experiment: Experiment,
    done: set[tuple[str, str]],
    run: Callable[[list[tuple[Configuration, BenchmarkQuestion]]], None],
) -> None:
    """Successive halving (``pruning.py``): each rung's cells for the configurations still in, then the ones it
    rules out stop; the record is written after every rung. A resumed run re-decides the rungs it has the cells of
    (the same cells and seed give the same calls) and goes on from the first one unfinished."""
    options = experiment.config.prune
    assert options is not None
    by_id = {q.id: q for q in experiment.questions}
    metric = experiment.config.primary_metric or "recall"
    record = pruning.PruningRecord(
        options, pruning.question_order(list(by_id), options.seed),
        pruning.rung_sizes(len(by_id), options), metric,
    )  # fmt: skip
    alpha = pruning.pruning_alpha(options, len(record.sizes))
    survivors = list(experiment.configurations)
    for rung, size in enumerate(record.sizes, start=1):
        subset = [by_id[question_id] for question_id in record.order[:size]]
        todo = [(c, q) for c in survivors for q in subset if (c.key, q.id) not in done]
        run(todo)
        done |= {(c.key, q.id) for c, q in todo}  # the next rung's subset holds this one's questions
        last = rung == len(record.sizes)
        call = None
        if not last:
            with database.session() as session:
                results = experiments.cells(session, experiment.id)
            call = pruning.rule_out(
                pruning.rung_scores(results, [c.key for c in survivors], [q.id for q in subset], metric),
                higher_is_better=METRIC_DIRECTIONS[metric], alpha=alpha, margin=options.margin,
                correction=options.correction, rung=rung, seed=options.seed,
            )  # fmt: skip
            stopped = {r.config_key for r in call.ruled_out}
            record.pruned.extend(call.ruled_out)
            survivors = [c for c in survivors if c.key not in stopped]
        record.rungs.append({
            "rung": rung, "questions": size, "configurations": len(survivors) + len(call.ruled_out if call else ()),
            "leader": call.leader if call else None, "alpha": alpha if not last else None,
            "ruled_out": [r.config_key for r in call.ruled_out] if call else [],
            "notes": list(call.notes) if call else [] if len(record.sizes) > 1 else [
                f"Only {size} questions: too few to split into rungs of at least {pruning.MIN_RUNG_QUESTIONS}; "
                "nothing was pruned."
            ],
        })  # fmt: skip
        _write_pruning(database, experiment.id, record.to_dict())


def _write_pruning(database: Database, experiment_id: str, record: dict[str, Any]) -> None:
    """The pruning record into the Experiment's provenance (a new dict: the JSON column sees the change)."""
    with database.session() as session:
        row = session.get(ExperimentRow, experiment_id)
        assert row is not None
        row.provenance = {**(row.provenance or {}), "pruning": record}


def _cancelled(done: int, total: int) -> JobCancelledError:
    return JobCancelledError(
        f"Cancelled after {done} of {total} cells; the finished cells are kept. Resume the Experiment to run the "
        f"other {total - done}.",
        cells_done=done,
        cells_total=total,
    )


def _text_lengths(session: Session, document_ids: Sequence[str], *, tenant_id: str) -> dict[str, int]:
    """Each document's parsed-text length, in the Experiment's order (a document deleted since: 0; its cells fail)."""
    lengths: dict[str, int | None] = dict(
        session.execute(
            select(DocumentRow.id, func.length(DocumentRow.parsed_text)).where(
                DocumentRow.tenant_id == tenant_id, DocumentRow.id.in_(list(document_ids))
            )
        ).all()
    )
    return {document_id: int(lengths.get(document_id) or 0) for document_id in document_ids}


def _expected_vectors(
    questions: Sequence[BenchmarkQuestion], corpus: EmbeddingModelSpec, settings: Settings
) -> dict[str, np.ndarray]:
    with_answers = [q for q in questions if q.expected_answer]
    if not with_answers:
        return {}
    vectors = roles.embed_texts(corpus, [str(q.expected_answer) for q in with_answers], "query", settings)
    return {q.id: vector for q, vector in zip(with_answers, vectors, strict=True)}


def _run_cells(
    context: CellContext,
    experiment_id: str,
    todo: list[tuple[Configuration, BenchmarkQuestion]],
    concurrency: int,
    advanced: Any,
    stop_requested: StopCheck,
) -> int:
    """Run cells with at most ``concurrency`` in flight; each is written by this thread as it finishes. No cell
    starts once ``stop_requested`` says so; returns how many were written."""
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="chunkbench-bench") as pool:
        pending: set[Future[CellResult]] = set()
        queue = iter(todo)
        written = 0
        try:
            for item in queue:
                if stop_requested():
                    break
                pending.add(pool.submit(run_cell, context, *item, stop))
                if len(pending) < concurrency:
                    continue
                written += _drain(context, experiment_id, pending)
                advanced(written)
            while pending:
                written += _drain(context, experiment_id, pending)
                advanced(written)
        except BaseException:
            stop.set()
            for future in pending:
                future.cancel()
            raise
    return written


def _drain(context: CellContext, experiment_id: str, pending: set[Future[CellResult]]) -> int:
    """Write the results of the cells that have finished; returns how many."""
    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
    for future in finished:
        pending.discard(future)
        cell = future.result()  # LlmUnavailableError propagates: the whole run stops
        with context.database.session() as session:
            session.add(
                BenchmarkCellRow(
                    experiment_id=experiment_id,
                    config_key=cell.config_key,
                    question_id=cell.question_id,
                    status=cell.status,
                    result=cell.model_dump(mode="json"),
                )
            )
        fault_point("after_cell")  # a test hook (chunkbench.faults): this cell is written, the others of its task not
    return len(finished)


def _set_status(database: Database, experiment_id: str, status: str, *, error: dict[str, Any] | None) -> None:
    with database.session() as session:
        session.execute(
            update(ExperimentRow)
            .where(ExperimentRow.id == experiment_id)
            .values(status=status, error=error, finished_at=utcnow())
        )
