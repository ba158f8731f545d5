"""Span metrics (Chroma's definitions, computed by hand) and the Chroma question data's references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkbench.evaluation.datasets import (
    DatasetError,
    find_mismatches,
    load_chroma_questions,
    load_corpora,
    validate_references,
)
from chunkbench.evaluation.spans import (
    difference,
    intersect,
    precision_omega,
    span_metrics,
    sum_of_ranges,
    union_ranges,
)


def test_union_merges_overlapping_and_touching_ranges() -> None:
    assert union_ranges([(5, 10), (0, 3), (3, 4), (8, 12)]) == [(0, 4), (5, 12)]
    assert union_ranges([]) == []
    assert sum_of_ranges([(0, 10), (5, 15)]) == 20  # overlaps count twice


def test_intersect_and_difference() -> None:
    assert intersect((0, 10), (3, 4)) == (3, 4)
    assert intersect((0, 5), (5, 10)) == (5, 5)  # touching: an empty intersection, not None
    assert intersect((0, 5), (6, 10)) is None
    assert difference([(0, 10)], (3, 4)) == [(0, 3), (4, 10)]
    assert difference([(0, 10), (20, 30)], (5, 25)) == [(0, 5), (25, 30)]
    assert difference([(3, 4)], (0, 10)) == []


def test_overlapping_retrieved_chunks() -> None:
    # Covered reference characters are merged (8..12 counted once); chunk lengths are not (10 + 10).
    m = span_metrics([(0, 10), (5, 15)], [(8, 12)])
    assert m.recall == 1.0
    assert m.precision == pytest.approx(4 / 20)
    assert m.iou == pytest.approx(4 / 20)
    assert m.precision_omega is None


def test_reference_spanning_two_chunks() -> None:
    chunks = [(0, 10), (10, 20), (20, 30)]
    m = span_metrics([(0, 10)], [(5, 15)], chunks)
    assert m.recall == pytest.approx(5 / 10)
    assert m.precision == pytest.approx(5 / 10)
    assert m.iou == pytest.approx(5 / (10 + 5))  # retrieved length + uncovered reference (10..15)
    # Best case: both chunks the reference crosses, 10 reference characters out of 20.
    assert m.precision_omega == pytest.approx(10 / 20)
    both = span_metrics([(10, 20), (0, 10)], [(5, 15)], chunks)
    assert (both.recall, both.precision, both.iou) == (1.0, pytest.approx(0.5), pytest.approx(0.5))


def test_precision_omega_counts_chunks_that_only_touch_a_reference() -> None:
    # Chroma's intersect keeps empty (touching) intersections, so (0,10) and (20,30) join the denominator.
    assert precision_omega([(0, 10), (10, 20), (20, 30)], [(10, 20)]) == pytest.approx(10 / 30)


def test_no_overlap_scores_zero() -> None:
    m = span_metrics([(0, 5)], [(10, 20)], [(0, 5)])
    assert (m.recall, m.precision, m.iou, m.precision_omega) == (0.0, 0.0, 0.0, 0.0)
    assert span_metrics([], [(10, 20)]).iou == 0.0


def test_duplicate_ranges() -> None:
    retrieved_twice = span_metrics([(0, 10), (0, 10)], [(2, 6)])
    assert retrieved_twice.recall == 1.0
    assert retrieved_twice.precision == pytest.approx(4 / 20)
    assert retrieved_twice.iou == pytest.approx(4 / 20)
    # Chroma's recall denominator sums reference lengths without merging: a duplicated reference halves
    # recall. (No question of questions_df.csv has overlapping references, so this never matters there.)
    assert span_metrics([(0, 10)], [(2, 6), (2, 6)]).recall == pytest.approx(4 / 8)


def test_several_references_and_foreign_chunks() -> None:
    m = span_metrics([(2, 12)], [(0, 4), (10, 14)])
    assert m.recall == pytest.approx(4 / 8)
    assert m.precision == pytest.approx(4 / 10)
    assert m.iou == pytest.approx(4 / (10 + 4))
    # A retrieved chunk of another corpus only adds its length to the denominators.
    foreign = span_metrics([(0, 10)], [(0, 10)], foreign_lengths=[10])
    assert (foreign.recall, foreign.precision, foreign.iou) == (1.0, 0.5, 0.5)


def test_no_references_is_an_error() -> None:
    with pytest.raises(ValueError):
        span_metrics([(0, 1)], [])


def test_mismatching_reference_is_reported(tmp_path: Path) -> None:
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "tiny.md").write_text("héllo world", encoding="utf-8")
    refs = [
        {"content": "héllo", "start_index": 0, "end_index": 5},
        {"content": "word", "start_index": 6, "end_index": 11},
    ]
    (tmp_path / "questions_df.csv").write_text(
        "question,references,corpus_id\n" + f'"Hi?","{json.dumps(refs).replace(chr(34), chr(34) * 2)}",tiny\n',
        encoding="utf-8",
    )
    questions = load_chroma_questions(tmp_path)
    assert [r.span for r in questions[0].references] == [(0, 5), (6, 11)]
    mismatches = find_mismatches(questions, load_corpora(tmp_path))
    assert [(m.reference_index, m.found) for m in mismatches] == [(1, "world")]
    with pytest.raises(DatasetError, match="1 reference"):
        validate_references(questions, load_corpora(tmp_path))


def test_all_chroma_references_match_their_corpora() -> None:
    questions = load_chroma_questions()
    assert len(questions) == 472
    assert sum(len(q.references) for q in questions) == 790
    assert find_mismatches(questions, load_corpora()) == []
