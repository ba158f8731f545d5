"""Sentence units as exact spans of the source text (English, Farsi and the languages sentencex knows)."""

from __future__ import annotations

import re

from sentencex import get_sentence_boundaries

Span = tuple[int, int]

# Farsi/Arabic punctuation that ends a sentence; sentencex knows "؟" and "۔" but not "؛".
_EXTRA_BOUNDARY = re.compile(r"؛")
_DIGIT = re.compile(r"[0-9۰-۹٠-٩]")
_DECIMAL_MARKS = ".٫,"
_NON_EMPTY_LINE = re.compile(r"[^\n]*\S[^\n]*")
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n[^\S\n]*\n|\s*\Z)", re.DOTALL)
_FARSI_LETTER = re.compile(r"[\u0600-\u06ff]")


def _language_of(sample: str) -> str:
    # sentencex's rules differ per language only in abbreviations and punctuation; Arabic-script
    # text takes the Farsi rules, everything else the English ones.
    return "fa" if len(_FARSI_LETTER.findall(sample)) * 3 > len(sample.strip() or "x") else "en"


def _trim(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _punctuation_spans(text: str, language: str) -> list[Span]:
    spans: list[Span] = []
    for boundary in get_sentence_boundaries(language, text):
        start, end = boundary["start_index"], boundary["end_index"]
        # sentencex splits "۲.۵" and "2.5" after the dot: a decimal is one number, not two sentences.
        if (
            spans
            and start == spans[-1][1]
            and start >= 2
            and text[start - 1] in _DECIMAL_MARKS
            and _DIGIT.match(text[start - 2])
            and start < len(text)
            and _DIGIT.match(text[start])
        ):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    split: list[Span] = []
    for start, end in spans:
        cursor = start
        for match in _EXTRA_BOUNDARY.finditer(text, start, end):
            split.append((cursor, match.end()))
            cursor = match.end()
        split.append((cursor, end))
    return [span for start, end in split if (span := _trim(text, start, end))]


def _regex_spans(text: str, pattern: re.Pattern[str]) -> list[Span]:
    return [span for m in pattern.finditer(text) if (span := _trim(text, m.start(), m.end()))]


def split_sentences(text: str, language: str | None = None) -> list[Span]:
    """Sentence spans ``(start, end)`` in order, trimmed of surrounding whitespace.

    Fallback chain (docs/strategies.md): punctuation → non-empty lines → blank-line paragraphs → one unit,
    each step taken only when the previous found a single unit or none.
    """
    if not text.strip():
        return []
    language = language or _language_of(text[:2000])
    for spans in (
        _punctuation_spans(text, language),
        _regex_spans(text, _NON_EMPTY_LINE),
        _regex_spans(text, _PARAGRAPH),
    ):
        if len(spans) > 1:
            return spans
    whole = _trim(text, 0, len(text))
    return [whole] if whole else []
