"""The CI gate through the CLI: ``chunkbench check`` exits 0, 1 or 2 against a baseline Experiment or file, and
``bench run --fail-under`` fails a run whose chosen configuration is worse than asked. The Experiments are real
benchmark runs (MiniLM, Qdrant Edge, the real database) on the generated handbook."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chunkbench.benchmarking import check, context_budget
from chunkbench.benchmarking.model import CellResult
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from test_benchmarks import QUESTIONS, _benchmark, document_id  # noqa: F401  (the fixture)


@pytest.fixture
def cli(settings, monkeypatch) -> Any:
    # Same data directory, same process: the CLI reads the app's database and embedded Qdrant.
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


@pytest.fixture
def experiment(client, document_id) -> dict[str, Any]:  # noqa: F811
    ran = _benchmark(client, document_id, retrievers=["dense", "hybrid"])
    assert ran.status_code == 200, ran.text
    return ran.json()


def _check(cli: CliRunner, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli.invoke(cli_app, ["check", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def _file(tmp_path: Path, experiment: dict[str, Any], name: str = "baseline.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(experiment), encoding="utf-8")
    return str(path)


@pytest.mark.model
def test_the_same_run_twice_passes_the_gate(cli, client, document_id, experiment):  # noqa: F811
    again = _benchmark(client, document_id, retrievers=["dense", "hybrid"]).json()
    code, body = _check(cli, again["id"], "--baseline", experiment["id"], "--max-drop", "tok_at_k=0")
    assert code == 0, body
    decision = again["decision"]
    assert body["verdict"] == "pass" and body["config_key"] == (decision["best"] or decision["leader"])
    assert [(m["metric"], m["verdict"], m["change"]) for m in body["metrics"]] == [
        ("recall", "ok", 0.0),
        ("tok_at_k", "ok", 0.0),
    ]
    assert body["metrics"][0]["tolerance"] == 0.02
    # People get a table with the verdict.
    shown = cli.invoke(cli_app, ["check", again["id"], "--baseline", experiment["id"]])
    assert shown.exit_code == 0 and "recall" in shown.stdout and "check: pass" in shown.stdout


@pytest.mark.model
def test_a_drop_beyond_the_tolerance_fails(cli, experiment, tmp_path):
    key = "recursive/hybrid/k5"
    better = copy.deepcopy(experiment)
    metrics = better["aggregate"][key]["metrics"]
    # The baseline (a stored `bench show --json`) did better: recall 0.1 higher, 50 fewer context tokens.
    metrics["recall"]["mean"] += 0.1
    metrics["tok_at_k"]["mean"] -= 50
    metrics["judge_faithfulness"]["mean"] = 9.0
    baseline = _file(tmp_path, better)
    code, body = _check(cli, experiment["id"], "--baseline", baseline, "--config", key)
    assert code == 1, body
    [recall] = body["metrics"]
    assert recall["verdict"] == "dropped" and recall["change"] == pytest.approx(-0.1)
    # A tolerance above the drop passes; tok@k rising by 50 is a drop of 50.
    code, body = _check(cli, experiment["id"], "--baseline", baseline, "--config", key,
                        "--max-drop", "recall=0.15", "--max-drop", "tok_at_k=49")  # fmt: skip
    assert code == 1 and [m["verdict"] for m in body["metrics"]] == ["ok", "dropped"]
    assert body["metrics"][1]["change"] == pytest.approx(50)
    # The current run has no judge figures (no LLM): "not measured" never fails.
    code, body = _check(cli, experiment["id"], "--baseline", baseline, "--config", key,
                        "--max-drop", "recall=0.2", "--max-drop", "judge_faithfulness=0.5")  # fmt: skip
    assert code == 0 and body["metrics"][1]["verdict"] == "not measured"
    shown = cli.invoke(cli_app, ["check", experiment["id"], "--baseline", baseline, "--config", key])
    assert shown.exit_code == 1 and "dropped" in shown.stdout and "check: fail" in shown.stdout


@pytest.mark.model
def test_judge_metrics_warn_unless_asked_to_fail(cli, experiment, tmp_path):
    key = "recursive/dense/k5"
    # Both sides as files with judge figures: the baseline graded faithfulness 9.0, the current run 7.0.
    baseline, current = copy.deepcopy(experiment), copy.deepcopy(experiment)
    baseline["id"], current["id"] = "baseline-run", "current-run"
    baseline["aggregate"][key]["metrics"]["judge_faithfulness"]["mean"] = 9.0
    current["aggregate"][key]["metrics"]["judge_faithfulness"]["mean"] = 7.0
    warned = check.check(current, baseline, config_key=key, max_drop={"judge_faithfulness": 0.5})
    assert warned.exit_code == 0 and [m.verdict for m in warned.metrics] == ["ok", "warn"]
    assert warned.warnings == [
        "judge_faithfulness dropped by 2 (tolerance 0.5); judge metrics only warn (--fail-on-judge to fail on them)."
    ]
    strict = check.check(current, baseline, config_key=key, max_drop={"judge_faithfulness": 0.5},
                         fail_on_judge=True)  # fmt: skip
    assert strict.exit_code == 1 and strict.to_dict()["verdict"] == "fail"
    # Through the CLI, against the stored Experiment (no judge figures in it): the baseline file's 9.0 is "not
    # measured" now and the primary metric unchanged.
    code, body = _check(cli, experiment["id"], "--baseline", _file(tmp_path, baseline), "--config", key,
                        "--max-drop", "judge_faithfulness=0.5", "--fail-on-judge")  # fmt: skip
    assert code == 0 and [m["verdict"] for m in body["metrics"]] == ["ok", "not measured"]


@pytest.mark.model
def test_experiments_that_cannot_be_compared_exit_2_naming_each_difference(
    cli,
    client,
    document_id,  # noqa: F811
    experiment,
    tmp_path,
):
    fewer = _benchmark(client, document_id, questions=QUESTIONS[:4], retrievers=["dense"]).json()
    code, body = _check(cli, experiment["id"], "--baseline", fewer["id"], "--config", "recursive/hybrid/k5")
    assert code == 2 and body["verdict"] == "not comparable"
    assert body["differences"] == [
        "Different questions (4 in the baseline, 5 now): added train.",
        "The baseline has no configuration recursive/hybrid/k5 (it has fixed_size/dense/k5, recursive/dense/k5); "
        "pass --config to gate on one both have.",
    ]
    other = copy.deepcopy(experiment)
    other["provenance"]["corpus"]["hash"] = "f" * 64
    other["provenance"]["corpus_model"] = "all-mpnet-base-v2"
    other["questions"][0]["question"] = "How much leave?"
    code, body = _check(cli, experiment["id"], "--baseline", _file(tmp_path, other))
    assert code == 2
    assert body["differences"][0] == (
        f"Different corpus: content hash ffffffffffff in the baseline, "
        f"{experiment['provenance']['corpus']['hash'][:12]} now."
    )
    assert body["differences"][1:] == [
        "Different questions (5 in the baseline, 5 now): reworded leave.",
        "Different Corpus model: all-mpnet-base-v2 in the baseline, all-MiniLM-L6-v2 now.",
    ]
    # A corpus hash (Experiments over a corpus) wins over the document's.
    corpus = copy.deepcopy(experiment)
    corpus["provenance"]["corpus"] = {"name": "handbooks", "hash": "a" * 64, "documents": []}
    code, body = _check(cli, experiment["id"], "--baseline", _file(tmp_path, corpus))
    assert code == 2 and body["differences"][0].startswith("Different corpus: content hash aaaaaaaaaaaa")
    # Nothing to compare with: a missing baseline, a file that is not an Experiment, a bad option.
    assert _check(cli, experiment["id"], "--baseline", "nope")[0] == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    code, body = _check(cli, experiment["id"], "--baseline", str(bad))
    assert code == 2 and "bench show ID --json" in body["message"]
    code, body = _check(cli, experiment["id"], "--baseline", fewer["id"], "--max-drop", "speed=1")
    assert code == 2 and "METRIC one of recall" in body["message"]
    shown = cli.invoke(cli_app, ["check", experiment["id"], "--baseline", _file(tmp_path, other)])
    assert shown.exit_code == 2 and "not comparable" in shown.output and "Different Corpus model" in shown.output


@pytest.mark.model
def test_experiments_from_before_corpus_provenance_compare_by_their_document_hash(experiment):
    old = copy.deepcopy(experiment)
    del old["provenance"]["corpus"]
    edited = copy.deepcopy(old)
    assert check.check(old, edited).exit_code == 0
    edited["provenance"]["document_sha256"] = "e" * 64
    result = check.check(old, edited)
    assert result.exit_code == 2 and result.differences[0].startswith("Different corpus: content hash eeeeeeeeeeee")


@pytest.mark.model
def test_bench_run_fail_under(cli, document_id, tmp_path):  # noqa: F811
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(QUESTIONS), encoding="utf-8")
    run = ["bench", "run", "handbook.md", "-q", str(questions), "--strategies", "recursive"]
    passed = cli.invoke(cli_app, [*run, "--fail-under", "recall=0.1", "--json"])
    assert passed.exit_code == 0, passed.output
    experiment = json.loads(passed.stdout)
    recall = experiment["aggregate"]["recursive/dense/k5"]["metrics"]["recall"]["mean"]
    failed = cli.invoke(cli_app, [*run, "--fail-under", "recall=1.01", "--fail-under", "tok_at_k=1"])
    assert failed.exit_code == 1
    assert f"recursive/dense/k5: recall is {recall:.4g}, under the required 1.01." in failed.output
    assert "tok_at_k is" in failed.output and "over the required 1." in failed.output
    wrong = cli.invoke(cli_app, [*run, "--fail-under", "recall"])
    assert wrong.exit_code == 1 and "METRIC=VALUE" in wrong.output


@pytest.mark.model
def test_budget_rescoring_reproduces_the_stored_scores_of_real_cells(experiment):
    # With no limit, the cut context is the whole context: the rescored metrics are the ones the run stored.
    cells = [CellResult.model_validate(c) for c in experiment["cells"]]
    references = {q["id"]: context_budget.references_of(q) for q in experiment["questions"]}
    for cell in cells:
        for metric in context_budget.BUDGET_METRICS:
            rescored = context_budget.score(cell.retrieved, references[cell.question_id], metric, float("inf"))
            assert rescored == pytest.approx(cell.metrics[metric]), (cell.config_key, metric)
    matched = experiment["decision"]["budget_matched"]
    tokens = {key: sorted(c.metrics["tok_at_k"] for c in cells if c.config_key == key) for key in matched["context"]}
    assert matched["budget"] == round(min(values[len(values) // 2] for values in tokens.values()))
    assert matched["metric"] == "recall" and set(matched["ranking"]) == set(tokens)
