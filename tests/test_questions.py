"""Question sets: the three file formats, their problems, and placing evidence in document text."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from chunkbench.errors import QuestionSetError
from chunkbench.evaluation.datasets import (
    DEFAULT_CHROMA_DIR,
    BenchmarkQuestion,
    QuestionReference,
    QuestionSet,
    TextLocator,
    load_chroma_questions,
    load_corpora,
    load_question_set,
    parse_question_set,
    reference_spans,
    resolve_evidence,
)
from chunkbench.evaluation.locate import MatchMethod

HANDBOOK = (
    "# Staff Handbook\n\n## Leave\n\nEvery employee receives 25 days of paid annual leave per calendar year.\n"
    "Unused leave can be carried over\nuntil the end of March.\n\n## Equipment\n\n"
    "Laptops are replaced every four years. Broken equipment is reported through the service desk.\n"
)
LEAVE = "Every employee receives 25 days of paid annual leave per calendar year."
LEAVE_START = HANDBOOK.index(LEAVE)


# --------------------------------------------------------------------------- loaders


def test_question_json_as_object_with_offsets_snippets_and_defaults() -> None:
    data = {
        "questions": [
            {
                "id": "q1", "question": " How many days of leave? ", "expected_answer": "25 days",
                "category": "hr", "difficulty": "easy", "document_id": "handbook.md",
                "references": [{"content": LEAVE, "start_index": LEAVE_START, "end_index": LEAVE_START + len(LEAVE)}],
            },
            {"question": "When does carried-over leave expire?", "references": ["until the end of March"]},
            {"id": 7, "question": "No evidence here?", "references": [{"document": "other.md", "content": "x y"}]},
        ]
    }  # fmt: skip
    question_set = parse_question_set(json.dumps(data).encode(), "set.json")
    assert question_set.format == "json" and len(question_set) == 3 and question_set.reference_count == 3
    first, second, third = question_set.questions
    assert first == BenchmarkQuestion(
        "q1", "How many days of leave?", "25 days", "hr", "easy", "handbook.md",
        (QuestionReference(LEAVE, LEAVE_START, LEAVE_START + len(LEAVE)),),
    )  # fmt: skip
    assert second.id == "q2" and second.expected_answer is None
    assert second.references == (QuestionReference("until the end of March"),)
    assert third.id == "7" and third.references[0].document == "other.md" and not third.references[0].has_offsets
    assert question_set.document_names() == ["handbook.md", "other.md"]


def test_question_json_as_a_plain_list_round_trips_through_to_json() -> None:
    original = parse_question_set(b'[{"id": "a", "question": "Why?", "references": ["because"]}]', "x.json")
    again = parse_question_set(original.to_json(), "x.json")
    assert again.questions == original.questions


def test_jsonl_maps_answer_and_reports_each_bad_line() -> None:
    good = json.dumps({
        "id": "j1", "question": "Leave?", "document_id": "d1", "answer": "25",
        "references": [{"document_id": "d1", "content": "25 days", "start_index": 3, "end_index": 10}],
    })  # fmt: skip
    question_set = parse_question_set((good + "\n\n").encode(), "set.jsonl")
    assert question_set.format == "jsonl"
    assert question_set.questions[0].expected_answer == "25"
    assert question_set.questions[0].references[0] == QuestionReference("25 days", 3, 10, "d1")

    bad = "\n".join([
        good,
        "{not json",
        json.dumps({"id": "j3", "references": []}),
        json.dumps({"id": "j4", "question": "Q?", "references": [{"content": "c", "start_index": 5}]}),
        json.dumps({"id": "j5", "question": "Q?", "references": [{"content": "c", "start_index": 9, "end_index": 2}]}),
    ])  # fmt: skip
    with pytest.raises(QuestionSetError) as caught:
        parse_question_set(bad, "bad.jsonl")
    problems = caught.value.details["problems"]
    assert [(p["line"], p.get("field")) for p in problems] == [
        (2, None), (3, "question"), (4, "end_index"), (5, "end_index"),
    ]  # fmt: skip
    assert caught.value.status_code == 422
    assert (
        caught.value.message.startswith("bad.jsonl: line 2: not JSON")
        and "(and 3 more problems)" in caught.value.message
    )


def test_several_objects_in_a_json_file_are_read_as_json_lines() -> None:
    text = '{"question": "One?"}\n{"question": "Two?"}\n'
    question_set = parse_question_set(text, "lines.json")
    assert question_set.format == "jsonl" and [q.id for q in question_set] == ["q1", "q2"]


def test_chroma_csv_matches_the_existing_loader(tmp_path: Path) -> None:
    file = DEFAULT_CHROMA_DIR / "questions_df.csv"
    ours = load_question_set(file)
    assert load_chroma_questions() == ours.questions  # the Chroma loader is the question-set reader
    # Against the file read independently (csv + json, as Chroma's own code does): ids are row numbers.
    with file.open(encoding="utf-8", newline="") as handle:
        theirs = list(csv.DictReader(handle))
    assert ours.format == "chroma_csv" and len(ours) == len(theirs) == 472
    for number, (mine, row) in enumerate(zip(ours, theirs, strict=True)):
        assert mine.id == str(number) and mine.question == row["question"] and mine.document_id == row["corpus_id"]
        references = [(r["content"], r["start_index"], r["end_index"]) for r in json.loads(row["references"])]
        assert [(r.content, r.start_index, r.end_index) for r in reference_spans(mine)] == references


def test_csv_problems_name_the_row_line_and_field() -> None:
    text = (
        "question,references,corpus_id\n"
        'Fine?,"[{""content"": ""a"", ""start_index"": 0, ""end_index"": 1}]",c1\n'
        '"Multi\nline?",[broken,c1\n'
        ",[],c1\n"
    )
    with pytest.raises(QuestionSetError) as caught:
        parse_question_set(text.encode(), "q.csv")
    problems = caught.value.details["problems"]
    assert [(p["row"], p["field"]) for p in problems] == [(1, "references"), (2, "question")]
    assert problems[0]["where"] == "row 1 (line 4)"  # the quoted newline makes row 1 end on line 4


@pytest.mark.parametrize(
    ("content", "name", "fragment"),
    [
        (b"", "e.json", "the file is empty"),
        (b"\xff\xfe\x00bad", "u.json", "not UTF-8"),
        (b'{"questions": [', "t.json", "not valid JSON"),
        (b'{"items": []}', "o.json", "'questions' list"),
        (b'{"questions": []}', "n.json", "holds no questions"),
        (b'[{"id": "a", "question": "x"}, {"id": "a", "question": "y"}]', "d.json", "used twice"),
        (b'[{"id": "' + b"q" * 201 + b'", "question": "x"}]', "l.json", "the id has 201 characters; at most 200"),
        (b'[{"question": "x", "references": [42]}]', "r.json", "must be a string or an object"),
        (b"id,text\n1,hello\n", "c.csv", "needs a 'question' column"),
    ],
)
def test_malformed_files_are_typed_errors(content: bytes, name: str, fragment: str) -> None:
    with pytest.raises(QuestionSetError) as caught:
        parse_question_set(content, name)
    assert fragment in caught.value.message and caught.value.message.startswith(name)


def test_unreadable_path_is_a_question_set_error(tmp_path: Path) -> None:
    with pytest.raises(QuestionSetError, match="cannot be read"):
        load_question_set(tmp_path / "missing.json")


# --------------------------------------------------------------------------- locator


def test_exact_match_counts_occurrences() -> None:
    placement = TextLocator("alpha beta alpha beta").locate("alpha beta")
    assert (placement.start_index, placement.end_index, placement.method, placement.occurrences) == (
        0, 10, MatchMethod.EXACT, 2,
    )  # fmt: skip


def test_whitespace_insensitive_match_maps_back_to_source_offsets() -> None:
    locator = TextLocator(HANDBOOK)
    placement = locator.locate("  Unused leave can be carried over until   the end\tof March. ")
    expected = "Unused leave can be carried over\nuntil the end of March."
    assert placement.method is MatchMethod.WHITESPACE and placement.score == 1.0
    assert HANDBOOK[placement.start_index : placement.end_index] == expected
    assert placement.start_index == HANDBOOK.index(expected)


def test_fuzzy_match_above_threshold_selects_the_source_sentence() -> None:
    placement = TextLocator(HANDBOOK).locate("every employee recieves 25 days of paid anual leave per calendar year")
    assert placement.method is MatchMethod.FUZZY and 0.9 <= placement.score < 1
    assert HANDBOOK[placement.start_index : placement.end_index] == LEAVE.rstrip(".")


def test_unplaceable_snippet_reports_the_closest_whole_words_and_score() -> None:
    locator = TextLocator(HANDBOOK)
    paraphrase = "Laptops get swapped out once every four years"
    placement = locator.locate(paraphrase)
    assert not placement.placed and placement.method is None and 0.5 < placement.score < 0.9
    closest = HANDBOOK[placement.start_index : placement.end_index]
    assert "every four years" in closest and closest.startswith("Laptops")
    # The same snippet passes when the threshold is lowered below its score.
    assert locator.locate(paraphrase, threshold=placement.score).method is MatchMethod.FUZZY


def test_resolve_evidence_checks_offsets_and_picks_the_document() -> None:
    question_set = QuestionSet([
        BenchmarkQuestion("ok", "Q?", document_id="handbook.md", references=(
            QuestionReference(LEAVE, LEAVE_START, LEAVE_START + len(LEAVE)),
            QuestionReference("Broken equipment is reported"),
        )),
        BenchmarkQuestion("shifted", "Q?", references=(QuestionReference(LEAVE, LEAVE_START + 1, LEAVE_START + 73),)),
        BenchmarkQuestion("elsewhere", "Q?", references=(QuestionReference("Mars is red", document="space.md"),)),
        BenchmarkQuestion("lost", "Q?", references=(QuestionReference("The canteen opens at noon"),)),
        BenchmarkQuestion("nowhere", "Q?", references=(QuestionReference("x", document="missing.md"),)),
    ])  # fmt: skip
    documents = {"handbook.md": HANDBOOK, "space.md": "# Space\n\nMars is red. Venus is hot.\n"}
    report = resolve_evidence(question_set, documents)
    by_question = {(r.question_id, r.reference_index): r for r in report.results}

    assert by_question[("ok", 0)].method is MatchMethod.OFFSETS and by_question[("ok", 0)].ok
    broken = by_question[("ok", 1)]
    assert broken.method is MatchMethod.EXACT and broken.document == "handbook.md"
    assert broken.start_index == HANDBOOK.index("Broken equipment")

    shifted = by_question[("shifted", 0)]
    # One reference without a document searches every document; the offsets fit only the handbook.
    assert shifted.status == "mismatch" and not shifted.ok
    assert (shifted.start_index, shifted.method) == (LEAVE_START, MatchMethod.EXACT)
    assert f"the content is at {LEAVE_START}–{LEAVE_START + len(LEAVE)}" in shifted.message

    assert by_question[("elsewhere", 0)].document == "space.md" and by_question[("elsewhere", 0)].start_index == 9
    lost = by_question[("lost", 0)]
    assert lost.status == "unplaced" and lost.closest_text and lost.score < 0.9
    assert by_question[("nowhere", 0)].status == "unknown_document"

    assert report.counts() == {
        "questions": 5, "references": 6, "problems": 3, "offsets": 1, "exact": 2,
        "mismatch": 1, "unplaced": 1, "unknown_document": 1,
    }  # fmt: skip
    resolved = report.resolved()
    assert resolved.get("ok").references[1] == QuestionReference(
        "Broken equipment is reported", broken.start_index, broken.start_index + 28, "handbook.md"
    )
    assert resolved.get("lost").references == ()


def test_a_single_document_is_used_whatever_the_file_stem() -> None:
    question_set = QuestionSet([BenchmarkQuestion("q", "Q?", document_id="handbook", references=(
        QuestionReference("replaced every four years"),
    ))])  # fmt: skip
    report = resolve_evidence(question_set, {"handbook.md": HANDBOOK})
    assert report.ok and report.results[0].document == "handbook.md"


def test_every_chroma_snippet_is_found_where_its_offsets_say() -> None:
    question_set = load_question_set(DEFAULT_CHROMA_DIR / "questions_df.csv")
    snippets = QuestionSet([
        BenchmarkQuestion(q.id, q.question, document_id=q.document_id,
                          references=tuple(QuestionReference(r.content) for r in q.references))
        for q in question_set
    ])  # fmt: skip
    corpora = load_corpora()
    by_offsets = resolve_evidence(question_set, corpora)
    by_search = resolve_evidence(snippets, corpora)
    assert by_offsets.counts()["offsets"] == 790 and by_search.counts()["exact"] == 790
    assert [(r.start_index, r.end_index) for r in by_search.results] == [
        (r.start_index, r.end_index) for r in by_offsets.results
    ]


def test_threshold_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        resolve_evidence(QuestionSet([BenchmarkQuestion("q", "Q?")]), {}, threshold=1.5)
