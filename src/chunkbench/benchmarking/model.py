"""The typed core of an Experiment and the JSON it is stored as (``ExperimentRow``) and returned as by the API.

Inside the benchmark code an Experiment is an ``Experiment``: its ``BenchmarkConfig``, ``Configuration``s,
``BenchmarkQuestion``s (stored as ``ExperimentQuestion``) and ``CellResult``s. These pydantic models are the one
home of that JSON, for storage and the API alike (``model_validate`` reads it, ``model_dump(mode="json")`` writes
it): fields written only when set and a failed cell's shape keep exactly what earlier versions stored, so old
Experiments load and the API returns the same JSON. Provenance, aggregates, the Decision and the cost stay the
JSON they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    field_validator,
    model_serializer,
    model_validator,
)

from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionReference
from chunkbench.models import StrategyName
from chunkbench.retrieval.schemas import RerankField
from chunkbench.storage.schema import ExperimentRow

# A cell's metric: a score in [0, 1], tok@k (an int), the judge's hallucination (a bool), or None (not measured).
MetricValue = float | int | bool | None


def _unset(value: object) -> bool:
    """Whether an optional field is left out of the JSON: written only when set, so older JSON stays as it was."""
    return value is None


class Configuration(BaseModel):
    """One column of the benchmark: a strategy searched one way."""

    model_config = ConfigDict(frozen=True)

    strategy: StrategyName
    retriever: str
    top_k: int
    neighbor_prev: int = 0
    neighbor_next: int = 0
    rerank: RerankField = "none"
    # Set only when the Experiment compares two or more Corpus models; None: the Experiment's one model.
    corpus_model: str | None = Field(
        None, exclude_if=_unset, description="Set when the Experiment compares Corpus models"
    )

    @field_validator("strategy", mode="before")
    @classmethod
    def _stored_strategy(cls, value: Any) -> Any:
        # A stored name stays readable after its plugin is removed (``StrategyName.stored``).
        return StrategyName.stored(value) if isinstance(value, str) else value

    @computed_field(description="e.g. fixed_size/hybrid/k5/n1-1/rerank-llm")  # type: ignore[prop-decorator]
    @property
    def key(self) -> str:
        """Stable, readable id: ``fixed_size/hybrid/k5/n1-1/rerank-llm/m-all-MiniLM-L6-v2`` (defaults omitted)."""
        parts = [self.strategy.value, self.retriever, f"k{self.top_k}"]
        if self.neighbor_prev or self.neighbor_next:
            parts.append(f"n{self.neighbor_prev}-{self.neighbor_next}")
        if self.rerank != "none":
            parts.append(f"rerank-{self.rerank}")
        if self.corpus_model is not None:
            # One segment of the key: ``BAAI/bge-m3`` → ``m-BAAI-bge-m3`` (the id whole, so two models never collide).
            parts.append(f"m-{self.corpus_model.replace('/', '-')}")
        return "/".join(parts)

    @model_serializer(mode="wrap")
    def _key_first(self, handler: SerializerFunctionWrapHandler):
        # The key leads the JSON, as it always has (a computed field would come last). No return annotation:
        # pydantic would take it for the JSON schema.
        data = handler(self)
        return {"key": data.pop("key"), **data} if "key" in data else data


class PruneOptions(BaseModel):
    """How a large grid is pruned (successive halving, ``pruning.py``): the first rung's share of the questions, how
    much each rung grows, the family-wise confidence of a "ruled out", the practical margin and the subsets' seed."""

    model_config = ConfigDict(frozen=True)

    first_share: float = 0.25
    eta: int = 3
    confidence: float = 0.99
    margin: float = 0.0
    min_configurations: int = 30
    correction: str = "holm"  # holm | bonferroni: how the rung's comparisons share its error
    seed: int = 0


class BenchmarkConfig(BaseModel):
    """An Experiment's settings as a whole: the grid's axes, the Corpus model(s), how answers are made and graded,
    and how the run goes (what the report and the Decision Board show).

    ``corpus_model_id`` is the first (with one model, the only) Corpus model; ``corpus_models`` lists them all
    and is written only when there are two or more, so one-model Experiments keep the JSON they always had.
    A stored config with a key missing (a row migrated from before benchmarks), or none at all, takes the defaults.
    """

    model_config = ConfigDict(frozen=True)

    strategies: tuple[str, ...] = ()
    retrievers: tuple[str, ...] = ()
    top_k: tuple[int, ...] = ()
    neighbor_prev: int = 0
    neighbor_next: int = 0
    rerank: tuple[str, ...] = ()
    corpus_model_id: str | None = None
    answer_mode: str | None = None
    judge: bool = False
    judge_repeats: int = 1
    primary_metric: str | None = None
    question_set: str | None = None
    # None: the run uses CHUNKBENCH_BENCHMARK_CONCURRENCY.
    concurrency: int | None = None
    seed: int = 0
    # Context tokens of the budget-matched comparison; None: the smallest median tok@k (``budget.default_budget``).
    # Written only when asked for: Experiments without one keep their JSON (so are scope and prune).
    budget: int | None = Field(None, exclude_if=_unset)
    # Where a question's chunks are searched: "corpus" (every document of the Experiment, Chroma's protocol) or
    # "document" (only the question's own documents).
    scope: str = Field("corpus", exclude_if=lambda scope: scope == "corpus")
    # Successive halving over the questions (``pruning.py``); None: every configuration answers every question.
    prune: PruneOptions | None = Field(
        None, exclude_if=_unset, description="The pruning options of a pruned run (``PruneIn``)"
    )
    corpus_models: tuple[str, ...] = Field(
        (), exclude_if=lambda models: len(models) < 2, description="The Corpus models compared (two or more)"
    )

    @model_validator(mode="before")
    @classmethod
    def _stored(cls, data: Any) -> Any:
        # No config at all (a row from before benchmarks): every default; an empty prune: none.
        if data is None:
            return {}
        if isinstance(data, Mapping) and "prune" in data and not data["prune"]:
            return {k: v for k, v in data.items() if k != "prune"}
        return data

    @property
    def models(self) -> tuple[str, ...]:
        """Every Corpus model of the grid, in grid order."""
        return self.corpus_models or ((self.corpus_model_id,) if self.corpus_model_id else ())

    @classmethod
    def of(cls, configurations: Iterable[Configuration], **settings: Any) -> BenchmarkConfig:
        """The config of a grid of configurations: each axis's values in first-seen order, the widest expansion."""
        grid = list(configurations)
        return cls(
            strategies=tuple(dict.fromkeys(c.strategy.value for c in grid)),
            retrievers=tuple(dict.fromkeys(c.retriever for c in grid)),
            top_k=tuple(dict.fromkeys(c.top_k for c in grid)),
            neighbor_prev=max(c.neighbor_prev for c in grid),
            neighbor_next=max(c.neighbor_next for c in grid),
            rerank=tuple(dict.fromkeys(c.rerank for c in grid)),
            corpus_models=tuple(dict.fromkeys(c.corpus_model for c in grid if c.corpus_model is not None)),
            **settings,
        )


class ExperimentReference(BaseModel):
    """Evidence placed in a document, as an Experiment stores it: the offsets and the text they select."""

    model_config = ConfigDict(frozen=True)

    start_index: int
    end_index: int
    content: str
    # Written only when the Experiment spans several documents (one-document Experiments keep their JSON).
    document_id: str | None = Field(
        None, exclude_if=_unset, description="Set when the Experiment spans several documents"
    )


class ExperimentQuestion(BaseModel):
    """A question as an Experiment stores it: every field of a question file (docs/benchmarks.md), references as
    offsets with the text they select. An Experiment of one document leaves the document implicit (it is the
    Experiment's); one spanning several names the question's document, where it has one, and each reference's.

    The benchmark code reads questions as ``BenchmarkQuestion`` (evaluation): ``of`` and ``benchmark_question``
    turn one into the other.
    """

    # Question files may number their ids: an id is text.
    model_config = ConfigDict(frozen=True, coerce_numbers_to_str=True)

    id: str
    question: str
    expected_answer: str | None = None
    category: str | None = None
    difficulty: str | None = None
    document_id: str | None = Field(
        None, exclude_if=_unset, description="Set when the Experiment spans several documents"
    )
    references: tuple[ExperimentReference, ...] = ()

    @classmethod
    def of(cls, question: BenchmarkQuestion, *, with_documents: bool = False) -> ExperimentQuestion:
        """How an Experiment stores ``question``: its references with offsets; documents named ``with_documents``."""
        return cls(
            id=question.id,
            question=question.question,
            expected_answer=question.expected_answer,
            category=question.category,
            difficulty=question.difficulty,
            document_id=question.document_id if with_documents else None,
            references=tuple(
                ExperimentReference(
                    start_index=start,
                    end_index=end,
                    content=r.content,
                    document_id=r.document if with_documents else None,
                )
                for r in question.references
                if r.has_offsets
                for start, end in (r.span,)
            ),
        )

    def benchmark_question(self) -> BenchmarkQuestion:
        """The stored question as the benchmark code reads it."""
        return BenchmarkQuestion(
            id=self.id,
            question=self.question,
            expected_answer=self.expected_answer,
            category=self.category,
            difficulty=self.difficulty,
            document_id=self.document_id,
            references=tuple(
                QuestionReference(r.content, r.start_index, r.end_index, r.document_id) for r in self.references
            ),
        )


class CellChunk(BaseModel):
    """A chunk a cell's query put in the context: a hit (in rank order) or a Neighbor Expansion neighbour, as the
    cell records it (positions, role, score, tokens; retrieval's ``RetrievedChunk`` is the search result itself).

    ``document_id`` is set when the Experiment spans several documents (None: the Experiment's one document)
    and written to JSON only then, so one-document cells keep the JSON they always had; ``prefix`` likewise.
    """

    model_config = ConfigDict(frozen=True)

    chunk_index: int
    start_index: int
    end_index: int
    role: str | None = None
    score: float | None = None
    tokens: int = 0
    # The chunk's document when an Experiment spans several; None: the Experiment's one document.
    document_id: str | None = Field(
        None, exclude_if=_unset, description="Set when the Experiment spans several documents"
    )
    # The context prefix it was embedded behind (contextual retrieval); None for every other strategy.
    prefix: str | None = Field(
        None, exclude_if=_unset, description="contextual_retrieval: the prefix the chunk was embedded behind"
    )


class EvidenceChunk(BaseModel):
    """A chunk of the configuration's chunking that overlaps the question's evidence, and the rank it came at.

    ``rank`` is 1-based in the cell's whole ranking (the hits are its first top_k), None when it came below the
    ranking's depth or not at all. ``references``: the question's references it overlaps (0-based).
    """

    model_config = ConfigDict(frozen=True)

    chunk_index: int
    start_index: int
    end_index: int
    rank: int | None = Field(
        None, description="1-based in the cell's whole ranking; null: below its depth or not ranked"
    )
    references: tuple[int, ...] = Field((), description="The question's references (0-based) this chunk overlaps")
    # The chunk's document when an Experiment spans several; None: the Experiment's one document.
    document_id: str | None = Field(
        None, exclude_if=_unset, description="Set when the Experiment spans several documents"
    )


class EvidenceRanks(BaseModel):
    """Where a cell's evidence lies and where the ranking put it: what explains a miss.

    ``depth``: how deep the ranking was asked for; ``ranked``: how many chunks it held (fewer when the retriever
    ranks only some, as BM25 ranks only chunks sharing a term with the question, or a score floor cut it).
    """

    model_config = ConfigDict(frozen=True)

    depth: int = Field(description="How deep the ranking was asked for (the reranker's candidate pool)")
    ranked: int = Field(description="How many chunks the ranking held (BM25 ranks only chunks sharing a term)")
    chunks: tuple[EvidenceChunk, ...]


class CellTokens(BaseModel):
    """A cell's LLM tokens (answer and judge) and the tokens of the context the answerer received."""

    model_config = ConfigDict(frozen=True)

    prompt: int = 0
    completion: int = 0
    context: int = 0


# What a failed cell's JSON keeps, in this order: its error, no answer.
_FAILED_FIELDS = ("question_id", "config_key", "status", "error", "metrics", "retrieved")


class CellResult(BaseModel):
    """One question asked of one Configuration: the answer, what was retrieved, the scores and the costs.

    A failed cell (a domain error while asking) keeps only its error; its JSON has only ``_FAILED_FIELDS``.
    """

    model_config = ConfigDict(frozen=True)

    question_id: str
    config_key: str
    status: Literal["ok", "failed"]
    error: str | None = None
    answer: str | None = None
    answer_mode: str | None = None
    citations: tuple[int, ...] = ()
    retrieved: tuple[CellChunk, ...] = ()
    # Nested nodes (positions, text, rounded score, neighbours) exactly as the report draws them.
    expansion_tree: list[dict[str, Any]] | None = Field(None, description="fixed_size: hits with their neighbours")
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    # The judge's verdict (``JudgeVerdict.to_dict``), None when not judged.
    judge: dict[str, Any] | None = Field(None, description="The judge's verdict; None when not judged")
    latency_ms: dict[str, float] = Field(default_factory=dict)
    tokens: CellTokens = CellTokens()
    # Where the evidence lies and at what rank it came; None for a question without evidence and for cells stored
    # before it was recorded (their JSON has no "evidence", and keeps none).
    evidence: EvidenceRanks | None = Field(
        None,
        exclude_if=_unset,
        description="Where the evidence lies and at what rank it came; absent in cells recorded before it was",
    )

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def failed(cls, question_id: str, config_key: str, error: str) -> CellResult:
        return cls(question_id=question_id, config_key=config_key, status="failed", error=error)

    @model_serializer(mode="wrap")
    def _failed_shape(self, handler: SerializerFunctionWrapHandler):
        # No return annotation: pydantic would take it for the JSON schema (a dict), mypy wants none either way.
        data = handler(self)
        return data if self.ok else {name: data[name] for name in _FAILED_FIELDS if name in data}


@dataclass(frozen=True)
class Experiment:
    """A benchmark run as the core reads it: its plan (config, Configurations, questions), state and figures."""

    id: str
    tenant_id: str
    # A one-document Experiment's document; None for a corpus Experiment (``corpus_id``/``corpus_name``).
    document_id: str | None
    corpus_id: str | None
    corpus_name: str | None
    # Every document the Experiment ran on (a one-document Experiment's one; older rows: empty, see below).
    document_ids: tuple[str, ...]
    name: str | None
    status: str
    error: dict[str, Any] | None
    config: BenchmarkConfig
    configurations: tuple[Configuration, ...]
    questions: tuple[BenchmarkQuestion, ...]
    provenance: dict[str, Any]
    # Per configuration key: every metric's summary, failures, latency, tokens, cost (``aggregation.aggregate``).
    aggregate: dict[str, Any]
    decision: dict[str, Any] | None
    cost: dict[str, Any]
    strategies: tuple[str, ...]
    corpus_model_id: str | None
    boundary_model_id: str | None
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def cells_total(self) -> int:
        return len(self.configurations) * len(self.questions)

    @property
    def pruning(self) -> dict[str, Any] | None:
        """What pruning ruled out, rung by rung (``pruning.PruningRecord.to_dict``); None for an unpruned run."""
        return self.provenance.get("pruning")

    @property
    def pruned_keys(self) -> tuple[str, ...]:
        """The configurations pruning stopped, in plan order (none for an unpruned run)."""
        pruned = {p["config_key"] for p in (self.pruning or {}).get("pruned") or ()}
        return tuple(c.key for c in self.configurations if c.key in pruned)

    @property
    def spans_documents(self) -> bool:
        """Whether the Experiment searched several documents (its stored references then name theirs)."""
        return len(self.document_ids) > 1

    @classmethod
    def from_row(cls, row: ExperimentRow) -> Experiment:
        return cls(
            id=row.id,
            tenant_id=row.tenant_id,
            document_id=row.document_id,
            corpus_id=row.corpus_id,
            corpus_name=row.corpus_name,
            # Rows written before corpora have no document_ids: their one document is the list.
            document_ids=tuple(row.document_ids or ([row.document_id] if row.document_id else [])),
            name=row.name,
            status=row.status,
            error=row.error,
            config=BenchmarkConfig.model_validate(row.benchmark_config),
            configurations=tuple(Configuration.model_validate(c) for c in row.configurations or ()),
            questions=tuple(ExperimentQuestion.model_validate(q).benchmark_question() for q in row.questions or ()),
            provenance=row.provenance or {},
            aggregate=row.aggregate_metrics or {},
            decision=row.decision,
            cost=row.cost or {},
            strategies=tuple(row.strategies_used or ()),
            corpus_model_id=row.embedding_model_id,
            boundary_model_id=row.boundary_embedding_model_id,
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
        )
