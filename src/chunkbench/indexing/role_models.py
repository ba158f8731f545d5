"""The Corpus and Boundary models of a processing request, for the languages of the documents it processes.

Each role's model is the request's, else the Admin role's, else the registry default. Documents in a language that
model does not cover change it only under **the language rule** (``LanguageRule``): their detections are confident
(``Settings.language_min_confidence``; declared and user-set languages are, and so are rows detected before
confidence was stored) and together they hold at least ``Settings.language_material_share`` of the text being
processed (a document processed alone holds all of its own). Then the model is

- the multilingual model instead, when the role was left alone (no model in the request, none set in Admin) and that
  model covers them: the run says so (``ModelChoice.notes``);
- refused (``LanguageNotCoveredError``, naming a model that covers the language), unless the request sets
  ``allow_language_mismatch``: then it is processed and every run records the warning (standing ``accepted``).

Below the rule (a few documents, or unsure guesses) the model is kept, and the runs of those documents record the
warning with its share (standing ``minority`` or ``unsure``). ``und`` and ``zxx`` are no language: they never count.

A corpus has one Corpus model for all its documents (a corpus benchmark compares configurations over every document
with one model each), so the rule is applied to the corpus as a whole.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.embedding import roles
from chunkbench.embedding.languages import LanguageEvidence, LanguageRule, LanguageWarning, Standing
from chunkbench.embedding.registry import MULTILINGUAL_MODEL_ID, EmbeddingModelSpec, get_spec, language_warnings
from chunkbench.embedding.roles import EmbeddingRole
from chunkbench.errors import LanguageNotCoveredError
from chunkbench.storage.schema import DocumentRow


@dataclass(frozen=True)
class ModelChoice:
    """One role's model for a request's documents: the model, why it replaced the default, what it cannot read."""

    spec: EmbeddingModelSpec
    notes: tuple[str, ...] = ()
    warnings: tuple[LanguageWarning, ...] = ()


def rule_of(settings: Settings) -> LanguageRule:
    """The language rule with the Settings' thresholds."""
    return LanguageRule(settings.language_min_confidence, settings.language_material_share)


def evidence(session: Session, tenant_id: str, document_ids: Collection[str]) -> dict[str, LanguageEvidence]:
    """Document id → what the language rule knows of it, its text measured in the database (the parsed text is a
    deferred column: not loaded)."""
    rows = session.execute(
        select(
            DocumentRow.id, DocumentRow.source_key, DocumentRow.language, DocumentRow.language_confidence,
            DocumentRow.language_source, func.coalesce(func.length(DocumentRow.parsed_text), 0),
        ).where(DocumentRow.tenant_id == tenant_id, DocumentRow.id.in_(list(document_ids)))
    ).all()  # fmt: skip
    order = {document_id: position for position, document_id in enumerate(document_ids)}
    return {
        row[0]: LanguageEvidence(row[1], row[2], row[3], row[4], int(row[5]))
        for row in sorted(rows, key=lambda r: order.get(r[0], len(order)))
    }


def choose(
    session: Session,
    role: EmbeddingRole,
    model_id: str | None,
    documents: Sequence[LanguageEvidence],
    *,
    allow: bool,
    rule: LanguageRule,
) -> ModelChoice:
    """The model of ``role`` for ``documents``; ``allow``: accept a model that does not cover them
    (``allow_language_mismatch``). See the module docstring."""
    spec = roles.resolve_corpus_model(session, model_id) if role is EmbeddingRole.CORPUS else (
        roles.resolve_boundary_model(session, model_id)
    )  # fmt: skip
    warnings = _warnings(role, spec, documents, rule)
    if not warnings:
        return ModelChoice(spec)
    if rule.standing([n for w in warnings for n in w.documents], documents) is not None:
        return ModelChoice(spec, warnings=warnings)  # below the rule: kept, and the runs say so
    if model_id is None and not roles.role_is_configured(session, role):
        multilingual = get_spec(MULTILINGUAL_MODEL_ID)
        left = _warnings(role, multilingual, documents, rule)
        if not left or rule.standing([n for w in left for n in w.documents], documents) is not None:
            return ModelChoice(multilingual, notes=tuple(w.chosen_instead(multilingual.id) for w in warnings),
                               warnings=left)  # fmt: skip
    if not allow:
        raise LanguageNotCoveredError(
            " ".join(w.refusal() for w in warnings),
            role=role.value,
            model_id=spec.id,
            languages=sorted({w.language for w in warnings}),
            covering_models=list(dict.fromkeys(m for w in warnings for m in w.covering)),
        )
    return ModelChoice(spec, warnings=tuple(_standing(w, "accepted") for w in warnings))


def _warnings(
    role: EmbeddingRole, spec: EmbeddingModelSpec, documents: Sequence[LanguageEvidence], rule: LanguageRule
) -> tuple[LanguageWarning, ...]:
    """``spec``'s warnings about ``documents``, each with its share and, below the rule, why the model is kept."""
    found = language_warnings(role.value, spec, {d.name: d.language for d in documents})
    standing = rule.standing([n for w in found for n in w.documents], documents)
    out = []
    for warning in found:
        members = [d for d in documents if d.name in warning.documents]
        mine: Standing | None = standing
        if standing == "unsure" and all(rule.confident(d) for d in members):
            mine = "minority"  # sure of these: the unsure ones are other documents
        out.append(warning.with_share(len(documents), rule.text_share(members, documents), mine, rule))
    return tuple(out)


def _standing(warning: LanguageWarning, standing: Standing) -> LanguageWarning:
    return warning.with_share(warning.total_documents, warning.text_share, standing, warning.rule or LanguageRule())
