"""Span metrics of Chroma's chunking evaluation (recall, precision, precision_Ω, IoU) on half-open ranges.

The semantics follow ``BaseEvaluation`` of Chroma's ``chunking_evaluation`` (``_full_precision_score`` and
``_scores_from_dataset_and_retrievals``) exactly, quirks included, because that is what produced the
published numbers:

* numerators are the *merged* union of the chunk/reference intersections (a character covered by two
  retrieved chunks counts once);
* the precision denominator is the plain sum of the retrieved chunks' lengths (overlaps counted twice),
  including retrieved chunks of other corpora (their retrieval is not restricted to the question's
  corpus): those count in no numerator, only here (``foreign_lengths``);
* the recall denominator is the plain sum of the reference lengths (duplicate references count twice);
* IoU's denominator is the precision denominator plus the reference characters left uncovered;
* precision_Ω takes every chunk of the chunking that touches a reference (touching at an end point
  counts, as in their ``intersect_two_ranges``) and divides the covered reference characters by the
  merged union of those chunks and the uncovered reference characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The four metrics of Chroma's report, in its order.
SPAN_METRICS = ("recall", "precision", "precision_omega", "iou")
Range = tuple[int, int]


@dataclass(frozen=True)
class SpanMetrics:
    """Per-question scores, each in [0, 1]; ``precision_omega`` is ``None`` when no full chunking was given."""

    recall: float
    precision: float
    precision_omega: float | None
    iou: float


def sum_of_ranges(ranges: Sequence[Range]) -> int:
    """Total length of the ranges, overlaps counted as often as they occur."""
    return sum(end - start for start, end in ranges)


def union_ranges(ranges: Sequence[Range]) -> list[Range]:
    """The ranges merged into disjoint, sorted ranges; touching ranges merge too."""
    merged: list[Range] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def intersect(a: Range, b: Range) -> Range | None:
    """The overlap of two ranges; ranges that only touch give an empty range, disjoint ones ``None``."""
    start, end = max(a[0], b[0]), min(a[1], b[1])
    return (start, end) if start <= end else None


def difference(ranges: Sequence[Range], target: Range) -> list[Range]:
    """The ranges with ``target`` cut out of each."""
    result: list[Range] = []
    t_start, t_end = target
    for start, end in ranges:
        if end < t_start or start > t_end:
            result.append((start, end))
            continue
        if start < t_start:
            result.append((start, t_start))
        if end > t_end:
            result.append((t_end, end))
    return result


def _coverage(chunks: Sequence[Range], references: Sequence[Range]) -> tuple[list[Range], list[Range], list[Range]]:
    """``(covered, touching chunks merged, uncovered)``: merged intersections, merged chunks that touch a
    reference, and the reference parts no chunk covers."""
    covered: list[Range] = []
    touching: list[Range] = []
    uncovered = list(references)
    for chunk in chunks:
        for reference in references:
            overlap = intersect(chunk, reference)
            if overlap is None:
                continue
            uncovered = difference(uncovered, overlap)
            covered.append(overlap)
            touching.append(chunk)
    return union_ranges(covered), union_ranges(touching), uncovered


def precision_omega(all_chunks: Sequence[Range], references: Sequence[Range]) -> float:
    """The best precision any retrieval from this chunking could reach for these references."""
    covered, touching, uncovered = _coverage(all_chunks, references)
    if not covered:
        return 0.0
    return sum_of_ranges(covered) / sum_of_ranges(union_ranges(touching + uncovered))


def span_metrics(
    retrieved: Sequence[Range],
    references: Sequence[Range],
    all_chunks: Sequence[Range] | None = None,
    foreign_lengths: Sequence[int] = (),
) -> SpanMetrics:
    """Scores of one question: ``retrieved`` chunk ranges (of the question's corpus) against its ``references``.

    ``all_chunks`` is the whole chunking of the question's corpus (for precision_Ω); ``foreign_lengths`` are the
    lengths of retrieved chunks from other corpora, which only enlarge the precision and IoU denominators.
    """
    if not references:
        raise ValueError("A question needs at least one reference range.")
    covered, _touching, uncovered = _coverage(retrieved, references)
    numerator = sum_of_ranges(covered)
    retrieved_length = sum_of_ranges(retrieved) + sum(foreign_lengths)
    iou_denominator = retrieved_length + sum_of_ranges(uncovered)
    return SpanMetrics(
        recall=numerator / sum_of_ranges(references),
        precision=numerator / retrieved_length if retrieved_length else 0.0,
        precision_omega=None if all_chunks is None else precision_omega(all_chunks, references),
        iou=numerator / iou_denominator if iou_denominator else 0.0,
    )
