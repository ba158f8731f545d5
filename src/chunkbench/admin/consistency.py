"""``chunkbench doctor`` and ``GET /admin/consistency``: the metadata store compared with the vector store.

Per tenant, document, strategy and Corpus model: each document's newest completed run says its searchable chunks
are points of its collection. A difference is a finding: the collection is gone, points are missing or fewer or more
than the run cut, points belong to no completed run (orphans: a deleted document, a crash between the two
stores), or a document reads ``indexed`` with no completed run left. ``repair`` fixes each one and says how:
orphans are deleted; a run without its points is marked not indexed (committed first), what is left of its points
deleted, and the document processed again with the run's own strategy, parameters and models.

A document a live process is processing now (``chunking``/``embedding``, its owner alive and its lease valid) is left
out of the comparison and counted in ``in_progress``: its new points are written before its run is recorded, so it
would read as orphans, and a repair deleting them would leave the run it is about to record without its points. The
work of a dead owner is compared (its points are orphans); every command's recovery cleans it up first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field
from sqlalchemy import select

from chunkbench.config import Settings
from chunkbench.errors import ChunkbenchError
from chunkbench.indexing import processing
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.models import DocumentState, StrategyName
from chunkbench.storage.db import Database
from chunkbench.storage.index_state import COMPLETED, mark_not_indexed
from chunkbench.storage.ownership import owner_gone
from chunkbench.storage.points import collection_name
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import VectorStore

FindingKind = Literal["missing_collection", "missing_points", "point_count_mismatch", "orphan_points", "indexed_status"]


class Finding(BaseModel):
    """One difference between the metadata store and the vector store, and what a repair did about it."""

    kind: FindingKind
    tenant_id: str
    document_id: str
    strategy: str | None = None
    corpus_model_id: str | None = None
    collection: str | None = None
    chunk_count: int | None = Field(None, description="Searchable chunks the run cut (None: no run)")
    points: int = Field(0, description="Searchable points found in the collection")
    message: str
    repaired: str | None = Field(None, description="What --repair did (None: not repaired)")


class ConsistencyReport(BaseModel):
    """What was compared and every difference found (``consistent`` when there is none)."""

    consistent: bool
    tenants: int
    documents: int
    runs: int = Field(description="Newest completed runs per document × strategy × Corpus model")
    collections: int
    points: int = Field(description="Searchable points in chunkbench's collections")
    in_progress: int = Field(0, description="Documents a live process is processing now: not compared")
    findings: list[Finding]
    repaired: bool = False


def check(database: Database, store: VectorStore) -> ConsistencyReport:
    """Compare every tenant's runs with the points of every chunkbench collection; nothing is changed."""
    names = store.collection_names()
    points = {name: store.tenant_points(name) for name in names}
    with database.session() as session:
        runs = _current_runs(session)
        rows = session.execute(_DOCUMENTS).all()
    documents = {row.id: (row.tenant_id, row.status) for row in rows}
    busy = {row.id for row in rows if _processing_live(row)}
    runs = [run for run in runs if run.document_id not in busy]
    findings: list[Finding] = []
    claimed: set[tuple[str, str, str]] = set()  # (collection, tenant, document) a completed run accounts for
    for run in runs:
        name = run.collection or collection_name(run.strategy_name, run.corpus_model_id)
        claimed.add((name, run.tenant_id, run.document_id))
        findings.extend(_run_finding(run, name, points))
    for name in names:
        for (tenant_id, document_id), count in sorted(points[name].items()):
            if (name, tenant_id, document_id) not in claimed and document_id not in busy:
                known = documents.get(document_id, (None,))[0] == tenant_id
                findings.append(
                    Finding(
                        kind="orphan_points", tenant_id=tenant_id, document_id=document_id, collection=name,
                        points=count,
                        message=f"{count} point(s) in '{name}' belong to no completed run"
                        + ("" if known else " (the document does not exist)"),
                    )
                )  # fmt: skip
    with_runs = {(run.tenant_id, run.document_id) for run in runs}
    for document_id, (tenant_id, status) in sorted(documents.items()):
        if status == DocumentState.INDEXED.value and (tenant_id, document_id) not in with_runs:
            findings.append(
                Finding(
                    kind="indexed_status", tenant_id=tenant_id, document_id=document_id,
                    message="The document reads 'indexed' but has no completed run",
                )
            )  # fmt: skip
    findings.sort(key=lambda f: (f.tenant_id, f.document_id, f.strategy or "", f.corpus_model_id or "", f.kind))
    tenants = {tenant for tenant, _ in documents.values()} | {f.tenant_id for f in findings}
    return ConsistencyReport(
        consistent=not findings,
        tenants=len(tenants),
        documents=len(documents),
        runs=len(runs),
        collections=len(names),
        points=sum(sum(counts.values()) for counts in points.values()),
        in_progress=len(busy),
        findings=findings,
    )


_DOCUMENTS = select(
    DocumentRow.id, DocumentRow.tenant_id, DocumentRow.status, DocumentRow.owner_host, DocumentRow.owner_pid,
    DocumentRow.owner_token, DocumentRow.lease_expires_at,
)  # fmt: skip
_PROCESSING = (DocumentState.CHUNKING.value, DocumentState.EMBEDDING.value)


def _processing_live(row) -> bool:
    """Whether a live process (another replica, a CLI command, this server's job) is processing the document now."""
    if row.status not in _PROCESSING:
        return False
    return not owner_gone(row.owner_host, row.owner_pid, row.owner_token, row.lease_expires_at)


def _current_runs(session) -> list[StrategyRunRow]:
    """Each document's newest completed run per (strategy, Corpus model), ordered by tenant, document, strategy."""
    newest: dict[tuple[str, str, str], StrategyRunRow] = {}
    rows = session.scalars(
        select(StrategyRunRow).where(StrategyRunRow.status == COMPLETED).order_by(StrategyRunRow.created_at)
    )
    for run in rows:
        newest[(run.document_id, run.strategy_name, run.corpus_model_id)] = run  # the newest comes last
    session.expunge_all()
    return sorted(newest.values(), key=lambda r: (r.tenant_id, r.document_id, r.strategy_name, r.corpus_model_id))


def _run_finding(run: StrategyRunRow, name: str, points: dict[str, dict[tuple[str, str], int]]) -> list[Finding]:
    """The finding of one completed run whose points are not what it cut (none when they are)."""
    base = {
        "tenant_id": run.tenant_id, "document_id": run.document_id, "strategy": run.strategy_name,
        "corpus_model_id": run.corpus_model_id, "collection": name, "chunk_count": run.chunk_count,
    }  # fmt: skip
    if name not in points:
        return [Finding(kind="missing_collection", message=f"The run's collection '{name}' does not exist", **base)]
    found = points[name].get((run.tenant_id, run.document_id), 0)
    if found == 0:
        return [Finding(kind="missing_points", message=f"The run cut {run.chunk_count} chunks; none is in '{name}'",
                        **base)]  # fmt: skip
    if found != run.chunk_count:
        return [
            Finding(
                kind="point_count_mismatch", points=found,
                message=f"The run cut {run.chunk_count} chunks; '{name}' holds {found} of its points", **base,
            )
        ]  # fmt: skip
    return []


def repair(
    database: Database,
    settings: Settings,
    store: VectorStore,
    *,
    progress: Callable[[str], None] = lambda _message: None,
) -> ConsistencyReport:
    """Fix every finding of :func:`check` (saying what was done in each), then check again: the report returned
    is the first check's findings, each with ``repaired`` set, and ``consistent`` from the second check."""
    report = check(database, store)
    for finding in report.findings:
        progress(f"{finding.kind}: {finding.document_id} {finding.collection or ''}".strip())
        try:
            finding.repaired = _repair(database, settings, store, finding)
        except ChunkbenchError as exc:
            finding.repaired = f"not repaired: {exc.message}"
    after = check(database, store)
    return report.model_copy(update={"consistent": after.consistent, "repaired": True})


def _repair(database: Database, settings: Settings, store: VectorStore, finding: Finding) -> str:
    if finding.kind == "orphan_points":
        assert finding.collection is not None
        deleted = store.delete_collection_document(finding.collection, finding.tenant_id, finding.document_id)
        return f"deleted {deleted} orphan point(s)"
    if finding.kind == "indexed_status":
        with database.session() as session:
            row = session.get(DocumentRow, finding.document_id)
            if row is not None and row.status == DocumentState.INDEXED.value:
                row.status = DocumentState.PARSED.value
        return "status set to 'parsed' (process the document to index it)"
    assert finding.collection is not None and finding.strategy is not None and finding.corpus_model_id is not None
    # The run's remaining points are unreliable: not indexed first (committed), then deleted, then processed again.
    with database.session() as session:
        run = _newest_run(session, finding)
        params, boundary = (dict(run.params), run.boundary_model_id) if run is not None else ({}, None)
        mark_not_indexed(
            session,
            collection=finding.collection,
            reason=f"chunkbench doctor --repair: {finding.message}",
            tenant_id=finding.tenant_id,
            document_ids=[finding.document_id],
        )
    if finding.kind == "point_count_mismatch":
        store.delete_collection_document(finding.collection, finding.tenant_id, finding.document_id)
    strategy = StrategyName(finding.strategy)
    request = ProcessIn(
        strategies=[strategy],
        corpus_model_id=finding.corpus_model_id,
        boundary_model_id=boundary,
        params={strategy: params},
        allow_language_mismatch=True,  # the run was accepted once; its models are the ones to restore
    )
    out = processing.process(database, settings, store, finding.document_id, request, tenant_id=finding.tenant_id)
    if out.failed:
        return f"marked not indexed; processing it again failed: {out.failed[0].message}"
    return f"marked not indexed and processed again ({out.chunk_counts.get(strategy.value, 0)} chunks)"


def _newest_run(session, finding: Finding) -> StrategyRunRow | None:
    return session.scalar(
        select(StrategyRunRow)
        .where(
            StrategyRunRow.tenant_id == finding.tenant_id,
            StrategyRunRow.document_id == finding.document_id,
            StrategyRunRow.strategy_name == finding.strategy,
            StrategyRunRow.corpus_model_id == finding.corpus_model_id,
            StrategyRunRow.status == COMPLETED,
        )
        .order_by(StrategyRunRow.created_at.desc())
        .limit(1)
    )
