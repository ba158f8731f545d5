"""What every match of a regex contains, read from its parsed form (guard/regex_parse.py): ``Needs``, the clauses a
text meets before the regex can match it, for guard/quick_search.py.

Each clause is one of a few whole words (maximal runs of ``\\w``), looked up in the set of the text's words, or one
of a few pieces (``"you are now"``, ``"://"``), looked for in the text with its whitespace runs as one space. Each
rule of the analysis only forgets what a match contains, never adds to it: a text the regex matches always meets
its needs. Which clauses are kept is a guess at what is rare in text (``_COMMON_WORDS``): it decides the speed only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chunkbench.guard.regex_parse import REPEATS, At, Category, Item, Op, Unsupported, parse

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
# The positions a word cannot continue across (\B is not one), and the categories of word characters.
_BOUNDARIES = frozenset({At.BOUNDARY, At.BEGINNING, At.BEGINNING_STRING, At.END, At.END_STRING})
_WORD_CATEGORIES = frozenset({Category.WORD, Category.DIGIT})
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


def is_word_char(char: str) -> bool:
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
    if left[-1] == MARK and not is_word_char(right[0]) and right[0] != WORDY:
        return left[:-1] + right  # a boundary before a non-word character says nothing more
    if right[0] == MARK and not is_word_char(left[-1]) and left[-1] != WORDY:
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
        if not is_word_char(char):
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
    """The needs of ``regex``, searched on lower-cased text, or (``cased``) on the text as written; none (it runs
    on every text) for a regex written with what guard/regex_parse.py does not read."""
    try:
        parsed = parse(regex.pattern, regex.flags)
    except Unsupported:
        return Needs()
    return needs_of_parsed(parsed, regex.flags, cased)


def needs_of_parsed(parsed: list[Item], flags: int, cased: bool) -> Needs:
    """``needs_of`` a regex already parsed (``regex_parse.parse``) and compiled with ``flags``."""
    if flags & (re.ASCII | re.LOCALE):  # other word characters than those of words_of
        return Needs()
    context = _Context(cased, bool(flags & re.IGNORECASE))
    return _clauses(_sequence(_items(parsed, context), _NOTHING, bounded_after=False).need())


_Item = tuple[Op, Any, _Context]


def _items(sub: list[Item], context: _Context) -> list[_Item]:
    return [(op, av, context) for op, av in sub]


def _sequence(items: Sequence[_Item], before: _Part, *, bounded_after: bool) -> _Part:
    """What ``items`` in a row can match, ``before`` (spelled out) coming right before them; ``bounded_after``: what
    comes after them starts with a boundary."""
    needs: list[Query] = []
    current = before
    pending = list(reversed(items))  # the next item last
    while pending:
        op, av, context = pending.pop()
        if op is Op.SUBPATTERN:  # a group: its items in line, under its own flags
            _, add_flags, del_flags, sub = av
            if add_flags & (re.ASCII | re.LOCALE):
                needs.append(current.need())
                current = _NOTHING
                continue
            ignore_case = (context.ignore_case or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
            pending.extend(reversed(_items(sub, _Context(context.cased, ignore_case))))
            continue
        if op is Op.ASSERT:  # a lookaround: what it sees is in the text too, and it takes no room
            needs.append(_sequence(_items(av[1], context), _NOTHING, bounded_after=False).need())
            continue
        if op is Op.BRANCH:  # each alternative read after what comes before, knowing whether a boundary follows
            after = _starts_bounded(pending[::-1]) if pending else bounded_after
            alternatives = [_sequence(_items(alt, context), current, bounded_after=after) for alt in av[1]]
            spelled = [alt.exact for alt in alternatives]
            if all(strings is not None for strings in spelled) and sum(len(s or ()) for s in spelled) <= _MAX_STRINGS:
                current = _Part(frozenset().union(*(s for s in spelled if s is not None)))
            else:
                needs.append(_any_of(alt.need() for alt in alternatives))
                current = _NOTHING
            continue
        if op is Op.LITERAL:  # a run of literal characters is read as one string
            chars = [context.char(chr(av))]
            while pending and pending[-1][0] is Op.LITERAL and pending[-1][2] == context:
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
    if op in (Op.ASSERT, Op.ASSERT_NOT) or (op is Op.AT and av not in _BOUNDARIES):
        return _starts_bounded(rest)
    if op is Op.AT:
        return True
    if op is Op.SUBPATTERN:
        return _starts_bounded([*_items(av[3], context), *rest])
    if op is Op.BRANCH:
        return all(_starts_bounded([*_items(alt, context), *rest]) for alt in av[1])
    if op in REPEATS:  # present: its body comes first; absent (at least zero times): what follows does
        body = _starts_bounded(_items(av[2], context))
        return body and (av[0] >= 1 or _starts_bounded(rest))
    first = _parts(op, av, context)[0]
    return first.exact is not None and all(string[:1] and _is_separator(string[0]) for string in first.exact)


def _is_separator(char: str) -> bool:
    """Whether a character of a spelled-out string ends a word: a boundary or a non-word character."""
    return char != WORDY and not is_word_char(char)


def _parts(op: Op, av: Any, context: _Context) -> list[_Part]:
    """What one item of a regex matches, as parts read in a row."""
    if op is Op.LITERAL:
        char = context.char(chr(av))
        return [_ANYTHING if char is None else _Part(frozenset({char}))]
    if op is Op.IN:
        return [_char_class(av, context)]
    if op is Op.AT:
        return [_Part(frozenset({MARK})) if av in _BOUNDARIES else _NOTHING]
    if op is Op.ASSERT_NOT:
        return [_NOTHING]
    if op is Op.ATOMIC_GROUP:
        return [_sequence(_items(av, context), _NOTHING, bounded_after=False)]
    if op in REPEATS:
        return _repeat(av, context)
    return [_ANYTHING]  # ANY, NOT_LITERAL, GROUPREF, …: anything at all


def _char_class(members: Any, context: _Context) -> _Part:
    chars: set[str | None] = set()
    word_kinds: set[bool] = set()  # whether the members are word characters
    for op, av in members:
        if op is Op.LITERAL:
            chars.add(context.char(chr(av)))
            word_kinds.add(is_word_char(chr(av)))
        elif op is Op.RANGE and av[1] - av[0] < 128:
            span = [chr(code) for code in range(av[0], av[1] + 1)]
            if not all(is_word_char(char) and char.isascii() for char in span):
                return _ANYTHING
            chars.update(context.char(char) for char in span)
            word_kinds.add(True)
        elif op is Op.CATEGORY and av is Category.SPACE:
            chars.add(SPACE)
            word_kinds.add(False)
        elif op is Op.CATEGORY and av is Category.NOT_WORD:
            chars.add(GAP)
            word_kinds.add(False)
        elif op is Op.CATEGORY and av in _WORD_CATEGORIES and not (context.cased or context.ignore_case):
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
