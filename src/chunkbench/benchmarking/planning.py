"""Planning a benchmark (seed 000 §10.2): a request validated completely before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from chunkbench.benchmarking.model import BenchmarkConfig, Configuration
from chunkbench.benchmarking.questions import resolve_benchmark_questions
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.chunking.base import capabilities
from chunkbench.config import Settings
from chunkbench.embedding import service as embedding
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.errors import BenchmarkError
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.indexing import service as processing
from chunkbench.models import StrategyName
from chunkbench.storage.repositories import DocumentRepository

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
        if window := (run.diagnostics or {}).get("window"):  # chunks longer than the Corpus model reads
            strategy_runs[strategy.value]["window"] = window

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
            budget=request.budget,
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
