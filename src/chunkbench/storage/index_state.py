"""Whether a (document, strategy, Corpus model) is indexed: the metadata store's word, kept true to the vectors.

A ``strategy_runs`` row with status ``completed`` says its points are in its collection. Whatever removes points
(a wipe, a dropped collection, a failed upsert, ``chunkbench doctor --repair``) first calls :func:`mark_not_indexed`
and commits, then deletes: a crash between the two leaves runs marked for re-processing, never "indexed" without
points. Queries on such a run answer 409 ``not_indexed`` (:func:`require_indexed`) until it is processed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, exists, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session, aliased

from chunkbench.errors import NotIndexedError
from chunkbench.models import DocumentState
from chunkbench.storage.schema import DocumentRow, StrategyRunRow, utcnow

COMPLETED = "completed"
NOT_INDEXED = "not_indexed"
_SHOWN = 3  # documents named in a 409; the rest are counted


@dataclass(frozen=True)
class UnindexedRun:
    """A (tenant, document, strategy, Corpus model) whose run was marked not indexed."""

    tenant_id: str
    document_id: str
    strategy: str
    corpus_model_id: str


def mark_not_indexed(
    session: Session,
    *,
    collection: str,
    reason: str,
    tenant_id: str | None = None,
    document_ids: Sequence[str] | None = None,
) -> list[UnindexedRun]:
    """Mark the completed runs whose points are in ``collection`` not indexed (one tenant's, some documents', or
    every one); documents left with no completed run go back to ``parsed``. The caller commits before deleting."""
    conditions = [StrategyRunRow.collection == collection, StrategyRunRow.status == COMPLETED]
    if tenant_id is not None:
        conditions.append(StrategyRunRow.tenant_id == tenant_id)
    if document_ids is not None:
        conditions.append(StrategyRunRow.document_id.in_(list(document_ids)))
    runs = session.scalars(select(StrategyRunRow).where(*conditions).order_by(StrategyRunRow.id)).all()
    marked = {UnindexedRun(r.tenant_id, r.document_id, r.strategy_name, r.corpus_model_id): None for r in runs}
    when = utcnow().isoformat()
    for run in runs:
        # Reassigned, not mutated: the JSON column only notices a new value.
        run.details = {**(run.details or {}), "not_indexed": {"reason": reason, "at": when}}
        run.status = NOT_INDEXED
    session.flush()
    _settle_documents(session, {(r.tenant_id, r.document_id) for r in marked})
    return list(marked)


def _settle_documents(session: Session, documents: set[tuple[str, str]]) -> None:
    """Move each document left with no completed run from ``indexed`` back to ``parsed`` (processed again, it is
    indexed again). Its chunk counts stay: they say what the runs cut, and the runs say what is indexed."""
    for tenant_id, document_id in sorted(documents):
        row = session.get(DocumentRow, document_id)
        if row is None or row.tenant_id != tenant_id or row.status != DocumentState.INDEXED.value:
            continue
        completed = session.scalar(
            select(StrategyRunRow.id)
            .where(StrategyRunRow.document_id == document_id, StrategyRunRow.status == COMPLETED)
            .limit(1)
        )
        if completed is None:
            # Not a lifecycle step (ALLOWED_TRANSITIONS): the points were taken from under the document.
            row.status = DocumentState.PARSED.value


def not_indexed_documents(
    bind: Session | Connection,
    tenant_id: str,
    strategy: str,
    corpus_model_id: str,
    document_ids: Sequence[str] | None = None,
) -> list[tuple[str, str]]:
    """``(document id, filename)`` of the tenant's documents (these, or all) whose (strategy, Corpus model) run was
    marked not indexed and not processed again since, by filename then id."""
    newer = aliased(StrategyRunRow)
    conditions = [
        StrategyRunRow.tenant_id == tenant_id,
        StrategyRunRow.strategy_name == strategy,
        StrategyRunRow.corpus_model_id == corpus_model_id,
        StrategyRunRow.status == NOT_INDEXED,
        ~exists().where(
            and_(
                newer.document_id == StrategyRunRow.document_id,
                newer.strategy_name == strategy,
                newer.corpus_model_id == corpus_model_id,
                newer.status == COMPLETED,
            )
        ),
    ]
    if document_ids is not None:
        conditions.append(StrategyRunRow.document_id.in_(list(document_ids)))
    rows = bind.execute(
        select(DocumentRow.id, DocumentRow.filename)
        .join(StrategyRunRow, StrategyRunRow.document_id == DocumentRow.id)
        .where(DocumentRow.tenant_id == tenant_id, *conditions)
        .distinct()
        .order_by(DocumentRow.filename, DocumentRow.id)
    ).all()
    return [(row.id, row.filename) for row in rows]


def require_indexed(
    bind: Session | Connection,
    tenant_id: str,
    strategy: str,
    corpus_model_id: str,
    document_ids: Sequence[str] | None = None,
) -> None:
    """409 ``not_indexed`` when a document a query searches has its (strategy, Corpus model) run marked not
    indexed, naming the strategy and the command that processes it again; nothing otherwise."""
    found = not_indexed_documents(bind, tenant_id, strategy, corpus_model_id, document_ids)
    if not found:
        return
    names = ", ".join(f"'{filename}'" for _, filename in found[:_SHOWN])
    if len(found) > _SHOWN:
        names += f" and {len(found) - _SHOWN} more"
    target = found[0][0] if len(found) == 1 else "DOCUMENT"
    raise NotIndexedError(
        f"{names} {'is' if len(found) == 1 else 'are'} not indexed with strategy '{strategy}' and Corpus model "
        f"'{corpus_model_id}' any more: its points were removed (a wipe, a dropped collection or a failed write). "
        f"Process it again: `chunkbench process {target} --strategies {strategy} --corpus-model {corpus_model_id}` "
        f"(or POST /documents/{{document_id}}/process).",
        strategy=strategy,
        corpus_model_id=corpus_model_id,
        document_ids=[document_id for document_id, _ in found],
    )
