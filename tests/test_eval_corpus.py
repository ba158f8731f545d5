"""Corpus-level span evaluation through the real pipeline (strategies, MiniLM, embedded Qdrant, retrievers),
on three one-chunk documents whose metrics follow by hand; the ``chunkbench eval`` commands and their errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import get_settings
from chunkbench.errors import ChunkingError, EvaluationError
from chunkbench.evaluation.corpus import evaluate_spans
from chunkbench.evaluation.corpus_inputs import load_documents, load_questions
from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionReference
from chunkbench.plugins import isolated_registries
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


@pytest.fixture(scope="module")
def corpus_scope() -> dict:
    from chunkbench.config import Settings

    settings = Settings(_env_file=None, data_dir=Path("/nonexistent-unused"))
    return evaluate_spans(DOCUMENTS, QUESTIONS, params=ONE_CHUNK, n=3, settings=settings).to_dict(per_question=True)


def test_top_n_equal_to_all_chunks_gives_hand_computed_span_metrics(corpus_scope) -> None:
    assert corpus_scope["chunks"] == 3 and corpus_scope["documents"] == 3 and corpus_scope["questions"] == 2
    cat, two = corpus_scope["per_question"]
    # Every chunk is retrieved: the foreign chunks only enlarge the denominators.
    assert cat["chars"]["recall"] == 1.0
    assert cat["chars"]["precision"] == pytest.approx(len(CAT_REF) / TOTAL)
    assert cat["chars"]["iou"] == pytest.approx(len(CAT_REF) / TOTAL)
    assert cat["chars"]["precision_omega"] == pytest.approx(len(CAT_REF) / LENGTHS["cats"])
    assert cat["tokens"]["precision"] == pytest.approx(
        count_tokens(CAT_REF) / sum(map(count_tokens, DOCUMENTS.values()))
    )
    # A question with evidence in two documents: both documents' chunks are evidence, never merged together.
    covered = len(CAT_REF) + len(BANK_REF)
    assert two["chars"]["recall"] == 1.0
    assert two["chars"]["precision"] == pytest.approx(covered / TOTAL)
    assert two["chars"]["precision_omega"] == pytest.approx(covered / (LENGTHS["cats"] + LENGTHS["markets"]))
    # The cat question ranks the cat document first; rank metrics then follow by hand.
    assert cat["retrieved"][0] == ["cats", 0]
    assert cat["rank"] == {"recall_at_k": 1.0, "hit_at_k": 1.0, "mrr": 1.0, "ndcg_at_k": 1.0,
                           "tok_at_k": sum(map(count_tokens, DOCUMENTS.values()))}  # fmt: skip
    assert two["rank"]["recall_at_k"] == 1.0
    # Summaries are percent, population SD over the two questions.
    precisions = [100 * len(CAT_REF) / TOTAL, 100 * covered / TOTAL]
    assert corpus_scope["precision"]["mean"] == pytest.approx(sum(precisions) / 2)
    assert corpus_scope["precision"]["std"] == pytest.approx(abs(precisions[1] - precisions[0]) / 2)
    assert corpus_scope["recall"] == {"mean": 100.0, "std": 0.0}
    assert set(corpus_scope["timings"]) == {"chunk", "embed", "index", "retrieve", "score"}


def test_document_scope_drops_foreign_chunks_from_the_denominator(settings) -> None:
    result = evaluate_spans(DOCUMENTS, QUESTIONS[:1], params=ONE_CHUNK, n=3, scope="document", settings=settings)
    (cat,) = result.per_question
    assert cat["retrieved"] == [["cats", 0]]
    assert cat["chars"]["precision"] == pytest.approx(len(CAT_REF) / LENGTHS["cats"])
    assert cat["chars"]["iou"] == pytest.approx(len(CAT_REF) / LENGTHS["cats"])
    assert cat["rank"]["tok_at_k"] == count_tokens(DOCUMENTS["cats"])


def test_a_foreign_chunk_is_never_evidence(settings) -> None:
    # BM25 ranks the markets chunk first for a question in its words, though the question's evidence is cats'.
    question = _question("q", "stock markets bank shares rate decision", "cats", (_ref("cats", CAT_REF),))
    result = evaluate_spans(DOCUMENTS, [question], params=ONE_CHUNK, n=1, retriever="bm25", settings=settings)
    (scores,) = result.per_question
    assert scores["retrieved"] == [["markets", 0]]
    assert scores["chars"] == {"recall": 0.0, "precision": 0.0, "iou": 0.0,
                               "precision_omega": pytest.approx(len(CAT_REF) / LENGTHS["cats"])}  # fmt: skip
    assert scores["rank"]["hit_at_k"] == 0.0 and scores["rank"]["tok_at_k"] == count_tokens(DOCUMENTS["markets"])


def test_typed_errors_before_any_work(settings) -> None:
    unknown = _question("x", "?", "nowhere", (QuestionReference("", 0, 3, "nowhere"),))
    with pytest.raises(EvaluationError, match=r"unknown document id.*nowhere"):
        evaluate_spans(DOCUMENTS, [unknown], settings=settings)
    wrong = _question("x", "?", "cats", (QuestionReference("Lava flowed", 0, 7, "cats"),))
    with pytest.raises(EvaluationError, match="do not match"):
        evaluate_spans(DOCUMENTS, [wrong], settings=settings)
    with pytest.raises(ChunkingError, match="chunk_size"):
        evaluate_spans(DOCUMENTS, QUESTIONS, params={"chunk_size": 0}, settings=settings)
    with pytest.raises(EvaluationError, match="scope"):
        evaluate_spans(DOCUMENTS, QUESTIONS, scope="planet", settings=settings)


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


def test_cli_spans_json_and_table(corpus_files) -> None:
    folder, questions = corpus_files
    common = ["spans", "--documents", str(folder), "--questions", str(questions), "--param", "chunk_size=512"]
    result = _eval(*common, "--param", "chunk_overlap=0", "-n", "3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("recall", "precision", "precision_omega", "iou"):
        assert set(data[key]) == {"mean", "std"} and set(data["tokens"][key]) == {"mean", "std"}
    assert {"recall_at_k", "mrr", "ndcg_at_k", "tok_at_k", "timings"} <= set(data)
    assert data["recall"]["mean"] == 100.0 and data["config"]["params"] == ONE_CHUNK
    table = _eval(*common, "--param", "chunk_overlap=0", "--scope", "document")
    assert table.exit_code == 0 and "precision_Ω" in table.stdout and "nDCG@k" in table.stdout


def test_cli_errors_exit_non_zero(corpus_files, tmp_path: Path) -> None:
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
