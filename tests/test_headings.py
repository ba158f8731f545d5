"""Heading Reconstruction rules: numbering/keyword heuristics (English, Farsi) and the font rule."""

from __future__ import annotations

import pytest

from chunkbench.documents.headings import (
    HeadingMatch,
    KeywordLine,
    StyledLine,
    body_size,
    font_heading_levels,
    heuristic_levels,
    is_capitals_heading,
    keyword_line,
    match_heading_pattern,
    match_key,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1. Introduction", HeadingMatch("numbered", 1)),
        ("1.2 Scope of work", HeadingMatch("numbered", 2)),
        ("1.2.3 Measuring the samples", HeadingMatch("numbered", 3)),
        ("Chapter 4 Results", HeadingMatch("chapter")),
        ("CHAPTER IV", HeadingMatch("chapter")),
        ("Section 2: Definitions", HeadingMatch("section")),
        ("Article 12", HeadingMatch("article")),
        ("Part II General rules", HeadingMatch("part")),
        ("فصل ۱: مقدمه", HeadingMatch("chapter")),
        ("فصل دوم - کلیات", HeadingMatch("chapter")),
        ("بخش ۳", HeadingMatch("part")),
        ("ماده ۱۲", HeadingMatch("article")),
        ("ماده ١٢ - تعاریف", HeadingMatch("article")),  # Arabic-Indic digits
        ("۲.۱ روش‌ها", HeadingMatch("numbered", 2)),  # Persian digits
    ],
)
def test_heading_patterns_match(text: str, expected: HeadingMatch) -> None:
    assert match_heading_pattern(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # A sentence starting with a number: long and ending with a period.
        "1. This sentence starts with a number but it is an ordinary sentence of the body text.",
        "1. Short sentence with a period.",
        "2023 was a good year for the company",
        "3.5% of the people agreed",  # a number followed by a non-letter is not numbering
        "The chapter 4 results were good",
        "Chapter 4 is where the methods are described in detail for the readers.",
        "فصل‌های این کتاب را بخوانید.",
        "ماده‌های این قانون برای همه اجرا می‌شود.",
        "Book a flight",  # a one-letter "number" must be a capital (Part A, Appendix B)
        "",
    ],
)
def test_sentences_and_prose_are_not_headings(text: str) -> None:
    assert match_heading_pattern(text) is None


def test_heuristic_levels_rank_keywords_and_nest_numbering() -> None:
    matches = [
        HeadingMatch("part"),
        HeadingMatch("chapter"),
        HeadingMatch("numbered", 2),
        HeadingMatch("numbered", 3),
        HeadingMatch("article"),
    ]
    # part=1, chapter=2, article=3 (ranked among kinds present); 1.2 under chapters → 2 + 1 = 3.
    assert heuristic_levels(matches) == [1, 2, 3, 4, 3]


def test_heuristic_levels_numbering_alone_is_depth() -> None:
    matches = [HeadingMatch("numbered", 1), HeadingMatch("numbered", 2), HeadingMatch("numbered", 3)]
    assert heuristic_levels(matches) == [1, 2, 3]


def test_font_rule_levels_by_size_then_bold() -> None:
    body = "Body text " * 10
    lines = [
        StyledLine("Title of the chapter", 18, True),
        StyledLine(body, 11, False),
        StyledLine("A section", 14, True),
        StyledLine(body, 11, False),
        StyledLine("A bold run-in heading", 11, True),
        StyledLine(body, 11, False),
        StyledLine(body, 11.04, False),  # rounding: same size as the body
        StyledLine(body, 10.98, False),
    ]
    assert body_size(lines) == 11
    assert font_heading_levels(lines) == {0: 1, 2: 2, 4: 3}


def test_font_rule_is_inconclusive_without_differences() -> None:
    lines = [StyledLine("Same size everywhere", 11, False)] * 5
    assert font_heading_levels(lines) == {}


def test_font_rule_refuses_when_most_lines_would_be_headings() -> None:
    lines = [StyledLine("Big", 20, False)] * 3 + [StyledLine("x" * 400, 11, False)] * 3
    # Body is 11 (by characters), but half of the lines cannot all be headings.
    assert font_heading_levels(lines) == {}


def test_match_key_ignores_space_case_digits_and_zwnj() -> None:
    assert match_key("Chapter  1:\nIntro") == match_key("chapter 1 intro")
    assert match_key("فصل ۱: روش‌ها") == match_key("فصل 1 روشها")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CHAPTER IV.", KeywordLine("chapter", "", separated=True)),
        ("Section 2: Definitions", KeywordLine("section", "Definitions", separated=True)),
        ("Chapter 4 Results", KeywordLine("chapter", "Results", separated=False)),
        ("Appendix B - Tables", KeywordLine("chapter", "Tables", separated=True)),
        ("ماده ۵ - تعاریف", KeywordLine("article", "تعاریف", separated=True)),
        ("فصل دوم", KeywordLine("chapter", "", separated=True)),
        ("Part 2 of the agreement was signed.", KeywordLine("part", "of the agreement was signed.", separated=False)),
        ("Book a flight", None),
        ("The chapter 4 results", None),
    ],
)
def test_keyword_line_splits_number_and_title(text: str, expected: KeywordLine | None) -> None:
    assert keyword_line(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("INTRODUCTION", True),
        ("TERMS OF USE", True),
        ("PART ONE: 1805", True),
        ("OK", False),  # too few letters
        ("THE END OF THE STORY.", False),  # a sentence
        ("We told NASA", False),
        ("*** START OF THE EBOOK ***", False),  # starts with a mark
        ("مقدمه", False),  # no case in Farsi
        ("A VERY LONG LINE IN CAPITALS THAT GOES ON AND ON WITH FAR TOO MANY WORDS FOR ANY HEADING", False),
    ],
)
def test_capitals_heading(text: str, expected: bool) -> None:
    assert is_capitals_heading(text) is expected


def test_font_rule_share_by_characters_for_paragraphs() -> None:
    # One heading over each paragraph: half of the lines, a small share of the characters.
    lines = [StyledLine("Scope", 11, True), StyledLine("Body text " * 20, 11, False)] * 3
    assert font_heading_levels(lines) == {}
    assert font_heading_levels(lines, share_by_characters=True) == {0: 1, 2: 1, 4: 1}
    all_bold = [StyledLine("Short bold paragraph", 11, True)] * 5 + [StyledLine("x" * 30, 11, False)]
    assert font_heading_levels(all_bold, share_by_characters=True) == {}
