"""A regex search that skips what it can, with the shortcuts read from the regex itself.

A failing ``re`` search of a 2,000-character chunk costs 40-400 µs (``re`` tries the regex at every position), and
the injection screen runs about fifty regexes on every reading of every chunk, nearly all of them failing.
``QuickSearch`` finds a regex in exactly the texts ``re.search`` does, with three shortcuts:

- the regex is searched as the alternatives it is made of ("a|b|c"), each on its own;
- an alternative runs only on a text that meets its ``Needs``, what every match of it contains: for each of a few
  clauses, one of the clause's whole words (maximal runs of ``\\w``), looked up in the set of the text's words, or
  one of its pieces (``"you are now"``, ``"://"``), looked for in the text with its whitespace runs as one space;
- an alternative that starts with ``\\b`` or an alternation is searched as ``[C](?<=(?=R).)``, C the characters a
  match can start with, so that ``re`` skips every other position in its own loop.

All three are derived from the parsed regex (``re._parser``, the parser ``re`` itself compiles from), so they
follow every edit of a pattern. Each rule of the analysis only forgets what a match contains, never adds to it: a
text the regex matches always meets its needs, and the shortcuts never change what is found
(``tests/test_injection_needs.py``: random regexes of every construct read here, the shipped patterns on random
texts and on the labelled attacks; ``tests/test_injection_verdicts.py``: the screen's verdicts on 2,056 texts).
Which clauses are kept is a guess at what is rare in text (``_COMMON_WORDS``): it decides the speed only.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from re import _constants as sre  # the opcodes of re's own parser (CPython ≥ 3.11)
from re import _parser as sre_parse
from typing import Any, Protocol

# The analysis spells out what a match can look like: the characters the regex names, and four of its own.
MARK = "\x00"  # a zero-width boundary (\b, ^, $): no word continues across it
SPACE = " "  # a run of whitespace, a single space once the text's whitespace runs are folded
GAP = "\x02"  # one or more non-word characters of unknown value (\W, [,;\s], non-ASCII punctuation read cased)
WORDY = "\x01"  # one or more word characters of unknown value (\w, \d): a word continues across it, unnamed
_UNKNOWN = f"{MARK}{GAP}{WORDY}"
# Past this many alternative strings a part of a regex is no longer spelled out, only what each one needs.
_MAX_STRINGS = 32
# How many clauses a regex keeps, cheap and selective first: each one more costs a lookup on the texts it reaches.
_MAX_CLAUSES = 4
_BOUNDARIES = frozenset(
    {sre.AT_BOUNDARY, sre.AT_UNI_BOUNDARY, sre.AT_BEGINNING, sre.AT_BEGINNING_STRING, sre.AT_END, sre.AT_END_STRING}
)
_SPACE_CATEGORIES = frozenset({sre.CATEGORY_SPACE, sre.CATEGORY_UNI_SPACE})
_NOT_WORD_CATEGORIES = frozenset({sre.CATEGORY_NOT_WORD, sre.CATEGORY_UNI_NOT_WORD})
_WORD_CATEGORIES = frozenset({sre.CATEGORY_WORD, sre.CATEGORY_UNI_WORD, sre.CATEGORY_DIGIT, sre.CATEGORY_UNI_DIGIT})
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
# Words so frequent in any text that a clause holding one rejects almost nothing. Only the speed depends on this
# list (which clauses are kept and tried first), never a verdict.
_COMMON_WORDS = frozenset([
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "by", "for", "from", "with", "as", "is", "are",
    "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "we", "our", "they", "their", "he",
    "she", "his", "her", "not", "no", "do", "does", "did", "if", "when", "then", "than", "so", "can", "could",
    "will", "would", "should", "may", "must", "have", "has", "had", "all", "any", "some", "each", "every", "one",
    "new", "into", "about", "over", "after", "before", "what", "which", "who", "how", "there", "here", "more",
    "most", "other", "such", "also", "only", "s", "t",
])  # fmt: skip


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"  # exactly what \w matches in a str pattern


class Text(Protocol):
    """A text as ``Needs.met`` reads it: its whole words, and its lower-cased form with whitespace runs folded to
    single spaces (computed only when a clause needs it)."""

    @property
    def words(self) -> set[bytes]: ...

    @property
    def folded(self) -> str: ...


@dataclass(frozen=True)
class Needs:
    """Clauses a text meets before the regex can match it: for each, one of ``words`` is a whole word of the text,
    or one of ``pieces`` is in its folded form and the whole words that guard it are in the text. No clause: the
    regex runs on every text."""

    clauses: tuple[tuple[frozenset[bytes], tuple[tuple[frozenset[bytes], str], ...]], ...] = ()

    def met(self, text: Text) -> bool:
        for words, pieces in self.clauses:
            if not words.isdisjoint(text.words):
                continue
            for guard, piece in pieces:
                if guard <= text.words and piece in text.folded:
                    break
            else:
                return False
        return True


@dataclass(frozen=True)
class QuickSearch:
    """``regex`` searched as its alternatives, each with its needs and its fastest equivalent regex."""

    parts: tuple[tuple[Needs, re.Pattern[str]], ...]

    @classmethod
    def of(cls, regex: re.Pattern[str], *, cased: bool) -> QuickSearch:
        """For ``regex`` searched on lower-cased text, or (``cased``) on the text as written."""
        parts = []
        for source, parsed in _alternatives(regex):  # each parsed once for both shortcuts
            finder = re.compile(_starting_source(source, parsed, regex.flags) or source, regex.flags)
            parts.append((_needs(parsed, regex.flags, cased), finder))
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


def _alternatives(regex: re.Pattern[str]) -> list[tuple[str, Any]]:
    whole = [(regex.pattern, sre_parse.parse(regex.pattern, regex.flags))]
    if regex.flags & re.VERBOSE or _BACKREFERENCE.search(regex.pattern):  # a split could renumber what \1 means
        return whole
    parts = _split_top_level(regex.pattern)
    if len(parts) == 1 and (group := _WHOLE_GROUP.fullmatch(regex.pattern)) and _closes_at_end(group.group(2)):
        prefix = group.group(1) or ""
        parts = [prefix + part for part in _split_top_level(group.group(2))]
    if len(parts) == 1 or not all(parts):
        return whole
    try:
        return [(part, sre_parse.parse(part, regex.flags)) for part in parts]
    except re.error:  # a split the structure did not allow (a group reference across alternatives, …)
        return whole


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

_ASCII_NOT_WORD_TO_SPACE = bytes(32 if byte < 128 and not _is_word_char(chr(byte)) else byte for byte in range(256))
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


# --------------------------------------------------------------------------- from a regex to what a match contains

# A query: ("lit", string) — the spelled-out string is in the match; ("and", items); ("or", items).
Query = tuple[Any, ...]
TRUE: Query = ("and", ())


def _unique(items: list[Query]) -> list[Query]:
    # Spelled-out strings repeat; a nested query is kept as it is (hashing one costs its whole size, at every level).
    seen: set[object] = set()
    unique = []
    for item in items:
        key = item if item[0] == "lit" else id(item)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def _any_of(items: Iterable[Query]) -> Query:
    flat: list[Query] = []
    for item in items:
        if item == TRUE:
            return TRUE
        flat += item[1] if item[0] == "or" else [item]
    unique = _unique(flat)
    return unique[0] if len(unique) == 1 else ("or", tuple(unique))


def _all_of(items: Iterable[Query]) -> Query:
    flat: list[Query] = []
    for item in items:
        if item != TRUE:
            flat += item[1] if item[0] == "and" else [item]
    unique = _unique(flat)
    return TRUE if not unique else unique[0] if len(unique) == 1 else ("and", tuple(unique))


def _separator_run(run: str) -> str:
    """A run of MARK, SPACE and GAP said as little as it says: GAP if any (it may hold whitespace), else SPACE, else
    MARK."""
    return GAP if GAP in run else SPACE if SPACE in run else MARK


_JOINABLE = frozenset((MARK, SPACE, GAP))
_TAIL_RUN = re.compile(f"[{MARK}{SPACE}{GAP}]+\\Z")
_HEAD_RUN = re.compile(f"[{MARK}{SPACE}{GAP}]+")


def _joined(left: str, right: str) -> str:
    if not left or not right:
        return left + right
    if left[-1] == right[0] == WORDY:
        return left + right[1:]
    if left[-1] in _JOINABLE and right[0] in _JOINABLE:
        tail = _TAIL_RUN.search(left)
        head = _HEAD_RUN.match(right)
        assert tail is not None and head is not None
        return left[: tail.start()] + _separator_run(tail.group() + head.group()) + right[head.end() :]
    if left[-1] == MARK and not _is_word_char(right[0]) and right[0] != WORDY:
        return left[:-1] + right  # a boundary before a non-word character says nothing more
    if right[0] == MARK and not _is_word_char(left[-1]) and left[-1] != WORDY:
        return left + right[1:]
    return left + right


@dataclass(frozen=True)
class _Part:
    """What a piece of regex can match: one of the strings of ``exact`` (spelled out), or, where those would be too
    many, only ``query``."""

    exact: frozenset[str] | None = None
    query: Query = TRUE

    def need(self) -> Query:
        if self.exact is None:
            return self.query
        return _any_of(("lit", string) for string in sorted(self.exact))


_ANYTHING = _Part()
_NOTHING = _Part(frozenset({""}))


@dataclass(frozen=True)
class _Context:
    """How a regex reads characters: on the lower-cased text, or (``cased``) on the text as written, whose words
    are then looked up lower-cased; and whether IGNORECASE is on."""

    cased: bool
    ignore_case: bool

    def char(self, char: str) -> str | None:
        """The character as the lower-cased text has it: itself, SPACE, GAP or WORDY when only its kind is sure,
        None when not even that is."""
        if char.isspace():
            return SPACE  # lower-casing leaves whitespace as it is and makes none (a test pins this)
        if not _is_word_char(char):
            # Lower-casing never turns a non-word character into a word character (a test pins this); only ASCII
            # punctuation is sure to keep its value under lower-casing and IGNORECASE.
            return char if char.isascii() or not (self.cased or self.ignore_case) else GAP
        if self.ignore_case:
            # (?i)s also matches 'ſ', (?i)i 'ı' and 'İ' (which lower-cases to two characters, one not a word
            # character); (?i)k matches 'K' (Kelvin sign), which lower-cases to k.
            return char.lower() if char.isascii() and char.lower() not in "is" else None
        if self.cased:
            return char.lower() if char.isascii() else None
        return char


def needs_of(regex: re.Pattern[str], *, cased: bool) -> Needs:
    """The needs of ``regex``, searched on lower-cased text, or (``cased``) on the text as written."""
    return _needs(sre_parse.parse(regex.pattern, regex.flags), regex.flags, cased)


def _needs(parsed: Any, flags: int, cased: bool) -> Needs:
    if flags & (re.ASCII | re.LOCALE):  # other word characters than those of words_of
        return Needs()
    context = _Context(cased, bool(flags & re.IGNORECASE))
    return _clauses(_sequence(_items(parsed, context), _NOTHING, bounded_after=False).need())


_Item = tuple[Any, Any, _Context]


def _items(sub: Any, context: _Context) -> list[_Item]:
    return [(op, av, context) for op, av in sub.data]


def _sequence(items: Sequence[_Item], before: _Part, *, bounded_after: bool) -> _Part:
    """What ``items`` in a row can match, ``before`` (spelled out) coming right before them; ``bounded_after``: what
    comes after them starts with a boundary."""
    needs: list[Query] = []
    current = before
    pending = list(reversed(items))  # the next item last
    while pending:
        op, av, context = pending.pop()
        if op is sre.SUBPATTERN:  # a group: its items in line, under its own flags
            _, add_flags, del_flags, sub = av
            if add_flags & (re.ASCII | re.LOCALE):
                needs.append(current.need())
                current = _NOTHING
                continue
            ignore_case = (context.ignore_case or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
            pending.extend(reversed(_items(sub, _Context(context.cased, ignore_case))))
            continue
        if op is sre.ASSERT:  # a lookaround: what it sees is in the text too, and it takes no room
            needs.append(_sequence(_items(av[1], context), _NOTHING, bounded_after=False).need())
            continue
        if op is sre.BRANCH:  # each alternative read after what comes before, knowing whether a boundary follows
            after = _starts_bounded(pending[::-1]) if pending else bounded_after
            alternatives = [_sequence(_items(alt, context), current, bounded_after=after) for alt in av[1]]
            spelled = [alt.exact for alt in alternatives]
            if all(strings is not None for strings in spelled) and sum(len(s or ()) for s in spelled) <= _MAX_STRINGS:
                current = _Part(frozenset().union(*(s for s in spelled if s is not None)))
            else:
                needs.append(_any_of(alt.need() for alt in alternatives))
                current = _NOTHING
            continue
        if op is sre.LITERAL:  # a run of literal characters is read as one string
            chars = [context.char(chr(av))]
            while pending and pending[-1][0] is sre.LITERAL and pending[-1][2] == context:
                chars.append(context.char(chr(pending.pop()[1])))
            parts = _literal_run(chars)
        else:
            parts = _parts(op, av, context)
        for part in parts:
            if part.exact is None:
                needs += [current.need(), part.need()]
                current = _NOTHING
            elif current.exact is not None and len(current.exact) * len(part.exact) <= _MAX_STRINGS:
                current = _Part(frozenset(_joined(left, right) for left in current.exact for right in part.exact))
            else:  # too many strings: what came before is only needed, but whether it ended a word is kept
                needs.append(current.need())
                ended = all(string and _is_separator(string[-1]) for string in current.exact or ())
                current = _Part(frozenset(_joined(MARK, string) for string in part.exact)) if ended else part
    if bounded_after and current.exact is not None:
        current = _Part(frozenset(_joined(string, MARK) for string in current.exact))
    if not needs:
        return current
    return _Part(query=_all_of([*needs, current.need()]))


def _literal_run(chars: list[str | None]) -> list[_Part]:
    """Literal characters in a row: one string, broken where a character is not known (None)."""
    parts: list[_Part] = []
    run = ""
    for char in chars:
        if char is None:
            parts += [_Part(frozenset({run})), _ANYTHING]
            run = ""
        else:
            run = _joined(run, char)
    return [*parts, _Part(frozenset({run}))]


def _starts_bounded(items: Sequence[_Item]) -> bool:
    """Whether every match of ``items`` starts with a boundary (zero-width items skipped)."""
    if not items:
        return False
    (op, av, context), rest = items[0], items[1:]
    if op in (sre.ASSERT, sre.ASSERT_NOT) or (op is sre.AT and av not in _BOUNDARIES):
        return _starts_bounded(rest)
    if op is sre.AT:
        return True
    if op is sre.SUBPATTERN:
        return _starts_bounded([*_items(av[3], context), *rest])
    if op is sre.BRANCH:
        return all(_starts_bounded([*_items(alt, context), *rest]) for alt in av[1])
    if op in _REPEATS:  # present: its body comes first; absent (at least zero times): what follows does
        body = _starts_bounded(_items(av[2], context))
        return body and (av[0] >= 1 or _starts_bounded(rest))
    first = _parts(op, av, context)[0]
    return first.exact is not None and all(string[:1] and _is_separator(string[0]) for string in first.exact)


def _is_separator(char: str) -> bool:
    """Whether a character of a spelled-out string ends a word: a boundary or a non-word character."""
    return char != WORDY and not _is_word_char(char)


def _parts(op: Any, av: Any, context: _Context) -> list[_Part]:
    """What one item of a regex matches, as parts read in a row."""
    if op is sre.LITERAL:
        char = context.char(chr(av))
        return [_ANYTHING if char is None else _Part(frozenset({char}))]
    if op is sre.IN:
        return [_char_class(av, context)]
    if op is sre.AT:
        return [_Part(frozenset({MARK})) if av in _BOUNDARIES else _NOTHING]
    if op is sre.ASSERT_NOT:
        return [_NOTHING]
    if op is sre.ATOMIC_GROUP:
        return [_sequence(_items(av, context), _NOTHING, bounded_after=False)]
    if op in _REPEATS:
        return _repeat(av, context)
    return [_ANYTHING]  # ANY, NOT_LITERAL, GROUPREF, …: anything at all


def _char_class(members: Any, context: _Context) -> _Part:
    chars: set[str | None] = set()
    word_kinds: set[bool] = set()  # whether the members are word characters
    for op, av in members:
        if op is sre.LITERAL:
            chars.add(context.char(chr(av)))
            word_kinds.add(_is_word_char(chr(av)))
        elif op is sre.RANGE and av[1] - av[0] < 128:
            span = [chr(code) for code in range(av[0], av[1] + 1)]
            if not all(_is_word_char(char) and char.isascii() for char in span):
                return _ANYTHING
            chars.update(context.char(char) for char in span)
            word_kinds.add(True)
        elif op is sre.CATEGORY and av in _SPACE_CATEGORIES:
            chars.add(SPACE)
            word_kinds.add(False)
        elif op is sre.CATEGORY and av in _NOT_WORD_CATEGORIES:
            chars.add(GAP)
            word_kinds.add(False)
        elif op is sre.CATEGORY and av in _WORD_CATEGORIES and not (context.cased or context.ignore_case):
            chars.add(WORDY)
            word_kinds.add(True)
        else:  # NEGATE, a wide range, another category, a word category whose characters could lower-case oddly
            return _ANYTHING
    if None in chars or len(word_kinds) != 1:
        return _ANYTHING
    if len(chars) > 8 or (SPACE in chars and len(chars) > 1):  # [\s,] may be a space, a comma, or both
        return _Part(frozenset({WORDY if True in word_kinds else GAP}))
    return _Part(frozenset(char for char in chars if char is not None))


def _repeat(av: Any, context: _Context) -> list[_Part]:
    low, high, sub = av
    body = _sequence(_items(sub, context), _NOTHING, bounded_after=False)
    if body.exact is None:
        return [_Part(query=body.need())] if low else [_ANYTHING]
    if body.exact <= {MARK, SPACE, GAP} or body.exact == {WORDY}:  # any run of these reads as one of them
        return [body] if low else [_Part(body.exact | {""})]
    if all(string and all(map(_is_separator, string)) for string in body.exact):
        # Repeated non-word characters ("#+", "\\*+"): one of them, then perhaps more non-word characters.
        once = body.exact | {_joined(string, GAP) for string in body.exact}
        return [_Part(frozenset(once))] if low else [_Part(once | {""})]
    if high <= 3:  # spelled out: the body low to high times
        spelled: set[str] = set()
        power = {""}
        for count in range(1, high + 1):
            power = {_joined(left, right) for left in power for right in body.exact}
            if count >= low:
                spelled |= power
            if len(spelled) > _MAX_STRINGS:
                break
        else:
            return [_Part(frozenset(spelled | ({""} if low == 0 else set())))]
    return [body, _ANYTHING] if low else [_ANYTHING]


# --------------------------------------------------------------------------- from the query to clauses

# What a clause looks up: (word, None), a whole word; (piece, guard), a piece of the folded text, searched for only
# when the whole words ``guard`` (all needed too) are in the text.
_Feature = tuple[str, frozenset[str] | None]
_WORD_RUNS = re.compile(r"((?:\w|\x01)+)")
_PIECE_BREAKS = re.compile(f"[{_UNKNOWN}]")


def _features(string: str) -> tuple[_Feature, ...]:
    """What a spelled-out string holds for sure, most selective first: its uncommon whole words (a separator on
    both sides, no WORDY), its longest piece of known characters guarded by its whole words, its common words."""
    runs = _WORD_RUNS.split(string)  # word runs at the odd indices, what separates them around
    words = list(
        dict.fromkeys(
            runs[index]
            for index in range(1, len(runs) - 1, 2)
            if runs[index - 1] and runs[index + 1] and WORDY not in runs[index]
        )
    )
    rare = sorted((word for word in words if word not in _COMMON_WORDS), key=len, reverse=True)
    longest = max((piece.strip(SPACE) for piece in _PIECE_BREAKS.split(string)), key=len)
    piece = [(longest, frozenset(words))] if longest and longest not in words else []
    return (*((word, None) for word in rare), *piece, *((word, None) for word in words if word in _COMMON_WORDS))


def _selectivity(feature: _Feature) -> float:
    """A guess at how rarely a feature is present: uncommon words, long pieces."""
    text, guard = feature
    if guard is None:
        return 1.0 if text in _COMMON_WORDS else 3.0 + len(text) / 100
    if not guard <= _COMMON_WORDS:
        return 3.5  # an uncommon word and a piece around it
    return 0.5 if len(text) < 3 else min(len(text), 15) / 5


def _searches(clause: frozenset[_Feature]) -> int:
    """How many searches of the text a clause costs when its lookups all fail (a guard of common words passes)."""
    return sum(guard is not None and guard <= _COMMON_WORDS for _, guard in clause)


def _clause_rank(clause: frozenset[_Feature]) -> tuple[float, int]:
    # A clause is as weak as its weakest member; each search costs as much as a few lookups save.
    return (min(map(_selectivity, clause)) - 0.05 * _searches(clause), -len(clause))


def _best(clauses: Iterable[frozenset[_Feature]]) -> list[frozenset[_Feature]]:
    return sorted(dict.fromkeys(clauses), key=_clause_rank, reverse=True)[:_MAX_CLAUSES]


def _cnf(query: Query) -> list[frozenset[_Feature]]:
    """Clauses that ``query`` implies (each: one of its features is present), best first."""
    kind, items = query
    if kind == "lit":
        return [frozenset({feature}) for feature in _features(items)]
    if kind == "and":
        return _best(clause for item in items for clause in _cnf(item))
    per_item = [_cnf(item) for item in items]
    if not all(per_item):
        return []
    # "or": the best clause of each alternative, joined; the second best of each, joined; …
    return _best(frozenset().union(*(cnf[min(rank, len(cnf) - 1)] for cnf in per_item)) for rank in range(_MAX_CLAUSES))


# Past this many pieces a clause costs more to check than it saves: each piece gives way to its guard's best word.
_MAX_PIECES = 12


def _affordable(clause: frozenset[_Feature]) -> frozenset[_Feature]:
    if sum(guard is not None for _, guard in clause) <= _MAX_PIECES:
        return clause
    return frozenset(
        feature if not feature[1] else (max(feature[1], key=lambda word: _selectivity((word, None))), None)
        for feature in clause
    )


def _clauses(query: Query) -> Needs:
    clauses = []
    for clause in sorted(map(_affordable, _cnf(query)), key=_searches):  # the cheapest checked first
        words = frozenset(text.encode("utf-8") for text, guard in clause if guard is None)
        pieces = tuple(
            (frozenset(word.encode("utf-8") for word in guard), text)
            for text, guard in sorted(clause, key=lambda feature: len(feature[0]))
            if guard is not None
        )
        clauses.append((words, pieces))
    return Needs(tuple(clauses))


# --------------------------------------------------------------------------- where a match can start

_CATEGORY_ESCAPES = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_UNI_DIGIT: r"\d",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_UNI_SPACE: r"\s",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_UNI_WORD: r"\w",
}
# A class of more characters than this finds a start at too many positions to pay for the lookbehind it adds.
_MAX_FIRST_CHARS = 20


class _NoStart(Exception):
    """The first character of a match cannot be told as a short class of characters."""


def starting_search(regex: re.Pattern[str]) -> re.Pattern[str]:
    """A regex that ``search`` finds in exactly the texts ``regex`` matches, but faster where ``regex`` starts with
    \\b or an alternation (``re`` then tries every alternative at every position): ``[C](?<=(?=R).)`` skips, inside
    ``re``'s own loop, every position whose character is not in C, the characters a match of R can start with, and
    tries R where one is. ``regex`` itself when no such short class exists, or when ``re`` already skips (a regex
    that starts with a literal character)."""
    source = _starting_source(regex.pattern, sre_parse.parse(regex.pattern, regex.flags), regex.flags)
    return regex if source is None else re.compile(source, regex.flags)


def _starting_source(source: str, parsed: Any, flags: int) -> str | None:
    if not parsed.data or parsed.data[0][0] is sre.LITERAL or flags & (re.IGNORECASE | re.LOCALE):
        return None
    try:
        chars, empty = _first_chars(parsed)
    except _NoStart:
        return None
    if empty or not chars or len(chars) > _MAX_FIRST_CHARS or chars & set(_CATEGORY_ESCAPES.values()):
        return None
    return f"[{''.join(sorted(chars))}](?<=(?={source})(?s:.))"


def _first_chars(sub: Any) -> tuple[set[str], bool]:
    """The characters (as class members) a match of ``sub`` can start with, and whether it can match nothing."""
    chars: set[str] = set()
    for op, av in sub.data:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # zero width: the first character comes after
        if op is sre.LITERAL:
            return chars | {re.escape(chr(av))}, False
        if op is sre.IN:
            return chars | _class_members(av), False
        if op is sre.BRANCH:
            empty = False
            for alternative in av[1]:
                alternative_chars, alternative_empty = _first_chars(alternative)
                chars |= alternative_chars
                empty = empty or alternative_empty
            if not empty:
                return chars, False
        elif op is sre.SUBPATTERN:
            if av[1] & (re.IGNORECASE | re.LOCALE) or av[2] & re.IGNORECASE:
                raise _NoStart
            group_chars, group_empty = _first_chars(av[3])
            chars |= group_chars
            if not group_empty:
                return chars, False
        elif op in _REPEATS:
            body_chars, body_empty = _first_chars(av[2])
            chars |= body_chars
            if av[0] >= 1 and not body_empty:
                return chars, False
        elif op is sre.ATOMIC_GROUP:
            group_chars, group_empty = _first_chars(av)
            chars |= group_chars
            if not group_empty:
                return chars, False
        else:
            raise _NoStart  # ANY, NOT_LITERAL, GROUPREF, …
    return chars, True


def _class_members(members: Any) -> set[str]:
    out: set[str] = set()
    for op, av in members:
        if op is sre.LITERAL:
            out.add(re.escape(chr(av)))
        elif op is sre.RANGE:
            out.add(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
        elif op is sre.CATEGORY and av in _CATEGORY_ESCAPES:
            out.add(_CATEGORY_ESCAPES[av])
        else:
            raise _NoStart  # NEGATE, other categories
    return out
