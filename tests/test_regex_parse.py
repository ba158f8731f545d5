"""guard/regex_parse.py reads regexes as ``re`` does, and what it does not read costs only speed. Random regexes of
the whole syntax it reads, written back from the parsed tree, match what the original matches; QuickSearch built on
it finds exactly what ``re.search`` finds; the tree is folded as the shortcuts were tuned on; a construct it does
not read leaves that alternative without shortcuts, searched with plain ``re``; and every shipped pattern is read."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chunkbench.guard.injection import PATTERNS, Reading
from chunkbench.guard.quick_search import QuickSearch, _alternatives, needs_of, starting_search
from chunkbench.guard.regex_needs import Needs
from chunkbench.guard.regex_parse import REPEATS, UNBOUNDED, At, Category, Item, Op, Unsupported, parse

_WORDS = ["ai", "tell", "you", "ignore", "rules", "now", "a.i."]
_ATOMS = st.sampled_from(
    [re.escape(word) for word in _WORDS]
    + list("ab.^$-_},é ")
    + [r"\b", r"\B", r"\A", r"\Z", r"\d", r"\D", r"\s", r"\S", r"\w", r"\W", r"\.", r"\|", r"\(", r"\n", r"\t", "\\\\"]
    + ["[a-e]", "[^a]", "[]x]", "[a-]", r"[\b]", r"[\d\s,]", "[.]", "[^.\n]", "[ab]", "[i]", r"[\w-]", "[^\\W\\d]"]
    + ["{", "x{,2}", "{1", "(?#note)", "(?P<name>ai)"]
)
_QUANTIFIERS = st.sampled_from(
    ["", "", "?", "*", "+", "{2}", "{1,3}", "{,2}", "{2,}", "??", "*?", "+?", "*+", "{1,2}?"]
)
_OPENERS = st.sampled_from(["(?:", "(", "(?=", "(?!", "(?>", "(?i:", "(?-i:", "(?s:", "(?a:", "(?m:"])
# A lookbehind holds what has one width: words, a class, an escape.
_FIXED = st.sampled_from([re.escape(word) for word in _WORDS] + ["[a-e]", r"\w", r"\s", " ", "ai|no"])


def _grown(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(inner, min_size=2, max_size=4).map("".join),
        st.lists(inner, min_size=2, max_size=3).map("|".join),
        st.tuples(_OPENERS, st.lists(inner, min_size=1, max_size=3).map("|".join), _QUANTIFIERS).map(
            lambda parts: f"{parts[0]}{parts[1]}){parts[2]}"
        ),
        st.tuples(st.sampled_from(["(?<=", "(?<!"]), _FIXED).map(lambda parts: f"{parts[0]}{parts[1]})"),
        st.tuples(inner, _QUANTIFIERS).map("".join),
    )


_REGEXES = st.tuples(st.sampled_from(["", "", "(?i)", "(?s)"]), st.recursive(_ATOMS, _grown, max_leaves=8)).map("".join)
_TEXTS = st.lists(
    st.sampled_from(
        [*_WORDS, "TELL", "AI", "İgnore", "ſ", "K", " ", "  ", ",", "-", "_", ".", "\n", "\t", "\b", "x", "7", "{", "é"]
    ),
    max_size=12,
).map("".join)
_FLAGS = st.sampled_from([re.NOFLAG, re.DOTALL, re.IGNORECASE, re.MULTILINE])


def _compiled(source: str, flags: int) -> re.Pattern[str]:
    try:
        return re.compile(source, flags)
    except (re.error, OverflowError):
        assume(False)
        raise


# --------------------------------------------------------------------------- the tree, written back as a regex

_FLAG_LETTERS = {re.ASCII: "a", re.IGNORECASE: "i", re.LOCALE: "L", re.MULTILINE: "m", re.DOTALL: "s", re.UNICODE: "u"}
_AT = {
    At.BEGINNING: "^",
    At.END: "$",
    At.BEGINNING_STRING: r"\A",
    At.END_STRING: r"\Z",
    At.BOUNDARY: r"\b",
    At.NON_BOUNDARY: r"\B",
}
_CATEGORY = {
    Category.DIGIT: r"\d",
    Category.NOT_DIGIT: r"\D",
    Category.SPACE: r"\s",
    Category.NOT_SPACE: r"\S",
    Category.WORD: r"\w",
    Category.NOT_WORD: r"\W",
}


def _letters(flags: int) -> str:
    return "".join(letter for flag, letter in _FLAG_LETTERS.items() if flags & flag)


def _member(op: Op, value: Any) -> str:
    if op is Op.LITERAL:
        return re.escape(chr(value))
    if op is Op.RANGE:
        return f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}"
    if op is Op.CATEGORY:
        return _CATEGORY[value]
    return "^"  # NEGATE, always first


def _written(items: list[Item]) -> str:
    """The regex that ``items`` are, every sequence in a group of its own, so that no reading depends on the
    folding the parser did."""
    out = []
    for op, av in items:
        if op is Op.LITERAL:
            out.append(re.escape(chr(av)))
        elif op is Op.NOT_LITERAL:
            out.append(f"[^{re.escape(chr(av))}]")
        elif op is Op.ANY:
            out.append(".")
        elif op is Op.IN:
            out.append("[" + "".join(_member(member, value) for member, value in av) + "]")
        elif op is Op.AT:
            out.append(_AT[av])
        elif op is Op.BRANCH:
            out.append("(?:" + "|".join(_written(alternative) for alternative in av[1]) + ")")
        elif op is Op.SUBPATTERN:
            group, add, remove, sub = av
            flags = _letters(add) + (f"-{_letters(remove)}" if remove else "")
            out.append(f"({_written(sub)})" if group is not None else f"(?{flags}:{_written(sub)})")
        elif op in (Op.ASSERT, Op.ASSERT_NOT):
            direction, sub = av
            kind = ("<" if direction < 0 else "") + ("=" if op is Op.ASSERT else "!")
            out.append(f"(?{kind}{_written(sub)})")
        elif op is Op.ATOMIC_GROUP:
            out.append(f"(?>{_written(av)})")
        else:
            assert op in REPEATS, op
            low, high, sub = av
            count = f"{{{low},}}" if high == UNBOUNDED else f"{{{low},{high}}}"
            lazy = {Op.MIN_REPEAT: "?", Op.POSSESSIVE_REPEAT: "+"}.get(op, "")
            out.append(f"(?:{_written(sub)}){count}{lazy}")
    return "".join(out)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(source=_REGEXES, flags=_FLAGS, texts=st.lists(_TEXTS, min_size=1, max_size=4))
def test_the_parsed_tree_matches_what_the_regex_matches(source, flags, texts):
    """Written back from the tree, a regex matches the same span of every text: the parser read each construct
    (escapes, classes, quantifiers and their greed, groups, flags, lookarounds) as ``re`` does."""
    regex = _compiled(source, flags)
    rewritten = re.compile(_written(parse(source, regex.flags)), regex.flags)
    for text in texts:
        found, again = regex.search(text), rewritten.search(text)
        assert (found and found.span()) == (again and again.span()), (source, rewritten.pattern, text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(source=_REGEXES, flags=_FLAGS, text=_TEXTS, cased=st.booleans())
def test_a_quick_search_of_any_regex_read_finds_what_re_finds(source, flags, text, cased):
    regex = _compiled(source, flags)
    reading = Reading(text)
    searched = text if cased else reading.lower
    found = regex.search(searched) is not None
    assert QuickSearch.of(regex, cased=cased).found(reading, searched) is found, (source, text)
    if found:
        assert needs_of(regex, cased=cased).met(reading), (source, text)
        assert starting_search(regex).search(searched), (source, text)


# --------------------------------------------------------------------------- the tree's shape


def test_the_tree_is_folded_as_the_shortcuts_were_tuned_on():
    literal = lambda char: (Op.LITERAL, ord(char))  # noqa: E731
    # Alternatives lose the items they all start with; alternatives of one character are a class.
    assert parse("ab|ac") == [literal("a"), (Op.IN, [literal("b"), literal("c")])]
    assert parse("prior|previous") == [
        literal("p"),
        literal("r"),
        (Op.BRANCH, (None, [[literal("i"), literal("o"), literal("r")], [literal("e"), *map(literal, "vious")]])),
    ]
    # A group is compared by what it is, never factored out.
    assert parse("(a)x|(a)y")[0][0] is Op.BRANCH
    # A non-capturing group is spliced in, except under a quantifier, which repeats all of it.
    assert parse("x(?:ab)c") == [literal(char) for char in "xabc"]
    assert parse("(?:ab)+?") == [(Op.MIN_REPEAT, (1, UNBOUNDED, [literal("a"), literal("b")]))]
    assert parse("ab*") == [literal("a"), (Op.MAX_REPEAT, (0, UNBOUNDED, [literal("b")]))]
    # A class of one character is that character; in a class \b is the backspace; "]" first and "-" last are
    # themselves.
    assert parse("[a][^b]") == [literal("a"), (Op.NOT_LITERAL, ord("b"))]
    assert parse(r"[\b]") == [(Op.LITERAL, 8)]
    assert parse("[]a-]") == [(Op.IN, [literal("]"), literal("a"), literal("-")])]
    assert parse(r"[^\s,a-c]") == [
        (Op.IN, [(Op.NEGATE, None), (Op.CATEGORY, Category.SPACE), literal(","), (Op.RANGE, (97, 99))])
    ]
    # "{" that starts no count is itself; a comment is nothing; flags of the whole regex are left to re.compile.
    assert parse("x{a}{,2}") == [literal("x"), literal("{"), literal("a"), (Op.MAX_REPEAT, (0, 2, [literal("}")]))]
    assert parse("a(?#note)b") == [literal("a"), literal("b")]
    assert parse("(?i)a") == [literal("a")]
    assert parse(r"(?i:a)(?<!\w)") == [
        (Op.SUBPATTERN, (None, re.IGNORECASE, 0, [literal("a")])),
        (Op.ASSERT_NOT, (-1, [(Op.IN, [(Op.CATEGORY, Category.WORD)])])),
    ]


# --------------------------------------------------------------------------- what is not read


@pytest.mark.parametrize(
    "source",
    [
        r"(a)\1",
        r"(?P<x>a)(?P=x)",
        r"(a)?(?(1)b|c)",
        r"\x41",
        r"\u00e9",
        r"\N{DASH}",
        r"[\x41-\x43]",
        r"\0",
        "(?x) a b ",
        "(?x:a b)",
        r"[\d-z]",
    ],
)
def test_what_the_parser_does_not_read_is_refused(source):
    with pytest.raises(Unsupported):
        parse(source)


def test_an_alternative_not_read_is_searched_with_plain_re_and_the_others_keep_their_shortcuts():
    regex = re.compile(r"\bignore\s+rules\b|\bcaf\xe9\x21|\bobey\b", re.DOTALL)
    parts = QuickSearch.of(regex, cased=False).parts
    assert [finder.pattern for _, finder in parts][1] == r"\bcaf\xe9\x21"  # as written: no starting shortcut
    assert parts[1][0] == Needs() and parts[0][0].clauses and parts[2][0].clauses
    quick = QuickSearch.of(regex, cased=False)
    for text in ["a café! here", "ignore  rules", "obey", "nothing", "cafe!"]:
        reading = Reading(text)
        assert quick.found(reading, reading.lower) is (regex.search(reading.lower) is not None), text
    # The whole regex not read: its needs are none, and its starting search is itself.
    verbose = re.compile(r"\b (?: ignore | obey ) \b", re.VERBOSE)
    assert needs_of(verbose, cased=False) == Needs() and starting_search(verbose) is verbose
    assert QuickSearch.of(verbose, cased=False).found(Reading("x obey y"), "x obey y")


def test_every_shipped_pattern_is_read_so_none_runs_without_its_shortcuts():
    """A pattern edited with a construct the parser does not read would still find the same texts, only slower
    (searched with plain re at every position of every chunk): this says which, so that the parser learns it."""
    unread = [pattern.name for pattern in PATTERNS for _, parsed in _alternatives(pattern.regex) if parsed is None]
    assert unread == [], f"regex_parse does not read these patterns (add what they use to it): {unread}"
