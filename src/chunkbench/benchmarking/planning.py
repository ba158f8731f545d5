"""Planning a benchmark (docs/benchmarks.md): a request validated completely before anything is written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.benchmarking.benchmark_questions import resolve_benchmark_questions
from chunkbench.benchmarking.breakdowns import question_documents
from chunkbench.benchmarking.model import BenchmarkConfig, Configuration, PruneOptions
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.chunking.base import capabilities, strategy_class
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.languages import LanguageEvidence, LanguageRule, LanguageWarning
from chunkbench.embedding.registry import REGISTRY, EmbeddingModelSpec, language_warnings
from chunkbench.errors import BenchmarkError
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.indexing import role_models
from chunkbench.models import StrategyName
from chunkbench.storage.index_state import require_indexed
from chunkbench.storage.repositories import CorpusRepository, DocumentRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow

_METRICS_NEEDING_EVIDENCE = {"recall", "precision", "precision_omega", "iou", "recall_at_k", "hit_at_k", "mrr",
                             "ndcg_at_k"}  # fmt: skip
_METRICS_NEEDING_ANSWERS = {"exact_match", "token_f1", "answer_similarity", "judge_answer_similarity"}


@dataclass(frozen=True)
class PlannedDocument:
    """A document a benchmark runs on, as its provenance records it."""

    id: str
    source_key: str
    filename: str
    content_hash: str


@dataclass(frozen=True)
class BenchmarkPlan:
    """A validated benchmark request: everything ``create`` stores and ``execute`` needs."""

    tenant_id: str
    # A one-document benchmark's document (None for a corpus benchmark, which names its corpus instead).
    document_id: str | None
    document_name: str | None
    corpus_id: str | None
    corpus_name: str | None
    # Every document retrieval searches (one for a one-document benchmark), by source key.
    documents: tuple[PlannedDocument, ...]
    name: str | None
    configurations: tuple[Configuration, ...]
    questions: tuple[BenchmarkQuestion, ...]
    # The grid's Corpus models, in order (usually one).
    corpus_models: tuple[EmbeddingModelSpec, ...]
    boundary_model_id: str | None
    # The grid's axes, answering, grading and running: stored as the Experiment's ``benchmark_config``.
    config: BenchmarkConfig
    strategy_runs: dict[str, dict[str, Any]]
    # Each document's detected language, and the models of the grid that do not cover one (``language_warnings``).
    languages: dict[str, str | None] = field(default_factory=dict)
    warnings: tuple[dict[str, Any], ...] = ()

    @property
    def cells(self) -> int:
        return len(self.configurations) * len(self.questions)

    @property
    def corpus(self) -> EmbeddingModelSpec:
        """The first Corpus model (the only one, but in a grid that compares models)."""
        return self.corpus_models[0]

    @property
    def document_ids(self) -> tuple[str, ...]:
        return tuple(d.id for d in self.documents)


def plan(session: Session, settings: Settings, request: BenchmarkIn, *, tenant_id: str) -> BenchmarkPlan:
    """Validate a benchmark request; raises 404/400 saying what to fix before anything runs."""
    corpus_row = None
    if request.corpus is not None:
        corpora = CorpusRepository(session, tenant_id)
        corpus_row = corpora.get(request.corpus)
        documents = corpora.documents(corpus_row)
        if not documents:
            raise BenchmarkError(
                f"The corpus '{corpus_row.name}' has no documents: add documents to it and process them first.",
                corpus=corpus_row.name,
            )
    else:
        assert request.document_id is not None  # BenchmarkIn asks for one of the two
        documents = [DocumentRepository(session, tenant_id).get(request.document_id)]
    target = _Target(documents, corpus_row.name if corpus_row is not None else None)
    strategies = _strategies(request, target)
    # None: the configured Corpus model (resolve_corpus_model).
    model_ids: Sequence[str | None] = request.corpus_models or [
        request.corpus_model_id or _last_corpus_model(documents)
    ]
    models = tuple(roles.resolve_corpus_model(session, model_id) for model_id in model_ids)
    strategy_runs = _strategy_runs(session, target, strategies, models, tenant_id=tenant_id)

    llm = settings.llm_configured
    # Retrieval only (answers off): nothing to judge, so the judge's LLM default does not apply.
    use_judge = request.answers and (llm if request.judge is None else request.judge)
    if use_judge and not llm:
        raise BenchmarkError(
            "The LLM judge needs an LLM: set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL, or run with judge off."
        )
    if "llm" in request.rerank and not llm:
        raise BenchmarkError("LLM reranking needs an LLM: set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL.")
    if "cross_encoder" in request.rerank and not settings.cross_encoder_model:
        raise BenchmarkError("Cross-encoder reranking needs CHUNKBENCH_CROSS_ENCODER_MODEL (a CrossEncoder folder).")

    questions = resolve_benchmark_questions(
        session, settings, request, documents, corpus_name=target.corpus_name, tenant_id=tenant_id
    )
    primary = request.primary_metric or _default_metric(questions, use_judge)
    _check_metric(primary, questions, use_judge, answers=request.answers)
    # A configuration names its Corpus model only when the grid compares models: one-model keys stay as they were.
    axis: list[str | None] = [m.id for m in models] if len(models) > 1 else [None]
    configurations = tuple(
        Configuration(
            strategy=strategy, retriever=retriever, top_k=top_k, rerank=rerank,
            neighbor_prev=request.neighbor_prev if capabilities(strategy).expands_neighbours else 0,
            neighbor_next=request.neighbor_next if capabilities(strategy).expands_neighbours else 0,
            corpus_model=model,
        )
        for strategy in strategies for model in axis for retriever in request.retrievers for top_k in request.top_k
        for rerank in request.rerank
    )  # fmt: skip
    prune = _prune_options(request, len(configurations))
    boundary_models = {d.last_boundary_embedding_model_id for d in documents}
    one = documents[0] if corpus_row is None else None
    return BenchmarkPlan(
        tenant_id=tenant_id,
        document_id=one.id if one is not None else None,
        document_name=one.filename if one is not None else None,
        corpus_id=corpus_row.id if corpus_row is not None else None,
        corpus_name=corpus_row.name if corpus_row is not None else None,
        documents=tuple(PlannedDocument(d.id, d.source_key, d.filename, d.content_hash) for d in documents),
        name=request.name,
        configurations=configurations,
        questions=tuple(questions),
        corpus_models=models,
        # Documents processed with different Boundary models have no one model: each strategy run records its own.
        boundary_model_id=boundary_models.pop() if len(boundary_models) == 1 else None,
        config=BenchmarkConfig.of(
            configurations,
            corpus_model_id=models[0].id,
            answer_mode=("llm" if llm else "extractive") if request.answers else "none",
            judge=use_judge,
            judge_repeats=request.judge_repeats,
            primary_metric=primary,
            question_set=request.question_set,
            # Without an LLM a cell is CPU work (embedding, extractive answer): running cells side by side gains
            # nothing on the cores and would put queueing into every cell's latency. With one, cells wait on it.
            concurrency=request.concurrency or (settings.benchmark_concurrency if llm else 1),
            seed=request.seed,
            budget=request.budget,
            scope=request.scope,
            prune=prune,
        ),
        strategy_runs=strategy_runs,
        languages={d.id: d.language for d in documents},
        warnings=_language_warnings(
            session, settings, documents, configurations, models, strategy_runs, questions, tenant_id=tenant_id
        ),
    )


def _prune_options(request: BenchmarkIn, configurations: int) -> PruneOptions | None:
    """The pruning options of the request (None: off); a 400 on a grid smaller than its stated minimum."""
    asked = request.prune
    if asked is None or not asked.enabled:
        return None
    if configurations < asked.min_configurations:
        raise BenchmarkError(
            f"Pruning is for grids of {asked.min_configurations} or more configurations; this grid has "
            f"{configurations}, cheap enough to run whole. Drop 'prune' (or --prune), or set "
            f"prune.min_configurations to {configurations} or less to prune it anyway.",
            configurations=configurations,
            min_configurations=asked.min_configurations,
        )
    return PruneOptions(
        first_share=asked.first_share, eta=asked.eta, confidence=asked.confidence, margin=asked.margin,
        min_configurations=asked.min_configurations, correction=asked.correction,
        seed=request.seed if asked.seed is None else asked.seed,
    )  # fmt: skip


def _language_warnings(
    session: Session,
    settings: Settings,
    documents: Sequence[DocumentRow],
    configurations: Sequence[Configuration],
    models: Sequence[EmbeddingModelSpec],
    strategy_runs: dict[str, dict[str, Any]],
    questions: Sequence[BenchmarkQuestion],
    *,
    tenant_id: str,
) -> tuple[dict[str, Any], ...]:
    """Each model of the grid (Corpus, and Boundary of the semantic strategies' runs) that does not cover a
    document's language, with the configurations built on it, the documents' share of the documents, the text and
    the questions, and whether they are ``material`` under the language rule (the Decision then names none of those
    configurations; below it, the Decision stands and says what share its scores are not meaningful on)."""
    names = {d.id: d.source_key for d in documents}
    languages = {d.source_key: d.language for d in documents}
    evidence = role_models.evidence(session, tenant_id, [d.id for d in documents])
    rule = role_models.rule_of(settings)

    def _shares(found: Sequence[LanguageWarning]) -> list[dict[str, Any]]:
        return _with_shares(found, documents, evidence, questions, rule)

    out: list[dict[str, Any]] = []
    for model in models:
        built = [c.key for c in configurations if (c.corpus_model or models[0].id) == model.id]
        out.extend({**w, "configurations": built} for w in _shares(language_warnings("corpus", model, languages)))
    cutting = [s for s in dict.fromkeys(c.strategy for c in configurations) if strategy_class(s).needs_boundary]
    for strategy in cutting:
        entry = strategy_runs[strategy.value]
        runs = entry.get("runs") or [{"document_id": documents[0].id, **entry}]
        by_model: dict[str, dict[str, str | None]] = {}
        for run in runs:
            if run.get("boundary_model") in REGISTRY:
                name = names[run["document_id"]]
                by_model.setdefault(run["boundary_model"], {})[name] = languages[name]
        built = [c.key for c in configurations if c.strategy == strategy]
        for model_id, members in by_model.items():
            found = language_warnings("boundary", REGISTRY[model_id], members)
            out.extend({**w, "configurations": built} for w in _shares(found))
    return tuple(out)


def _with_shares(
    found: Sequence[LanguageWarning],
    documents: Sequence[DocumentRow],
    evidence: Mapping[str, LanguageEvidence],
    questions: Sequence[BenchmarkQuestion],
    rule: LanguageRule,
) -> list[dict[str, Any]]:
    """One model's warnings as the Experiment stores them: each with its documents' ids and shares of the documents,
    the text and the questions; ``material`` (the same for all of the model's warnings: the rule counts the documents
    it does not cover together) when its confident documents hold at least the rule's share of the questions (of the
    text, when no question names its document), else ``standing`` says why not (``minority`` or ``unsure``)."""
    every = list(evidence.values())
    ids = {d.source_key: d.id for d in documents}
    order = {document_id: position for position, document_id in enumerate(evidence)}
    alone = len(documents) == 1

    def on(members: set[str]) -> list[str]:
        """The questions about documents ``members`` (ids): in a one-document Experiment, every question."""
        return [q.id for q in questions if members and (alone or members & set(question_documents(q)))]

    attributed = alone or any(question_documents(q) for q in questions)

    def share_of(members: set[str]) -> float:
        if attributed:
            return len(on(members)) / len(questions) if questions else 0.0
        return rule.text_share([evidence[i] for i in members], every)

    uncovered = {ids[n] for w in found for n in w.documents}
    material = rule.material(share_of({i for i in uncovered if rule.confident(evidence[i])}))
    # Not material: too few questions, or (when they would be enough) detections too unsure to count.
    standing = None if material else "unsure" if rule.material(share_of(uncovered)) else "minority"
    out = []
    for warning in found:
        members = {ids[name] for name in warning.documents}
        text = rule.text_share([evidence[i] for i in members], every)
        about = on(members)
        out.append({
            **warning.with_share(len(documents), text, None, rule).to_dict(),
            "document_ids": sorted(members, key=order.__getitem__),
            "question_ids": about,
            "questions_share": len(about) / len(questions) if questions else 0.0,
            "material": material,
            "material_share": rule.material_share,
            "min_confidence": rule.min_confidence,
            "standing": standing,
        })  # fmt: skip
    return out


# Documents named in a refusal: the first few, then how many more.
_SHOWN_DOCUMENTS = 5


@dataclass(frozen=True)
class _Target:
    """What a benchmark runs on, for its refusals: one document or a corpus's documents."""

    documents: Sequence[DocumentRow]
    corpus_name: str | None

    def named(self, documents: Sequence[DocumentRow]) -> str:
        """``'a.md', 'b.md' and 3 more``."""
        shown = ", ".join(f"'{d.source_key}'" for d in documents[:_SHOWN_DOCUMENTS])
        more = len(documents) - _SHOWN_DOCUMENTS
        return shown + (f" and {more} more" if more > 0 else "")

    def process_command(self, strategies: Sequence[str], model_id: str | None = None) -> str:
        target = f"--corpus {self.corpus_name}" if self.corpus_name is not None else self.documents[0].id
        model = f" --corpus-model {model_id}" if model_id else ""
        return f"chunkbench process {target} --strategies {','.join(strategies) or '<strategies>'}{model}"


def _strategies(request: BenchmarkIn, target: _Target) -> list[StrategyName]:
    """The requested strategies, or every one each document has been processed with; 400 naming what to run."""
    processed = [set(d.chunk_counts or {}) for d in target.documents]
    common = set.intersection(*processed)
    strategies = list(dict.fromkeys(request.strategies or [s for s in StrategyName if s.value in common]))
    if target.corpus_name is None:
        [document] = target.documents
        missing = [s.value for s in strategies if s.value not in common]
        if not strategies or missing:
            raise BenchmarkError(
                f"'{document.filename}' has not been processed with {', '.join(missing) or 'any strategy'}. "
                f"Run: {target.process_command(missing)}",
                document_id=document.id,
            )
        return strategies
    if not strategies:
        raise BenchmarkError(
            f"No strategy has been run on every document of the corpus '{target.corpus_name}'. "
            f"Run: {target.process_command([])}",
            corpus=target.corpus_name,
        )
    lacking = [d for d, done in zip(target.documents, processed, strict=True) if any(s not in done for s in strategies)]
    if lacking:
        names = [s.value for s in strategies]
        raise BenchmarkError(
            f"{len(lacking)} document(s) of the corpus '{target.corpus_name}' have not been processed with "
            f"{', '.join(names)}: {target.named(lacking)}. Run: {target.process_command(names)}",
            corpus=target.corpus_name,
            document_ids=[d.id for d in lacking],
        )
    return strategies


def _last_corpus_model(documents: Sequence[DocumentRow]) -> str | None:
    """The documents' last Corpus model, when they agree on one (else the configured default)."""
    models = {d.last_corpus_embedding_model_id for d in documents} - {None}
    return models.pop() if len(models) == 1 else None


def _strategy_runs(
    session: Session,
    target: _Target,
    strategies: Sequence[StrategyName],
    models: Sequence[EmbeddingModelSpec],
    *,
    tenant_id: str,
) -> dict[str, dict[str, Any]]:
    """Each strategy's completed run on every document with every Corpus model (400 naming what to run).

    One document with one model: ``{run_id, params, boundary_model[, window][, details]}`` per strategy, as always.
    Otherwise ``{params, runs: [{document_id, corpus_model, run_id, params, boundary_model[, window][, details]}]}``,
    ``params`` being the first run's (the chunking parameters the report shows).
    """
    out: dict[str, dict[str, Any]] = {}
    for strategy in strategies:
        runs: list[dict[str, Any]] = []
        for model in models:
            # 409 naming the command, before "no completed run": their points were removed (a wipe, a drop).
            require_indexed(session, tenant_id, strategy.value, model.id, [d.id for d in target.documents])
            latest = _latest_runs(session, [d.id for d in target.documents], strategy, model.id, tenant_id=tenant_id)
            lacking = [d for d in target.documents if d.id not in latest]
            if lacking:
                if target.corpus_name is None:
                    raise BenchmarkError(
                        f"'{lacking[0].filename}' has no completed {strategy.value} run with the Corpus model "
                        f"{model.id}. Run: {target.process_command([strategy.value], model.id)}",
                        document_id=lacking[0].id,
                    )
                raise BenchmarkError(
                    f"{len(lacking)} document(s) of the corpus '{target.corpus_name}' have no completed "
                    f"{strategy.value} run with the Corpus model {model.id}: {target.named(lacking)}. "
                    f"Run: {target.process_command([strategy.value], model.id)}",
                    corpus=target.corpus_name,
                    document_ids=[d.id for d in lacking],
                )
            for document in target.documents:
                run = latest[document.id]
                entry: dict[str, Any] = {
                    "run_id": run.id, "params": run.params, "boundary_model": run.boundary_model_id,
                }  # fmt: skip
                if window := (run.diagnostics or {}).get("window"):  # chunks longer than the Corpus model reads
                    entry["window"] = window
                if run.details:  # what the run decided beyond its parameters (contextual retrieval's prefix_mode…)
                    entry["details"] = run.details
                runs.append({"document_id": document.id, "corpus_model": model.id, **entry})
        if len(runs) == 1:
            out[strategy.value] = {k: v for k, v in runs[0].items() if k not in ("document_id", "corpus_model")}
        else:
            out[strategy.value] = {"params": runs[0]["params"], "runs": runs}
    return out


def _latest_runs(
    session: Session, document_ids: Sequence[str], strategy: StrategyName, model_id: str, *, tenant_id: str
) -> dict[str, StrategyRunRow]:
    """Each document's most recent completed run of the strategy with the Corpus model (``latest_run`` for many
    documents in one query: a corpus may hold thousands)."""
    latest: dict[str, StrategyRunRow] = {}
    for run in session.scalars(
        select(StrategyRunRow)
        .where(
            StrategyRunRow.tenant_id == tenant_id,
            StrategyRunRow.document_id.in_(list(document_ids)),
            StrategyRunRow.strategy_name == strategy.value,
            StrategyRunRow.corpus_model_id == model_id,
            StrategyRunRow.status == "completed",
        )
        .order_by(StrategyRunRow.created_at)
    ):
        latest[run.document_id] = run  # the newest comes last
    return latest


def _default_metric(questions: Sequence[BenchmarkQuestion], use_judge: bool) -> str:
    """Evidence spans make retrieval measurable directly; without them, the answer is what can be graded."""
    if any(q.references for q in questions):
        return "recall"
    if use_judge:
        return "judge_answer_similarity"
    return "answer_similarity"


def _check_metric(metric: str, questions: Sequence[BenchmarkQuestion], use_judge: bool, *, answers: bool) -> None:
    if not answers and (metric in _METRICS_NEEDING_ANSWERS or not any(q.references for q in questions)):
        raise BenchmarkError(
            f"A retrieval-only benchmark (answers off) grades evidence only: '{metric}' cannot be measured"
            + ("" if any(q.references for q in questions) else " and the questions have no references")
            + ". Turn answers on, or rank on a retrieval metric (recall, iou, mrr…)."
        )
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
