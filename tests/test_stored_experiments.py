"""Experiments stored by earlier code still read, write back and answer the same JSON.

``tests/data/stored_experiment_v1/`` holds the rows of a real benchmark exactly as they were stored (written by
tests/stored_experiment_capture.py before the Experiment model became pydantic: two strategies, Neighbor
Expansion, a context budget, the judge, two failed cells) with the view and the API bodies that code built from
them. Loading those rows into today's database must give the same JSON back, field for field.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Table

from chunkbench.benchmarking.benchmarks import experiment_dict
from chunkbench.benchmarking.model import (
    BenchmarkConfig,
    CellResult,
    Configuration,
    Experiment,
    ExperimentQuestion,
)
from chunkbench.storage.schema import BenchmarkCellRow, DocumentRow, ExperimentRow

FIXTURE = Path(__file__).parent / "data" / "stored_experiment_v1"
# The columns stored as UtcDateTime: the fixture has them in ISO 8601.
_DATETIMES = ("created_at", "updated_at", "started_at", "finished_at")


def _load(name: str) -> Any:
    return json.loads((FIXTURE / f"{name}.json").read_text())


ROWS = _load("rows")
[EXPERIMENT] = ROWS["experiments"]
CELLS = ROWS["benchmark_cells"]


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON: same keys and values (a tuple and a list of the same items are the same array)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _insert(session, table: Table, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        values = {k: datetime.fromisoformat(v) if k in _DATETIMES and v else v for k, v in row.items()}
        session.execute(table.insert().values(**values))


@pytest.fixture
def stored(client) -> str:
    """The fixture's rows in this test's database (as the code of its day wrote them): the Experiment's id."""
    with client.app.state.database.session() as session:
        _insert(session, DocumentRow.__table__, ROWS["documents"])
        _insert(session, ExperimentRow.__table__, ROWS["experiments"])
        _insert(session, BenchmarkCellRow.__table__, CELLS)
        session.commit()
    return EXPERIMENT["id"]


def test_the_fixture_covers_ok_failed_judged_expanded_and_budgeted_cells() -> None:
    statuses = {c["status"] for c in CELLS}
    assert statuses == {"ok", "failed"}
    ok = [c["result"] for c in CELLS if c["status"] == "ok"]
    assert all(c["judge"] and c["evidence"] and c["tokens"]["context"] for c in ok)
    assert any(chunk["role"] == "neighbor" for c in ok for chunk in c["retrieved"])
    assert any(c["expansion_tree"] for c in ok)
    assert EXPERIMENT["benchmark_config"]["budget"] == 120 and EXPERIMENT["decision"]


def test_stored_cells_config_configurations_and_questions_write_back_the_same_json() -> None:
    for cell in CELLS:
        assert _same_json(CellResult.model_validate(cell["result"]).model_dump(mode="json"), cell["result"])
    config = EXPERIMENT["benchmark_config"]
    assert _same_json(BenchmarkConfig.model_validate(config).model_dump(mode="json"), config)
    for configuration in EXPERIMENT["configurations"]:
        assert _same_json(Configuration.model_validate(configuration).model_dump(mode="json"), configuration)
    for question in EXPERIMENT["questions"]:
        assert _same_json(
            ExperimentQuestion.of(ExperimentQuestion.model_validate(question).benchmark_question()).model_dump(
                mode="json"
            ),
            question,
        )


def test_the_stored_experiment_reads_into_the_model(client, stored) -> None:
    with client.app.state.database.session() as session:
        experiment = Experiment.from_row(session.get(ExperimentRow, stored))
    assert [c.key for c in experiment.configurations] == [c["key"] for c in EXPERIMENT["configurations"]]
    assert experiment.config.budget == 120 and experiment.config.neighbor_prev == 1
    assert experiment.cells_total == len(CELLS) and experiment.pruned_keys == ()


def test_the_view_and_the_api_bodies_of_the_stored_experiment_are_unchanged(client, stored) -> None:
    with client.app.state.database.session() as session:
        view = experiment_dict(session, session.get(ExperimentRow, stored))
    assert _same_json(view, _load("view_full"))
    assert client.get(f"/benchmarks/{stored}").json() == _load("body_full")
    assert client.get(f"/benchmarks/{stored}", params={"cells": "scores"}).json() == _load("body_scores")
