"""Language rules proportionate to the evidence (issue 22, item 3): a model is switched or refused only on confident
detections of documents that hold a material share of the text; a warning on a few documents leaves the Decision
standing, says the share, and whether the named configuration's lead depends on those questions; the verdict and the
reasons never disagree (one test per warning kind)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from chunkbench.admin import operations
from chunkbench.benchmarking import benchmarks
from chunkbench.benchmarking.decision import decide
from chunkbench.benchmarking.decision_ranking import Decision
from chunkbench.benchmarking.report.render import render_report
from chunkbench.benchmarking.schemas import BenchmarkIn, QuestionIn, ReferenceIn
from chunkbench.benchmarking.verdicts import verdict
from chunkbench.cli import app as cli_app
from chunkbench.config import Settings, get_settings
from chunkbench.documents import ingest, library
from chunkbench.documents.discovery import SourceFile
from chunkbench.embedding.languages import LanguageEvidence, LanguageRule
from chunkbench.embedding.registry import MULTILINGUAL_MODEL_ID
from chunkbench.errors import LanguageNotCoveredError
from chunkbench.indexing import corpus_job
from chunkbench.indexing.schemas import ProcessIn
from chunkbench.models import StrategyName
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT, DocumentRow
from chunkbench.storage.vectors import get_vector_store

MINILM = "all-MiniLM-L6-v2"
RULE = LanguageRule(min_confidence=0.8, material_share=0.1)


# ------------------------------------------------------------------------------------------- the rule


def test_confidence_counts_only_when_sure_declared_set_or_recorded_before_confidence_existed() -> None:
    assert RULE.confident(LanguageEvidence("a", "de", 0.95, "detected"))
    assert not RULE.confident(LanguageEvidence("a", "mt", 0.03, "detected"))  # a guess on code
    assert RULE.confident(LanguageEvidence("a", "de", 0.3, "declared"))
    assert RULE.confident(LanguageEvidence("a", "de", 0.3, "user"))
    assert RULE.confident(LanguageEvidence("a", "de", None, None))  # an old row: as before


def test_the_standing_of_uncovered_documents_follows_their_share_of_the_text() -> None:
    english = [LanguageEvidence(f"en{i}.md", "en", 0.99, "detected", 1000) for i in range(9)]
    german = LanguageEvidence("de.md", "de", 0.95, "detected", 500)
    assert RULE.standing(["de.md"], [*english, german]) == "minority"  # 500 of 9,500 characters: 5.3 %
    long_german = LanguageEvidence("de.md", "de", 0.95, "detected", 1000)
    assert RULE.standing(["de.md"], [*english, long_german]) is None  # 10 %: material, the rule applies
    unsure = LanguageEvidence("de.md", "de", 0.4, "detected", 50_000)
    assert RULE.standing(["de.md"], [*english, unsure]) == "unsure"  # most of the text, but a guess
    # A document processed alone holds all of its own text, whatever its length.
    assert RULE.standing(["de.md"], [LanguageEvidence("de.md", "de", 0.95, "detected", 0)]) is None


# ------------------------------------------------------------------------------------------- the Decision


def _entry(questions: list[int], *, material: bool, documents: int = 2, total: int = 52) -> dict:
    return {
        "role": "corpus", "model_id": MINILM, "languages": ["de"], "covering_models": [MULTILINGUAL_MODEL_ID],
        "material": material, "material_share": 0.1, "total_documents": total,
        "document_ids": [f"d{i}" for i in range(documents)], "questions": questions,
    }  # fmt: skip


def _consistent(decision: Decision) -> None:
    """The verdict never recommends a configuration the reasons say the Decision does not name, and it is the
    verdict of the Decision as stored."""
    text = " ".join(decision.reasons)
    assert decision.verdict == verdict(json.loads(json.dumps(decision.to_dict())))
    language = decision.language or {}
    if language.get("material"):
        assert "names none of them" in text and "the Decision stands" not in text
        for name in language["configurations"]:
            assert not decision.verdict.startswith(f"Use {name}:")
            assert f"{name} is the cheapest contender" not in decision.verdict
            assert decision.best != name
    elif language:
        assert "names none of them" not in text and "the Decision stands" in text


# 25 questions; A finds every answer, B half of them: a clear winner that the two German questions do not make.
STRONG, HALF = [1.0] * 25, [1.0, 0.0] * 12 + [1.0]


def test_a_warning_on_a_few_documents_leaves_the_decision_standing_and_states_the_share() -> None:
    plain = decide({"A": STRONG, "B": HALF}, {"A": 100.0, "B": 100.0}, metric="recall")
    flagged = decide(
        {"A": STRONG, "B": HALF}, {"A": 100.0, "B": 100.0}, metric="recall",
        uncovered={"A": _entry([3, 7], material=False), "B": _entry([3, 7], material=False)},
    )  # fmt: skip
    assert (flagged.status, flagged.best) == (plain.status, plain.best) == ("winner", "A")
    assert flagged.verdict == plain.verdict  # the lead does not depend on the German questions
    assert flagged.reasons[-2:] == [
        "2 of 52 documents (3.8 %), 8.0 % of the questions are in German (de), which the Corpus model "
        "all-MiniLM-L6-v2 does not cover: the scores of A and B on those questions are not meaningful, but they are "
        "fewer than the 10.0 % of the questions at which the Decision names no configuration built on it, so the "
        "Decision stands.",
        "Without those 2 questions, A is still named on the other 23: its lead does not depend on them.",
    ]
    assert flagged.language["without"]["best"] == "A" and flagged.language["material"] is False
    _consistent(flagged)


def test_an_unsure_detection_of_most_documents_leaves_the_decision_standing_and_says_why() -> None:
    # A one-document Experiment: every question is on the document, detected as German with too little confidence.
    entry = {**_entry(list(range(25)), material=False, documents=1, total=1), "standing": "unsure"}
    entry["min_confidence"] = 0.8
    flagged = decide({"A": STRONG, "B": HALF}, {"A": 100.0, "B": 100.0}, metric="recall", uncovered={"A": entry})
    assert (flagged.status, flagged.best) == ("winner", "A")
    assert flagged.language["without"] is None  # nothing is left without those questions: no lead to test
    assert flagged.reasons[-1] == (
        "100.0 % of the questions are in German (de), which the Corpus model "
        "all-MiniLM-L6-v2 does not cover: the scores of A on those questions are not meaningful, but their language "
        "was detected with a confidence below 0.80, too unsure to void it, so the Decision stands (set the "
        "documents' language if the guess is right)."
    )
    _consistent(flagged)


def test_a_lead_that_depends_on_the_questions_the_model_cannot_read_is_said_in_the_verdict() -> None:
    # 50 questions: A leads only through the 4 on the German documents (8 %); on the other 46 B is better on each.
    a, b = [1.0] * 4 + [0.5] * 46, [0.0] * 4 + [0.52] * 46
    entry = _entry([0, 1, 2, 3], material=False)
    flagged = decide({"A": a, "B": b}, {"A": 100.0, "B": 100.0}, metric="recall", uncovered={"A": entry, "B": entry})
    assert (flagged.status, flagged.best) == ("winner", "A")
    depends = "A's lead depends on those 4 questions: without them, B would lead instead (on the other 46)."
    assert flagged.reasons[-1] == depends
    assert flagged.verdict.startswith("Use A:") and flagged.verdict.endswith(f" {depends}")
    assert flagged.language["without"] == {"n_questions": 46, "status": "winner", "best": "B", "leader": "B"}
    _consistent(flagged)


def test_a_material_share_keeps_the_decision_from_naming_a_configuration_built_on_that_model() -> None:
    flagged = decide(
        {"A": STRONG, "B": HALF}, {"A": 100.0, "B": 100.0}, metric="recall",
        uncovered={"A": _entry(list(range(20)), material=True, documents=40)},
    )  # fmt: skip
    assert (flagged.status, flagged.best, flagged.cannot_tell["cause"]) == ("cannot_tell", None, "language")
    assert flagged.verdict.startswith("The benchmark cannot name A on recall: it leads, but its Corpus model")
    assert flagged.reasons[-1] == (
        "A is built on a model that does not cover German (de), the language of 40 of 52 documents (76.9 %), 80.0 % "
        "of the questions: its scores on those documents are not meaningful, and the Decision names none of them."
    )
    _consistent(flagged)


def test_the_verdict_never_offers_a_configuration_the_reasons_rule_out() -> None:
    """The issue's contradiction: every configuration flagged, the Decision cannot tell for another reason, and the
    verdict still offered the cheapest one "if a choice is needed now"."""
    a, b = [0.5 + (0.35 if i % 2 == 0 else -0.25) for i in range(20)], [0.5] * 20
    costs = {"A": 300.0, "B": 320.0}
    unflagged = decide({"A": a, "B": b}, costs, metric="recall")
    assert unflagged.status == "cannot_tell" and "If a choice is needed now, A is the cheapest" in unflagged.verdict
    entry = _entry(list(range(20)), material=True, documents=52)
    flagged = decide({"A": a, "B": b}, costs, metric="recall", uncovered={"A": entry, "B": entry})
    assert flagged.status == "cannot_tell" and "If a choice is needed now" not in flagged.verdict
    assert flagged.reasons[-1].startswith("A and B are built on a model that does not cover German (de)")
    _consistent(flagged)


# ------------------------------------------------------------------------------------------- corpora, end to end

# 52 distinct subjects: each document is one short paragraph that only its own question matches.
SUBJECTS = [
    "otter", "heron", "badger", "walrus", "falcon", "beaver", "lynx", "marmot", "puffin", "bison", "gecko", "ibis",
    "jackal", "koala", "lemur", "moose", "newt", "ocelot", "panda", "quail", "raven", "salmon", "tapir", "urchin",
    "viper", "wombat", "yak", "zebra", "alpaca", "camel", "dingo", "eagle", "ferret", "gibbon", "hamster", "iguana",
    "jaguar", "kestrel", "llama", "magpie", "narwhal", "oriole", "pelican", "rabbit", "seal", "toucan", "vulture",
    "weasel", "antelope", "buffalo", "cheetah", "dolphin",
]  # fmt: skip
GERMAN = "Das Tierheim der {subject} öffnet um {hour} Uhr, und die Tiere werden zweimal am Tag gefüttert."


def _english(subject: str, hour: int) -> str:
    return f"The {subject} sanctuary opens at {hour} o'clock, and its animals are fed twice a day.\n"


def _documents(folder: Path, german: dict[str, str]) -> None:
    folder.mkdir()
    for index, subject in enumerate(SUBJECTS):
        text = german.get(subject) or _english(subject, 5 + index % 7)
        (folder / f"{subject}.md").write_text(text, encoding="utf-8")


def _set_language(database: Database, names: list[str], language: str, confidence: float) -> None:
    """The rows as the detector would leave them (its rewrite is someone else's: set here, after ingest)."""
    with database.session() as session:
        session.execute(
            update(DocumentRow)
            .where(DocumentRow.source_key.in_(names))
            .values(language=language, language_confidence=confidence, language_source="detected")
        )


def _question(subject: str, hour: int) -> QuestionIn:
    return QuestionIn(
        id=f"q-{subject}", question=f"When does the {subject} sanctuary open?", document_id=f"{subject}.md",
        references=[ReferenceIn(content=f"The {subject} sanctuary opens at {hour} o'clock", document=f"{subject}.md")],
    )  # fmt: skip


@pytest.mark.model
def test_a_corpus_with_two_foreign_documents_is_processed_with_no_flag_and_its_decision_names_a_configuration(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Done-when corpus: 52 English documents, 2 of them German (confidence 0.95): `process --corpus` with no
    flag keeps MiniLM and warns with the share; a benchmark names a configuration and states the share."""
    folder = tmp_path / "animals"
    german = {subject: GERMAN.format(subject=subject.title(), hour=9) for subject in ("otter", "heron")}
    _documents(folder, german)
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    runner = CliRunner()
    database = Database.from_settings(settings)
    try:
        ingested = runner.invoke(cli_app, ["ingest", str(folder), "--corpus", "animals", "--json"])
        assert ingested.exit_code == 0, ingested.output
        _set_language(database, ["otter.md", "heron.md"], "de", 0.95)
        processed = runner.invoke(cli_app, ["process", "--corpus", "animals", "--strategies", "fixed_size", "--json"])
        assert processed.exit_code == 0, processed.output
        result = json.loads(processed.stdout)
        assert result["corpus_model_id"] == MINILM and not result["notes"]  # no switch to e5, no refusal
        (warning,) = result["warnings"]
        assert (warning["language"], warning["standing"], warning["total_documents"]) == ("de", "minority", 52)
        assert sorted(warning["documents"]) == ["heron.md", "otter.md"]
        assert warning["documents_share"] == pytest.approx(2 / 52) and 0 < warning["text_share"] < 0.1
        assert warning["message"].startswith(
            "'heron.md', 'otter.md' (2 of 52 documents, 4.3 % of the text) are in German (de), which the Corpus "
            "model all-MiniLM-L6-v2 does not cover:"
        )
        assert warning["message"].endswith(
            "Together, documents the Corpus model does not cover hold less than the 10.0 % of the text at which "
            "chunkbench switches or refuses a model, so they are processed with all-MiniLM-L6-v2 like the rest."
        )
        table = runner.invoke(cli_app, ["process", "--corpus", "animals", "--strategies", "fixed_size"])
        assert table.exit_code == 0 and "2 of 52 documents" in " ".join(table.output.split())

        # 25 questions, one on a German document: 4.0 % of the questions.
        subjects = ["otter", *SUBJECTS[2:26]]
        hours = {subject: 5 + SUBJECTS.index(subject) % 7 for subject in subjects} | {"otter": 9}
        questions = [_question(subject, hours[subject]) for subject in subjects]
        questions[0] = QuestionIn(
            id="q-otter", question="Wann öffnet das Tierheim der Otter?", document_id="otter.md",
            references=[ReferenceIn(content="Das Tierheim der Otter öffnet um 9 Uhr", document="otter.md")],
        )  # fmt: skip
        request = BenchmarkIn(
            corpus="animals", strategies=["fixed_size"], retrievers=["bm25"], top_k=[1, 5], judge=False,
            answers=False, questions=questions,
        )  # fmt: skip
        # The store the CLI opened in this process (one process per embedded folder).
        store = get_vector_store(settings)
        row = benchmarks.run(database, settings, store, request, tenant_id=DEFAULT_TENANT)
        with database.session() as session:
            experiment = benchmarks.experiment_dict(session, row)
            # Chunk Preview of a German member shows its run's warning: the share and why MiniLM was kept.
            otter = library.resolve(session, "otter.md", tenant_id=DEFAULT_TENANT).id
            preview = operations.chunk_preview(session, settings, store, otter, StrategyName("fixed_size"),
                                          tenant_id=DEFAULT_TENANT)  # fmt: skip
        (shown,) = preview.warnings
        assert shown.standing == "minority" and shown.message.startswith(
            "'otter.md' (1 of 52 documents) is in German (de), which the Corpus model all-MiniLM-L6-v2 does not cover"
        )
    finally:
        database.dispose()
        get_settings.cache_clear()
    (stored,) = experiment["warnings"]
    assert (stored["documents_share"], stored["questions_share"], stored["material"]) == (
        pytest.approx(2 / 52), pytest.approx(1 / 25), False,
    )  # fmt: skip
    decision = experiment["decision"]
    # Both configurations find every answer: the tie is broken by context cost, as it would be without the warning.
    assert (decision["status"], decision["best"]) == ("tie_broken_by_cost", "fixed_size/bm25/k1")
    assert decision["verdict"].startswith("Use fixed_size/bm25/k1:")
    assert decision["reasons"][-2:] == [
        "2 of 52 documents (3.8 %), 4.0 % of the questions are in German (de), which the Corpus model "
        "all-MiniLM-L6-v2 does not cover: the scores of fixed_size/bm25/k1 and fixed_size/bm25/k5 on those "
        "questions are not meaningful, but they are fewer than the 10.0 % of the questions at which the Decision "
        "names no configuration built on it, so the Decision stands.",
        "Without that question, fixed_size/bm25/k1 is still named on the other 24: its lead does not depend on it.",
    ]
    reasons = " ".join(decision["reasons"])
    assert "the Decision stands" in reasons and "names none of them" not in reasons
    for view in ("managerial", "technical"):
        page = render_report(experiment, view=view)
        assert "4.0 % of the questions" in page and "the Decision stands" in page


def _mostly_german_corpus(settings: Settings, tmp_path: Path, confidence: float) -> Database:
    """Three documents, two of them long German ones holding most of the text, in the corpus ``mixed``."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "library.md").write_text(_english("library", 9), encoding="utf-8")
    for name in ("zoo.md", "park.md"):
        (folder / name).write_text(" ".join([GERMAN.format(subject="Otter", hour=9)] * 20), encoding="utf-8")
    database = Database.from_settings(settings)
    sources = [SourceFile(path, path.name) for path in sorted(folder.iterdir())]
    results = list(ingest.ingest_paths(database, settings, sources, tenant_id=DEFAULT_TENANT, corpus="mixed"))
    assert all(result.error is None for result in results)
    _set_language(database, ["zoo.md", "park.md"], "de", confidence)
    return database


def test_a_corpus_mostly_in_a_language_the_default_cannot_read_switches_model_or_refuses_minilm(
    settings: Settings, tmp_path: Path
) -> None:
    database = _mostly_german_corpus(settings, tmp_path, confidence=0.95)
    try:
        with database.session() as session:
            default = corpus_job.plan(session, settings, "mixed", ProcessIn(strategies=["fixed_size"]),
                                      tenant_id=DEFAULT_TENANT)  # fmt: skip
            assert default.request.corpus.id == MULTILINGUAL_MODEL_ID and not default.request.warnings
            (note,) = default.request.notes
            assert note.startswith("'park.md', 'zoo.md' (2 of 3 documents, 97.8 % of the text) ")
            assert note.endswith(
                "are in German (de), which the default Corpus model all-MiniLM-L6-v2 does not cover: "
                "multilingual-e5-small is used instead. Pass --corpus-model, or set the role in Admin, to choose "
                "another."
            )
            forced = ProcessIn(strategies=["fixed_size"], corpus_model_id=MINILM)
            with pytest.raises(LanguageNotCoveredError) as refused:
                corpus_job.plan(session, settings, "mixed", forced, tenant_id=DEFAULT_TENANT)
            message = refused.value.message
            assert message.startswith("'park.md', 'zoo.md' (2 of 3 documents, 97.8 % of the text) are in German (de)")
            assert message.endswith(
                "which the Corpus model all-MiniLM-L6-v2 does not cover (it reads English). Use one that does: "
                '--corpus-model multilingual-e5-small (API: "corpus_model_id": "multilingual-e5-small"), or accept '
                'the mismatch with --allow-language-mismatch (API: "allow_language_mismatch": true); the run then '
                "records this warning."
            )
            accepted = corpus_job.plan(
                session, settings, "mixed", forced.model_copy(update={"allow_language_mismatch": True}),
                tenant_id=DEFAULT_TENANT,
            )  # fmt: skip
            assert [w.standing for w in accepted.request.warnings] == ["accepted"]
    finally:
        database.dispose()


def test_unsure_or_undetermined_languages_never_switch_or_refuse_a_model(settings: Settings, tmp_path: Path) -> None:
    database = _mostly_german_corpus(settings, tmp_path, confidence=0.4)
    try:
        forced = ProcessIn(strategies=["fixed_size"], corpus_model_id=MINILM)
        with database.session() as session:
            kept = corpus_job.plan(session, settings, "mixed", forced, tenant_id=DEFAULT_TENANT)
            assert kept.request.corpus.id == MINILM
            (warning,) = kept.request.warnings
            assert warning.standing == "unsure" and warning.message.endswith(
                "The language was detected with a confidence below 0.80, too unsure to switch or refuse a model, so "
                "all-MiniLM-L6-v2 is kept; set the document's language if the guess is right."
            )
        _set_language(database, ["zoo.md", "park.md"], "und", 1.0)
        with database.session() as session:
            default = corpus_job.plan(session, settings, "mixed", ProcessIn(strategies=["fixed_size"]),
                                      tenant_id=DEFAULT_TENANT)  # fmt: skip
            assert default.request.corpus.id == MINILM and not default.request.warnings and not default.request.notes
        _set_language(database, ["zoo.md", "park.md"], "zxx", 0.1)  # "no linguistic content": no language either
        with database.session() as session:
            assert not corpus_job.plan(session, settings, "mixed", forced, tenant_id=DEFAULT_TENANT).request.warnings
    finally:
        database.dispose()


def test_the_decision_board_shows_the_share_and_that_the_decision_stands(page, live_app) -> None:
    """The handbook benchmarked after its language was found to be German with too little confidence: the Decision
    stands, and the Decision Board's warning says the share of the questions and so."""
    from test_benchmarks import QUESTIONS, processed_handbook

    base, app = live_app
    with httpx.Client(base_url=base, timeout=300) as http:
        document_id = processed_handbook(http)
        with app.state.database.session() as session:
            session.execute(
                update(DocumentRow).where(DocumentRow.id == document_id)
                .values(language="de", language_confidence=0.4, language_source="detected")
            )  # fmt: skip
        ran = http.post("/benchmarks", params={"wait": "true"},
                        json={"document_id": document_id, "questions": QUESTIONS, "name": "unsure"})  # fmt: skip
        assert ran.status_code == 200, ran.text
    stored = ran.json()
    (warning,) = stored["warnings"]
    assert (warning["material"], warning["standing"], warning["questions_share"]) == (False, "unsure", 1.0)
    assert "too unsure to void it, so the Decision stands" in " ".join(stored["decision"]["reasons"])
    page.goto("/app#decision")
    card = page.get_by_test_id("verdict")
    card.wait_for()
    assert card.get_by_test_id("decision-verdict").inner_text() == stored["decision"]["verdict"]
    notice = card.get_by_test_id("language-warning").inner_text()
    assert "Its documents hold 100.0 % of the questions." in notice
    assert "The Decision stands (its reasons say why); built on it:" in notice and "No winner" not in notice
