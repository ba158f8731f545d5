"""What a processing request resolves to before any work starts: its strategies with validated parameters (the
Settings defaults, the sizes fitted to the Corpus model) and the model snapshots chosen for the documents' languages.

Separate from ``indexing.processing`` (which runs a plan: claims the documents, indexes, records, finishes)
because planning only reads: a bad request is refused here, as a 4xx, before anything is claimed or written. A
single document's plan (``ProcessPlan``) and a corpus job's (``ValidatedRequest``, ``indexing.corpus_job``) are
both built from ``validate_request``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from chunkbench.chunking.base import StrategyParams, defaults_from_settings, strategy_class, validate_params
from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.languages import LanguageEvidence, LanguageWarning, evidence_of
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.embedding.roles import EmbeddingRole
from chunkbench.errors import ChunkingError
from chunkbench.indexing import role_models, sizes
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.models import StrategyName


@dataclass(frozen=True)
class ProcessPlan:
    """A validated processing request, with the model snapshots taken at its start (docs/embedding.md)."""

    tenant_id: str
    document_id: str
    strategies: tuple[tuple[StrategyName, StrategyParams], ...]
    corpus: EmbeddingModelSpec
    boundary: EmbeddingModelSpec | None
    boundary_threshold: float | None
    # The document's detected language; why a model replaced a default; what the models cannot read (accepted).
    language: str | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[LanguageWarning, ...] = ()
    # Sizes beyond what the Corpus model reads whole (accepted): told before processing, and in the result.
    size_warnings: tuple[sizes.SizeWarning, ...] = ()

    def describe(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "strategies": [name.value for name, _ in self.strategies],
            "params": {name.value: params.model_dump() for name, params in self.strategies},
            "corpus_model_id": self.corpus.id,
            "boundary_model_id": self.boundary.id if self.boundary else None,
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    def warnings_of(self, strategy: StrategyName) -> list[LanguageWarning]:
        """The warnings that concern one strategy's run: the Corpus model's, and the Boundary model's if it cuts."""
        cuts = strategy_class(strategy).needs_boundary
        return [w for w in self.warnings if w.role == EmbeddingRole.CORPUS.value or cuts]


@dataclass(frozen=True)
class ValidatedRequest:
    """A processing request's strategies with validated parameters and its model snapshots (chosen for the
    documents' languages: ``indexing.role_models``)."""

    strategies: tuple[tuple[StrategyName, StrategyParams], ...]
    corpus: EmbeddingModelSpec
    boundary: EmbeddingModelSpec | None
    boundary_threshold: float | None
    notes: tuple[str, ...] = ()
    warnings: tuple[LanguageWarning, ...] = ()
    size_warnings: tuple[sizes.SizeWarning, ...] = ()

    def warnings_about(self, name: str) -> tuple[LanguageWarning, ...]:
        """The warnings naming one document (by the name the languages were given under), narrowed to it."""
        return tuple(w.narrowed(name) for w in self.warnings if name in w.documents)


def validate_request(
    session: Session,
    settings: Settings,
    request: ProcessIn,
    languages: Mapping[str, str | None] | Sequence[LanguageEvidence],
) -> ValidatedRequest:
    """Strategies, parameters (with Settings defaults) and models of a request for documents ``languages`` (what the
    language rule knows of each, or bare name → detected language); 400 naming what to fix."""
    names = list(dict.fromkeys(request.strategies))
    stray = sorted(set(request.params) - set(names))
    if stray:
        raise ChunkingError(
            f"Parameters were given for {', '.join(s.value for s in stray)}, which is not being run. "
            "Add it to 'strategies' or drop its parameters."
        )
    strategies = tuple(
        (name, validate_params(name, {**defaults_from_settings(name, settings), **request.params.get(name, {})}))
        for name in names
    )
    documents = evidence_of(languages) if isinstance(languages, Mapping) else list(languages)
    allow, rule = request.allow_language_mismatch, role_models.rule_of(settings)
    choices = [
        role_models.choose(session, EmbeddingRole.CORPUS, request.corpus_model_id, documents, allow=allow, rule=rule)
    ]
    boundary = threshold = None
    if any(strategy_class(name).needs_boundary for name in names):
        choices.append(
            role_models.choose(
                session, EmbeddingRole.BOUNDARY, request.boundary_model_id, documents, allow=allow, rule=rule
            )
        )
        boundary = choices[1].spec
        threshold = roles.get_semantic_threshold(session, boundary.id)
    strategies, size_warnings = _fit_sizes(strategies, request, settings, choices[0].spec)
    return ValidatedRequest(
        strategies, choices[0].spec, boundary, threshold,
        tuple(note for c in choices for note in c.notes), tuple(w for c in choices for w in c.warnings),
        size_warnings,
    )  # fmt: skip


def _fit_sizes(
    strategies: tuple[tuple[StrategyName, StrategyParams], ...],
    request: ProcessIn,
    settings: Settings,
    corpus: EmbeddingModelSpec,
) -> tuple[tuple[tuple[StrategyName, StrategyParams], ...], tuple[sizes.SizeWarning, ...]]:
    """Sizes nobody chose set to the Corpus model's defaults; the sizes it would not read whole, as warnings."""
    given = {
        name: sizes.given_sizes(name, request.params.get(name, {}), defaults_from_settings(name, settings))
        for name, _ in strategies
    }
    return sizes.fit_to_model(strategies, given, corpus)
