"""The benchmark runner (seed 000 §10.2): questions × configurations through the query pipeline.

``plan`` validates a request completely (document, strategies processed with the Corpus model, LLM for
the judge, questions and their evidence) before anything is written. ``create`` records the Experiment
with its plan and provenance; ``execute`` runs every cell that has no result yet — so a killed run
resumes where it stopped — with bounded concurrency (the cells wait on LLM calls), writes each cell as
it finishes, then aggregates and decides.
"""

from __future__ import annotations

import logging
import platform
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import numpy as np
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from chunkbench.benchmarking import aggregation, experiments, scoring
from chunkbench.benchmarking.model import (
    BenchmarkConfig,
    CellResult,
    CellTokens,
    Configuration,
    Experiment,
    MetricValue,
    RetrievedChunk,
    question_to_json,
)
from chunkbench.benchmarking.questions import resolve_benchmark_questions
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.chunking.base import capabilities
from chunkbench.config import Settings
from chunkbench.embedding import service as embedding
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.errors import BenchmarkError, ChunkbenchError, LlmUnavailableError
from chunkbench.evaluation.judge import judge
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.indexing import service as processing
from chunkbench.jobs.service import Progress
from chunkbench.llm.client import LlmClient, get_llm_client
from chunkbench.models import StrategyName
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.pipeline import QueryResult, Scope
from chunkbench.storage.db import Database
from chunkbench.storage.ownership import process_alive, this_process
from chunkbench.storage.repositories import DocumentRepository, QueryRepository
from chunkbench.storage.schema import BenchmarkCellRow, ExperimentRow, utcnow
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.tokens import get_tokenizer

logger = logging.getLogger(__name__)

# Versions stored with every Experiment, so a figure can be traced to the code that produced it.
_PROVENANCE_PACKAGES = (
    "chunkbench", "qdrant-client", "sentence-transformers", "torch", "transformers", "numpy", "openai",
    "quicktok", "sentencex", "pypdfium2", "python-docx",
)  # fmt: skip
_METRICS_NEEDING_EVIDENCE = {"recall", "precision", "precision_omega", "iou", "recall_at_k", "hit_at_k", "mrr",
                             "ndcg_at_k"}  # fmt: skip
_METRICS_NEEDING_ANSWERS = {"exact_match", "token_f1", "answer_similarity", "judge_answer_similarity"}


@dataclass(frozen=True)
class BenchmarkPlan:
    """A validated benchmark request: everything ``create`` stores and ``execute`` needs."""

    tenant_id: str
    document_id: str
    document_name: str
    name: str | None
    configurations: tuple[Configuration, ...]
    questions: tuple[BenchmarkQuestion, ...]
    corpus: EmbeddingModelSpec
    boundary_model_id: str | None
    # The grid's axes, answering, grading and running: stored as the Experiment's ``benchmark_config``.
    config: BenchmarkConfig
    strategy_runs: dict[str, dict[str, Any]]

    @property
    def cells(self) -> int:
        return len(self.configurations) * len(self.questions)


def plan(session: Session, settings: Settings, request: BenchmarkIn, *, tenant_id: str) -> BenchmarkPlan:
    """Validate a benchmark request; raises 404/400 saying what to fix before anything runs."""
    document = DocumentRepository(session, tenant_id).get(request.document_id)
    processed = document.chunk_counts or {}
    strategies = list(dict.fromkeys(request.strategies or [s for s in StrategyName if s.value in processed]))
    missing = [s.value for s in strategies if s.value not in processed]
    if not strategies or missing:
        names = " ".join(missing) or "<strategies>"
        raise BenchmarkError(
            f"'{document.filename}' has not been processed with {', '.join(missing) or 'any strategy'}. "
            f"Run: chunkbench process {document.id} --strategies {names}",
            document_id=document.id,
        )
    corpus = embedding.resolve_corpus_model(session, request.corpus_model_id or document.last_corpus_embedding_model_id)
    strategy_runs: dict[str, dict[str, Any]] = {}
    for strategy in strategies:
        run = processing.latest_run(session, document.id, strategy, corpus.id, tenant_id=tenant_id)
        if run is None:
            raise BenchmarkError(
                f"'{document.filename}' has no completed {strategy.value} run with the Corpus model {corpus.id}. "
                f"Run: chunkbench process {document.id} --strategies {strategy.value} --corpus-model {corpus.id}",
                document_id=document.id,
            )
        strategy_runs[strategy.value] = {"run_id": run.id, "params": run.params}

    llm = settings.llm_configured
    use_judge = llm if request.judge is None else request.judge
    if use_judge and not llm:
        raise BenchmarkError(
            "The LLM judge needs an LLM: set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL, or run with judge off."
        )
    if "llm" in request.rerank and not llm:
        raise BenchmarkError("LLM reranking needs an LLM: set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL.")
    if "cross_encoder" in request.rerank and not settings.cross_encoder_model:
        raise BenchmarkError("Cross-encoder reranking needs CHUNKBENCH_CROSS_ENCODER_MODEL (a CrossEncoder folder).")

    questions = resolve_benchmark_questions(session, settings, request, document, tenant_id=tenant_id)
    primary = request.primary_metric or _default_metric(questions, use_judge)
    _check_metric(primary, questions, use_judge)
    configurations = tuple(
        Configuration(
            strategy, retriever, top_k, rerank,
            request.neighbor_prev if capabilities(strategy).expands_neighbours else 0,
            request.neighbor_next if capabilities(strategy).expands_neighbours else 0,
        )
        for strategy in strategies for retriever in request.retrievers for top_k in request.top_k
        for rerank in request.rerank
    )  # fmt: skip
    return BenchmarkPlan(
        tenant_id=tenant_id,
        document_id=document.id,
        document_name=document.filename,
        name=request.name,
        configurations=configurations,
        questions=tuple(questions),
        corpus=corpus,
        boundary_model_id=document.last_boundary_embedding_model_id,
        config=BenchmarkConfig.of(
            configurations,
            corpus_model_id=corpus.id,
            answer_mode="llm" if llm else "extractive",
            judge=use_judge,
            judge_repeats=request.judge_repeats,
            primary_metric=primary,
            question_set=request.question_set,
            # Without an LLM a cell is CPU work (embedding, extractive answer): running cells side by side gains
            # nothing on the cores and would put queueing into every cell's latency. With one, cells wait on it.
            concurrency=request.concurrency or (settings.benchmark_concurrency if llm else 1),
            seed=request.seed,
        ),
        strategy_runs=strategy_runs,
    )


def _default_metric(questions: Sequence[BenchmarkQuestion], use_judge: bool) -> str:
    """Evidence spans make retrieval measurable directly; without them, the answer is what can be graded."""
    if any(q.references for q in questions):
        return "recall"
    if use_judge:
        return "judge_answer_similarity"
    return "answer_similarity"


def _check_metric(metric: str, questions: Sequence[BenchmarkQuestion], use_judge: bool) -> None:
    if metric in _METRICS_NEEDING_EVIDENCE and not any(q.references for q in questions):
        raise BenchmarkError(
            f"'{metric}' needs evidence: give questions 'references' (spans or snippets), or rank on answer_similarity."
        )
    if metric in _METRICS_NEEDING_ANSWERS and not any(q.expected_answer for q in questions):
        raise BenchmarkError(f"'{metric}' needs an expected_answer on the questions.")
    if metric.startswith("judge_") and not use_judge:
        raise BenchmarkError(f"'{metric}' is a judge score: configure an LLM and turn the judge on.")
    if not any(q.references or q.expected_answer for q in questions) and not use_judge:
        raise BenchmarkError(
            "Nothing to grade: the questions have neither evidence (references) nor expected answers, and no LLM judge "
            "is configured."
        )


def provenance(plan_: BenchmarkPlan, settings: Settings, document_sha256: str | None) -> dict[str, Any]:
    """Models, parameters, library versions and seeds: what it takes to reproduce the Experiment's figures."""
    versions: dict[str, str] = {}
    for package in _PROVENANCE_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return {
        "corpus_model": plan_.corpus.id,
        "corpus_provider": plan_.corpus.provider,
        "boundary_model": plan_.boundary_model_id,
        "llm_model": settings.llm_model if settings.llm_configured else None,
        "answer_mode": plan_.config.answer_mode,
        "document_sha256": document_sha256,
        "strategy_runs": plan_.strategy_runs,
        "library_versions": versions,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "seed": plan_.config.seed,
        "bootstrap_resamples": settings.benchmark_bootstrap_resamples,
    }


def create(database: Database, settings: Settings, plan_: BenchmarkPlan) -> ExperimentRow:
    """Record a running Experiment with its whole plan; cells are added as they finish."""
    with database.session() as session:
        document = DocumentRepository(session, plan_.tenant_id).get(plan_.document_id)
        row = ExperimentRow(
            id=uuid.uuid4().hex,
            tenant_id=plan_.tenant_id,
            document_id=plan_.document_id,
            name=plan_.name,
            status="running",
            benchmark_config=plan_.config.to_dict(),
            questions=[question_to_json(q) for q in plan_.questions],
            configurations=[c.to_dict() for c in plan_.configurations],
            provenance=provenance(plan_, settings, document.content_hash),
            strategies_used=list(plan_.config.strategies),
            embedding_model_id=plan_.corpus.id,
            embedding_provider=plan_.corpus.provider,
            boundary_embedding_model_id=plan_.boundary_model_id,
            started_at=utcnow(),
        )
        _claim(row)
        session.add(row)
        session.flush()
        session.expunge(row)
        return row


@dataclass
class _Context:
    """What every cell of one run shares."""

    database: Database
    settings: Settings
    store: VectorStore
    tenant_id: str
    document_id: str
    corpus: EmbeddingModelSpec
    judge_client: LlmClient | None
    judge_repeats: int
    chunkings: dict[str, scoring.Chunking]
    # Each question's expected answer, embedded once for the run (every configuration compares against it).
    expected_vectors: dict[str, np.ndarray]


def execute(
    database: Database,
    settings: Settings,
    store: VectorStore,
    experiment_id: str,
    *,
    tenant_id: str,
    progress: Progress | None = None,
) -> ExperimentRow:
    """Run every cell of the Experiment that has no result yet, then aggregate and decide.

    Failed cells are retried on a resume. An unreachable LLM stops the run (status ``failed``, resumable)
    instead of failing every remaining cell one by one.
    """
    try:
        return _execute(database, settings, store, experiment_id, tenant_id=tenant_id, progress=progress)
    finally:
        _release(experiment_id)


def _execute(
    database: Database,
    settings: Settings,
    store: VectorStore,
    experiment_id: str,
    *,
    tenant_id: str,
    progress: Progress | None,
) -> ExperimentRow:
    report = progress or (lambda fraction, message: None)
    with database.session() as session:
        row = experiments.get(session, experiment_id, tenant_id=tenant_id)
        experiment = Experiment.from_row(row)
        configurations, questions, config = experiment.configurations, experiment.questions, experiment.config
        session.execute(
            delete(BenchmarkCellRow).where(
                BenchmarkCellRow.experiment_id == experiment_id, BenchmarkCellRow.status != "ok"
            )
        )
        done = set(
            session.execute(
                select(BenchmarkCellRow.config_key, BenchmarkCellRow.question_id).where(
                    BenchmarkCellRow.experiment_id == experiment_id
                )
            ).all()
        )
        row.status, row.error, row.finished_at = "running", None, None
        _claim(row)
        document_id = row.document_id
        corpus = embedding.resolve_corpus_model(session, row.embedding_model_id)

    context = _Context(
        database, settings, store, tenant_id, document_id, corpus,
        get_llm_client(settings) if config.judge else None, config.judge_repeats,
        {
            strategy: scoring.Chunking.from_payloads(
                store.scroll_document(strategy, corpus.id, tenant_id=tenant_id, document_id=document_id,
                                      include_parents=False)
            )
            for strategy in dict.fromkeys(c.strategy.value for c in configurations)
        },
        _expected_vectors(questions, corpus, settings),
    )  # fmt: skip
    todo = [(c, q) for c in configurations for q in questions if (c.key, q.id) not in done]
    total = len(configurations) * len(questions)
    finished = total - len(todo)
    report(finished / total if total else 1.0, f"{finished}/{total} cells")
    try:
        _run_cells(context, experiment_id, todo, config.concurrency or settings.benchmark_concurrency,
                   lambda n: report((finished + n) / total, f"{finished + n}/{total} cells"))  # fmt: skip
    except ChunkbenchError as exc:
        _set_status(database, experiment_id, "failed", error=exc.to_dict())
        raise
    except BaseException as exc:  # a crash or Ctrl-C: the finished cells stay, the run can be resumed
        _set_status(
            database, experiment_id, "interrupted",
            error={"error": "interrupted", "message": f"Stopped before every cell finished ({type(exc).__name__})."},
        )  # fmt: skip
        raise
    report(1.0, "aggregating")
    return aggregation.finalize(database, settings, experiment_id, tenant_id=tenant_id)


def _expected_vectors(
    questions: Sequence[BenchmarkQuestion], corpus: EmbeddingModelSpec, settings: Settings
) -> dict[str, np.ndarray]:
    with_answers = [q for q in questions if q.expected_answer]
    if not with_answers:
        return {}
    vectors = embedding.embed_texts(corpus, [str(q.expected_answer) for q in with_answers], "query", settings)
    return {q.id: vector for q, vector in zip(with_answers, vectors, strict=True)}


def _run_cells(
    context: _Context,
    experiment_id: str,
    todo: list[tuple[Configuration, BenchmarkQuestion]],
    concurrency: int,
    advanced: Any,
) -> None:
    """Run cells with at most ``concurrency`` in flight; each is written by this thread as it finishes."""
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="chunkbench-bench") as pool:
        pending: set[Future[CellResult]] = set()
        queue = iter(todo)
        written = 0
        try:
            for item in queue:
                pending.add(pool.submit(_cell, context, *item, stop))
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


def _drain(context: _Context, experiment_id: str, pending: set[Future[CellResult]]) -> int:
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
                    result=cell.to_dict(),
                )
            )
    return len(finished)


def _cell(
    context: _Context, configuration: Configuration, question: BenchmarkQuestion, stop: threading.Event
) -> CellResult:
    """Ask one question of one configuration, grade it; a domain error becomes a failed cell."""
    if stop.is_set():
        raise BenchmarkError("The run was stopped.")
    try:
        with context.database.engine.connect() as connection:  # deleted mid-run: a failed cell, not empty hits
            QueryRepository(connection, context.tenant_id).query_target(context.document_id)
        plan = pipeline.make_plan(
            context.settings,
            question=question.question,
            scope=Scope.document(context.tenant_id, context.document_id),
            strategy=configuration.strategy,
            corpus=context.corpus,
            retriever=configuration.retriever,
            top_k=configuration.top_k,
            rerank=configuration.rerank,
            neighbor_prev=configuration.neighbor_prev,
            neighbor_next=configuration.neighbor_next,
        )
        return _grade(context, configuration, question, pipeline.run(context.settings, context.store, plan))
    except LlmUnavailableError:
        raise
    except ChunkbenchError as exc:
        return CellResult.failed(question.id, configuration.key, exc.message)


def _grade(
    context: _Context, configuration: Configuration, question: BenchmarkQuestion, result: QueryResult
) -> CellResult:
    evidence = [r.span for r in question.references]
    answer = result.answer
    assert answer is not None  # a benchmark always answers
    # Stored: the hits by rank, then the Neighbor Expansion neighbours in context order.
    retrieved = tuple(
        RetrievedChunk(chunk.chunk_index, chunk.start_index, chunk.end_index, chunk.role, _rounded(chunk.score),
                       chunk.token_count)
        for chunk in (*result.hits, *result.neighbours)
    )  # fmt: skip
    passages = [source.passage for source in result.sources]
    metrics: dict[str, MetricValue] = scoring.retrieval_metrics(
        evidence, retrieved, context.chunkings[configuration.strategy.value], top_k=configuration.top_k
    )
    # tok@k: the tokens of the context the answerer actually receives (parents included).
    context_tokens = sum(get_tokenizer().count_many(passages)) if passages else 0
    metrics["tok_at_k"] = context_tokens
    expected = question.expected_answer
    vectors = None
    if expected:
        answer_vector = embedding.embed_texts(context.corpus, [answer.text], "query", context.settings)[0]
        vectors = np.stack([answer_vector, context.expected_vectors[question.id]])
    metrics.update(scoring.answer_scores(answer.text, expected, vectors))
    verdict = None
    latency = dict(result.latency_ms)
    prompt_tokens, completion_tokens = answer.prompt_tokens, answer.completion_tokens
    if context.judge_client is not None:
        started = time.perf_counter()
        verdict = judge(
            context.judge_client,
            question=question.question,
            expected_answer=expected or "",
            answer=answer.text,
            contexts=passages,
            repeats=context.judge_repeats,
        )
        latency["judge"] = round((time.perf_counter() - started) * 1000, 2)
        prompt_tokens += verdict.prompt_tokens
        completion_tokens += verdict.completion_tokens
    metrics.update(scoring.judge_scores(verdict))
    tree = (
        [_tree_node(node.to_dict()) for node in result.tree]
        if capabilities(configuration.strategy).expands_neighbours
        else None
    )
    return CellResult(
        question_id=question.id,
        config_key=configuration.key,
        status="ok",
        answer=answer.text,
        answer_mode=answer.mode,
        citations=tuple(answer.citations),
        retrieved=retrieved,
        expansion_tree=tree,
        metrics=metrics,
        judge=verdict.to_dict() if verdict is not None else None,
        latency_ms=latency,
        tokens=CellTokens(prompt_tokens, completion_tokens, context_tokens),
    )


def _rounded(score: float | None) -> float | None:
    # Scores to 6 places: CPU embeddings vary in the last bits between runs; the figures must not.
    return None if score is None else round(score, 6)


def _tree_node(node: dict[str, Any]) -> dict[str, Any]:
    """An Expansion Tree node as a cell keeps it: positions, text and rounded score of the hit and its neighbours."""
    compact = {
        "chunk_index": node["chunk_index"], "role": node["role"], "start_index": node["start_index"],
        "end_index": node["end_index"], "text": node["text"], "score": _rounded(node["score"]),
    }  # fmt: skip
    for side in ("neighbors_prev", "neighbors_next"):
        if side in node:
            compact[side] = [_tree_node(neighbour) for neighbour in node[side]]
    return compact


def _set_status(database: Database, experiment_id: str, status: str, *, error: dict[str, Any] | None) -> None:
    with database.session() as session:
        session.execute(
            update(ExperimentRow)
            .where(ExperimentRow.id == experiment_id)
            .values(status=status, error=error, finished_at=utcnow())
        )


# Experiments this process has claimed and not finished. A "running" row naming this host and pid that is not
# in here was claimed by an earlier process with the same pid: in a restarted container pids repeat.
_CLAIMED_HERE: set[str] = set()
_CLAIMED_LOCK = threading.Lock()


def _claim(row: ExperimentRow) -> None:
    """Record this process as the one running the Experiment."""
    me = this_process()
    row.runner_host, row.runner_pid = me.host, me.pid
    with _CLAIMED_LOCK:
        _CLAIMED_HERE.add(row.id)


def _release(experiment_id: str) -> None:
    with _CLAIMED_LOCK:
        _CLAIMED_HERE.discard(experiment_id)


def orphaned(row: ExperimentRow) -> bool:
    """A running Experiment whose process on this host is gone (killed, crashed); another host's run is
    assumed alive, since its process cannot be checked from here."""
    if row.status != "running" or row.runner_pid is None:
        return row.status == "running"
    me = this_process()
    if (row.runner_host, row.runner_pid) == (me.host, me.pid):
        with _CLAIMED_LOCK:
            return row.id not in _CLAIMED_HERE
    return process_alive(row.runner_host, row.runner_pid) is False


_INTERRUPTED = {"error": "interrupted", "message": "The process running it stopped mid-run. Resume it to finish."}


def fail_interrupted(database: Database) -> int:
    """Mark running Experiments whose process is gone as interrupted (resumable); returns how many."""
    with database.session() as session:
        rows = session.scalars(select(ExperimentRow).where(ExperimentRow.status == "running")).all()
        stopped = [row for row in rows if orphaned(row)]
        for row in stopped:
            row.status, row.error = "interrupted", dict(_INTERRUPTED)
        return len(stopped)
