"""Heading Reconstruction helpers: font-statistics rule, numbering/keyword heuristics, title matching.

Pure functions over plain values, so every rule is unit-testable without a file. parsers/pdf_headings.py applies
them to a PDF's lines in the order outline → font statistics → numbering/keyword heuristics; parsers/text_headings.py
applies the heuristics to a text file's lines, parsers/html_headings.py the font rule to an HTML page's blocks.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# Font rule (SETUP-NOTES, 160/160 headings on a 127-page test PDF).
SIZE_RATIO = 1.08
MAX_HEADING_CHARS = 150
MAX_BOLD_HEADING_CHARS = 80
# Heuristic rule: only short lines that do not read like a sentence.
MAX_HEURISTIC_CHARS = 80
MAX_HEURISTIC_WORDS = 12
# When more than this share of the lines would be headings, the font statistics say nothing useful.
MAX_HEADING_SHARE = 0.4
_MIN_CAPITALS = 3

_DIGITS = "0-9۰-۹٠-٩"
_TO_ASCII_DIGITS = str.maketrans("۰۱۲۳۴۵۶۷۸۹٠١٢٣٤٥٦٧٨٩", "01234567890123456789")
_ROMAN = r"[ivxlcdm]+"
_EN_ORDINALS = r"one|two|three|four|five|six|seven|eight|nine|ten|first|second|third|fourth|fifth"
# Farsi ordinals end in «م» (اول is the exception): فصل دوم, بخش سوم, مادهٔ یکم.
_FA_ORDINAL = r"اول|نخست|[\u0600-\u06ff]+م"

# Keyword kinds, outermost first; the rank orders levels when several kinds occur in one document.
KEYWORD_RANK = {"part": 0, "chapter": 1, "section": 2, "article": 3}

_KEYWORD_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        kind,
        re.compile(
            rf"^\s*(?:{words})\s+(?P<number>[{_DIGITS}]+(?:\.[{_DIGITS}]+)*|{_ROMAN}|[a-z]|{_EN_ORDINALS})\b"
            r"(?:\s*[:.\-–—)]\s*|\s+|$)",
            re.IGNORECASE,
        ),
    )
    for kind, words in [
        ("part", r"part|book"),
        ("chapter", r"chapter|appendix|annex"),
        ("section", r"section|§"),
        ("article", r"article|art\."),
    ]
] + [
    (
        kind,
        # \b does not work across Arabic letters and Persian digits consistently: spell the boundary.
        re.compile(rf"^\s*(?:{word})\s+(?P<number>[{_DIGITS}]+|{_FA_ORDINAL})(?=$|[\s:.\-–—)،])"),
    )
    for kind, word in [
        ("part", "بخش|قسمت"),
        ("chapter", "فصل"),
        ("article", "ماده|مادهٔ|ماده‌ی"),
        ("section", "گفتار|مبحث"),
    ]
]
# "1", "1.", "1.2", "1.2.3." followed by a title that starts with a letter. At most 3 digits a part,
# so years ("2023 in review") and amounts are not numbering.
_NUMBERED = re.compile(rf"^\s*([{_DIGITS}]{{1,3}}(?:[.\-][{_DIGITS}]{{1,3}}){{0,5}})[.)]?\s+(?=[^\W\d_])")
_SENTENCE_END = re.compile(r"[.!?؟;,،]\s*$")
# What may stand between a keyword's number and its title: "Chapter 2: Results", "ماده ۵ - تعاریف".
_TITLE_SEPARATOR = re.compile(r"^\s*[:.\-–—)،]")
_SEPARATOR_CHARS = " \t:.-–—)،"


@dataclass(frozen=True)
class HeadingMatch:
    """What a numbering/keyword heuristic saw in a line: ``kind`` is a keyword kind or ``numbered``."""

    kind: str
    depth: int = 1


@dataclass(frozen=True)
class KeywordLine:
    """A line that starts with a heading keyword and its number (``Chapter 2: Results``).

    ``title`` is what follows the number, separator dropped ("" for a bare ``CHAPTER IV.``); ``separated`` says
    whether a separator (``:``, ``.``, ``-``, ``–``, ``—``, ``)``) sets the title off, or there is none.
    """

    kind: str
    title: str
    separated: bool


@dataclass(frozen=True)
class StyledLine:
    """A line of text with its dominant font size and weight."""

    text: str
    size: float
    bold: bool


def to_ascii_digits(text: str) -> str:
    """Persian and Arabic-Indic digits → ASCII digits."""
    return text.translate(_TO_ASCII_DIGITS)


def looks_like_sentence(text: str) -> bool:
    """Long, wordy, or ending in sentence punctuation: body text, not a heading."""
    stripped = text.strip()
    return (
        len(stripped) >= MAX_HEURISTIC_CHARS
        or len(stripped.split()) > MAX_HEURISTIC_WORDS
        or bool(_SENTENCE_END.search(stripped))
    )


def keyword_line(text: str) -> KeywordLine | None:
    """The heading keyword and number a line starts with (``Chapter 2``, ``PART II``, ``فصل ۲``, ``ماده ۵``).

    A one-letter number must be a capital (``Part A``, ``Appendix B``): "Book a flight" is no heading.
    Sentences are not ruled out here; callers decide with :func:`looks_like_sentence`.
    """
    stripped = text.strip()
    for kind, pattern in _KEYWORD_PATTERNS:
        match = pattern.match(stripped)
        if match is None:
            continue
        number = match.group("number")
        if len(number) == 1 and number.isascii() and number.isalpha() and not number.isupper():
            return None
        after = stripped[match.end("number") :]
        title = after.lstrip(_SEPARATOR_CHARS).strip()
        return KeywordLine(kind, title, separated=not title or bool(_TITLE_SEPARATOR.match(after)))
    return None


def match_heading_pattern(text: str) -> HeadingMatch | None:
    """The numbering (``1.2.3 Title``) or keyword (``Chapter 2``, ``فصل ۲``, ``ماده ۵``) a line starts with.

    Only short lines that do not read like sentences qualify, which keeps numbered list items and
    sentences that start with a number out.
    """
    stripped = text.strip()
    if not stripped or looks_like_sentence(stripped):
        return None
    keyword = keyword_line(stripped)
    if keyword is not None:
        return HeadingMatch(keyword.kind)
    numbered = _NUMBERED.match(stripped)
    if numbered:
        return HeadingMatch("numbered", depth=len(re.split(r"[.\-]", numbered.group(1))))
    return None


def is_capitals_heading(text: str) -> bool:
    """A short line in capitals (``INTRODUCTION``, ``TERMS OF USE``) that does not read like a sentence.

    Every letter must be a capital: scripts without case (Farsi) never qualify, and neither does a line that
    only contains an acronym among other words. At least three letters, so "I" or "OK" alone are no headings.
    """
    stripped = text.strip()
    letters = [ch for ch in stripped if ch.isalpha()]
    return (
        len(letters) >= _MIN_CAPITALS
        and stripped[0].isalnum()
        and all(ch.isupper() for ch in letters)
        and not looks_like_sentence(stripped)
    )


def heuristic_levels(matches: Sequence[HeadingMatch]) -> list[int]:
    """Levels for heuristic headings: keyword kinds by rank among the kinds present, then numbering depth.

    ``Chapter`` alone is level 1; with ``Part`` present it becomes 2. Numbered headings nest below the
    keyword levels present: ``1.2`` is level 2 in a document without keywords, and also under
    chapters (its first number is the chapter's), where ``1.`` is level 2 too.
    """
    present = sorted({KEYWORD_RANK[m.kind] for m in matches if m.kind in KEYWORD_RANK})
    keyword_level = {rank: index + 1 for index, rank in enumerate(present)}
    # Numbering nests under chapters/parts but not under articles or sections (those are leaves).
    outer = len([rank for rank in present if rank <= KEYWORD_RANK["chapter"]])
    levels = []
    for match in matches:
        if match.kind in KEYWORD_RANK:
            levels.append(keyword_level[KEYWORD_RANK[match.kind]])
        else:
            # Under chapters, "1.2" is a section of chapter 1: its first number is the chapter's.
            depth = max(match.depth - 1, 1) if outer else match.depth
            levels.append(min(outer + depth, 6))
    return levels


def round_size(size: float) -> float:
    """Font sizes to the nearest 0.5 pt: producers write 11.04 and 10.98 for the same style."""
    return round(size * 2) / 2


def body_size(lines: Sequence[StyledLine]) -> float:
    """The most frequent font size, counted by characters."""
    weights: Counter[float] = Counter()
    for line in lines:
        weights[round_size(line.size)] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def font_heading_levels(lines: Sequence[StyledLine], *, share_by_characters: bool = False) -> dict[int, int]:
    """``{line index: level}`` by the font rule; empty when the statistics are inconclusive.

    A line is a heading if it is under 150 chars and either at least 1.08 × the body size, or bold at
    the body size and under 80 chars. Level = rank of the distinct ``(size, bold)`` styles among the
    headings, biggest first (bold before regular at equal size). The rule gives up when more than 40 % of
    the lines would be headings, or of the characters with ``share_by_characters`` (for whole paragraphs
    rather than lines, where one heading above each paragraph is normal).
    """
    if not lines:
        return {}
    body = body_size(lines)
    candidates: dict[int, tuple[float, bool]] = {}
    for index, line in enumerate(lines):
        text = line.text.strip()
        if not text or not any(ch.isalpha() for ch in text) or len(text) >= MAX_HEADING_CHARS:
            continue
        size = round_size(line.size)
        bigger = size >= body * SIZE_RATIO
        bold_body = line.bold and abs(size - body) < 0.5 and len(text) < MAX_BOLD_HEADING_CHARS
        if bigger or bold_body:
            candidates[index] = (size, line.bold)
    if not candidates:
        return {}
    if share_by_characters:
        heading_chars = sum(len(lines[index].text.strip()) for index in candidates)
        if heading_chars > MAX_HEADING_SHARE * sum(len(line.text.strip()) for line in lines):
            return {}
    elif len(candidates) > MAX_HEADING_SHARE * len(lines):
        return {}
    styles = sorted(set(candidates.values()), key=lambda style: (-style[0], not style[1]))
    rank = {style: position + 1 for position, style in enumerate(styles)}
    return {index: min(rank[style], 6) for index, style in candidates.items()}


_MATCH_DROP = re.compile(r"[\s\u200c\u200d\u200e\u200f\u202a-\u202e\u2066-\u2069.:·•\-–—_]+")

# Arabic yeh/alef maksura/kaf → their Farsi forms. Typed as maketrans's parameter: dict is invariant, so an inferred
# dict[str, str] does not match it.
_FARSI_LETTERS: dict[str, str | int | None] = {"ي": "ی", "ى": "ی", "ك": "ک"}


def match_key(text: str) -> str:
    """Whitespace-, case-, digit-script- and punctuation-insensitive form, for outline-title matching."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = to_ascii_digits(text).translate(str.maketrans(_FARSI_LETTERS))
    return _MATCH_DROP.sub("", text)
