"""Language detection a user can trust: windows over the whole prose, und for code and short texts, declared
languages (HTML lang, DOCX core property), and the language a user sets (API, CLI, corpus), all stored."""

from __future__ import annotations

import json
from pathlib import Path

import py3langid
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import get_settings
from chunkbench.documents import language_detection
from chunkbench.documents.language_detection import LanguageSource, detect_text, document_language, normalise_code
from chunkbench.documents.parsers import parse_document
from chunkbench.embedding.languages import UNDETERMINED
from chunkbench.models import ParseResult
from chunkbench.storage.schema import DocumentRow
from docgen import languages as gen

runner = CliRunner()
FARSI = Path(__file__).parent / "data" / "farsi"


def _parsed(text: str, *, kind: str = "text", declared: str | None = None) -> ParseResult:
    return ParseResult(
        tree=None,  # type: ignore[arg-type]  # the detector reads only the text, kind and declared language
        markdown=text,
        plain_text=text,
        paragraph_count=0,
        kind=kind,
        declared_language=declared,
    )


def _upload(client, name: str, data: bytes) -> dict:
    response = client.post("/documents", files={"file": (name, data)})
    assert response.status_code in (200, 201), response.text
    return response.json()


# --- the detector ----------------------------------------------------------------------------------------------


def test_english_after_an_all_capitals_contents_page_is_english() -> None:
    text = gen.english_after_contents()
    assert py3langid.classify(text[:4000])[0] != "en"  # what reading the first 4,000 characters gave
    code, confidence = detect_text(text)
    assert code == "en" and confidence >= 0.9


def test_a_docx_that_opens_with_an_all_capitals_contents_page_is_english(tmp_path, settings) -> None:
    path = gen.write_contents_docx(tmp_path / "handbook.docx")
    parsed = parse_document(path, settings, filename=path.name)
    assert parsed.markdown.index("TABLE OF CONTENTS") < 200 and parsed.declared_language is None
    guess = document_language(parsed)
    assert (guess.code, guess.source) == ("en", LanguageSource.DETECTED) and guess.confidence >= 0.9


def test_half_code_is_english_or_undetermined_and_mostly_code_is_undetermined() -> None:
    assert detect_text(gen.half_code())[0] in {"en", UNDETERMINED}
    assert detect_text(gen.english_with_code_blocks())[0] == "en"
    assert detect_text(gen.mostly_code())[0] == UNDETERMINED


@pytest.mark.parametrize("text", ["Test page", "Hello", "Page 1 of 3", "TODO", "", "1234 5678", "https://example.org"])
def test_a_text_too_short_to_tell_is_undetermined(text: str) -> None:
    assert detect_text(text)[0] == UNDETERMINED


def test_csv_like_english_and_a_short_chat_export_are_english() -> None:
    assert detect_text(gen.csv_like_english())[0] == "en"
    for variant in range(3):
        assert detect_text(gen.chat_export(variant))[0] == "en"


def test_a_german_and_english_page_in_windows_1252_is_german_or_english(client) -> None:
    page = (gen.prose("de", 6) + "\n\n" + gen.prose("en", 6)).encode("cp1252")
    document = _upload(client, "seite.txt", page)["document"]
    assert document["language"] in {"de", "en"} and document["language_source"] == "detected"


@pytest.mark.parametrize("code", ["de", "fr", "es", "fa"])
def test_german_french_spanish_and_farsi_are_detected_with_confidence(code: str) -> None:
    detected, confidence = detect_text(gen.prose(code, 9))
    assert detected == code and confidence >= 0.9


def test_the_farsi_corpus_is_farsi() -> None:
    for path in sorted(FARSI.glob("*.md")):
        assert detect_text(path.read_text(encoding="utf-8"))[0] == "fa", path.name


def test_the_windows_cover_the_beginning_the_middle_and_the_end() -> None:
    prose = " ".join(f"word{i:05d}" for i in range(3000))  # 30,000 characters
    windows = language_detection.sample_windows(prose)
    assert len(windows) == language_detection.MAX_WINDOWS
    assert windows[0].startswith("word00000") and "word02999" in windows[-1]
    assert any("word01500" in window for window in windows)


def test_a_document_whose_language_is_only_at_its_end_is_found() -> None:
    """Reading the first characters would see only the code; the prose at the end decides (if code is not most)."""
    text = "\n".join(["x = compute(a, b)"] * 20) + "\n\n" + gen.prose("de", 30)
    assert detect_text(text)[0] == "de"


def test_a_long_document_is_read_in_slices_from_start_to_end() -> None:
    """An 872-page handbook is not stripped whole: slices spread over it, its last pages included, are read."""
    contents = gen.all_caps_contents(200)
    text = "\n".join([contents] * 220 + [gen.prose("de", 60)] * 30)  # 2.8 MB, its German prose in the last 7%
    assert len(text) > 10 * language_detection.MAX_READ_CHARS
    read = language_detection._slices(text)
    assert len(read) <= language_detection.MAX_READ_CHARS + language_detection.READ_SLICES and gen.GERMAN[0] in read
    assert read.startswith("U.S. Department of Justice") and read.rstrip().endswith(text.rstrip()[-40:])
    assert detect_text(text)[0] == "de"


def test_what_is_not_prose_is_stripped() -> None:
    prose = language_detection.extract_prose(
        "# Heading\n\nSee https://example.org/x and mail ops@example.org.\n\n"
        "| QTY | PRICE |\n|---|---|\n| 3 | 4.50 |\n\n```\nprint(1)\n```\n"
        "The key Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA== was rotated."
    )
    assert prose.text.split() == ["Heading", "See", "and", "mail", "The", "key", "was", "rotated."]
    assert 0 < prose.code_share < 0.5


def test_an_unsure_guess_is_undetermined_and_the_note_names_it() -> None:
    # A real mail of Python's test suite (test_email/data/msg_05.txt): py3langid reads its few words as Hausa.
    text = "bar\n\nFrom: foo\nTo: baz\n\nYadda yadda yadda"
    best, confidence = detect_text(text)
    assert best not in ("en", UNDETERMINED) and confidence < 0.8  # what the bare detection would have stored
    guess = document_language(_parsed(text))
    assert (guess.code, guess.confidence, guess.source) == (UNDETERMINED, confidence, LanguageSource.DETECTED)
    assert "reads most like" in guess.note and f"({best})" in guess.note and "below 0.8" in guess.note
    # the threshold is the language rules' (CHUNKBENCH_LANGUAGE_MIN_CONFIDENCE): a laxer one keeps the guess
    assert document_language(_parsed(text), min_confidence=confidence / 2).code == best


def test_a_code_document_is_undetermined_whatever_its_text() -> None:
    guess = document_language(_parsed(gen.prose("de", 9), kind="code"))
    assert (guess.code, guess.source) == (UNDETERMINED, LanguageSource.DETECTED)


@pytest.mark.parametrize(
    ("tag", "code"),
    [("en-US", "en"), ("fa-IR", "fa"), ("fa_IR", "fa"), ("DE", "de"), ("eng", "en"), ("nb-NO", "no"), ("und", "und"),
     ("xx", None), ("", None), (None, None), ("english", None)],
)  # fmt: skip
def test_bcp47_tags_are_normalised_to_iso_639_1(tag, code) -> None:
    assert normalise_code(tag) == code


def test_a_declared_language_is_kept_when_detection_agrees_or_is_unsure() -> None:
    agrees = document_language(_parsed(gen.prose("de", 9), declared="de-DE"))
    unsure = document_language(_parsed("Test page", declared="fa-IR"))
    assert (agrees.code, agrees.confidence, agrees.source, agrees.note) == ("de", 1.0, LanguageSource.DECLARED, None)
    assert (unsure.code, unsure.source) == ("fa", LanguageSource.DECLARED)


def test_a_confident_contradiction_keeps_the_detection_and_says_so() -> None:
    guess = document_language(_parsed(gen.prose("de", 9), declared="en-US"))
    assert (guess.code, guess.source) == ("de", LanguageSource.DETECTED) and guess.confidence >= 0.9
    assert guess.note is not None and "'en-US'" in guess.note and "German (de)" in guess.note


# --- declared by the file: HTML and DOCX --------------------------------------------------------------------------


def test_the_html_lang_attribute_is_the_declared_language(client) -> None:
    page = f'<html lang="de-DE"><body><p>{gen.prose("de", 6)}</p></body></html>'.encode()
    document = _upload(client, "bericht.html", page)["document"]
    assert (document["language"], document["language_source"], document["language_confidence"]) == (
        "de", "declared", 1.0,
    )  # fmt: skip


def test_a_short_html_page_takes_its_declared_language_and_without_one_is_undetermined(client) -> None:
    declared = _upload(client, "a.html", b'<html lang="fr"><body><p>Test page</p></body></html>')["document"]
    bare = _upload(client, "b.html", b"<html><body><p>Test page</p></body></html>")["document"]
    assert (declared["language"], declared["language_source"]) == ("fr", "declared")
    assert (bare["language"], bare["language_source"]) == ("und", "detected")


def test_a_docx_declaring_en_us_over_german_text_is_german_with_a_warning(client, tmp_path) -> None:
    path = gen.write_prose_docx(tmp_path / "bericht.docx", "de", declared="en-US")
    body = _upload(client, path.name, path.read_bytes())
    assert (body["document"]["language"], body["document"]["language_source"]) == ("de", "detected")
    assert any("declares its language as 'en-US'" in warning for warning in body["warnings"])


def test_a_docx_declaring_its_language_is_declared(client, tmp_path, settings) -> None:
    path = gen.write_contents_docx(tmp_path / "handbook.docx", language="en-US")
    assert parse_document(path, settings, filename=path.name).declared_language == "en-US"
    document = _upload(client, path.name, path.read_bytes())["document"]
    assert (document["language"], document["language_source"], document["language_confidence"]) == (
        "en", "declared", 1.0,
    )  # fmt: skip


def test_the_stored_columns_hold_the_detection(client) -> None:
    document = _upload(client, "notes.md", gen.prose("fr", 9).encode())["document"]
    with client.app.state.database.session() as session:
        row = session.scalar(select(DocumentRow).where(DocumentRow.id == document["id"]))
        assert (row.language, row.language_source) == ("fr", "detected") and 0.9 <= row.language_confidence <= 1


# --- set by the user ------------------------------------------------------------------------------------------------


def test_a_user_sets_a_documents_language_through_the_api(client) -> None:
    document = _upload(client, "notes.md", gen.prose("en", 9).encode())["document"]
    response = client.patch(f"/documents/{document['id']}", json={"language": "de-AT"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["language"], body["warnings"], body["corpus"]) == ("de", [], None)
    shown = client.get(f"/documents/{document['id']}").json()
    assert (shown["language"], shown["language_source"], shown["language_confidence"]) == ("de", "user", 1.0)


def test_an_unknown_code_is_a_400_naming_valid_ones_and_changes_nothing(client) -> None:
    document = _upload(client, "notes.md", gen.prose("en", 9).encode())["document"]
    response = client.patch(f"/documents/{document['id']}", json={"language": "klingon"})
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_request" and "ISO 639-1" in body["message"] and "'und'" in body["message"]
    assert {"de", "en", "fa", "und"} <= set(body["details"]["valid"])
    assert client.get(f"/documents/{document['id']}").json()["language_source"] == "detected"
    assert client.patch("/documents/nope", json={"language": "de"}).status_code == 404


@pytest.mark.model
def test_setting_a_language_the_processing_model_does_not_cover_warns(client) -> None:
    document = _upload(client, "notes.md", gen.prose("en", 9).encode())["document"]
    processed = client.post(
        f"/documents/{document['id']}/process", params={"wait": "true"}, json={"strategies": ["fixed_size"]}
    )
    assert processed.status_code == 200, processed.text
    body = client.patch(f"/documents/{document['id']}", json={"language": "fa"}).json()
    assert len(body["warnings"]) == 1
    assert "'notes.md' is in Persian (fa)" in body["warnings"][0] and "all-MiniLM-L6-v2" in body["warnings"][0]
    assert client.patch(f"/documents/{document['id']}", json={"language": "en"}).json()["warnings"] == []


def test_a_user_sets_a_corpus_language_on_every_member(client) -> None:
    first = _upload(client, "a.md", gen.prose("en", 9).encode())["document"]["id"]
    second = _upload(client, "b.md", gen.prose("de", 9).encode())["document"]["id"]
    other = _upload(client, "c.md", gen.prose("es", 9).encode())["document"]["id"]
    assert client.post("/corpora", json={"name": "mixed", "document_ids": [first, second]}).status_code == 201
    response = client.put("/corpora/mixed/language", json={"language": "fr"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["corpus"] == "mixed" and sorted(d["id"] for d in body["documents"]) == sorted([first, second])
    for document_id, expected in ((first, ("fr", "user")), (second, ("fr", "user")), (other, ("es", "detected"))):
        shown = client.get(f"/documents/{document_id}").json()
        assert (shown["language"], shown["language_source"]) == expected
    assert client.put("/corpora/mixed/language", json={"language": "zz"}).status_code == 400
    assert client.put("/corpora/none/language", json={"language": "fr"}).status_code == 404


def test_a_reingest_of_unchanged_bytes_keeps_the_users_language_and_a_changed_file_is_detected_again(client) -> None:
    data = gen.prose("en", 9).encode()
    document = _upload(client, "notes.md", data)["document"]
    client.patch(f"/documents/{document['id']}", json={"language": "de"})
    again = _upload(client, "notes.md", data)
    assert again["outcome"] == "unchanged"
    assert (again["document"]["language"], again["document"]["language_source"]) == ("de", "user")
    changed = _upload(client, "notes.md", data + b"\n\nOne more English sentence about the meeting.")
    assert changed["outcome"] == "replaced"
    assert (changed["document"]["language"], changed["document"]["language_source"]) == ("en", "detected")


def test_the_cli_sets_a_documents_and_a_corpus_language(settings, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    try:
        (tmp_path / "docs").mkdir()
        (tmp_path / "docs" / "a.md").write_text(gen.prose("en", 9), encoding="utf-8")
        (tmp_path / "docs" / "b.md").write_text(gen.prose("en", 9, 2), encoding="utf-8")
        ingested = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--corpus", "notes"])
        assert ingested.exit_code == 0, ingested.output
        one = runner.invoke(app, ["documents", "set-language", "a.md", "fa-IR", "--json"])
        assert one.exit_code == 0, one.output
        documents = json.loads(one.stdout)["documents"]
        assert [(d["source_key"], d["language"], d["language_source"]) for d in documents] == [("a.md", "fa", "user")]
        every = runner.invoke(app, ["corpora", "set-language", "notes", "de"])
        assert every.exit_code == 0 and "language de set on 2 documents (every member of notes)" in every.output
        shown = json.loads(runner.invoke(app, ["documents", "show", "b.md", "--json"]).stdout)
        assert (shown["language"], shown["language_source"], shown["language_confidence"]) == ("de", "user", 1.0)
        wrong = runner.invoke(app, ["documents", "set-language", "a.md", "german"])
        assert wrong.exit_code == 1 and "not a language code" in " ".join(wrong.output.split())
    finally:
        get_settings.cache_clear()


def test_the_cli_ingest_says_when_the_text_contradicts_the_declared_language(settings, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    try:
        path = gen.write_prose_docx(tmp_path / "bericht.docx", "de", declared="en-US")
        ingested = runner.invoke(app, ["ingest", str(path)])
        said = " ".join(ingested.output.split())
        assert ingested.exit_code == 0 and "warning: bericht.docx: The file declares its language as 'en-US'" in said
    finally:
        get_settings.cache_clear()
