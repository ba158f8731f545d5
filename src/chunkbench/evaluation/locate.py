"""Placing evidence in document text: offsets checked, snippets found exact → whitespace-insensitive → fuzzy.

A benchmark needs every gold excerpt as exact character offsets into the document's markdown (where chunk
offsets live). Question authors copy snippets from the original file, whose whitespace and small details
differ from the markdown, so a snippet is located in three steps, each mapped back to source offsets.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from rapidfuzz import fuzz

from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionReference, QuestionSet

DEFAULT_MATCH_THRESHOLD = 0.9
_WORDS = re.compile(r"\S+")
# How far a fuzzy match's ends may move to fit the snippet better (characters, at most).
_MAX_REFINE = 40


class MatchMethod(StrEnum):
    OFFSETS = "offsets"  # the reference's own offsets select its content
    EXACT = "exact"
    WHITESPACE = "whitespace"  # equal once whitespace runs are collapsed
    FUZZY = "fuzzy"  # similar above the threshold


@dataclass(frozen=True)
class Placement:
    """Where a snippet sits in a text: ``method`` None means not placed, and the span is the closest text found."""

    start_index: int
    end_index: int
    method: MatchMethod | None
    score: float
    occurrences: int = 1

    @property
    def placed(self) -> bool:
        return self.method is not None


class TextLocator:
    """Finds snippets in one text; the whitespace-collapsed view is built once and reused for every snippet."""

    def __init__(self, text: str) -> None:
        self.text = text
        words = [(m.start(), m.group()) for m in _WORDS.finditer(text)]
        self._source_starts = [start for start, _ in words]
        self._lengths = [len(word) for _, word in words]
        self.collapsed = " ".join(word for _, word in words)
        self._collapsed_starts: list[int] = []
        position = 0
        for length in self._lengths:
            self._collapsed_starts.append(position)
            position += length + 1
        # Fuzzy matching ignores case; lower() only where it keeps every character's position.
        lowered = self.collapsed.lower()
        self._folded = lowered if len(lowered) == len(self.collapsed) else self.collapsed

    def _source_index(self, collapsed_index: int) -> int:
        """The source position of a collapsed-text character (a collapsed space maps to the whitespace run)."""
        word = bisect.bisect_right(self._collapsed_starts, collapsed_index) - 1
        within = collapsed_index - self._collapsed_starts[word]
        return self._source_starts[word] + min(within, self._lengths[word])

    def _source_span(self, start: int, end: int) -> tuple[int, int]:
        """Source offsets of the collapsed span ``[start, end)``, trimmed to non-space characters."""
        while start < end and self.collapsed[start] == " ":
            start += 1
        while end > start and self.collapsed[end - 1] == " ":
            end -= 1
        if start >= end:
            return (0, 0)
        return self._source_index(start), self._source_index(end - 1) + 1

    def locate(self, snippet: str, threshold: float = DEFAULT_MATCH_THRESHOLD) -> Placement:
        """The first exact occurrence, else the whitespace-insensitive one, else the best fuzzy match.

        A fuzzy match below ``threshold`` (0–1) is returned unplaced, with the closest text's span and score.
        """
        for candidate in dict.fromkeys((snippet, snippet.strip())):
            if candidate and (start := self.text.find(candidate)) >= 0:
                return Placement(start, start + len(candidate), MatchMethod.EXACT, 1.0, self.text.count(candidate))
        needle = " ".join(snippet.split())
        if not needle or not self.collapsed:
            return Placement(0, 0, None, 0.0, 0)
        if (start := self.collapsed.find(needle)) >= 0:
            source_start, source_end = self._source_span(start, start + len(needle))
            occurrences = self.collapsed.count(needle)
            return Placement(source_start, source_end, MatchMethod.WHITESPACE, 1.0, occurrences)
        start, end, score = self._fuzzy(needle.lower() if len(needle.lower()) == len(needle) else needle)
        method = MatchMethod.FUZZY if score >= threshold else None
        if method is None:
            # The closest text is shown to a person: whole words read better than cut ones.
            while start > 0 and self.collapsed[start - 1] != " ":
                start -= 1
            while end < len(self.collapsed) and self.collapsed[end] != " ":
                end += 1
        source_start, source_end = self._source_span(start, end)
        return Placement(source_start, source_end, method, round(score, 4), 1 if method else 0)

    def _fuzzy(self, needle: str) -> tuple[int, int, float]:
        """The collapsed span most similar to ``needle`` and its similarity in 0–1 (normalised Indel)."""
        haystack = self._folded
        if len(needle) >= len(haystack):
            return 0, len(haystack), fuzz.ratio(needle, haystack) / 100
        alignment = fuzz.partial_ratio_alignment(needle, haystack)
        assert alignment is not None  # None only under a score_cutoff, and none is given
        start, end = alignment.dest_start, alignment.dest_end
        # partial_ratio compares windows of the needle's length; a snippet that lost or gained a few
        # characters fits a slightly shorter or longer span, so each end is moved to its best place.
        reach = min(_MAX_REFINE, max(3, len(needle) // 10))

        def similarity(span: tuple[int, int]) -> float:
            return fuzz.ratio(needle, haystack[span[0] : span[1]])

        def best_of(spans: list[tuple[int, int]], current: tuple[int, int]) -> tuple[int, int]:
            # Ties keep the span nearest the current one.
            return max(
                spans, key=lambda span: (similarity(span), -abs(span[0] - current[0]) - abs(span[1] - current[1]))
            )

        span = (start, end)
        for _ in range(2):
            before = similarity(span)
            ends = range(max(span[0] + 1, span[1] - reach), min(len(haystack), span[1] + reach) + 1)
            span = best_of([(span[0], e) for e in ends], span)
            starts = range(max(0, span[0] - reach), min(span[1] - 1, span[0] + reach) + 1)
            span = best_of([(s, span[1]) for s in starts], span)
            if similarity(span) <= before:
                break
        return span[0], span[1], similarity(span) / 100


# --------------------------------------------------------------------------- question sets


ReferenceStatus = Literal["placed", "mismatch", "unplaced", "unknown_document"]


@dataclass(frozen=True)
class ReferenceResult:
    """How one reference of one question was placed, or why it could not be."""

    question_id: str
    reference_index: int
    snippet: str
    status: ReferenceStatus
    document: str | None = None
    method: MatchMethod | None = None
    score: float = 0.0
    start_index: int | None = None
    end_index: int | None = None
    occurrences: int = 0
    given_start: int | None = None
    given_end: int | None = None
    closest_text: str | None = None
    message: str = ""
    # What the given offsets select, when they do not select the snippet (a mismatch); not in the API's JSON.
    found: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "placed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "reference_index": self.reference_index,
            "status": self.status,
            "document": self.document,
            "method": self.method.value if self.method else None,
            "score": self.score,
            "start_index": self.start_index,
            "end_index": self.end_index,
            "occurrences": self.occurrences,
            "given_start": self.given_start,
            "given_end": self.given_end,
            "snippet": self.snippet,
            "closest_text": self.closest_text,
            "message": self.message,
        }


@dataclass
class EvidenceReport:
    """Every reference's placement; ``problems`` are the ones a benchmark could not use."""

    question_set: QuestionSet
    results: list[ReferenceResult]
    threshold: float
    # Document key → readable name (file name where known).
    documents: dict[str, str] = field(default_factory=dict)

    @property
    def problems(self) -> list[ReferenceResult]:
        return [r for r in self.results if not r.ok]

    @property
    def ok(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        counts = {"questions": len(self.question_set), "references": len(self.results), "problems": 0}
        for result in self.results:
            key = result.method.value if result.ok and result.method else result.status
            counts[key] = counts.get(key, 0) + 1
        counts["problems"] = len(self.problems)
        return counts

    def resolved(self) -> QuestionSet:
        """The set with every placed reference as exact ``document`` + offsets + source text; problems left out."""
        placed: dict[tuple[str, int], ReferenceResult] = {
            (r.question_id, r.reference_index): r for r in self.results if r.ok
        }
        questions = []
        for question in self.question_set:
            references = []
            for index, _reference in enumerate(question.references):
                result = placed.get((question.id, index))
                if result is not None and result.start_index is not None and result.end_index is not None:
                    references.append(
                        QuestionReference(
                            result.closest_text or "", result.start_index, result.end_index, result.document
                        )
                    )
            questions.append(replace(question, references=tuple(references)))
        return replace(self.question_set, questions=questions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "threshold": self.threshold,
            "documents": self.documents,
            "counts": self.counts(),
            "results": [r.to_dict() for r in self.results],
        }


class DocumentCatalog:
    """Document texts by key, found by key, alias (a file name) or either's stem (``finance.md`` → ``finance``)."""

    def __init__(self, documents: Mapping[str, str], aliases: Mapping[str, str] | None = None) -> None:
        self.texts = dict(documents)
        self._aliases = {alias: key for alias, key in (aliases or {}).items() if key in self.texts}
        self._names: dict[str, str] = {key: key for key in self.texts}
        for alias, key in (aliases or {}).items():
            if key in self.texts:
                self._names.setdefault(alias, key)
        stems: dict[str, set[str]] = {}
        for name, key in list(self._names.items()):
            stems.setdefault(Path(name).stem, set()).add(key)
        # A stem names a document only when it names one document.
        for stem, keys in stems.items():
            if len(keys) == 1:
                self._names.setdefault(stem, next(iter(keys)))
        self._locators: dict[str, TextLocator] = {}

    def label(self, key: str) -> str:
        """A readable name for a document key: its first alias (a file name), else the key."""
        return next((name for name, target in self._aliases.items() if target == key), key)

    def find(self, name: str) -> str | None:
        return self._names.get(name) or self._names.get(Path(name).stem)

    def locator(self, key: str) -> TextLocator:
        if key not in self._locators:
            self._locators[key] = TextLocator(self.texts[key])
        return self._locators[key]


def _place(
    catalog: DocumentCatalog, question: BenchmarkQuestion, index: int, reference: QuestionReference, threshold: float
) -> ReferenceResult:
    base = ReferenceResult(
        question.id, index, reference.content, "unplaced", given_start=reference.start_index,
        given_end=reference.end_index,
    )  # fmt: skip
    # Which document: the reference's, else the question's, else the only one, else every one.
    named = reference.document or question.document_id
    if named is not None:
        key = catalog.find(named)
        if key is None:
            return replace(
                base, status="unknown_document", document=named,
                message=f"document '{named}' is not among the documents given",
            )  # fmt: skip
        keys = [key]
    else:
        keys = list(catalog.texts)
    if not keys:
        return replace(base, message="no document to search")

    if reference.has_offsets:
        assert reference.start_index is not None and reference.end_index is not None
        key = keys[0] if len(keys) == 1 else None
        if key is None:
            # Offsets without a document: whichever document they fit.
            key = next(
                (k for k in keys if catalog.texts[k][reference.start_index : reference.end_index] == reference.content),
                keys[0],
            )
        text = catalog.texts[key]
        found = text[reference.start_index : reference.end_index]
        if found == reference.content:
            return replace(
                base, status="placed", document=key, method=MatchMethod.OFFSETS, score=1.0, occurrences=1,
                start_index=reference.start_index, end_index=reference.end_index, closest_text=found,
            )  # fmt: skip
        # Say where the content really is, so the author can fix the offsets.
        placement = catalog.locator(key).locate(reference.content, threshold)
        where = (
            f"; the content is at {placement.start_index}–{placement.end_index} ({placement.method.value})"
            if placement.method is not None  # placed
            else ""
        )
        return replace(
            base, status="mismatch", document=key, method=placement.method, score=placement.score,
            start_index=placement.start_index, end_index=placement.end_index, occurrences=placement.occurrences,
            closest_text=text[placement.start_index : placement.end_index], found=found,
            message=f"offsets {reference.start_index}–{reference.end_index} select {found[:60]!r}, not the content"
            + where,
        )  # fmt: skip

    best_key, best = keys[0], None
    for key in keys:
        placement = catalog.locator(key).locate(reference.content, threshold)
        if best is None or _rank(placement) > _rank(best):
            best_key, best = key, placement
    assert best is not None
    closest = catalog.texts[best_key][best.start_index : best.end_index]
    if best.placed:
        assert best.method is not None
        message = f"found {best.occurrences} times; the first is used" if best.occurrences > 1 else ""
        return replace(
            base, status="placed", document=best_key, method=best.method, score=best.score,
            start_index=best.start_index, end_index=best.end_index, occurrences=best.occurrences,
            closest_text=closest, message=message,
        )  # fmt: skip
    return replace(
        base, document=best_key, score=best.score, start_index=best.start_index,
        end_index=best.end_index, closest_text=closest,
        message=f"not found; the closest text scores {best.score:.2f} (threshold {threshold:g})",
    )  # fmt: skip


_METHOD_RANK = {MatchMethod.EXACT: 3, MatchMethod.WHITESPACE: 2, MatchMethod.FUZZY: 1}


def _rank(placement: Placement) -> tuple[int, float]:
    return (_METHOD_RANK.get(placement.method, 0) if placement.method else 0, placement.score)


def resolve_evidence(
    questions: QuestionSet | Sequence[BenchmarkQuestion],
    documents: Mapping[str, str] | DocumentCatalog,
    *,
    threshold: float = DEFAULT_MATCH_THRESHOLD,
) -> EvidenceReport:
    """Place every reference of every question in ``documents`` (key → text, e.g. id → markdown).

    The one check of evidence against document texts: question files, Chroma's data, corpus evaluation and
    benchmarks all call it and word its problems for their callers. References with offsets are checked (a
    mismatch is a problem); snippets are located exact → whitespace-insensitive → fuzzy (≥ ``threshold``).
    A question without references adds nothing.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"The match threshold is a similarity in (0, 1]; got {threshold}.")
    question_set = questions if isinstance(questions, QuestionSet) else QuestionSet(list(questions))
    catalog = documents if isinstance(documents, DocumentCatalog) else DocumentCatalog(documents)
    results = [
        _place(catalog, question, index, reference, threshold)
        for question in question_set
        for index, reference in enumerate(question.references)
    ]
    return EvidenceReport(question_set, results, threshold, {key: catalog.label(key) for key in catalog.texts})
