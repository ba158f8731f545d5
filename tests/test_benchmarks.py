"""Benchmarks end to end through the real app, runner and CLI: MiniLM, embedded Qdrant, SQLite, and the local
OpenAI-compatible server for the LLM answer and judge."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import inspect, text
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.benchmarking import benchmarks, claims, experiments, planning, runner
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from chunkbench.llm.client import repair_counts
from chunkbench.llm.prompts import JUDGE_SYSTEM_PROMPT
from chunkbench.models import StrategyName
from chunkbench.storage.db import create_db_engine
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import close_vector_stores, get_vector_store
from fake_openai import Reply, running_fake_openai
from test_queries import HANDBOOK

QUESTIONS = [
    {
        "id": "leave",
        "question": "How many days of paid annual leave do employees get?",
        "expected_answer": "25 days of paid annual leave per calendar year",
        "references": [{"content": "Every employee receives 25 days of paid annual leave per calendar year."}],
    },
    {
        "id": "ticket",
        "question": "Which ticket code is used to report broken equipment?",
        "expected_answer": "HW-7731",
        "references": [{"content": "ticket code HW-7731"}],
    },
    {
        "id": "hotel",
        "question": "Up to how much is a hotel night reimbursed?",
        "expected_answer": "150 euros a night",
        "references": [{"content": "Hotel costs are reimbursed up to 150 euros a night."}],
    },
    {
        "id": "laptops",
        "question": "How often are laptops replaced?",
        "expected_answer": "every four years",
        "references": [{"content": "Laptops are replaced every four years."}],
    },
    {
        "id": "train",
        "question": "When is train travel preferred?",
        "expected_answer": "for journeys under five hours",
        "references": [{"content": "Train travel is preferred for journeys under five hours."}],
    },
]


def processed_handbook(http) -> str:
    """The handbook uploaded and processed with fixed_size (30 tokens) and recursive (60): its document id.
    ``http`` is the app's TestClient or an httpx.Client on a live server (the same calls)."""
    document = http.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())}).json()["document"]
    processed = http.post(
        f"/documents/{document['id']}/process",
        params={"wait": "true"},
        json={
            "strategies": ["fixed_size", "recursive"],
            "params": {"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}, "recursive": {"chunk_size": 60}},
        },
    )
    assert processed.status_code == 200, processed.text
    return document["id"]


@pytest.fixture
def document_id(client) -> str:
    return processed_handbook(client)


def _benchmark(client, document_id, **fields):
    body = {"document_id": document_id, "questions": QUESTIONS, **fields}
    return client.post("/benchmarks", params={"wait": "true"}, json=body)


def _figures(experiment: dict) -> dict:
    """Everything but timings: what must be identical when a run is repeated."""
    aggregate = {
        key: {name: value for name, value in config.items() if not name.startswith("latency")}
        for key, config in experiment["aggregate"].items()
    }
    cells = [{k: v for k, v in cell.items() if k != "latency_ms"} for cell in experiment["cells"]]
    return {"aggregate": aggregate, "decision": experiment["decision"], "cells": sorted(cells, key=json.dumps)}


@pytest.mark.model
def test_a_benchmark_runs_every_cell_scores_it_and_decides(client, document_id):
    response = _benchmark(client, document_id, retrievers=["dense", "hybrid"])
    assert response.status_code == 200, response.text
    experiment = response.json()
    assert experiment["status"] == "completed"
    keys = [c["key"] for c in experiment["configurations"]]
    assert keys == ["fixed_size/dense/k5", "fixed_size/hybrid/k5", "recursive/dense/k5", "recursive/hybrid/k5"]
    assert len(experiment["cells"]) == 4 * len(QUESTIONS)
    assert all(cell["status"] == "ok" for cell in experiment["cells"])
    # Evidence snippets were placed at their exact offsets in the document's text.
    for question in experiment["questions"]:
        [reference] = question["references"]
        assert reference["end_index"] - reference["start_index"] == len(reference["content"])

    ticket = next(c for c in experiment["cells"] if c["question_id"] == "ticket" and c["config_key"] == keys[1])
    assert ticket["metrics"]["recall"] == 1.0 and ticket["metrics"]["hit_at_k"] == 1.0
    assert ticket["answer"] and ticket["metrics"]["token_f1"] is not None
    assert ticket["metrics"]["tok_at_k"] > 0 and ticket["tokens"]["context"] == ticket["metrics"]["tok_at_k"]

    aggregate = experiment["aggregate"]["recursive/dense/k5"]
    recall = aggregate["metrics"]["recall"]
    assert recall["n"] == len(QUESTIONS) and recall["ci_low"] <= recall["mean"] <= recall["ci_high"]
    assert aggregate["metrics"]["judge_faithfulness"]["n"] == 0  # no LLM: not measured, never NaN
    assert aggregate["failed_cells"] == 0 and aggregate["cost_usd"] == 0.0

    decision = experiment["decision"]
    assert decision["metric"] == "recall" and decision["n_questions"] == len(QUESTIONS)
    assert set(decision["prob_best"]) == set(keys)
    assert abs(sum(decision["prob_best"].values()) - 1.0) < 1e-9
    assert experiment["provenance"]["library_versions"]["qdrant-client"]
    assert experiment["provenance"]["strategy_runs"]["fixed_size"]["params"]["chunk_size"] == 30


@pytest.mark.model
def test_the_same_run_twice_gives_identical_figures(client, document_id):
    first = _benchmark(client, document_id).json()
    second = _benchmark(client, document_id).json()
    assert first["id"] != second["id"]
    assert _figures(first) == _figures(second)


@pytest.mark.model
def test_benchmark_as_a_job_and_the_experiments_list(client, document_id):
    accepted = client.post("/benchmarks", json={"document_id": document_id, "questions": QUESTIONS[:2]})
    assert accepted.status_code == 202, accepted.text
    body = accepted.json()
    client.app.state.jobs.wait_idle()
    assert client.get(body["status_url"]).json()["status"] == "succeeded"
    experiment = client.get(body["experiment_url"]).json()
    assert experiment["status"] == "completed" and experiment["progress"] == {"cells_done": 4, "cells_total": 4}

    listed = client.get("/experiments", params={"document_id": document_id, "strategy": "recursive"}).json()
    assert [e["id"] for e in listed] == [experiment["id"]]
    assert client.get("/experiments", params={"strategy": "semantic"}).json() == []
    assert client.get("/experiments", params={"neighbor_prev": 2}).json() == []


@pytest.mark.model
def test_neighbours_apply_to_fixed_size_only_and_the_compare_view_warns(client, document_id):
    plain = _benchmark(client, document_id, questions=QUESTIONS[:2], top_k=[1]).json()
    expanded = _benchmark(
        client, document_id, questions=QUESTIONS[:2], top_k=[1], neighbor_prev=1, neighbor_next=1
    ).json()
    assert [c["key"] for c in expanded["configurations"]] == ["fixed_size/dense/k1/n1-1", "recursive/dense/k1"]
    cell = next(c for c in expanded["cells"] if c["config_key"] == "fixed_size/dense/k1/n1-1")
    assert any(chunk["role"] == "neighbor" for chunk in cell["retrieved"])
    [node] = cell["expansion_tree"]
    assert node["role"] == "hit" and node["text"] and node["start_index"] is not None
    assert node["neighbors_prev"] + node["neighbors_next"]
    assert all(n["text"] and n["score"] is None for n in node["neighbors_prev"] + node["neighbors_next"])

    # With neighbours the context is in document order, but rank metrics see the hits as retrieved.
    wide = _benchmark(
        client, document_id, questions=QUESTIONS, top_k=[3], neighbor_prev=1, neighbor_next=1, strategies=["fixed_size"]
    ).json()
    for cell in wide["cells"]:
        hits = [c for c in cell["retrieved"] if c["role"] == "hit"]
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
        assert all(c["role"] == "neighbor" for c in cell["retrieved"][len(hits) :])
        assert [n["chunk_index"] for n in cell["expansion_tree"]] == [h["chunk_index"] for h in hits]
        assert [n["rank"] for n in cell["expansion_tree"]] == list(range(1, len(hits) + 1))
        # Each neighbour is drawn once; a hit in another hit's window is listed there by its rank, without its text.
        listed = [n for node in cell["expansion_tree"] for n in node["neighbors_prev"] + node["neighbors_next"]]
        neighbours = [c["chunk_index"] for c in cell["retrieved"] if c["role"] == "neighbor"]
        assert sorted(n["chunk_index"] for n in listed if n["role"] == "neighbor") == sorted(neighbours)
        for also in (n for n in listed if n["role"] == "hit"):
            assert "text" not in also and hits[also["rank"] - 1]["chunk_index"] == also["chunk_index"]
    # Five short chunks, three hits each: some hits lie in each other's windows.
    trees = [node for cell in wide["cells"] for node in cell["expansion_tree"]]
    assert any(n["role"] == "hit" for node in trees for n in node["neighbors_prev"] + node["neighbors_next"])
    compared = client.get("/experiments/compare", params={"a": plain["id"], "b": expanded["id"]}).json()
    assert any("Neighbor Expansion" in warning for warning in compared["warnings"])
    recursive = next(row for row in compared["rows"] if row["config_key"] == "recursive/dense/k1")
    assert recursive["recall"]["delta"] == 0.0  # recursive ignores the neighbour knobs


@pytest.mark.model
def test_each_cell_says_where_its_evidence_lies_and_at_what_rank_it_came(client, settings, document_id):
    # A question about nothing in the handbook, its evidence a real sentence: BM25 shares no term with it.
    off = {
        "id": "off",
        "question": "Which colour are the walls painted?",
        "references": [{"content": "Laptops are replaced every four years."}],
    }
    experiment = _benchmark(
        client, document_id, questions=[*QUESTIONS, off], top_k=[1], retrievers=["dense", "bm25"],
        strategies=["recursive"],
    ).json()  # fmt: skip
    chunks = client.get(f"/admin/chunks/{document_id}", params={"strategy": "recursive"}).json()["chunks"]
    questions = {q["id"]: q for q in experiment["questions"]}
    for cell in experiment["cells"]:
        [reference] = questions[cell["question_id"]]["references"]
        overlapping = [
            c["chunk_index"] for c in chunks
            if min(c["end_index"], reference["end_index"]) - max(c["start_index"], reference["start_index"]) >= 1
        ]  # fmt: skip
        evidence = cell["evidence"]
        assert [e["chunk_index"] for e in evidence["chunks"]] == overlapping and overlapping
        assert all(e["references"] == [0] for e in evidence["chunks"])
        assert evidence["depth"] == settings.rerank_candidate_k
        # Each rank is where the retriever's own top 20 (asked for through /queries) puts the chunk.
        retriever = cell["config_key"].split("/")[1]
        deep = client.post(
            "/queries",
            json={"document_id": document_id, "question": questions[cell["question_id"]]["question"],
                  "strategy": "recursive", "retriever": retriever, "top_k": 20},
        )  # fmt: skip
        order = [c["chunk_index"] for c in deep.json()["retrieved_chunks"]]
        assert evidence["ranked"] == len(order)
        assert [e["rank"] for e in evidence["chunks"]] == [
            order.index(e["chunk_index"]) + 1 if e["chunk_index"] in order else None for e in evidence["chunks"]
        ]
        assert any(e["rank"] == 1 for e in evidence["chunks"]) == (cell["metrics"]["hit_at_k"] == 1.0)
    missed = next(c for c in experiment["cells"] if (c["question_id"], c["config_key"]) == ("off", "recursive/bm25/k1"))
    assert missed["metrics"]["recall"] == 0.0 and missed["evidence"]["ranked"] == 0
    assert [e["rank"] for e in missed["evidence"]["chunks"]] == [None]


@pytest.mark.model
def test_contextual_retrieval_cells_keep_each_chunks_prefix_and_the_runs_prefix_mode(client, document_id):
    processed = client.post(
        f"/documents/{document_id}/process", params={"wait": "true"},
        json={"strategies": ["contextual_retrieval"], "params": {"contextual_retrieval": {"chunk_size": 60}}},
    )  # fmt: skip
    assert processed.status_code == 200, processed.text
    strategies = ["contextual_retrieval", "recursive"]
    experiment = _benchmark(client, document_id, questions=QUESTIONS[:2], strategies=strategies).json()
    runs = experiment["provenance"]["strategy_runs"]
    assert runs["contextual_retrieval"]["details"]["prefix_mode"] == "deterministic"
    chunks = client.get(f"/admin/chunks/{document_id}", params={"strategy": "contextual_retrieval"}).json()["chunks"]
    paths = {c["chunk_index"]: c["heading_path"] for c in chunks}
    for cell in experiment["cells"]:
        for chunk in cell["retrieved"]:
            if cell["config_key"].startswith("recursive/"):
                assert "prefix" not in chunk  # other strategies' cells keep the JSON they had
                continue
            # The deterministic prefix: the document's title and the chunk's section, not part of its text.
            assert chunk["prefix"].startswith('This chunk is from "Staff Handbook"')
            assert paths[chunk["chunk_index"]][-1] in chunk["prefix"]


@pytest.mark.model
def test_dry_run_and_cost_estimate_validate_and_price_without_running(client, document_id):
    body = {"document_id": document_id, "questions": QUESTIONS, "retrievers": ["dense", "bm25"], "dry_run": True}
    estimate = client.post("/benchmarks", json=body)
    assert estimate.status_code == 200, estimate.text
    figures = estimate.json()
    assert figures["cells"] == 2 * 2 * len(QUESTIONS) and figures["total_usd"] == 0.0
    assert figures["llm_calls"] == 0
    assert client.post("/admin/cost-estimate", json=body).json()["cells"] == figures["cells"]
    assert client.get("/experiments").json() == []


@pytest.mark.parametrize(
    ("fields", "status", "needle"),
    [
        ({"strategies": ["semantic"]}, 400, "chunkbench process"),
        ({"judge": True}, 400, "CHUNKBENCH_LLM_BASE_URL"),
        ({"rerank": ["llm"]}, 400, "LLM reranking"),
        ({"primary_metric": "judge_faithfulness"}, 400, "judge"),
        ({"questions": [{"question": "What?", "references": [{"content": "not in the handbook at all"}]}]}, 400,
         "cannot be placed"),
        ({"question_set": "x.json"}, 422, "not both"),
        ({"top_k": [0]}, 422, "top_k"),
        ({"questions": []}, 422, "empty"),
    ],
)  # fmt: skip
@pytest.mark.model
def test_bad_benchmark_requests_are_clear_errors_and_write_nothing(client, document_id, fields, status, needle):
    response = client.post("/benchmarks", json={"document_id": document_id, "questions": QUESTIONS, **fields})
    assert response.status_code == status, response.text
    assert needle in response.text
    assert client.get("/experiments").json() == []


@pytest.mark.model
def test_missing_experiments_and_illegal_resumes(client, document_id):
    assert client.get("/benchmarks/nope").status_code == 404
    finished = _benchmark(client, document_id, questions=QUESTIONS[:1]).json()
    response = client.post(f"/benchmarks/{finished['id']}/resume")
    assert response.status_code == 409 and "completed" in response.json()["message"]


class _Stop(Exception):
    pass


@pytest.mark.model
def test_an_interrupted_run_resumes_where_it_stopped(client, document_id, settings):
    database = client.app.state.database
    store = get_vector_store(settings)
    request = BenchmarkIn(document_id=document_id, questions=QUESTIONS, concurrency=1)
    with database.session() as session:
        plan = planning.plan(session, settings, request, tenant_id=DEFAULT_TENANT)
    experiment_id = experiments.create(database, settings, plan).id

    def stop_after_three(fraction: float, message: str) -> None:
        if message.startswith("3/"):
            raise _Stop

    with pytest.raises(_Stop):
        runner.execute(database, settings, store, experiment_id, tenant_id=DEFAULT_TENANT, progress=stop_after_three)
    partial = client.get(f"/benchmarks/{experiment_id}").json()
    assert partial["status"] == "interrupted" and partial["progress"]["cells_done"] == 3
    first_cells = {(c["config_key"], c["question_id"]): c for c in partial["cells"]}

    resumed = client.post(f"/benchmarks/{experiment_id}/resume")
    assert resumed.status_code == 202
    client.app.state.jobs.wait_idle()
    done = client.get(f"/benchmarks/{experiment_id}").json()
    assert done["status"] == "completed" and len(done["cells"]) == 2 * len(QUESTIONS)
    for key, cell in first_cells.items():  # kept as they were, not run again
        assert next(c for c in done["cells"] if (c["config_key"], c["question_id"]) == key) == cell
    fresh = _benchmark(client, document_id).json()
    assert _figures(done)["aggregate"] == _figures(fresh)["aggregate"]


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.model
def test_a_server_restart_marks_only_orphaned_experiments_interrupted(settings, client, document_id):
    database = client.app.state.database
    with database.session() as session:
        plan = planning.plan(
            session, settings, BenchmarkIn(document_id=document_id, questions=QUESTIONS), tenant_id=DEFAULT_TENANT
        )
    alive = experiments.create(database, settings, plan).id  # this process: still running
    orphan = experiments.create(database, settings, plan).id
    with database.session() as session:
        benchmarks.get(session, orphan, tenant_id=DEFAULT_TENANT).runner_pid = _dead_pid()
    assert claims.fail_interrupted(database) == 1
    with database.session() as session:
        assert benchmarks.get(session, orphan, tenant_id=DEFAULT_TENANT).status == "interrupted"
        assert benchmarks.get(session, alive, tenant_id=DEFAULT_TENANT).status == "running"
    assert client.post(f"/benchmarks/{alive}/resume").status_code == 409


@pytest.mark.model
def test_a_killed_cli_run_resumes_where_it_stopped(settings, client, document_id, tmp_path, monkeypatch):
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(QUESTIONS), encoding="utf-8")
    database_url = settings.sqlalchemy_url
    close_vector_stores()  # the CLI process opens the embedded Qdrant folder

    def slow(body):
        time.sleep(0.3)
        return Reply("The handbook says so [Source 1].")

    with running_fake_openai(responder=slow) as server:
        environment = {
            **os.environ, "CHUNKBENCH_DATA_DIR": str(settings.data_dir), "CHUNKBENCH_LLM_BASE_URL": server.url,
            "CHUNKBENCH_LLM_MODEL": "fake-model", "CHUNKBENCH_LLM_MAX_RETRIES": "0", "HF_HUB_OFFLINE": "1",
        }  # fmt: skip
        command = [sys.executable, "-m", "chunkbench", "bench", "run", "handbook.md", "-q", str(questions),
                   "--strategies", "recursive", "--no-judge", "--concurrency", "1"]  # fmt: skip
        process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 180
            while _cells(database_url) < 2:
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
                assert time.monotonic() < deadline, "the CLI run never wrote two cells"
                time.sleep(0.2)
        finally:
            process.kill()
            process.wait()
        kept = _cell_rows(database_url)
        assert 2 <= len(kept) < len(QUESTIONS)

        for key, value in environment.items():
            if key.startswith("CHUNKBENCH_"):
                monkeypatch.setenv(key, value)
        get_settings.cache_clear()
        try:
            [experiment_id] = {row[0] for row in kept}
            resumed = CliRunner().invoke(cli_app, ["bench", "run", "--resume", experiment_id, "--json"])
        finally:
            get_settings.cache_clear()
    assert resumed.exit_code == 0, resumed.output
    experiment = json.loads(resumed.stdout)
    assert experiment["status"] == "completed" and len(experiment["cells"]) == len(QUESTIONS)
    assert set(kept) <= set(_cell_rows(database_url))  # the cells written before the kill were kept as they were


def _cells(database_url: str) -> int:
    """Cells the CLI process has committed so far (read through a connection of this process)."""
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("benchmark_cells"):  # not migrated yet
                return 0
            return connection.execute(text("SELECT count(*) FROM benchmark_cells")).scalar_one()
    finally:
        engine.dispose()


def _cell_rows(database_url: str) -> list[tuple]:
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT experiment_id, id, question_id, result FROM benchmark_cells"))
            # SQLite hands JSON back as text, PostgreSQL as parsed values: compare both as text.
            return [(*row[:3], row[3] if isinstance(row[3], str) else json.dumps(row[3])) for row in rows]
    finally:
        engine.dispose()


def _llm_settings(settings, server):
    settings.llm_base_url = server.url
    settings.llm_model = "fake-model"
    settings.llm_max_retries = 0


@pytest.mark.model
def test_bench_run_judge_on_a_real_local_model_scores_every_cell(
    settings, document_id, client, tmp_path, monkeypatch, real_llm
):
    # `chunkbench llm serve` (the session's llama_server, behind real_llm's recording proxy) + `bench run --judge`.
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_LLM_BASE_URL", real_llm.url)
    monkeypatch.setenv("CHUNKBENCH_LLM_MODEL", real_llm.model)
    monkeypatch.setenv("CHUNKBENCH_LLM_MAX_TOKENS", "160")  # SmolLM2 can ramble: bound its answers
    get_settings.cache_clear()
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"questions": QUESTIONS[:3]}), encoding="utf-8")
    repairs_before = repair_counts().get("judge", 0)
    try:
        ran = CliRunner().invoke(
            cli_app, ["bench", "run", "handbook.md", "-q", str(questions), "--strategies", "recursive", "--judge",
                      "--concurrency", "2", "--json"],
        )  # fmt: skip
    finally:
        get_settings.cache_clear()
    assert ran.exit_code == 0, ran.output
    experiment = json.loads(ran.stdout)
    assert experiment["status"] == "completed" and experiment["config"]["judge"] is True
    assert experiment["config"]["answer_mode"] == "llm" and experiment["provenance"]["llm_model"] == real_llm.model
    cells = experiment["cells"]
    assert len(cells) == 3
    for cell in cells:
        assert cell["status"] == "ok" and cell["answer_mode"] == "llm" and cell["answer"]
        assert cell["judge"]["error"] is None and cell["judge"]["failures"] == 0
        for key in ("judge_context_relevance", "judge_answer_similarity", "judge_faithfulness"):
            score = cell["metrics"][key]
            assert isinstance(score, int | float) and not math.isnan(score) and 1 <= score <= 10, (key, score)
        assert isinstance(cell["metrics"]["judge_hallucination"], bool)
    # One answer and one verdict per cell, each verdict under the server's schema grammar: no repair needed.
    judged = [chat for chat in real_llm.chats if chat.request.body["messages"][0]["content"] == JUDGE_SYSTEM_PROMPT]
    answered = [chat for chat in real_llm.chats if chat not in judged]
    assert len(judged) == len(answered) == 3
    assert all(chat.request.body["response_format"]["type"] == "json_schema" for chat in judged)
    assert repair_counts().get("judge", 0) == repairs_before
    # The cells' token figures are the server's own counts, answer and verdict together.
    assert sum(cell["tokens"]["prompt"] for cell in cells) == sum(chat.usage[0] for chat in real_llm.chats)
    assert sum(cell["tokens"]["completion"] for cell in cells) == sum(chat.usage[1] for chat in real_llm.chats)
    aggregate = experiment["aggregate"]["recursive/dense/k5"]
    assert aggregate["judge_failures"] == 0 and aggregate["metrics"]["judge_faithfulness"]["n"] == 3


@pytest.mark.model
def test_a_malformed_verdict_is_retried_and_counted_while_cells_run_concurrently(settings, document_id, client):
    # Failure injection (a reply that is no verdict), timed so concurrent cells overlap: the scripted fake.
    lock = threading.Lock()
    seen = {"in_flight": 0, "peak": 0, "judge_calls": 0}

    def responder(body):
        with lock:
            seen["in_flight"] += 1
            seen["peak"] = max(seen["peak"], seen["in_flight"])
        time.sleep(0.05)  # long enough for concurrent cells to overlap
        with lock:
            seen["in_flight"] -= 1
            if body["messages"][0]["content"] != JUDGE_SYSTEM_PROMPT:
                return Reply("The answer is in the handbook [Source 1].")
            seen["judge_calls"] += 1
            if seen["judge_calls"] == 1:
                return Reply("I cannot score this.")  # malformed: retried, counted
        verdict = {"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9, "hallucination": False,
                   "reasoning": "Supported by source 1."}  # fmt: skip
        return Reply(json.dumps(verdict))

    with running_fake_openai(responder=responder) as server:
        _llm_settings(settings, server)
        with TestClient(create_app(settings)) as llm_client:
            response = llm_client.post(
                "/benchmarks",
                params={"wait": "true"},
                json={"document_id": document_id, "questions": QUESTIONS, "strategies": ["recursive"],
                      "concurrency": 4},
            )  # fmt: skip
    assert response.status_code == 200, response.text
    experiment = response.json()
    assert experiment["config"]["judge"] is True and experiment["config"]["answer_mode"] == "llm"
    aggregate = experiment["aggregate"]["recursive/dense/k5"]
    assert aggregate["metrics"]["judge_faithfulness"] == pytest.approx(
        {"mean": 9.0, "std": 0.0, "ci_low": 9.0, "ci_high": 9.0, "n": len(QUESTIONS)}
    )
    assert aggregate["hallucination_rate"] == 0.0
    assert aggregate["judge_failures"] == 1
    assert aggregate["tokens"]["prompt"] > 0
    assert seen["peak"] > 1  # cells ran concurrently
    assert experiment["provenance"]["llm_model"] == "fake-model"


@pytest.mark.model
def test_an_unreachable_llm_stops_the_run_as_failed_and_resumable(settings, document_id, client):
    with running_fake_openai(responder=lambda body: Reply(status=503, error_message="overloaded")) as server:
        _llm_settings(settings, server)
        with TestClient(create_app(settings)) as llm_client:
            response = llm_client.post(
                "/benchmarks",
                params={"wait": "true"},
                json={"document_id": document_id, "questions": QUESTIONS, "judge": False},
            )
            assert response.status_code == 503, response.text
            [experiment] = llm_client.get("/experiments").json()
    assert experiment["status"] == "failed" and experiment["cells_done"] == 0


@pytest.mark.model
def test_cli_bench_run_show_list_report_and_dry_run(settings, document_id, client, tmp_path, monkeypatch):
    # Same data directory, same process: the CLI shares the app's database and embedded Qdrant client.
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"questions": QUESTIONS}), encoding="utf-8")
    cli = CliRunner()
    try:
        dry = cli.invoke(cli_app, ["bench", "run", "handbook.md", "-q", str(questions), "--dry-run", "--json"])
        assert dry.exit_code == 0, dry.output
        assert json.loads(dry.stdout)["cells"] == 2 * len(QUESTIONS)

        ran = cli.invoke(cli_app, ["bench", "run", "handbook.md", "-q", str(questions), "--strategies", "recursive",
                                   "--json"])  # fmt: skip
        assert ran.exit_code == 0, ran.output
        experiment = json.loads(ran.stdout)
        assert experiment["status"] == "completed" and len(experiment["cells"]) == len(QUESTIONS)

        shown = cli.invoke(cli_app, ["bench", "show", experiment["id"]])
        assert shown.exit_code == 0 and "recursive/dense/k5" in shown.stdout and "decision" in shown.stdout
        listed = cli.invoke(cli_app, ["bench", "list", "--json"])
        assert [e["id"] for e in json.loads(listed.stdout)] == [experiment["id"]]

        for view in ("managerial", "technical", "json"):
            target = tmp_path / f"report-{view}.html"
            written = cli.invoke(cli_app, ["report", experiment["id"], "--view", view, "-o", str(target)])
            assert written.exit_code == 0, written.output
            text = target.read_text(encoding="utf-8")
            assert (json.loads(text)["id"] == experiment["id"]) if view == "json" else "<html" in text.lower()

        swept = cli.invoke(
            cli_app, ["sweep", "neighbors", "handbook.md", "-q", str(questions), "--levels", "0,1", "--top-k", "1",
                      "--json"],
        )  # fmt: skip
        assert swept.exit_code == 0, swept.output
        assert [level["config_key"] for level in json.loads(swept.stdout)] == [
            "fixed_size/dense/k1",
            "fixed_size/dense/k1/n1-1",
        ]

        missing = cli.invoke(cli_app, ["bench", "show", "nope"])
        assert missing.exit_code == 1 and "No experiment" in missing.output
    finally:
        get_settings.cache_clear()


@pytest.mark.model
def test_reports_through_the_api(client, document_id):
    experiment = _benchmark(client, document_id, questions=QUESTIONS[:2]).json()
    for view in ("managerial", "technical"):
        page = client.get(f"/benchmarks/{experiment['id']}/report", params={"view": view})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "recursive/dense/k5" in page.text
    exported = client.get(f"/benchmarks/{experiment['id']}/report", params={"view": "json"})
    assert exported.json()["decision"] == experiment["decision"]


@pytest.mark.model
def test_neighbor_sweep_makes_one_experiment_per_level(client, document_id, settings):
    from chunkbench.benchmarking import sweep

    request = BenchmarkIn(document_id=document_id, questions=QUESTIONS[:3], top_k=[1])
    levels = sweep.neighbors(
        client.app.state.database,
        settings,
        get_vector_store(settings),
        request,
        levels=[0, 1],
        tenant_id=DEFAULT_TENANT,
    )
    assert [level["level"] for level in levels] == ["±0", "±1"]
    assert [level["config_key"] for level in levels] == ["fixed_size/dense/k1", "fixed_size/dense/k1/n1-1"]
    assert levels[1]["tok_at_k"] > levels[0]["tok_at_k"]  # neighbours add context
    assert len(client.get("/experiments").json()) == 2


@pytest.mark.model
def test_chunk_grid_sweep_reprocesses_per_point_and_restores_the_parameters(client, document_id, settings):
    from chunkbench.benchmarking import sweep

    request = BenchmarkIn(document_id=document_id, questions=QUESTIONS[:3])
    points = sweep.chunk_grid(
        client.app.state.database, settings, get_vector_store(settings), request,
        strategy=StrategyName.FIXED_SIZE, sizes=[20, 40], overlaps=[0, 30], tenant_id=DEFAULT_TENANT,
    )  # fmt: skip
    assert [p["level"] for p in points] == ["20/0", "40/0", "40/30"]  # 20/30 skipped: overlap ≥ size
    provenance = [client.get(f"/benchmarks/{p['experiment_id']}").json()["provenance"] for p in points]
    assert [p["strategy_runs"]["fixed_size"]["params"]["chunk_size"] for p in provenance] == [20, 40, 40]
    runs = client.get(f"/documents/{document_id}/runs").json()
    assert runs[0]["strategy_name"] == "fixed_size" and runs[0]["params"]["chunk_size"] == 30


@pytest.mark.model
def test_a_question_set_file_is_filtered_to_the_document_and_its_snippets_placed(client, document_id):
    other = {"id": "elsewhere", "question": "What is in the other file?", "document_id": "budget.pdf"}
    spaced = {
        "id": "spaced",
        "question": "How many days of annual leave?",
        "document_id": "handbook",  # the file's stem names it
        "references": [{"content": "Every employee   receives 25 days\nof paid annual leave"}],  # other spacing
    }
    shifted = {  # offsets counted in another text (the user's source file): the snippet is located instead
        "id": "shifted",
        "question": "How are broken laptops reported?",
        "references": [{"content": "ticket code HW-7731", "start_index": 3, "end_index": 22}],
    }
    upload = json.dumps({"questions": [*QUESTIONS[:4], spaced, shifted, other]}).encode()
    stored = client.post("/admin/questions", files={"file": ("handbook-questions.json", upload)})
    assert stored.status_code == 201, stored.text
    response = client.post(
        "/benchmarks",
        params={"wait": "true"},
        json={"document_id": document_id, "question_set": "handbook-questions.json", "strategies": ["recursive"]},
    )
    assert response.status_code == 200, response.text
    experiment = response.json()
    assert [q["id"] for q in experiment["questions"]] == ["leave", "ticket", "hotel", "laptops", "spaced", "shifted"]
    [reference] = experiment["questions"][-2]["references"]
    assert " ".join(reference["content"].split()) == "Every employee receives 25 days of paid annual leave"
    [moved] = experiment["questions"][-1]["references"]
    assert moved["content"] == "ticket code HW-7731" and moved["start_index"] > 22
    assert experiment["config"]["question_set"] == "handbook-questions.json"

    missing = client.post("/benchmarks", json={"document_id": document_id, "question_set": "nope.json"})
    assert missing.status_code == 404
