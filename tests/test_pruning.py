"""Cheaper grids (successive halving, ``benchmarking/pruning.py``): the rule on synthetic score matrices, then a
real 30-configuration Experiment (one generated document, MiniLM, Qdrant Edge, SQLite) run pruned and unpruned."""

from __future__ import annotations

import json

import numpy as np
import pytest
from lxml import html as lxml_html
from typer.testing import CliRunner

from chunkbench.benchmarking import experiments, planning, pruning, runner
from chunkbench.benchmarking.model import PruneOptions
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import get_vector_store

ALPHA = 0.01


def _grid(seed: int = 8, n: int = 30) -> dict[str, list[float]]:
    """A leader, 30 configurations within noise of it, one borderline (worse by 0.12 on average, noisy) and one
    clearly bad (worse by 0.5 on every question): a rung of a 33-configuration grid."""
    rng = np.random.default_rng([11, seed])
    leader = rng.uniform(0.6, 1.0, n)
    scores = {"leader": leader.tolist()}
    for i in range(30):
        scores[f"close{i}"] = np.clip(leader + rng.normal(-0.02, 0.15, n), 0, 1).tolist()
    scores["borderline"] = np.clip(leader + rng.normal(-0.12, 0.25, n), 0, 1).tolist()
    scores["bad"] = np.clip(leader - 0.5 + rng.normal(0, 0.1, n), 0, 1).tolist()
    return scores


def _ruled(call: pruning.RungCall) -> list[str]:
    return [r.config_key for r in call.ruled_out]


def test_a_clearly_bad_configuration_stops_at_rung_one_and_close_ones_continue():
    scores = _grid()
    call = pruning.rule_out(scores, higher_is_better=True, alpha=ALPHA, rung=1)
    assert call.leader == max(scores, key=lambda name: np.mean(scores[name])) and _ruled(call) == ["bad"]
    [bad] = call.ruled_out
    assert bad.rung == 1 and bad.questions == 30 and bad.leader == call.leader
    observed, low, high = bad.difference
    assert low <= observed <= high < 0 and observed == pytest.approx(bad.mean - bad.leader_mean)
    # Holm's first step: the whole rung's error over its 32 comparisons with the leader.
    assert bad.confidence == pytest.approx(1 - ALPHA / 32)


def test_the_holm_correction_changes_a_borderline_call():
    scores = _grid()
    uncorrected = _ruled(pruning.rule_out(scores, higher_is_better=True, alpha=ALPHA, correction="none"))
    holm = _ruled(pruning.rule_out(scores, higher_is_better=True, alpha=ALPHA, correction="holm"))
    bonferroni = _ruled(pruning.rule_out(scores, higher_is_better=True, alpha=ALPHA, correction="bonferroni"))
    # Uncorrected, the borderline configuration stops, and so do close ones by chance (32 tests at 1 % each).
    assert "borderline" in uncorrected and any(name.startswith("close") for name in uncorrected)
    assert holm == ["bad"] and bonferroni == ["bad"]


def test_holm_steps_down_where_bonferroni_stops():
    """Two configurations that are worse, one clearly and one less so: once the first is out, Holm tests the second
    at α/(m−1) and Bonferroni still at α/m."""
    rng = np.random.default_rng(3)
    leader = rng.uniform(0.5, 1.0, 40)
    scores = {"leader": leader.tolist(), "runner_up": (leader + rng.normal(0, 0.05, 40)).tolist()}
    scores["bad"] = (leader - 0.6).tolist()
    found = None
    for shift in np.linspace(0.02, 0.2, 37):  # the worse-but-less configuration at the edge of the two levels
        scores["worse"] = (leader - shift + rng.normal(0, 0.1, 40)).tolist()
        holm = _ruled(pruning.rule_out(scores, higher_is_better=True, alpha=ALPHA, correction="holm"))
        bonferroni = _ruled(pruning.rule_out(scores, higher_is_better=True, alpha=ALPHA, correction="bonferroni"))
        assert set(bonferroni) <= set(holm)  # Holm is never stricter
        if holm != bonferroni:
            found = shift
            break
    assert found is not None


def test_the_leader_and_its_runner_up_always_continue_and_direction_is_respected():
    # Lower is better (tok@k): the configuration with the highest values is the bad one.
    scores = {"small": [100.0 + i for i in range(20)], "medium": [110.0 + i for i in range(20)]}
    scores["huge"] = [900.0 + (i % 3) for i in range(20)]
    call = pruning.rule_out(scores, higher_is_better=False, alpha=ALPHA)
    assert call.leader == "small" and _ruled(call) == ["huge"]
    # Two configurations: nothing to prune (the final Decision needs both).
    assert pruning.rule_out({"a": [1.0] * 20, "b": [0.0] * 20}, higher_is_better=True, alpha=ALPHA).ruled_out == ()
    # A failed cell (None) drops the question for every configuration, as the Decision does.
    with_gap = _grid()
    with_gap["close3"][0] = None
    assert pruning.rule_out(with_gap, higher_is_better=True, alpha=ALPHA).n_questions == 29


def test_rungs_grow_by_eta_to_every_question_in_a_seeded_order():
    options = PruneOptions(first_share=0.25, eta=3)
    assert pruning.rung_sizes(200, options) == [50, 150, 200]
    assert pruning.rung_sizes(20, options) == [10, 20]  # never fewer than 10 questions on a rung
    assert pruning.rung_sizes(8, options) == [8]  # too few to split: one rung, no pruning
    assert pruning.rung_sizes(40, PruneOptions(first_share=0.1, eta=2)) == [10, 20, 40]
    ids = [f"q{i}" for i in range(50)]
    order = pruning.question_order(ids, 7)
    assert sorted(order) == sorted(ids) and order != ids
    assert pruning.question_order(ids, 7) == order and pruning.question_order(ids, 8) != order
    # The family-wise error split over the rungs that can prune.
    assert pruning.pruning_alpha(PruneOptions(confidence=0.99), 3) == pytest.approx(0.005)


# ------------------------------------------------------------------ a recorded Experiment of 30 configurations

SUBJECTS = [
    "harbour crane", "river ferry", "mountain hut", "bakery oven", "library lift", "museum alarm", "tram depot",
    "solar roof", "water tower", "ice rink", "glass bridge", "wind turbine", "fire station", "cable car",
    "city fountain", "rail tunnel", "school boiler", "zoo aviary", "opera stage", "market hall",
]  # fmt: skip
TEAMS = ["north", "south", "east", "west", "central"]


def _document() -> str:
    """Twenty facts, a paragraph each, each in words of its own, so a retriever can find it."""
    facts = [
        f"The {subject} is inspected every {3 + i} weeks by the {TEAMS[i % 5]} maintenance team."
        for i, subject in enumerate(SUBJECTS)
    ]
    return "# Inspection schedule\n\n" + "\n\n".join(facts) + "\n"


def _questions() -> list[dict]:
    return [
        {"id": f"q{i:02d}", "question": f"How often is the {subject} inspected?",
         "references": [{"content": f"The {subject} is inspected every {3 + i} weeks by the {TEAMS[i % 5]} "
                                     "maintenance team."}]}
        for i, subject in enumerate(SUBJECTS)
    ]  # fmt: skip


@pytest.fixture
def schedule(client) -> str:
    """The schedule processed with fixed_size at 6 tokens (a chunk holds a third of a fact) and recursive at 20
    (a chunk is one fact's paragraph: at k=1 its IoU with the evidence is about 1, and halves with each k more):
    the document's id."""
    document = client.post("/documents", files={"file": ("schedule.md", _document().encode())}).json()["document"]
    processed = client.post(
        f"/documents/{document['id']}/process", params={"wait": "true"},
        json={"strategies": ["fixed_size", "recursive"],
              "params": {"fixed_size": {"chunk_size": 6, "chunk_overlap": 0}, "recursive": {"chunk_size": 20}}},
    )  # fmt: skip
    assert processed.status_code == 200, processed.text
    return document["id"]


# 2 strategies × 15 k = 30 configurations, ranked on IoU (one retriever: two at IoU 1 would be a ceiling tie).
GRID = {"retrievers": ["dense"], "top_k": list(range(1, 16)), "answers": False, "primary_metric": "iou"}
PRUNE = {"first_share": 0.25, "eta": 2, "confidence": 0.99}


def _run(client, document_id: str, **fields) -> dict:
    body = {"document_id": document_id, "questions": _questions(), **GRID, **fields}
    response = client.post("/benchmarks", params={"wait": "true"}, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _pruned_keys(experiment: dict) -> list[str]:
    return [p["config_key"] for p in experiment["pruning"]["pruned"]]


@pytest.mark.model
def test_a_pruned_grid_names_the_same_winner_on_fewer_cells_and_records_what_stopped(client, schedule):
    full = _run(client, schedule)
    pruned = _run(client, schedule, prune=PRUNE)
    assert full["decision"]["status"] == pruned["decision"]["status"] == "winner"
    assert pruned["decision"]["best"] == full["decision"]["best"] == "recursive/dense/k1"
    assert "pruning" not in full and full["config"].get("prune") is None  # off by default

    record = pruned["pruning"]
    assert record["sizes"] == [10, 20] and record["metric"] == "iou" and record["options"]["seed"] == 0
    assert pruned["config"]["prune"]["eta"] == 2 and "Holm" in record["rule"]
    stopped = _pruned_keys(pruned)
    survivors = [c["key"] for c in pruned["configurations"] if c["key"] not in stopped]
    # Every fixed_size configuration and recursive from k3 on stop after rung 1; the leader and runner-up go on.
    assert survivors == ["recursive/dense/k1", "recursive/dense/k2"] and len(stopped) == 28
    assert [r["ruled_out"] for r in record["rungs"]] == [stopped, []]
    first_rung = set(record["order"][:10])
    assert len(pruned["cells"]) == 30 * 10 + 2 * 10 < len(full["cells"]) == 30 * 20  # counted
    for entry in record["pruned"]:
        cells = [c for c in pruned["cells"] if c["config_key"] == entry["config_key"]]
        assert {c["question_id"] for c in cells} == first_rung  # its later cells never started
        assert entry["rung"] == 1 and entry["questions"] == 10 and entry["leader"] == "recursive/dense/k1"
        assert entry["mean"] == pytest.approx(np.mean([c["metrics"]["iou"] for c in cells]))
        observed, low, high = entry["difference"]
        assert low <= observed <= high < 0 and entry["confidence"] >= 1 - 0.01 / 29
    # The Decision is over the survivors on every question, on the same cells the unpruned run scored.
    decision = pruned["decision"]
    assert set(decision["means"]) == set(survivors) and decision["n_questions"] == 20
    for key in survivors:
        assert decision["means"][key] == pytest.approx(full["aggregate"][key]["metrics"]["iou"]["mean"])
    assert pruned["aggregate"][stopped[0]]["metrics"]["iou"]["n"] == 10
    # The API schema reads it.
    listed = client.get(f"/benchmarks/{pruned['id']}", params={"cells": "scores"})
    assert listed.status_code == 200 and listed.json()["pruning"]["pruned"][0]["rung"] == 1
    # Both reports show the Pruned table, and rank only the survivors.
    for view in ("managerial", "technical"):
        page = lxml_html.fromstring(client.get(f"/benchmarks/{pruned['id']}/report", params={"view": view}).text)
        rows = page.xpath('//table[@id="pruned-table"]/tbody/tr')
        assert [row.get("data-pruned") for row in rows] == stopped
        assert rows[0].xpath("td")[1].text == "1" and rows[0].xpath("td")[2].text == "10"
        ranked = [row.get("data-config") for row in page.xpath('//table[@id="ranking-table"]/tbody/tr')]
        assert ranked == survivors
    unpruned = lxml_html.fromstring(client.get(f"/benchmarks/{full['id']}/report").text)
    assert not unpruned.xpath('//*[@id="pruned"]')


@pytest.mark.model
def test_cli_bench_run_prunes_with_its_options_and_shows_the_pruned_table(settings, client, schedule, tmp_path,
                                                                          monkeypatch):  # fmt: skip
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"questions": _questions()}), encoding="utf-8")
    try:
        base = ["bench", "run", "schedule.md", "-q", str(questions), "--top-k", "1,2,8,15", "--no-answers",
                "--metric", "iou"]  # fmt: skip
        refused = CliRunner().invoke(cli_app, [*base, "--prune"])
        assert refused.exit_code == 1 and "30 or more configurations" in refused.output
        ran = CliRunner().invoke(cli_app, [*base, "--prune", "--prune-min-configurations", "4", "--prune-eta", "2"])
        assert ran.exit_code == 0, ran.output
        assert "pruned (" in ran.stdout and "fixed_size/dense/k15" in ran.stdout and "Holm" in ran.stdout
    finally:
        get_settings.cache_clear()


class _Stop(Exception):
    pass


@pytest.mark.model
def test_the_same_seed_prunes_identically_and_an_interrupted_pruned_run_resumes_at_its_rung(client, schedule, settings):
    reference = _run(client, schedule, prune=PRUNE)
    database = client.app.state.database
    request = BenchmarkIn(document_id=schedule, questions=_questions(), prune=PRUNE, concurrency=1, **GRID)
    with database.session() as session:
        plan = planning.plan(session, settings, request, tenant_id=DEFAULT_TENANT)
    experiment_id = experiments.create(database, settings, plan).id

    def stop_mid_rung_one(fraction: float, message: str) -> None:
        if message.startswith("150/"):
            raise _Stop

    with pytest.raises(_Stop):
        runner.execute(
            database, settings, get_vector_store(settings), experiment_id, tenant_id=DEFAULT_TENANT,
            progress=stop_mid_rung_one,
        )  # fmt: skip
    partial = client.get(f"/benchmarks/{experiment_id}").json()
    assert partial["status"] == "interrupted" and partial["progress"]["cells_done"] == 150
    assert "pruning" not in partial  # rung 1 had not finished: nothing decided yet
    kept = {(c["config_key"], c["question_id"]): c for c in partial["cells"]}
    assert all(c["question_id"] in set(reference["pruning"]["order"][:10]) for c in partial["cells"])

    assert client.post(f"/benchmarks/{experiment_id}/resume").status_code == 202
    client.app.state.jobs.wait_idle()
    resumed = client.get(f"/benchmarks/{experiment_id}").json()
    assert resumed["status"] == "completed" and len(resumed["cells"]) == len(reference["cells"])
    for key, cell in kept.items():  # reused, not run again
        assert next(c for c in resumed["cells"] if (c["config_key"], c["question_id"]) == key) == cell
    assert resumed["pruning"] == reference["pruning"]  # the same seed, the same rungs and calls
    assert resumed["decision"]["best"] == reference["decision"]["best"]
    # Stopped in rung 2: rung 1's calls are recorded already, and the resume runs only the survivors' cells.
    with database.session() as session:
        plan = planning.plan(session, settings, request, tenant_id=DEFAULT_TENANT)
    second = experiments.create(database, settings, plan).id

    def stop_mid_rung_two(fraction: float, message: str) -> None:
        if message.startswith("310/"):
            raise _Stop

    with pytest.raises(_Stop):
        runner.execute(
            database, settings, get_vector_store(settings), second, tenant_id=DEFAULT_TENANT,
            progress=stop_mid_rung_two,
        )  # fmt: skip
    partial = client.get(f"/benchmarks/{second}").json()
    assert partial["status"] == "interrupted" and partial["progress"]["cells_done"] == 310
    assert partial["pruning"]["pruned"] == reference["pruning"]["pruned"] and len(partial["pruning"]["rungs"]) == 1
    assert client.post(f"/benchmarks/{second}/resume").status_code == 202
    client.app.state.jobs.wait_idle()
    finished = client.get(f"/benchmarks/{second}").json()
    assert finished["status"] == "completed" and len(finished["cells"]) == 320
    assert finished["pruning"] == reference["pruning"]
    # Another seed draws other subsets.
    other = _run(client, schedule, prune={**PRUNE, "seed": 5})
    assert other["pruning"]["order"] != reference["pruning"]["order"] and other["pruning"]["options"]["seed"] == 5


@pytest.mark.model
def test_pruning_a_small_grid_is_refused_and_bad_options_are_clear(client, schedule):
    body = {"document_id": schedule, "questions": _questions(), "top_k": [1, 2], "prune": {}}
    refused = client.post("/benchmarks", params={"wait": "true"}, json=body)
    assert refused.status_code == 400
    message = refused.json()["message"]
    assert "30 or more configurations" in message and "has 4" in message and "min_configurations" in message
    assert client.get("/experiments").json() == []  # nothing written
    # Allowed when the minimum is lowered: a small grid then prunes like a large one.
    small = _run(client, schedule, prune={**PRUNE, "min_configurations": 4}, top_k=[1, 2, 8, 15])
    assert small["status"] == "completed" and small["decision"]["best"] == "recursive/dense/k1"
    dry = client.post("/benchmarks", json={**body, "top_k": [1, 2, 8, 15], "prune": {"min_configurations": 4},
                                           "dry_run": True}).json()  # fmt: skip
    assert dry["cells"] == 160 and any("first rung scores 8 × 10 = 80 cells" in note for note in dry["notes"])
    assert client.post("/benchmarks", json={**body, "prune": {"eta": 7}}).status_code == 422
    assert client.post("/benchmarks", json={**body, "prune": {"confidence": 1.0}}).status_code == 422
    # Too few questions to split: one rung, nothing pruned, and the record says why.
    few = client.post("/benchmarks", params={"wait": "true"}, json={
        **body, "questions": _questions()[:8], "top_k": [1, 2, 8, 15], "prune": {"min_configurations": 4},
        "retrievers": ["dense"], "answers": False, "primary_metric": "iou",
    }).json()  # fmt: skip
    assert len(few["cells"]) == 8 * 8 and few["pruning"]["pruned"] == []
    assert few["pruning"]["rungs"][0]["notes"] == ["Only 8 questions: too few to split into rungs of at least 10; "
                                                   "nothing was pruned."]  # fmt: skip
    # Off when asked off.
    off = _run(client, schedule, prune={"enabled": False}, top_k=[1, 2])
    assert "pruning" not in off and len(off["cells"]) == 2 * 2 * 20
