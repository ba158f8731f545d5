"""The Corpus and Boundary models of a processing request, for the languages of the documents it processes.

Each role's model is the request's, else the Admin role's, else the registry default. A document in a language
that model does not cover is

- embedded with the multilingual model instead, when the role was left alone (no model in the request, none set in
  Admin) and that model covers every document: the run says so (``ModelChoice.notes``);
- refused (``LanguageNotCoveredError``, naming a model that covers the language), unless the request sets
  ``allow_language_mismatch``: then it is processed and every run records the warning.

A corpus has one Corpus model for all its documents (a corpus benchmark compares configurations over every document
with one model each), so the rule is applied to the corpus as a whole: one document the default cannot read moves the
whole corpus to the multilingual model, English documents included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from chunkbench.embedding import service as embedding
from chunkbench.embedding.languages import LanguageWarning, uncovered
from chunkbench.embedding.registry import MULTILINGUAL_MODEL_ID, EmbeddingModelSpec, get_spec, language_warnings
from chunkbench.embedding.service import EmbeddingRole
from chunkbench.errors import LanguageNotCoveredError


@dataclass(frozen=True)
class ModelChoice:
    """One role's model for a request's documents: the model, why it replaced the default, what it cannot read."""

    spec: EmbeddingModelSpec
    notes: tuple[str, ...] = ()
    warnings: tuple[LanguageWarning, ...] = ()


def choose(
    session: Session,
    role: EmbeddingRole,
    model_id: str | None,
    languages: Mapping[str, str | None],
    *,
    allow: bool,
) -> ModelChoice:
    """The model of ``role`` for documents ``languages`` (name → detected code); ``allow``: accept a model that
    does not cover them (``allow_language_mismatch``). See the module docstring."""
    spec = embedding.resolve_corpus_model(session, model_id) if role is EmbeddingRole.CORPUS else (
        embedding.resolve_boundary_model(session, model_id)
    )  # fmt: skip
    warnings = language_warnings(role.value, spec, languages)
    if not warnings:
        return ModelChoice(spec)
    if model_id is None and not embedding.role_is_configured(session, role):
        multilingual = get_spec(MULTILINGUAL_MODEL_ID)
        if not uncovered(languages, multilingual.languages):
            return ModelChoice(multilingual, notes=tuple(w.chosen_instead(multilingual.id) for w in warnings))
    if not allow:
        raise LanguageNotCoveredError(
            " ".join(w.refusal() for w in warnings),
            role=role.value,
            model_id=spec.id,
            languages=sorted({w.language for w in warnings}),
            covering_models=list(dict.fromkeys(m for w in warnings for m in w.covering)),
        )
    return ModelChoice(spec, warnings=tuple(warnings))
