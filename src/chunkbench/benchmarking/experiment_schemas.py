"""The API's shape of one Experiment (``GET /benchmarks/{id}``, docs/benchmarks.md): ``ExperimentOut`` and the parts
only the API shows (its document or corpus, the scores view of a cell, progress, breakdowns, warnings, pruning).

Separate from ``schemas.py`` (the requests and the other endpoints' answers) because this one answer is large: the
Experiment's config, configurations, questions and cells in it are ``benchmarking.model``'s models, the same the
Experiment is stored as, so no mirror of them lives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag

from chunkbench.benchmarking.model import (
    BenchmarkConfig,
    CellResult,
    CellTokens,
    Configuration,
    ExperimentQuestion,
    MetricValue,
)

# The JSON of ``benchmarks.experiment_dict``. Routes answer with ``response_model_exclude_unset``, so a field a
# stored Experiment or cell does not have (a failed cell's answer) stays absent, as it is in the stored JSON.


class ExperimentDocumentOut(BaseModel):
    id: str | None = Field(description="None for a corpus Experiment (see corpus)")
    filename: str | None = Field(description="None when the document was deleted since")
    tokens: int | None


class ExperimentCorpusDocumentOut(BaseModel):
    id: str
    source_key: str | None
    filename: str | None = Field(description="None when the document was deleted since")


class ExperimentCorpusOut(BaseModel):
    """A corpus Experiment's corpus and the documents retrieval searched."""

    id: str | None = Field(description="None when the corpus was deleted since")
    name: str | None
    documents: list[ExperimentCorpusDocumentOut]


class CellScores(BaseModel):
    """A cell in the "scores" view of an Experiment (``?cells=scores``): enough for per-question heat, without the
    retrieved text, answers and Expansion Trees that make up most of its size. A projection of ``CellResult``: a
    failed cell's latency and tokens are null (it has none)."""

    question_id: str
    config_key: str
    status: Literal["ok", "failed"]
    error: str | None = None
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    latency_ms: dict[str, float] | None = None
    tokens: CellTokens | None = None


def _cell_view(cell: Any) -> str:
    # A cell of the full view always has "retrieved" (a failed one too); a scores-view cell never has.
    if isinstance(cell, Mapping):
        return "full" if "retrieved" in cell else "scores"
    return "scores" if isinstance(cell, CellScores) else "full"


CellOut = Annotated[
    Annotated[CellResult, Tag("full")] | Annotated[CellScores, Tag("scores")], Discriminator(_cell_view)
]


class ExperimentProgressOut(BaseModel):
    cells_done: int
    cells_total: int


class BreakdownFiguresOut(BaseModel):
    """One configuration on one group of questions."""

    mean: float | None = Field(description="The primary metric's mean over the cells that measured it")
    measured: int
    failures: int = Field(description="Failed cells and scores of 0 (on a metric where higher is better)")


class DocumentBreakdownOut(BaseModel):
    id: str
    source_key: str | None
    questions: int
    configurations: dict[str, BreakdownFiguresOut]


class CategoryBreakdownOut(BaseModel):
    category: str = Field(description="'(none)' for questions without one")
    questions: int
    configurations: dict[str, BreakdownFiguresOut]


class LanguageBreakdownOut(BaseModel):
    language: str = Field(description="The detected language code of the group's documents")
    label: str = Field(description="The language in words: Persian (fa)")
    documents: int
    questions: int
    configurations: dict[str, BreakdownFiguresOut]


class BreakdownsOut(BaseModel):
    """Per document and per language (Experiments of several documents, of several languages) and per question
    category, worst first."""

    metric: str
    documents: list[DocumentBreakdownOut] | None = None
    languages: list[LanguageBreakdownOut] | None = None
    categories: list[CategoryBreakdownOut] | None = None


class ExperimentWarningOut(BaseModel):
    """A model of the grid that does not cover the language of some of the Experiment's documents."""

    kind: str = Field(description="language_not_covered")
    role: str = Field(description="corpus or boundary")
    model_id: str
    language: str
    documents: list[str] = Field(description="The documents concerned (source keys)")
    covering_models: list[str]
    configurations: list[str] = Field(
        description="The configurations built on the model: none is named best when the documents are material"
    )
    message: str
    # The language rule's evidence (Experiments planned before it record none of these).
    document_ids: list[str] = []
    total_documents: int | None = None
    documents_share: float | None = Field(None, description="Share of the Experiment's documents, 0–1")
    text_share: float | None = Field(None, description="Share of the documents' text (characters), 0–1")
    questions_share: float | None = Field(None, description="Share of the questions about those documents, 0–1")
    material: bool | None = Field(
        None, description="Whether the Decision names none of the configurations (false: it stands, with a reason)"
    )
    standing: Literal["minority", "unsure"] | None = Field(
        None, description="Why not material: too few questions, or detections too unsure"
    )


class PrunedConfigurationOut(BaseModel):
    """A configuration pruning stopped (``pruning.RuledOut``)."""

    config_key: str
    rung: int = Field(description="The rung (1-based) after which it stopped")
    questions: int = Field(description="How many questions it was scored on")
    mean: float = Field(description="Its mean on the primary metric over those questions")
    leader: str
    leader_mean: float
    difference: list[float] = Field(description="Its difference to the leader: observed, low, high")
    confidence: float = Field(description="The corrected (per-comparison) confidence of that interval")


class PruningOut(BaseModel):
    """What pruning did (``pruning.PruningRecord``): the options, the rule, the rungs and the stopped configurations."""

    options: dict[str, Any]
    metric: str
    rule: str
    order: list[str] = Field(description="The questions in the seeded order: rung r scores the first sizes[r]")
    sizes: list[int]
    rungs: list[dict[str, Any]]
    pruned: list[PrunedConfigurationOut]


class ExperimentOut(BaseModel):
    """An Experiment (``model.Experiment``): plan, provenance, cells, aggregates and the Decision."""

    id: str
    name: str | None
    status: str = Field(description="running, completed, failed, interrupted or cancelled")
    error: dict[str, Any] | None
    created_at: str | None = Field(description="UTC, ISO 8601 to the second")
    started_at: str | None
    finished_at: str | None
    document: ExperimentDocumentOut
    corpus: ExperimentCorpusOut | None = Field(None, description="A corpus Experiment's corpus and documents")
    config: BenchmarkConfig
    provenance: dict[str, Any] = Field(description="Models, parameters, library versions and seeds")
    configurations: list[Configuration]
    questions: list[ExperimentQuestion]
    progress: ExperimentProgressOut
    cells: list[CellOut]
    aggregate: dict[str, Any] = Field(description="Per configuration key: metric summaries, failures, latency, cost")
    decision: dict[str, Any] | None = Field(
        description="The Decision on the primary metric, once completed; ``verdict`` is what to show first"
    )
    cost: dict[str, Any]
    warnings: list[ExperimentWarningOut] = Field(
        default_factory=list, description="Models that do not cover a document's language (results not meaningful)"
    )
    breakdowns: BreakdownsOut | None = Field(
        None, description="Where each configuration fails: documents, languages, categories"
    )
    pruning: PruningOut | None = Field(
        None, description="A pruned run: the configurations stopped, at which rung, on how many questions, and why"
    )
