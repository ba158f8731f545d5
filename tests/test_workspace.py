"""The Python API: ``from chunkbench import Workspace`` on a data folder, ingest → process → questions → benchmark →
an Experiment whose verdict, table and report are those of the CLI, read from the same data folder by a real
``chunkbench`` process; typed errors for a wrong call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import chunkbench
from chunkbench import Experiment, Workspace
from chunkbench.benchmarking.report.prose import decision_sentence
from chunkbench.errors import ChunkbenchError, InvalidRequestError
from test_corpus_benchmark import OFFICES, TEMPLATE

pytestmark = pytest.mark.model  # MiniLM embeds the corpus

QUESTIONS = {
    "questions": [
        {"question": "How many days of paid annual leave do staff in Berlin get?", "document_id": "630",
         "references": [{"content": "Staff in Berlin receive 25 days of paid annual leave per calendar year."}]},
        {"question": "Which ticket code reports broken equipment in Madrid?", "document_id": "notes",
         "references": [{"content": "ticket code HW-8842"}]},
        {"question": "Up to how much is a hotel night reimbursed in Lisbon?", "document_id": "travel",
         "references": [{"content": "reimbursed up to 190 euros a night"}]},
        {"question": "Where is the Madrid printer?", "document_id": "notes",
         "references": [{"content": "The Madrid printer sits on floor 3."}]},
    ]
}  # fmt: skip


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    corpus = tmp_path / "handbooks"
    corpus.mkdir()
    for name, values in OFFICES.items():
        (corpus / name).write_text(TEMPLATE.format(**values), encoding="utf-8")
    (tmp_path / "questions.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return tmp_path


def test_from_a_folder_to_the_verdict_as_the_cli_reads_it(folder: Path, database_url: str) -> None:
    data = folder / "data"  # the metadata store: SQLite in it, or the test's PostgreSQL (CHUNKBENCH_DATABASE_URL)
    with Workspace(data) as ws:
        results = ws.ingest(folder / "handbooks", corpus="handbooks")
        assert sorted(r.source_key for r in results) == sorted(OFFICES) and all(r.error is None for r in results)
        processed = ws.process(corpus="handbooks", strategies=["fixed_size", "recursive"],
                               params={"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}})  # fmt: skip
        assert processed.failed == 0 and processed.chunks > 0
        assert ws.add_questions(folder / "questions.json") == "questions.json"
        experiment = ws.benchmark(corpus="handbooks", question_set="questions.json", retrievers=["dense", "bm25"])

        assert isinstance(experiment, Experiment) and experiment.status == "completed"
        decision = experiment.decision
        assert decision is not None and decision.n_questions == 4
        assert experiment.verdict == decision.verdict == decision_sentence(experiment.data)
        table = experiment.table()
        keys = {c["key"] for c in experiment.data["configurations"]}
        assert set(table.index) == keys and len(keys) == 4  # 2 strategies × 2 retrievers
        recall = table["recall"].tolist()
        assert recall == sorted(recall, reverse=True)  # best first
        assert table.loc[table.index[0], "recall_ci_low"] <= recall[0] <= table.loc[table.index[0], "recall_ci_high"]
        report = experiment.report(folder / "report.html")
        assert decision.verdict.split(":")[0] in report.read_text(encoding="utf-8")
        assert json.loads(experiment.report(folder / "export.json", view="json").read_text())["id"] == experiment.id
        again = ws.experiment(experiment.id)
        assert again.data["aggregate"] == experiment.data["aggregate"]

    # The CLI in another process, on the same data folder and database, reads the same Experiment.
    environment = {**os.environ, "CHUNKBENCH_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": str(Path(chunkbench.__file__).parents[1])}  # fmt: skip
    shown = subprocess.run(
        [sys.executable, "-m", "chunkbench", "bench", "show", experiment.id, "--json"],
        env=environment, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    from_cli = json.loads(shown.stdout)
    assert from_cli["aggregate"] == experiment.data["aggregate"]
    assert from_cli["decision"]["verdict"] == experiment.decision.verdict


def test_a_wrong_call_is_a_typed_error(tmp_path: Path) -> None:
    with Workspace(tmp_path / "data") as ws:
        with pytest.raises(InvalidRequestError, match="exactly one"):
            ws.process()
        with pytest.raises(ChunkbenchError) as raised:
            ws.process("no-such-document.md")
        assert raised.value.status_code == 404
        with pytest.raises(ChunkbenchError) as raised:
            ws.experiment("0" * 32)
        assert raised.value.status_code == 404
