"""API models of benchmarks and Experiments (docs/benchmarks.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chunkbench.limits import MAX_NEIGHBORS, MAX_QUESTION_CHARS, MAX_TOP_K
from chunkbench.models import RetrieverName, StrategyName
from chunkbench.retrieval.schemas import RerankField, RetrieverField

# The metrics a Decision can rank on, and whether a higher value is better.
METRIC_DIRECTIONS: dict[str, bool] = {
    "recall": True,
    "precision": True,
    "precision_omega": True,
    "iou": True,
    "recall_at_k": True,
    "hit_at_k": True,
    "mrr": True,
    "ndcg_at_k": True,
    "tok_at_k": False,
    "exact_match": True,
    "token_f1": True,
    "answer_similarity": True,
    "judge_context_relevance": True,
    "judge_answer_similarity": True,
    "judge_faithfulness": True,
    "judge_hallucination": False,
}
MetricField = Literal[
    "recall", "precision", "precision_omega", "iou", "recall_at_k", "hit_at_k", "mrr", "ndcg_at_k", "tok_at_k",
    "exact_match", "token_f1", "answer_similarity", "judge_context_relevance", "judge_answer_similarity",
    "judge_faithfulness", "judge_hallucination",
]  # fmt: skip


class ReferenceIn(BaseModel):
    """Evidence for a question: a span with offsets in the document's text, or a snippet we locate."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)
    start_index: int | None = Field(None, ge=0)
    end_index: int | None = Field(None, ge=0)
    document: str | None = None

    @model_validator(mode="after")
    def _both_offsets_or_none(self) -> ReferenceIn:
        if (self.start_index is None) != (self.end_index is None):
            raise ValueError("give both start_index and end_index, or neither (the snippet is then located)")
        if self.start_index is not None and self.end_index is not None and self.end_index <= self.start_index:
            raise ValueError("end_index must be greater than start_index")
        return self


class QuestionIn(BaseModel):
    """A benchmark question (docs/benchmarks.md) with optional evidence."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    expected_answer: str | None = None
    category: str | None = None
    difficulty: str | None = None
    document_id: str | None = Field(
        None, description="The question's document: an id, source key, filename or filename stem"
    )
    references: list[ReferenceIn] = Field(default_factory=list)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class PruneIn(BaseModel):
    """Successive halving for large grids (``pruning.py``): score every configuration on a seeded share of the
    questions, stop those ruled out with family-wise confidence, continue the rest on ``eta`` times more."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    first_share: float = Field(0.25, gt=0, lt=1, description="Share of the questions of the first rung (at least 10)")
    eta: int = Field(3, ge=2, le=4, description="How much the question subset grows each rung")
    confidence: float = Field(
        0.99, ge=0.8, lt=1, description="Family-wise confidence of every 'ruled out' of the run, all rungs together"
    )
    margin: float = Field(0.0, ge=0, description="Stop only configurations worse than the leader by more than this")
    min_configurations: int = Field(
        30, ge=3, description="Pruning refuses grids smaller than this (a 400): small grids are cheap to run whole"
    )
    correction: Literal["holm", "bonferroni"] = Field(
        "holm", description="How each rung's comparisons share its error: Holm's step-down or plain Bonferroni"
    )
    seed: int | None = Field(None, description="Seed of the question subsets; default: the benchmark's seed")


def _no_rerank() -> list[RerankField]:
    """The default rerank axis (a lambda's list would be inferred as list[str], not the Literal)."""
    return ["none"]


class BenchmarkIn(BaseModel):
    """What to benchmark: one document or a corpus, its questions, and the configuration grid to compare."""

    model_config = ConfigDict(extra="forbid")

    document_id: str | None = Field(None, description="One document (or give corpus)")
    corpus: str | None = Field(None, description="A corpus by name or id: retrieval searches all its documents")
    name: str | None = Field(None, max_length=200)
    questions: list[QuestionIn] | None = Field(None, description="Inline questions (or give question_set)")
    question_set: str | None = Field(None, description="A question file by name (GET /admin/questions lists them)")
    strategies: list[StrategyName] | None = Field(
        None, description="Default: every strategy the document has been processed with"
    )
    retrievers: list[RetrieverField] = Field(default_factory=lambda: [RetrieverName.DENSE], min_length=1)
    top_k: list[int] = Field(default_factory=lambda: [5], min_length=1, description="One configuration per value")
    neighbor_prev: int = Field(
        0, ge=0, le=MAX_NEIGHBORS, description="Neighbor Expansion before each hit (fixed_size only)"
    )
    neighbor_next: int = Field(
        0, ge=0, le=MAX_NEIGHBORS, description="Neighbor Expansion after each hit (fixed_size only)"
    )
    rerank: list[RerankField] = Field(default_factory=_no_rerank, min_length=1)
    corpus_model_id: str | None = Field(None, description="The one Corpus model (or give corpus_models)")
    corpus_models: list[str] | None = Field(
        None,
        min_length=1,
        description="The grid's Corpus-model axis; default: corpus_model_id, else the documents' last Corpus model",
    )
    judge: bool | None = Field(None, description="LLM-as-judge; default: on when an LLM is configured")
    answers: bool = Field(
        True, description="Answer every cell; false: retrieval only (faster; no answer metrics, no judge)"
    )
    judge_repeats: int = Field(1, ge=1, le=10)
    primary_metric: MetricField | None = Field(
        None, description="What the Decision ranks on; default: recall with evidence, else answer similarity"
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Cells in flight at once; default CHUNKBENCH_BENCHMARK_CONCURRENCY with an LLM, else 1",
    )
    seed: int = 0
    budget: int | None = Field(
        None, ge=1, description="Context tokens of the budget-matched comparison; default: the smallest median tok@k"
    )
    scope: Literal["corpus", "document"] = Field(
        "corpus",
        description="Where each question's chunks are searched: every document (corpus) or its own (document)",
    )
    prune: PruneIn | None = Field(None, description="Successive halving for grids of 30+ configurations; default off")
    dry_run: bool = False

    @field_validator("top_k")
    @classmethod
    def _top_k_range(cls, value: list[int]) -> list[int]:
        if any(not 1 <= k <= MAX_TOP_K for k in value):
            raise ValueError(f"every top_k must be between 1 and {MAX_TOP_K}")
        return list(dict.fromkeys(value))

    @field_validator("corpus_models")
    @classmethod
    def _unique_models(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _one_question_source(self) -> BenchmarkIn:
        if (self.document_id is None) == (self.corpus is None):
            raise ValueError("give either 'document_id' (one document) or 'corpus' (a corpus name or id), not both")
        if not self.answers and self.judge:
            raise ValueError("the judge grades answers: give 'answers' true, or 'judge' false")
        if self.corpus_model_id is not None and self.corpus_models is not None:
            raise ValueError("give either 'corpus_model_id' (one model) or 'corpus_models' (the axis), not both")
        if (self.questions is None) == (self.question_set is None):
            raise ValueError("give either 'questions' (inline) or 'question_set' (a file name), not both or neither")
        if self.questions is not None and not self.questions:
            raise ValueError("'questions' is empty")
        return self


class CostEstimateOut(BaseModel):
    """What a benchmark would run and cost before it runs (docs/benchmarks.md); USD None = price unknown."""

    configurations: int
    questions: int
    cells: int
    llm_calls: int
    items: list[dict[str, Any]] = Field(description="embedding, answers, judge: model, calls, tokens, USD")
    total_usd: float | None
    known_usd: float
    prices_as_of: str
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class ExperimentSummary(BaseModel):
    """A row of the Experiments list (what the Decision Board filters on)."""

    id: str
    name: str | None
    status: str
    document_id: str | None = Field(description="A one-document Experiment's document; None for a corpus one")
    document_name: str | None = None
    corpus_id: str | None = Field(None, description="A corpus Experiment's corpus (None once the corpus is deleted)")
    corpus_name: str | None = None
    documents: int = Field(1, description="How many documents retrieval searched")
    corpus_models: list[str] = Field(default_factory=list, description="The grid's Corpus models")
    strategies: list[str]
    retrievers: list[str]
    corpus_model_id: str | None
    boundary_model_id: str | None
    neighbor_prev: int
    neighbor_next: int
    questions: int
    cells_done: int
    cells_total: int
    primary_metric: str | None
    best: str | None
    decision_status: str | None
    created_at: datetime
    finished_at: datetime | None


class CompareOut(BaseModel):
    """Two Experiments side by side: per configuration key, the means of every metric in each."""

    a: ExperimentSummary
    b: ExperimentSummary
    metrics: list[str]
    rows: list[dict[str, Any]]
    warnings: list[str]


class DecisionOut(BaseModel):
    """A Decision (``Decision.to_dict`` with its verdict): the main fields typed, every other one as stored."""

    model_config = ConfigDict(extra="allow")

    metric: str
    status: str = Field(description="winner | tie_broken_by_cost | cannot_tell | insufficient_data")
    best: str | None = Field(description="The configuration to use, when the data supports naming one")
    leader: str | None
    verdict: str = Field(description="What to show first")
    reasons: list[str]
    n_questions: int
    budget_matched: dict[str, Any] | None = Field(None, description="The ranking at an equal context budget")
    frontier: list[dict[str, Any]] = Field(
        default_factory=list, description="The configurations best for some context budget, cheapest first"
    )


class ChartOut(BaseModel):
    """A chart of an Experiment (``GET /benchmarks/{id}/charts/{name}``, an SVG drawn by the reports' chart code)."""

    name: str = Field(description="``{kind}-{metric}``, e.g. bars-recall")
    kind: Literal["bars", "curve", "frontier", "heatmap"] = Field(
        description="bars: mean per configuration with its 95% interval; curve: the metric against context tokens "
        "per configuration; frontier: every configuration's metric against its median context tokens, with the "
        "configurations best for some budget joined by a step line; heatmap: the metric per question and "
        "configuration"
    )
    metric: str
    label: str = Field(description="The metric as a person reads it")
    url: str
