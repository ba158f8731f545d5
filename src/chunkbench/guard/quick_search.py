"""A regex search that skips what it can, with the shortcuts read from the regex itself.

A failing ``re`` search of a 2,000-character chunk costs 40-400 µs (``re`` tries the regex at every position), and
the injection screen runs about fifty regexes on every reading of every chunk, nearly all of them failing.
``QuickSearch`` finds a regex in exactly the texts ``re.search`` does, with three shortcuts:

- the regex is searched as the alternatives it is made of ("a|b|c"), each on its own;
- an alternative runs only on a text that meets its ``Needs`` (guard/regex_needs.py), what every match of it
  contains: for each of a few clauses, one of the clause's whole words, looked up in the set of the text's words,
  or one of its pieces (``"you are now"``, ``"://"``), looked for in the text with its whitespace runs as one space;
- an alternative that starts with ``\\b`` or an alternation is searched as ``[C](?<=(?=R).)``, C the characters a
  match can start with, so that ``re`` skips every other position in its own loop.

All three are derived from the regex as chunkbench's own parser reads it (guard/regex_parse.py; not ``re``'s own parser,
which is private to CPython), so they follow every edit of a pattern; an alternative written with a construct that
parser does not read is searched with plain ``re``. Each rule of the analysis only forgets what a match contains,
never adds to it: a text the regex matches always meets its needs, and the shortcuts never change what is found
(``tests/test_injection_needs.py``: random regexes of every construct read here, the shipped patterns on random
texts and on the labelled attacks; ``tests/test_regex_parse.py``: random regexes of the whole syntax the parser
reads; ``tests/test_injection_verdicts.py``: the screen's verdicts on 2,056 texts).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chunkbench.guard.regex_needs import Needs, Text, is_word_char, needs_of, needs_of_parsed
from chunkbench.guard.regex_parse import REPEATS, Category, Item, Op, Unsupported, parse

__all__ = ["Needs", "QuickSearch", "alternatives", "needs_of", "starting_search", "words_of"]


@dataclass(frozen=True)
class QuickSearch:
    """``regex`` searched as its alternatives, each with its needs and its fastest equivalent regex."""

    parts: tuple[tuple[Needs, re.Pattern[str]], ...]

    @classmethod
    def of(cls, regex: re.Pattern[str], *, cased: bool) -> QuickSearch:
        """For ``regex`` searched on lower-cased text, or (``cased``) on the text as written."""
        parts = []
        for source, parsed in _alternatives(regex):  # each parsed once for both shortcuts
            if parsed is None:  # not read by regex_parse: no shortcut, plain re
                parts.append((Needs(), re.compile(source, regex.flags)))
                continue
            finder = re.compile(_starting_source(source, parsed, regex.flags) or source, regex.flags)
            parts.append((needs_of_parsed(parsed, regex.flags, cased), finder))
        return cls(tuple(parts))

    def found(self, text: Text, searched: str) -> bool:
        """Whether ``regex`` matches ``searched`` (``text`` as the regex reads it: as written or lower-cased)."""
        return any(needs.met(text) and finder.search(searched) is not None for needs, finder in self.parts)


# --------------------------------------------------------------------------- the alternatives of a regex

_WHOLE_GROUP = re.compile(r"(\\b)?\(\?:(.*)\)", re.DOTALL)
_BACKREFERENCE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")


def alternatives(regex: re.Pattern[str]) -> list[re.Pattern[str]]:
    """The top-level alternatives of ``regex`` ("a|b|c"; "\\b(?:a|b)" as "\\ba" and "\\bb"), compiled with its
    flags: a text holds a match of ``regex`` exactly when it holds a match of one of them. ``[regex]`` when it has
    none (or is written in VERBOSE, where whitespace and comments would hide the structure)."""
    return [re.compile(source, regex.flags) for source, _ in _alternatives(regex)]


def _alternatives(regex: re.Pattern[str]) -> list[tuple[str, list[Item] | None]]:
    """``alternatives`` as sources, each with its parsed items, or None where regex_parse does not read it."""
    parts = _split(regex) or [regex.pattern]
    return [(part, _parsed(part, regex.flags)) for part in parts]


def _split(regex: re.Pattern[str]) -> list[str] | None:
    """The sources of the top-level alternatives of ``regex``, or None where it is not split."""
    if regex.flags & re.VERBOSE or _BACKREFERENCE.search(regex.pattern):  # a split could renumber what \1 means
        return None
    parts = _split_top_level(regex.pattern)
    if len(parts) == 1 and (group := _WHOLE_GROUP.fullmatch(regex.pattern)) and _closes_at_end(group.group(2)):
        prefix = group.group(1) or ""
        parts = [prefix + part for part in _split_top_level(group.group(2))]
    if len(parts) == 1 or not all(parts):
        return None
    try:
        for part in parts:
            re.compile(part, regex.flags)
    except re.error:  # a split the structure did not allow (a group reference across alternatives, …)
        return None
    return parts


def _parsed(source: str, flags: int) -> list[Item] | None:
    try:
        return parse(source, flags)
    except Unsupported:
        return None


def _scan(pattern: str) -> Iterable[tuple[int, str, int]]:
    """The characters of a regex's source outside escapes and character classes: (index, character, depth)."""
    depth = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":  # to the closing ], which may come first ("[]]", "[^]]") and be escaped
            index += 1
            index += pattern[index : index + 1] == "^"
            index += pattern[index : index + 1] == "]"
            while index < len(pattern) and pattern[index] != "]":
                index += 2 if pattern[index] == "\\" else 1
            index += 1
            continue
        if char == ")":
            depth -= 1
        yield index, char, depth
        if char == "(":
            depth += 1
        index += 1


def _split_top_level(pattern: str) -> list[str]:
    cuts = [index for index, char, depth in _scan(pattern) if char == "|" and depth == 0]
    bounds = [-1, *cuts, len(pattern)]
    return [pattern[start + 1 : end] for start, end in itertools.pairwise(bounds)]


def _closes_at_end(inner: str) -> bool:
    """Whether ``inner`` (what a group holds) is balanced: the group's ``)`` is the last character of the regex."""
    return (
        all(depth >= 0 for _, _, depth in _scan(inner))
        and sum((char == "(") - (char == ")") for _, char, _ in _scan(inner)) == 0
    )


# --------------------------------------------------------------------------- the words of a text

_ASCII_NOT_WORD_TO_SPACE = bytes(32 if byte < 128 and not is_word_char(chr(byte)) else byte for byte in range(256))
_WORD_RUN = re.compile(r"\w+")


def words_of(text: str) -> set[bytes]:
    """The whole words (maximal runs of ``\\w``) of a lower-cased text, UTF-8 encoded, as ``Needs.met`` looks them
    up. Splitting the UTF-8 bytes at ASCII non-word characters is ~3× faster than ``re.findall(r"\\w+")``; the few
    pieces that hold non-ASCII characters (word characters or not) are split again by ``\\w`` itself."""
    words = set(text.encode("utf-8").translate(_ASCII_NOT_WORD_TO_SPACE).split())
    if not text.isascii():
        for piece in [piece for piece in words if not piece.isascii()]:
            words.discard(piece)
            words.update(word.encode("utf-8") for word in _WORD_RUN.findall(piece.decode("utf-8")))
    return words


# --------------------------------------------------------------------------- where a match can start

_CATEGORY_ESCAPES = {
    Category.DIGIT: r"\d",
    Category.SPACE: r"\s",
    Category.WORD: r"\w",
}
# A class of more characters than this finds a start at too many positions to pay for the lookbehind it adds.
_MAX_FIRST_CHARS = 20
_LEADING_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\)|\(\?#[^)]*\))*")  # and comments, which may come before them


class _NoStart(Exception):
    """The first character of a match cannot be told as a short class of characters."""


def starting_search(regex: re.Pattern[str]) -> re.Pattern[str]:
    """A regex that ``search`` finds in exactly the texts ``regex`` matches, but faster where ``regex`` starts with
    \\b or an alternation (``re`` then tries every alternative at every position): ``[C](?<=(?=R).)`` skips, inside
    ``re``'s own loop, every position whose character is not in C, the characters a match of R can start with, and
    tries R where one is. ``regex`` itself when no such short class exists, or when ``re`` already skips (a regex
    that starts with a literal character)."""
    parsed = _parsed(regex.pattern, regex.flags)
    source = None if parsed is None else _starting_source(regex.pattern, parsed, regex.flags)
    return regex if source is None else re.compile(source, regex.flags)


def _starting_source(source: str, parsed: list[Item], flags: int) -> str | None:
    if not parsed or parsed[0][0] is Op.LITERAL or flags & (re.IGNORECASE | re.LOCALE):
        return None
    try:
        chars, empty = _first_chars(parsed)
    except _NoStart:
        return None
    if empty or not chars or len(chars) > _MAX_FIRST_CHARS or chars & set(_CATEGORY_ESCAPES.values()):
        return None
    # Flags written at the start of the regex ("(?s)") are in ``flags`` already, and would be an error inside.
    inner = _LEADING_FLAGS.sub("", source, count=1)
    return f"[{''.join(sorted(chars))}](?<=(?={inner})(?s:.))"


def _first_chars(sub: list[Item]) -> tuple[set[str], bool]:
    """The characters (as class members) a match of ``sub`` can start with, and whether it can match nothing."""
    chars: set[str] = set()
    for op, av in sub:
        if op in (Op.AT, Op.ASSERT, Op.ASSERT_NOT):
            continue  # zero width: the first character comes after
        if op is Op.LITERAL:
            return chars | {re.escape(chr(av))}, False
        if op is Op.IN:
            return chars | _class_members(av), False
        if op is Op.BRANCH:
            empty = False
            for alternative in av[1]:
                alternative_chars, alternative_empty = _first_chars(alternative)
                chars |= alternative_chars
                empty = empty or alternative_empty
            if not empty:
                return chars, False
        elif op is Op.SUBPATTERN:
            if av[1] & (re.IGNORECASE | re.LOCALE) or av[2] & re.IGNORECASE:
                raise _NoStart
            group_chars, group_empty = _first_chars(av[3])
            chars |= group_chars
            if not group_empty:
                return chars, False
        elif op in REPEATS:
            body_chars, body_empty = _first_chars(av[2])
            chars |= body_chars
            if av[0] >= 1 and not body_empty:
                return chars, False
        elif op is Op.ATOMIC_GROUP:
            group_chars, group_empty = _first_chars(av)
            chars |= group_chars
            if not group_empty:
                return chars, False
        else:
            raise _NoStart  # ANY, NOT_LITERAL, GROUPREF, …
    return chars, True


def _class_members(members: list[tuple[Op, Any]]) -> set[str]:
    out: set[str] = set()
    for op, av in members:
        if op is Op.LITERAL:
            out.add(re.escape(chr(av)))
        elif op is Op.RANGE:
            out.add(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
        elif op is Op.CATEGORY and av in _CATEGORY_ESCAPES:
            out.add(_CATEGORY_ESCAPES[av])
        else:
            raise _NoStart  # NEGATE, other categories
    return out
