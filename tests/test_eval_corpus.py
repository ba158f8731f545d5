"""Span evaluation as a face of the corpus benchmark (ingest, corpus job, Experiment: strategies, MiniLM, Qdrant
Edge, retrievers), on three one-chunk documents whose metrics follow by hand; the ``chunkbench eval`` commands and
their errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chunkbench.benchmarking import benchmarks, corpus_eval
from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.errors import ChunkingError, EvaluationError
from chunkbench.evaluation.corpus_inputs import load_documents, load_questions, source_files
from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionReference
from chunkbench.plugins import isolated_registries
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.tokens import count_tokens

# Three topics far apart, each short enough to be a single fixed_size chunk of 512 tokens.
DOCUMENTS = {
    "cats": "The cat sat on the mat. Cats sleep most of the day and purr when they are content.",
    "markets": "Stock markets fell sharply on Tuesday. Investors sold bank shares after the rate decision.",
    "volcano": "The volcano erupted at dawn. Lava flowed down the northern slope toward the sea.",
}
CAT_REF = "The cat sat on the mat."
BANK_REF = "Investors sold bank shares"
LENGTHS = {key: len(text) for key, text in DOCUMENTS.items()}
TOTAL = sum(LENGTHS.values())
ONE_CHUNK = {"chunk_size": 512, "chunk_overlap": 0}
runner = CliRunner()


def _ref(document_id: str, content: str) -> QuestionReference:
    start = DOCUMENTS[document_id].index(content)
    return QuestionReference(content, start, start + len(content), document_id)


def _question(id_: str, question: str, document_id: str, references: tuple) -> BenchmarkQuestion:
    return BenchmarkQuestion(id_, question, document_id=document_id, references=references)


QUESTIONS = [
    _question("cat", "Where did the cat sit?", "cats", (_ref("cats", CAT_REF),)),
    _question(
        "two", "What did cats and bank investors do?", "cats", (_ref("cats", CAT_REF), _ref("markets", BANK_REF))
    ),
]


@pytest.fixture
def registries():
    with isolated_registries():  # the strategy variants a test declares are undone after it
        yield


def _evaluate(settings: Settings, tmp_path: Path, questions, *, n: int, retriever: str = "dense", scope="corpus"):
    """The three documents as .md files, evaluated as a corpus benchmark with one whole-document chunk each; the
    evaluation and its cells by question id (the full view: retrieved chunks included)."""
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    for name, text in DOCUMENTS.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    database, store = Database.from_settings(settings), VectorStore(settings)
    try:
        strategy = corpus_eval.strategy_for(settings, "fixed_size", ONE_CHUNK)
        evaluation = corpus_eval.evaluate(
            database, settings, store, corpus="eval-docs", sources=source_files(folder, DOCUMENTS, settings),
            questions=questions, strategies=[strategy], corpus_model="all-MiniLM-L6-v2", retriever=retriever,
            top_k=n, scope=scope, name="hand-computed", tenant_id=DEFAULT_TENANT,
        )  # fmt: skip
        with database.session() as session:
            full = benchmarks.experiment_dict(
                session, benchmarks.get(session, evaluation.experiment_id, tenant_id="default")
            )
    finally:
        store.close()
        database.dispose()
    names = {document["id"]: Path(document["source_key"]).stem for document in full["corpus"]["documents"]}
    cells = {}
    for cell in full["cells"]:
        cell["retrieved_documents"] = [names[c["document_id"]] for c in cell["retrieved"]]
        cells[cell["question_id"]] = cell
    return evaluation, strategy, cells


@pytest.mark.model
def test_top_n_equal_to_all_chunks_gives_hand_computed_span_metrics(settings, tmp_path, registries) -> None:
    evaluation, strategy, cells = _evaluate(settings, tmp_path, QUESTIONS, n=3)
    result = corpus_eval.figures(evaluation.experiment, strategy)
    assert strategy == "fixed_size_512_0" and result["chunks"] == 3 and result["questions"] == 2
    cat, two = cells["cat"]["metrics"], cells["two"]["metrics"]
    # Every chunk is retrieved: the foreign chunks only enlarge the denominators.
    assert cat["recall"] == 1.0
    assert cat["precision"] == pytest.approx(len(CAT_REF) / TOTAL, abs=1e-5)
    assert cat["iou"] == pytest.approx(len(CAT_REF) / TOTAL, abs=1e-5)
    assert cat["precision_omega"] == pytest.approx(len(CAT_REF) / LENGTHS["cats"], abs=1e-5)
    # A question with evidence in two documents: both documents' chunks are evidence, never merged together.
    covered = len(CAT_REF) + len(BANK_REF)
    assert two["recall"] == 1.0
    assert two["precision"] == pytest.approx(covered / TOTAL, abs=1e-5)
    assert two["precision_omega"] == pytest.approx(covered / (LENGTHS["cats"] + LENGTHS["markets"]), abs=1e-5)
    # The cat question ranks the cat document first; rank metrics then follow by hand.
    assert cells["cat"]["retrieved_documents"][0] == "cats"
    assert (cat["recall_at_k"], cat["hit_at_k"], cat["mrr"], cat["ndcg_at_k"]) == (1.0, 1.0, 1.0, 1.0)
    assert cat["tok_at_k"] == sum(map(count_tokens, DOCUMENTS.values()))
    assert two["recall_at_k"] == 1.0
    # Summaries are percent, population SD over the two questions.
    precisions = [100 * len(CAT_REF) / TOTAL, 100 * covered / TOTAL]
    assert result["precision"]["mean"] == pytest.approx(sum(precisions) / 2, abs=1e-3)
    assert result["precision"]["std"] == pytest.approx(abs(precisions[1] - precisions[0]) / 2, abs=1e-3)
    assert result["recall"] == {"mean": 100.0, "std": 0.0}
    assert set(evaluation.timings) == {"ingest", "process", "benchmark"}
    assert evaluation.experiment["decision"]["status"]  # an Experiment like any other, with its Decision
    # Retrieval only, as Chroma's protocol: no answer was made.
    assert evaluation.experiment["config"]["answer_mode"] == "none"
    assert {c["answer"] for c in cells.values()} == {None} and cat["exact_match"] is None


@pytest.mark.model
def test_a_retrieval_only_benchmark_grades_evidence_only(client) -> None:
    from chunkbench.benchmarking.schemas import BenchmarkIn

    with pytest.raises(ValueError, match="the judge grades answers"):
        BenchmarkIn(document_id="d", questions=[{"question": "q"}], answers=False, judge=True)
    upload = client.post("/documents", files={"file": ("cats.md", DOCUMENTS["cats"].encode(), "text/markdown")})
    document_id = upload.json()["document"]["id"]
    processed = client.post(
        f"/documents/{document_id}/process", params={"wait": "true"}, json={"strategies": ["fixed_size"]}
    )
    assert processed.status_code == 200, processed.text
    body = {"document_id": document_id, "questions": [{"question": "Where?", "expected_answer": "On the mat."}],
            "answers": False}  # fmt: skip
    refused = client.post("/benchmarks", json=body)
    assert refused.status_code == 400 and "retrieval-only" in refused.json()["message"]


@pytest.mark.model
def test_document_scope_drops_foreign_chunks_from_the_denominator(settings, tmp_path, registries) -> None:
    evaluation, _strategy, cells = _evaluate(settings, tmp_path, QUESTIONS[:1], n=3, scope="document")
    assert evaluation.experiment["config"]["scope"] == "document"  # recorded: a resume searches the same way
    cat = cells["cat"]
    assert cat["retrieved_documents"] == ["cats"]
    assert cat["metrics"]["precision"] == pytest.approx(len(CAT_REF) / LENGTHS["cats"], abs=1e-5)
    assert cat["metrics"]["iou"] == pytest.approx(len(CAT_REF) / LENGTHS["cats"], abs=1e-5)
    assert cat["metrics"]["tok_at_k"] == count_tokens(DOCUMENTS["cats"])


@pytest.mark.model
def test_a_foreign_chunk_is_never_evidence(settings, tmp_path, registries) -> None:
    # BM25 ranks the markets chunk first for a question in its words, though the question's evidence is cats'.
    question = _question("q", "stock markets bank shares rate decision", "cats", (_ref("cats", CAT_REF),))
    _evaluation, _strategy, cells = _evaluate(settings, tmp_path, [question], n=1, retriever="bm25")
    scores = cells["q"]
    assert scores["retrieved_documents"] == ["markets"]
    metrics = scores["metrics"]
    assert (metrics["recall"], metrics["precision"], metrics["iou"]) == (0.0, 0.0, 0.0)
    assert metrics["precision_omega"] == pytest.approx(len(CAT_REF) / LENGTHS["cats"], abs=1e-5)
    assert metrics["hit_at_k"] == 0.0 and metrics["tok_at_k"] == count_tokens(DOCUMENTS["markets"])


def test_typed_errors_before_any_work(settings, tmp_path, registries) -> None:
    unknown = _question("x", "?", "nowhere", (QuestionReference("", 0, 3, "nowhere"),))
    for document, content, message in [("nowhere", "The", "nowhere"), ("cats", "Lava flowed", "not the content")]:
        file = tmp_path / f"{document}.jsonl"
        reference = {"content": content, "start_index": 0, "end_index": 7}
        file.write_text(json.dumps({"id": "x", "question": "?", "document_id": document, "references": [reference]}))
        with pytest.raises(EvaluationError, match=message):
            load_questions(file, DOCUMENTS)
    with pytest.raises(ChunkingError, match="chunk_size"):
        corpus_eval.strategy_for(settings, "fixed_size", {"chunk_size": 0})
    for bad in ({"scope": "planet"}, {"retriever": "sonar"}, {"n": 0}):
        with pytest.raises(EvaluationError, match="Invalid evaluation"):
            _evaluate(settings, tmp_path, [unknown], **{"n": 3, **bad})
    # Nothing was ingested or processed by the refusals.
    database = Database.from_settings(settings)
    try:
        with database.session() as session:
            assert DocumentRepository(session, DEFAULT_TENANT).list() == ([], 0)
    finally:
        database.dispose()


def _write_chroma_csv(path: Path, question: str, references: list[dict], corpus_id: str) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "references", "corpus_id"])
        writer.writerow([question, json.dumps(references), corpus_id])


def test_loaders(tmp_path: Path) -> None:
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"document_id": "a", "text": "Alpha."}\n\n{"document_id": "b", "text": "Beta."}\n')
    assert load_documents(jsonl) == {"a": "Alpha.", "b": "Beta."}
    questions = tmp_path / "questions.csv"
    _write_chroma_csv(questions, "What?", [{"content": "Alpha", "start_index": 0, "end_index": 5}], "a")
    documents = {"a": "Alpha.", "b": "Beta."}
    (loaded,) = load_questions(questions, documents)
    assert (loaded.id, loaded.document_id, loaded.references) == ("0", "a", (QuestionReference("Alpha", 0, 5, "a"),))
    snippets = tmp_path / "snippets.jsonl"  # evidence without offsets is located in its document
    snippets.write_text('{"id": "s", "question": "Q", "document_id": "b", "references": [{"content": "Beta"}]}\n')
    assert load_questions(snippets, documents)[0].references == (QuestionReference("Beta", 0, 4, "b"),)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "question": "Q", "document_id": "a", "references": []}\n')
    with pytest.raises(EvaluationError, match=r"question 1 has no references"):
        load_questions(bad, documents)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text('{"id": 2, "question": "Q", "document_id": "z", "references": [{"content": "Alpha"}]}\n')
    with pytest.raises(EvaluationError, match=r"cannot be placed"):
        load_questions(elsewhere, documents)
    with pytest.raises(EvaluationError, match="does not exist"):
        load_documents(tmp_path / "missing")


# ----------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def corpus_files(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCUMENTS.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    rows = [
        {"id": q.id, "question": q.question, "document_id": q.document_id,
         "references": [{"document_id": r.document, "content": r.content, "start_index": r.start_index,
                         "end_index": r.end_index} for r in q.references]}
        for q in QUESTIONS
    ]  # fmt: skip
    questions.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    yield folder, questions
    get_settings.cache_clear()


def _eval(*args: str):
    return runner.invoke(app, ["eval", *args], catch_exceptions=False)


@pytest.mark.model
def test_cli_spans_json_and_table(corpus_files, registries) -> None:
    folder, questions = corpus_files
    common = ["spans", "--documents", str(folder), "--questions", str(questions), "--param", "chunk_size=512"]
    result = _eval(*common, "--param", "chunk_overlap=0", "-n", "3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("recall", "precision", "precision_omega", "iou", "recall_at_k", "mrr", "ndcg_at_k", "tok_at_k"):
        assert set(data[key]) == {"mean", "std"}
    assert set(data["timings"]) == {"ingest", "process", "benchmark"} and data["experiment_id"]
    assert data["recall"]["mean"] == 100.0 and data["config"]["strategy"] == "fixed_size_512_0"
    assert data["corpus"] == "eval-docs" and data["documents"] == 3 and data["chunks"] == 3
    # The Experiment is the benchmark's: shown by bench show, with its Decision.
    shown = runner.invoke(app, ["bench", "show", data["experiment_id"], "--json"], catch_exceptions=False)
    assert json.loads(shown.stdout)["decision"]["status"]
    table = _eval(*common, "--param", "chunk_overlap=0", "--scope", "document")
    assert table.exit_code == 0, table.output
    assert "precision_Ω" in table.stdout and "nDCG@k" in table.stdout and "chunkbench report" in table.stdout
    # The second run found the corpus processed: nothing embedded again.
    assert "0 documents processed, 3 already current" in table.stdout


def test_cli_errors_exit_non_zero(corpus_files, tmp_path: Path, registries) -> None:
    folder, questions = corpus_files
    missing = _eval("spans", "--documents", str(tmp_path / "nope"), "--questions", str(questions), "--json")
    assert missing.exit_code == 1 and json.loads(missing.stdout)["error"] == "evaluation_error"
    bad_param = _eval("spans", "--documents", str(folder), "--questions", str(questions), "--param", "size=3")
    assert bad_param.exit_code == 1
    bad_retriever = _eval("spans", "--documents", str(folder), "--questions", str(questions), "--retriever", "x")
    assert bad_retriever.exit_code == 1 and "retriever" in bad_retriever.stderr
    (folder / "cats.md").unlink()
    unknown = _eval("spans", "--documents", str(folder), "--questions", str(questions))
    assert unknown.exit_code == 1 and "cats" in unknown.stderr
    assert _eval("chroma", "--data", str(tmp_path), "--json").exit_code == 1
    assert _eval("chroma", "--config", "fixed_size-1-0").exit_code == 1


@pytest.mark.model
def test_cli_chroma_on_a_small_copy_of_the_data(tmp_path: Path, corpus_files) -> None:
    with isolated_registries():  # the row's strategy variant is registered for this test only
        _chroma_on_a_small_copy(tmp_path)


def _chroma_on_a_small_copy(tmp_path: Path) -> None:
    data = tmp_path / "chroma"
    (data / "corpora").mkdir(parents=True)
    for name, text in DOCUMENTS.items():
        (data / "corpora" / f"{name}.md").write_text(text, encoding="utf-8")
    references = [{"content": CAT_REF, "start_index": 0, "end_index": len(CAT_REF)}]
    _write_chroma_csv(data / "questions_df.csv", "Where is the cat?", references, "cats")
    header = "embedding_model,chunker,size_tokens,mean_chunk_tokens,overlap_tokens,retrieve_n,"
    header += ",".join(f"{m}_{s}" for m in ("recall", "precision", "precision_omega", "iou") for s in ("mean", "sd"))
    row = "all-MiniLM-L6-v2,TokenTextSplitter,200,200,0,5," + ",".join(["1.0"] * 8)
    (data / "published_results_headline.csv").write_text(f"{header}\n{row}\n")
    result = _eval("chroma", "--data", str(data), "--config", "fixed_size-200-0", "--json")
    assert result.exit_code == 0, result.output
    (config,) = json.loads(result.stdout)["configs"]
    assert config["name"] == "fixed_size-200-0" and config["published"]["recall"] == {"mean": 1.0, "std": 1.0}
    # Five chunks are asked for, three exist: all are retrieved, as in the hand-computed case above (read back
    # from the Experiment's cells, which store each score to 5 decimals).
    assert config["ours"]["precision"]["mean"] == pytest.approx(100 * len(CAT_REF) / TOTAL, abs=1e-3)
    assert config["strategy"] == "fixed_size_200_0" and json.loads(result.stdout)["experiment_id"]
