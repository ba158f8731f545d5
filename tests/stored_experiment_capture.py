"""Writes ``tests/data/stored_experiment_v1/``: an Experiment exactly as the code of its day stored it, and the
``GET /benchmarks/{id}`` bodies it answered, so tests/test_stored_experiments.py can check that later code still
reads (and writes back) the same JSON.

Run once, on the code whose JSON is to be pinned (it was run before the Experiment model became pydantic):
``PYTHONPATH=src:tests python tests/stored_experiment_capture.py``. It runs a real, small benchmark: the handbook
processed with fixed_size and recursive, three questions, Neighbor Expansion (Expansion Trees), a context budget,
the judge, and an answerer that refuses one question (two failed cells), on SQLite and the local fake OpenAI server.
"""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Table, select

from chunkbench.app import create_app
from chunkbench.benchmarking.benchmarks import experiment_dict
from chunkbench.config import Settings
from chunkbench.llm.prompts import JUDGE_SYSTEM_PROMPT
from chunkbench.storage.db import Database
from chunkbench.storage.schema import BenchmarkCellRow, DocumentRow, ExperimentRow
from chunkbench.storage.vectors import close_vector_stores
from fake_openai import Reply, running_fake_openai
from test_benchmarks import QUESTIONS, processed_handbook

FIXTURE = Path(__file__).parent / "data" / "stored_experiment_v1"
REFUSED_QUESTION = "hotel"


def _responder(body: dict[str, Any]) -> Reply:
    if body["messages"][0]["content"] == JUDGE_SYSTEM_PROMPT:
        verdict = {"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9, "hallucination": False,
                   "reasoning": "Supported by source 1."}  # fmt: skip
        return Reply(json.dumps(verdict))
    if "hotel" in json.dumps(body["messages"]):  # a refusal (HTTP 400) is a domain error: the cell fails
        return Reply(status=400, error_message="content policy: refused")
    return Reply("The answer is in the handbook [Source 1].")


def table_rows(database: Database, table: Table, **where: Any) -> list[dict[str, Any]]:
    """Every column of the matching rows, as stored (deferred columns too), datetimes in ISO 8601."""
    query = select(table).where(*(table.c[name] == value for name, value in where.items()))
    if "id" in table.c:
        query = query.order_by(table.c.id)
    with database.session() as session:
        rows = [dict(row._mapping) for row in session.execute(query)]
    return [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()} for row in rows]


def capture() -> None:
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(_env_file=None, data_dir=Path(directory) / "data", database_url="")
        settings.llm_max_retries = 0
        with running_fake_openai(responder=_responder) as server:
            settings.llm_base_url = server.url
            settings.llm_model = "fake-model"
            with TestClient(create_app(settings)) as client:
                document_id = processed_handbook(client)
                body = {
                    "document_id": document_id, "name": "stored v1", "questions": QUESTIONS[:3], "top_k": [2],
                    "neighbor_prev": 1, "neighbor_next": 1, "budget": 120, "judge": True,
                }  # fmt: skip
                response = client.post("/benchmarks", params={"wait": "true"}, json=body)
                assert response.status_code == 200, response.text
                experiment_id = response.json()["id"]
                full = client.get(f"/benchmarks/{experiment_id}").json()
                scores = client.get(f"/benchmarks/{experiment_id}", params={"cells": "scores"}).json()
                database = client.app.state.database
                with database.session() as session:
                    # The view reports and exports are built from (the API body is it, through the response model).
                    view = json.loads(json.dumps(experiment_dict(session, session.get(ExperimentRow, experiment_id))))
                stored = {
                    "documents": table_rows(database, DocumentRow.__table__, id=document_id),
                    "experiments": table_rows(database, ExperimentRow.__table__, id=experiment_id),
                    "benchmark_cells": table_rows(database, BenchmarkCellRow.__table__, experiment_id=experiment_id),
                }
        close_vector_stores()
    failed = [c for c in stored["benchmark_cells"] if c["status"] == "failed"]
    assert failed and all(c["question_id"] == REFUSED_QUESTION for c in failed), "expected the refused cells"
    FIXTURE.mkdir(parents=True, exist_ok=True)
    for name, data in {"rows": stored, "view_full": view, "body_full": full, "body_scores": scores}.items():
        (FIXTURE / f"{name}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


if __name__ == "__main__":
    capture()
