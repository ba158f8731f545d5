"""Corpus benchmarks end to end: three generated documents ingested, processed with two Corpus models (MiniLM and
an OpenAI-protocol model served by the local fake server), indexed in the real Qdrant Edge engine, benchmarked
with retrieval over the whole corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from lxml import html as lxml_html
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.benchmarking import benchmarks, experiments, planning, runner
from chunkbench.benchmarking.aggregation import decision_for
from chunkbench.benchmarking.model import BenchmarkConfig, CellResult, Configuration, ExperimentQuestion
from chunkbench.benchmarking.planning import PlannedDocument
from chunkbench.benchmarking.report.render import render_report
from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from chunkbench.evaluation.spans import union_ranges
from chunkbench.models import StrategyName
from chunkbench.storage.repositories import CorpusRepository
from chunkbench.storage.schema import DEFAULT_TENANT, DocumentRow
from chunkbench.storage.vectors import close_vector_stores, get_vector_store
from fake_openai import Reply, running_fake_openai
from report_fixtures import make_experiment
from test_benchmarks import _cell_rows, _figures
from test_benchmarks import _cells as _committed_cells
from test_embedding import NOMIC

MINILM = "all-MiniLM-L6-v2"
CORPUS = "handbooks"

# One template, three offices: the documents have the same length and layout, so a chunk of one sits at the same
# offsets as the matching chunk of another, and a question about one office pulls in the others' chunks.
TEMPLATE = """This handbook describes the rules of the {city} office. It applies to every member of staff in {city}.

Staff in {city} receive {leave} days of paid annual leave per calendar year. Leave requests go to the team lead.

Broken equipment in {city} is reported to the help desk with ticket code {ticket} within one working day.

Hotel costs in {city} are reimbursed up to {hotel} euros a night. Receipts are kept for six years.

Laptops in {city} are replaced every {laptop} years, and phones every two years.

{city} staff prefer train travel for journeys under five hours. Flights need the director's approval.

The {city} printer sits on floor {floor}. Toner is ordered by the office manager.
"""
OFFICES = {
    "630.txt": {"city": "Berlin", "leave": 25, "ticket": "HW-7731", "hotel": 150, "laptop": 3, "floor": 2},
    "notes.txt": {"city": "Madrid", "leave": 30, "ticket": "HW-8842", "hotel": 170, "laptop": 4, "floor": 3},
    "travel.txt": {"city": "Lisbon", "leave": 35, "ticket": "HW-9953", "hotel": 190, "laptop": 5, "floor": 4},
}
# How the corpus ingest names a file found in a sub-folder (set by hand here: the upload keys by filename).
SOURCE_KEYS = {"notes.txt": "sub/notes.txt"}
FIXED = {"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}}


def _questions(berlin_id: str) -> list[dict]:
    """Six questions naming their document every way there is: by stem, source key, filename, id, stem, none."""
    return [
        {"id": "leave", "document_id": "630", "question": "How many days of paid annual leave do staff in Berlin get?",
         "expected_answer": "25 days", "category": "leave",
         "references": [{"content": "Staff in Berlin receive 25 days of paid annual leave per calendar year."}]},
        {"id": "ticket", "document_id": "sub/notes.txt", "category": "equipment",
         "question": "Which ticket code reports broken equipment in Madrid?", "expected_answer": "HW-8842",
         "references": [{"content": "ticket code HW-8842"}]},
        {"id": "hotel", "question": "Up to how much is a hotel night reimbursed in Lisbon?", "category": "travel",
         "expected_answer": "190 euros a night",
         "references": [{"document": "travel.txt", "content": "reimbursed up to 190 euros a night"}]},
        {"id": "laptops", "document_id": berlin_id, "question": "How often are laptops replaced in Berlin?",
         "expected_answer": "every 3 years", "category": "equipment",
         "references": [{"content": "Laptops in Berlin are replaced every 3 years"}]},
        {"id": "printer", "document_id": "notes", "question": "On which floor is the Madrid printer?",
         "expected_answer": "floor 3", "category": "equipment",
         "references": [{"content": "The Madrid printer sits on floor 3."}]},
        {"id": "train", "question": "When do Lisbon staff prefer the train?", "expected_answer": "under five hours",
         "category": "travel",
         "references": [{"content": "Lisbon staff prefer train travel for journeys under five hours."}]},
    ]  # fmt: skip


@pytest.fixture
def corpus(settings) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """The app, with the Ollama of the second Corpus model served by the fake server, and a corpus of three
    documents each processed (fixed_size and recursive) with both Corpus models; yields the client and the
    documents' ids by filename."""
    with running_fake_openai(dimension=NOMIC.dimension) as server:
        settings.ollama_base_url = server.url.removesuffix("/v1")
        settings.llm_max_retries = 0
        with TestClient(create_app(settings)) as client:
            ids = {}
            for filename, values in OFFICES.items():
                uploaded = client.post("/documents", files={"file": (filename, TEMPLATE.format(**values).encode())})
                assert uploaded.status_code == 201, uploaded.text
                ids[filename] = uploaded.json()["document"]["id"]
            with client.app.state.database.session() as session:
                for filename, key in SOURCE_KEYS.items():
                    session.get(DocumentRow, ids[filename]).source_key = key
                corpora = CorpusRepository(session, DEFAULT_TENANT)
                corpora.add_documents(corpora.create(CORPUS), list(ids.values()))
            for document_id in ids.values():
                for model in (MINILM, NOMIC.id):
                    processed = client.post(
                        f"/documents/{document_id}/process", params={"wait": "true"},
                        json={"strategies": ["fixed_size", "recursive"], "corpus_model_id": model,
                              "params": {**FIXED, "recursive": {"chunk_size": 60}}},
                    )  # fmt: skip
                    assert processed.status_code == 200, processed.text
            yield client, ids


def _run(client: TestClient, **fields) -> dict:
    response = client.post("/benchmarks", params={"wait": "true"}, json={"corpus": CORPUS, **fields})
    assert response.status_code == 200, response.text
    return response.json()


def _cells(experiment: dict, key: str) -> dict[str, dict]:
    return {c["question_id"]: c for c in experiment["cells"] if c["config_key"] == key}


@pytest.mark.model
def test_retrieval_searches_the_whole_corpus_and_another_documents_chunk_is_never_evidence(corpus):
    client, ids = corpus
    experiment = _run(client, questions=_questions(ids["630.txt"]), strategies=["fixed_size"],
                      corpus_model_id=MINILM)  # fmt: skip
    assert experiment["status"] == "completed"
    assert experiment["document"]["id"] is None
    assert experiment["corpus"]["name"] == CORPUS
    assert {d["source_key"] for d in experiment["corpus"]["documents"]} == {"630.txt", "sub/notes.txt", "travel.txt"}
    # Every way of naming a document found the right one; the unnamed snippet was located across the corpus.
    owner = {q["id"]: {r["document_id"] for r in q["references"]} for q in experiment["questions"]}
    berlin, madrid, lisbon = ids["630.txt"], ids["notes.txt"], ids["travel.txt"]
    assert owner == {"leave": {berlin}, "ticket": {madrid}, "hotel": {lisbon}, "laptops": {berlin},
                     "printer": {madrid}, "train": {lisbon}}  # fmt: skip
    with client.app.state.database.session() as session:
        texts = {i: session.get(DocumentRow, i).parsed_text for i in ids.values()}

    cells = _cells(experiment, "fixed_size/dense/k5")
    foreign_overlapping = 0
    for question in experiment["questions"]:
        [reference] = question["references"]
        own, start, end = reference["document_id"], reference["start_index"], reference["end_index"]
        assert texts[own][start:end] == reference["content"]
        cell = cells[question["id"]]
        retrieved = cell["retrieved"]
        assert {c["document_id"] for c in retrieved} <= set(ids.values())
        assert any(c["document_id"] != own for c in retrieved)  # the top 5 reach into other documents
        # Chunks of another document that sit at the evidence's own offsets: counted as evidence by a scorer that
        # forgot the documents; they must add to the denominator only.
        at_evidence = [c for c in retrieved if c["start_index"] < end and c["end_index"] > start]
        foreign_overlapping += sum(1 for c in at_evidence if c["document_id"] != own)
        relevant = [c for c in at_evidence if c["document_id"] == own]
        covered = union_ranges([(max(c["start_index"], start), min(c["end_index"], end)) for c in relevant])
        covered_chars = sum(e - s for s, e in covered)
        retrieved_chars = sum(c["end_index"] - c["start_index"] for c in retrieved)
        assert cell["metrics"]["recall"] == pytest.approx(covered_chars / (end - start))
        assert cell["metrics"]["precision"] == pytest.approx(covered_chars / retrieved_chars)
        first = next((rank for rank, c in enumerate(retrieved, 1) if c in relevant), None)
        assert cell["metrics"]["mrr"] == (1 / first if first else 0.0)
    assert foreign_overlapping > 0  # the check above had a chunk to get wrong

    provenance = experiment["provenance"]["corpus"]
    assert provenance["name"] == CORPUS and len(provenance["hash"]) == 64
    assert [d["source_key"] for d in provenance["documents"]] == ["630.txt", "sub/notes.txt", "travel.txt"]
    runs = experiment["provenance"]["strategy_runs"]["fixed_size"]["runs"]
    assert {r["document_id"] for r in runs} == set(ids.values()) and all(r["run_id"] for r in runs)

    # Breakdowns: per document (by source key) and per category, worst first, failures = recall 0.
    split = experiment["breakdowns"]
    assert split["metric"] == "recall"
    assert {g["source_key"] for g in split["documents"]} == {"630.txt", "sub/notes.txt", "travel.txt"}
    owners = {lisbon: ["hotel", "train"], madrid: ["ticket", "printer"], berlin: ["leave", "laptops"]}
    for group in split["documents"]:
        recalls = [cells[q]["metrics"]["recall"] for q in owners[group["id"]]]
        figures = group["configurations"]["fixed_size/dense/k5"]
        assert group["questions"] == 2 and figures["mean"] == pytest.approx(sum(recalls) / 2)
        assert figures["failures"] == recalls.count(0.0)
    means = [g["configurations"]["fixed_size/dense/k5"]["mean"] for g in split["documents"]]
    assert means == sorted(means)
    assert {g["category"]: g["questions"] for g in split["categories"]} == {"leave": 1, "equipment": 3, "travel": 2}
    page = client.get(f"/benchmarks/{experiment['id']}/report", params={"view": "technical"}).text
    assert 'id="breakdown-documents"' in page and "sub/notes.txt" in page and f"corpus {CORPUS} (3 documents)" in page

    listed = client.get("/experiments", params={"corpus": CORPUS}).json()
    assert [(e["id"], e["document_id"], e["documents"]) for e in listed] == [(experiment["id"], None, 3)]
    assert client.get("/experiments", params={"document_id": berlin}).json() == []


@pytest.mark.model
def test_the_comparison_at_equal_budget_scores_a_corpus_experiments_chunks_in_their_own_documents(corpus):
    # With a budget no context reaches, cutting changes nothing: the scores at "equal budget" must be the stored
    # ones. (They were all 0 when the rescoring matched a corpus's chunks to references without their documents.)
    client, ids = corpus
    experiment = _run(client, questions=_questions(ids["630.txt"]), strategies=["fixed_size"],
                      retrievers=["dense", "bm25"], corpus_model_id=MINILM, budget=100_000)  # fmt: skip
    matched = experiment["decision"]["budget_matched"]
    assert matched["budget"] == 100_000 and matched["n_questions"] == len(experiment["questions"])
    for key, mean in matched["means"].items():
        recalls = [cell["metrics"]["recall"] for cell in _cells(experiment, key).values()]
        assert mean == pytest.approx(sum(recalls) / len(recalls)) and max(recalls) > 0


@pytest.mark.model
def test_two_corpus_models_in_one_grid_are_paired_question_by_question(corpus):
    client, ids = corpus
    questions = _questions(ids["630.txt"])
    experiment = _run(client, questions=questions, strategies=["fixed_size"], corpus_models=[MINILM, NOMIC.id])
    keys = [c["key"] for c in experiment["configurations"]]
    assert keys == [f"fixed_size/dense/k5/m-{MINILM}", f"fixed_size/dense/k5/m-{NOMIC.id}"]
    assert [c["corpus_model"] for c in experiment["configurations"]] == [MINILM, NOMIC.id]
    assert experiment["config"]["corpus_models"] == [MINILM, NOMIC.id]
    assert experiment["provenance"]["corpus_models"] == [MINILM, NOMIC.id]
    by_model = [_cells(experiment, key) for key in keys]
    assert set(by_model[0]) == set(by_model[1]) == {q["id"] for q in questions}
    # Each model searched its own collection: the fake model's vectors rank other chunks than MiniLM's.
    assert any(by_model[0][q]["retrieved"] != by_model[1][q]["retrieved"] for q in by_model[0])

    decision = experiment["decision"]
    assert set(decision["prob_best"]) == set(keys) and decision["n_questions"] == len(questions)
    # The Decision pairs the two columns by question id: rebuilt from the cells shuffled, it is the same.
    shuffled = [CellResult.model_validate(c) for c in reversed(experiment["cells"])]
    again = decision_for(
        [ExperimentQuestion.model_validate(q).benchmark_question() for q in experiment["questions"]],
        [Configuration.model_validate(c) for c in experiment["configurations"]], shuffled, experiment["aggregate"],
        metric="recall", seed=0, resamples=experiment["provenance"]["bootstrap_resamples"], with_documents=True,
    )  # fmt: skip
    assert again == decision
    for key, cells in zip(keys, by_model, strict=True):
        recalls = [cells[q["id"]]["metrics"]["recall"] for q in questions]
        assert decision["means"][key] == pytest.approx(sum(recalls) / len(recalls))

    estimate = client.post("/benchmarks", json={"corpus": CORPUS, "questions": questions, "strategies": ["fixed_size"],
                                                 "corpus_models": [MINILM, NOMIC.id], "dry_run": True})  # fmt: skip
    assert estimate.status_code == 200 and estimate.json()["cells"] == 2 * len(questions)
    listed = client.get("/experiments", params={"corpus_model_id": NOMIC.id}).json()
    assert [e["id"] for e in listed] == [experiment["id"]] and listed[0]["corpus_models"] == [MINILM, NOMIC.id]


class _Stop(Exception):
    pass


@pytest.mark.model
def test_a_stopped_corpus_experiment_resumes_to_the_figures_of_an_uninterrupted_run(corpus, settings):
    client, ids = corpus
    database, store = client.app.state.database, get_vector_store(settings)
    request = BenchmarkIn(
        corpus=CORPUS, questions=_questions(ids["630.txt"]), strategies=["fixed_size", "recursive"],
        corpus_models=[MINILM, NOMIC.id], concurrency=1,
    )  # fmt: skip
    with database.session() as session:
        plan = planning.plan(session, settings, request, tenant_id=DEFAULT_TENANT)
    experiment_id = experiments.create(database, settings, plan).id

    def stop_after_five(fraction: float, message: str) -> None:
        if message.startswith("5/"):
            raise _Stop

    with pytest.raises(_Stop):
        runner.execute(database, settings, store, experiment_id, tenant_id=DEFAULT_TENANT, progress=stop_after_five)
    assert client.get(f"/benchmarks/{experiment_id}").json()["progress"]["cells_done"] == 5
    benchmarks.prepare_resume(database, experiment_id, tenant_id=DEFAULT_TENANT)
    runner.execute(database, settings, store, experiment_id, tenant_id=DEFAULT_TENANT)
    resumed = client.get(f"/benchmarks/{experiment_id}").json()
    assert resumed["status"] == "completed" and len(resumed["cells"]) == 4 * 6

    fresh = _run(client, **request.model_dump(exclude_none=True, exclude={"corpus"}))
    assert _figures(resumed) == _figures(fresh)


@pytest.mark.model
def test_a_corpus_benchmark_killed_mid_way_resumes_to_the_figures_of_an_uninterrupted_run(
    corpus, settings, tmp_path, monkeypatch
):
    # A real CLI process, killed with SIGKILL after a few cells, resumed by the next CLI command; an LLM that
    # takes 0.3 s an answer keeps the run slow enough to be caught half-way.
    _client, ids = corpus
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(_questions(ids["630.txt"])), encoding="utf-8")
    database_url = settings.sqlalchemy_url
    close_vector_stores()  # the CLI process opens the embedded Qdrant folder

    def slow(body):
        time.sleep(0.3)
        return Reply("The handbook says so [Source 1].")

    run = ["bench", "run", "--corpus", CORPUS, "-q", str(questions), "--strategies", "fixed_size,recursive",
           "--corpus-model", MINILM, "--no-judge", "--concurrency", "1", "--json"]  # fmt: skip
    with running_fake_openai(responder=slow) as server:
        environment = {
            **os.environ, "CHUNKBENCH_DATA_DIR": str(settings.data_dir), "CHUNKBENCH_LLM_BASE_URL": server.url,
            "CHUNKBENCH_LLM_MODEL": "fake-model", "CHUNKBENCH_LLM_MAX_RETRIES": "0", "HF_HUB_OFFLINE": "1",
        }  # fmt: skip
        process = subprocess.Popen([sys.executable, "-m", "chunkbench", *run], env=environment,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        try:
            deadline = time.monotonic() + 180
            while _committed_cells(database_url) < 3:
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
                assert time.monotonic() < deadline, "the CLI run never wrote three cells"
                time.sleep(0.2)
        finally:
            process.kill()
            process.wait()
        kept = _cell_rows(database_url)
        assert 3 <= len(kept) < 12
        for key, value in environment.items():
            if key.startswith("CHUNKBENCH_"):
                monkeypatch.setenv(key, value)
        get_settings.cache_clear()
        try:
            [experiment_id] = {row[0] for row in kept}
            resumed = CliRunner().invoke(cli_app, ["bench", "run", "--resume", experiment_id, "--json"])
            fresh = CliRunner().invoke(cli_app, run)
        finally:
            get_settings.cache_clear()
    assert resumed.exit_code == 0, resumed.output
    assert fresh.exit_code == 0, fresh.output
    resumed_experiment, fresh_experiment = json.loads(resumed.stdout), json.loads(fresh.stdout)
    assert resumed_experiment["status"] == "completed" and len(resumed_experiment["cells"]) == 12
    assert set(kept) <= set(_cell_rows(database_url))  # the cells written before the kill were kept as they were
    assert _figures(resumed_experiment) == _figures(fresh_experiment)


@pytest.mark.model
def test_a_question_about_a_document_outside_the_corpus_is_refused_and_nothing_is_written(corpus):
    client, ids = corpus
    stray = {"id": "budget", "document_id": "budget.pdf", "question": "What is the budget?",
             "references": [{"content": "The budget is 5 million."}]}  # fmt: skip
    response = client.post("/benchmarks", json={"corpus": CORPUS, "questions": [*_questions(ids["630.txt"]), stray]})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "question_document_not_in_corpus"
    assert "budget.pdf" in body["message"] and CORPUS in body["message"] and body["details"]["questions"] == ["budget"]

    # Not processed with the strategy: the documents are named, and the command to run.
    unprocessed = client.post("/benchmarks", json={"corpus": CORPUS, "questions": _questions(ids["630.txt"]),
                                                    "strategies": ["semantic"]})  # fmt: skip
    assert unprocessed.status_code == 400
    message = unprocessed.json()["message"]
    assert "3 document(s)" in message and "'sub/notes.txt'" in message
    assert f"chunkbench process --corpus {CORPUS} --strategies semantic" in message
    both = client.post("/benchmarks", json={"corpus": CORPUS, "document_id": ids["630.txt"], "questions": []})
    assert both.status_code == 422
    assert client.get("/experiments").json() == []


@pytest.mark.model
def test_a_one_document_benchmark_keeps_its_shape_and_records_its_corpus_of_one(corpus):
    client, ids = corpus
    berlin = ids["630.txt"]
    response = client.post(
        "/benchmarks", params={"wait": "true"},
        json={"document_id": berlin, "questions": _questions(berlin), "strategies": ["fixed_size"],
              "corpus_model_id": MINILM},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    experiment = response.json()
    # Questions naming the other documents are dropped, as always (one naming none is kept: its snippet is placed
    # in this document); nothing names a document in the stored JSON.
    assert [q["id"] for q in experiment["questions"]] == ["leave", "laptops", "train"]
    assert all("document_id" not in q and all("document_id" not in r for r in q["references"])
               for q in experiment["questions"])  # fmt: skip
    assert all("document_id" not in c for cell in experiment["cells"] for c in cell["retrieved"])
    assert "corpus" not in experiment and experiment["document"]["id"] == berlin
    assert [c["key"] for c in experiment["configurations"]] == ["fixed_size/dense/k5"]
    assert "corpus_models" not in experiment["config"]
    with client.app.state.database.session() as session:
        row = session.get(DocumentRow, berlin)
        expected = experiments.corpus_hash([PlannedDocument(row.id, row.source_key, row.filename, row.content_hash)])
        stored = benchmarks.get(session, experiment["id"], tenant_id=DEFAULT_TENANT)
        assert (stored.document_id, stored.corpus_id, stored.document_ids) == (berlin, None, [berlin])
    assert experiment["provenance"]["corpus"] == {
        "name": None, "hash": expected,
        "documents": [{"id": berlin, "source_key": "630.txt", "content_hash": row.content_hash}],
    }  # fmt: skip
    assert experiment["provenance"]["strategy_runs"]["fixed_size"]["params"]["chunk_size"] == 30


@pytest.mark.model
def test_cli_bench_run_list_and_resume_a_corpus(corpus, settings, tmp_path, monkeypatch):
    _client, ids = corpus
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_OLLAMA_BASE_URL", settings.ollama_base_url)
    get_settings.cache_clear()
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"questions": _questions(ids["630.txt"])}), encoding="utf-8")
    cli = CliRunner()
    try:
        ran = cli.invoke(cli_app, ["bench", "run", "--corpus", CORPUS, "-q", str(questions), "--strategies",
                                   "recursive", "--corpus-model", f"{MINILM},{NOMIC.id}", "--json"])  # fmt: skip
        assert ran.exit_code == 0, ran.output
        experiment = json.loads(ran.stdout)
        assert experiment["status"] == "completed" and experiment["corpus"]["name"] == CORPUS
        assert len(experiment["cells"]) == 2 * 6
        listed = cli.invoke(cli_app, ["bench", "list", "--corpus", CORPUS, "--json"])
        assert listed.exit_code == 0, listed.output
        [row] = json.loads(listed.stdout)
        assert (row["id"], row["corpus_name"], row["documents"]) == (experiment["id"], CORPUS, 3)
        neither = cli.invoke(cli_app, ["bench", "run", "-q", str(questions)])
        assert neither.exit_code != 0 and "--corpus" in neither.output
        finished = cli.invoke(cli_app, ["bench", "run", "--resume", experiment["id"]])
        assert finished.exit_code == 1 and "completed" in finished.output
    finally:
        get_settings.cache_clear()


def test_the_breakdown_tables_show_the_20_worst_documents_and_say_how_many_are_hidden():
    experiment = make_experiment()
    [first, *_] = [c["key"] for c in experiment["configurations"]]
    experiment["breakdowns"] = {
        "metric": "recall",
        "documents": [
            {"id": f"d{i}", "source_key": f"part/{i:02}.txt", "questions": 1,
             "configurations": {first: {"mean": i / 25, "measured": 1, "failures": int(i == 0)}}}
            for i in range(25)
        ],
    }  # fmt: skip
    page = lxml_html.document_fromstring(render_report(experiment, view="technical"))
    rows = page.get_element_by_id("breakdown-documents").findall(".//tbody/tr")
    assert [row[0].text_content() for row in rows] == [f"part/{i:02}.txt" for i in range(20)]
    assert rows[0][3].text_content() == "1"  # the failure of the worst document
    assert "5 more documents are not shown" in page.text_content()


def test_a_configuration_names_its_corpus_model_in_its_key_only_on_a_model_axis():
    plain = Configuration(strategy=StrategyName.FIXED_SIZE, retriever="dense", top_k=5)
    modelled = Configuration(strategy=StrategyName.FIXED_SIZE, retriever="dense", top_k=5, corpus_model="BAAI/bge-m3")
    assert (plain.key, modelled.key) == ("fixed_size/dense/k5", "fixed_size/dense/k5/m-BAAI-bge-m3")
    assert (
        "corpus_model" not in plain.model_dump(mode="json")
        and modelled.model_dump(mode="json")["corpus_model"] == "BAAI/bge-m3"
    )
    assert Configuration.model_validate(modelled.model_dump(mode="json")) == modelled
    config = BenchmarkConfig.of(
        [modelled, Configuration(strategy=StrategyName.FIXED_SIZE, retriever="dense", top_k=5, corpus_model="x")]
    )
    assert config.model_dump(mode="json")["corpus_models"] == ["BAAI/bge-m3", "x"]
    assert BenchmarkConfig.model_validate(config.model_dump(mode="json")) == config and config.models == (
        "BAAI/bge-m3",
        "x",
    )
    assert "corpus_models" not in BenchmarkConfig.of([plain], corpus_model_id=MINILM).model_dump(mode="json")
