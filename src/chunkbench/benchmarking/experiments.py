"""Experiment rows and their cells, read by tenant (what the runner, the aggregation and the service share)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.benchmarking.model import CellResult
from chunkbench.errors import NotFoundError
from chunkbench.storage.schema import BenchmarkCellRow, ExperimentRow


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
        CellResult.from_dict(row.result)
        for row in session.scalars(
            select(BenchmarkCellRow)
            .where(BenchmarkCellRow.experiment_id == experiment_id)
            .order_by(BenchmarkCellRow.id)
        )
    ]
