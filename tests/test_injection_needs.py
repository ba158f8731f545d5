"""The shortcuts of guard/quick_search.py never change what a regex finds. On small regexes built from every
construct the analysis reads, and on the shipped patterns (random texts, the labelled attacks), a text the regex
matches meets its needs and those of one of its alternatives, whose faster form finds it, and a text it does not
match is not found. The needs reject texts that lack what they name; the rewritten helper regexes of the readings
find what their lookbehind-first forms find; and the Unicode facts the analysis rests on hold."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkbench.guard import injection
from chunkbench.guard.injection import PATTERNS, Reading
from chunkbench.guard.quick_search import QuickSearch, alternatives, needs_of, starting_search, words_of

GUARD_DATA = Path(__file__).resolve().parents[1] / "perf" / "data" / "guard"


# Small regexes of the constructs the analysis reads, over words that texts drawn from the same words hold often.
_WORDS = ["ai", "tell", "the", "you", "ignore", "a.i.", "dan", "rules", "now"]
_ATOMS = st.sampled_from(
    [re.escape(word) for word in _WORDS]
    + [r"\b", r"\s+", r"\s*", r"\w+", r"\d", r"[,:]", r"[a-z]{2}", r"\W", r"\S*", r".", r"[^.]{0,5}"]
    + ["^", "$", "'", "-"]
)
_PIECES = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=4).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda parts: "(?:" + "|".join(parts) + ")"),
        inner.map(lambda part: f"(?:{part})?"),
        inner.map(lambda part: f"(?:{part}){{0,2}}"),
        inner.map(lambda part: f"(?:{part}){{1,2}}"),
        inner.map(lambda part: f"(?={part})"),
        inner.map(lambda part: f"(?!{part})"),
        inner.map(lambda part: f"(?i:{part})"),
    ),
    max_leaves=6,
)
# A word between pieces, so that most regexes need something.
_REGEXES = st.tuples(_PIECES, st.sampled_from([re.escape(word) for word in _WORDS]), _PIECES).map("".join)
_TEXTS = st.lists(
    st.sampled_from([*_WORDS, "TELL", "AI", "DAN", "İgnore", "ſ", "K", " ", "  ", ",", ":", "-", ".", "\n", "x", "7"]),
    max_size=14,
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(source=_REGEXES, text=_TEXTS, cased=st.booleans())
@pytest.mark.slow
def test_a_quick_search_finds_what_the_regex_finds(source, text, cased):
    regex = re.compile(source, re.DOTALL)
    reading = Reading(text)  # as the detector reads a text: regexes written in lower case see it lower-cased
    searched = text if cased else reading.lower
    found = regex.search(searched) is not None
    assert QuickSearch.of(regex, cased=cased).found(reading, searched) is found, (source, text)
    if found:
        assert needs_of(regex, cased=cased).met(reading), (source, text)
        assert starting_search(regex).search(searched), (source, text)


def test_every_labelled_attack_a_pattern_matches_meets_the_needs():
    """The attacks of perf/data/guard, read as the detector reads them: wherever a regex matches, the needs of one
    of its alternatives are met and its faster form matches too."""
    checked = 0
    for line in (GUARD_DATA / "injection_attacks.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        for reading in map(injection.Reading, injection.readings(line.split("\t", 1)[1].replace("\\n", "\n"))):
            for pattern in PATTERNS:
                searched = reading.text if pattern.cased else reading.lower
                if pattern.regex.search(searched):
                    checked += 1
                    assert pattern.quick.found(reading, searched), (pattern.name, searched)
    assert checked > 500


@pytest.mark.parametrize("pattern", PATTERNS, ids=[pattern.name for pattern in PATTERNS])
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ignoreallpvustmdy ,.:-_'<|>[]\n")), max_size=60))
def test_the_shortcuts_find_what_the_regex_finds_in_any_text(pattern, text):
    reading = Reading(text)
    searched = text if pattern.cased else reading.lower
    found = pattern.regex.search(searched) is not None
    assert any(part.search(searched) for part in alternatives(pattern.regex)) is found
    assert pattern.quick.found(reading, searched) is found


def test_needs_name_whole_words_and_reject_texts_without_them():
    needs = needs_of(re.compile(r"\btell\s+(?:the\s+)?(?:user|reader)s?\s+to\b"), cased=False)
    assert needs.clauses and all(clause for clause in needs.clauses)
    assert needs.met(Reading("please tell the user to click"))
    assert not needs.met(Reading("the storyteller told users to wait"))  # no whole word "tell"
    # A regex that needs no word keeps a piece of text ("://"), or needs nothing at all.
    url = needs_of(re.compile(r"https?://\S+"), cased=False)
    assert url.met(Reading("see http://x")) and not url.met(Reading("see http:/x"))
    assert needs_of(re.compile(r"\w{20,}"), cased=False).clauses == ()
    # Read on the text as written: looked up lower-cased.
    assert needs_of(re.compile(r"\bDAN\b"), cased=True).met(Reading("You are DAN now"))


def test_a_regex_is_searched_as_its_alternatives():
    assert [part.pattern for part in alternatives(re.compile(r"\b(?:ab|c[|)]d)"))] == [r"\bab", r"\bc[|)]d"]
    assert [part.pattern for part in alternatives(re.compile(r"x(?:a|b)|y"))] == ["x(?:a|b)", "y"]
    assert alternatives(re.compile(r"(?:a|b)c")) == [re.compile(r"(?:a|b)c")]
    assert alternatives(re.compile(r"(a)|(b)\1")) == [re.compile(r"(a)|(b)\1")]  # \1 would mean (b) once split
    # The faster form of an alternative finds the same texts; one that starts with a literal is left alone.
    assert starting_search(re.compile(r"\b(?:ab|cd)\b")).pattern.startswith("[ac](?<=")
    assert starting_search(re.compile(r"https?://")) == re.compile(r"https?://")
    quick = QuickSearch.of(re.compile(r"\bignore\b|\bdisregard\b"), cased=False)
    assert len(quick.parts) == 2 and quick.found(Reading("x disregard y"), "x disregard y")


@pytest.mark.parametrize(
    ("rewritten", "lookbehind_first"),
    [
        (injection._MARKED, r"(?<=\b\w)[.*_-](?=\w\b)"),
        (injection._SPACED, r"(?<=\b\w) (?=\w\b)"),
        (injection._INNER_HYPHEN, r"(?<=[A-Za-z])-(?=[a-z])"),
        (injection._WORD_PUNCTUATION, r"(?<=\w)[.!?,;:]+(?=\s)"),
    ],
)
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("aB9_ .*-!?,;:\n\té")), max_size=30))
def test_the_rewritten_substitutions_of_the_readings_are_the_same(rewritten, lookbehind_first, text):
    assert rewritten.sub("", text) == re.sub(lookbehind_first, "", text)


@pytest.mark.parametrize(
    ("rewritten", "lookbehind_first"),
    [
        (injection._PUNCTUATED, r"(?:\b\w+[.!?,;:]+\s+){3}"),
        (injection._HYPHENATED, r"\w+(?:[-_]\w+){2,}|[A-Za-z]-[a-z]{3,}"),
        (injection._LEET_WORD, r"[A-Za-z][013457@$]+[A-Za-z]|\b[013457][A-Za-z]{2,}"),
    ],
)
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("aBz9013@$_ .-!?,;:\né")), max_size=30))
def test_the_rewritten_tests_of_the_readings_are_the_same(rewritten, lookbehind_first, text):
    assert (rewritten.search(text) is None) is (re.search(lookbehind_first, text) is None)


@given(text=st.text(max_size=40))
def test_words_of_is_the_set_of_maximal_word_runs(text):
    assert words_of(text) == {word.encode("utf-8") for word in re.findall(r"\w+", text)}


def test_lower_casing_keeps_what_the_analysis_relies_on():
    """Of the patterns read on the text as written, the analysis looks words up in the lower-cased text: that holds
    only while lower-casing never makes a word character or whitespace out of anything else, nor changes
    whitespace (a new Unicode version could break it; this test would then fail)."""

    def word(char: str) -> bool:
        return char.isalnum() or char == "_"

    for code in range(sys.maxunicode + 1):
        char = chr(code)
        lower = char.lower()
        if char.isspace():
            assert lower == char, hex(code)
        else:
            assert not any(c.isspace() for c in lower), hex(code)
            if not word(char):
                assert not any(word(c) for c in lower), hex(code)
