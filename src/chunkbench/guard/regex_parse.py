"""chunkbench's own parser of the regex subset the injection patterns are written in, for guard/quick_search.py.

``re`` compiles from its own parser, a module private to CPython whose opcodes and tree shape may change in any
release; reading it would tie the screen's speed (and, through a misread, its verdicts) to one Python. This parser
reads the same syntax into a tree of the same shape (``(Op, argument)`` items, lists of items for sequences) and
refuses, with ``Unsupported``, everything it does not read: back-references, conditionals, numeric escapes (``\\1``,
``\\x41``, ``\\N{…}``), VERBOSE. A refused regex is searched with plain ``re``, without shortcuts, so a construct
read here can only make a search faster, never change what it finds.

It rewrites the tree as ``re``'s own parser does (CPython 3.11), so that the shortcuts read from it are the ones
the screen was tuned on: a non-capturing group without flags is spliced into its sequence (its items repeated
together when a quantifier follows it); alternatives lose the items they all start with ("ab|ac" reads as
"a(?:b|c)"), and alternatives of single characters become a class; a class of one character is that character.

    items    := [(Op, argument), …]
    LITERAL  code point          NOT_LITERAL  code point           ANY  None
    IN       [(Member, value), …]: (LITERAL, code), (RANGE, (low, high)), (CATEGORY, Category), (NEGATE, None)
    AT       At                  BRANCH  (None, [items, …])
    SUBPATTERN (group number or None, flags added, flags removed, items)
    ASSERT / ASSERT_NOT  (1 ahead or -1 behind, items)       ATOMIC_GROUP  items
    MAX_REPEAT / MIN_REPEAT / POSSESSIVE_REPEAT  (low, high or UNBOUNDED, items)
"""

from __future__ import annotations

import enum
import re
from typing import Any


class Op(enum.Enum):
    LITERAL = "literal"
    NOT_LITERAL = "not literal"
    ANY = "any"
    IN = "in"
    AT = "at"
    BRANCH = "branch"
    SUBPATTERN = "subpattern"
    ASSERT = "assert"
    ASSERT_NOT = "assert not"
    ATOMIC_GROUP = "atomic group"
    MAX_REPEAT = "max repeat"
    MIN_REPEAT = "min repeat"
    POSSESSIVE_REPEAT = "possessive repeat"
    # Members of a class (IN) only:
    RANGE = "range"
    CATEGORY = "category"
    NEGATE = "negate"


class At(enum.Enum):
    """The zero-width positions: ``^``, ``$``, ``\\A``, ``\\Z``, ``\\b``, ``\\B``."""

    BEGINNING = "beginning"
    END = "end"
    BEGINNING_STRING = "beginning of string"
    END_STRING = "end of string"
    BOUNDARY = "boundary"
    NON_BOUNDARY = "non-boundary"


class Category(enum.Enum):
    """``\\d``, ``\\D``, ``\\s``, ``\\S``, ``\\w``, ``\\W``."""

    DIGIT = "digit"
    NOT_DIGIT = "not digit"
    SPACE = "space"
    NOT_SPACE = "not space"
    WORD = "word"
    NOT_WORD = "not word"


Item = tuple[Op, Any]
REPEATS = (Op.MAX_REPEAT, Op.MIN_REPEAT, Op.POSSESSIVE_REPEAT)
UNBOUNDED = 2**32 - 1  # the high count of *, + and {m,}: more than any text's length


class Unsupported(ValueError):
    """A construct this parser does not read: the regex is searched with plain ``re``, without shortcuts."""


_CATEGORIES = {
    "d": Category.DIGIT,
    "D": Category.NOT_DIGIT,
    "s": Category.SPACE,
    "S": Category.NOT_SPACE,
    "w": Category.WORD,
    "W": Category.NOT_WORD,
}
_POSITIONS = {"A": At.BEGINNING_STRING, "Z": At.END_STRING, "b": At.BOUNDARY, "B": At.NON_BOUNDARY}
_CONTROLS = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
# The inline flags (?aiLmsux): x (VERBOSE) is refused where it is met, since whitespace and comments then change
# what the characters around them mean.
_FLAGS = {
    "a": re.ASCII,
    "i": re.IGNORECASE,
    "L": re.LOCALE,
    "m": re.MULTILINE,
    "s": re.DOTALL,
    "u": re.UNICODE,
    "x": re.VERBOSE,
}
_REPEAT_CHARS = "*+?{"
_COUNTS = re.compile(r"([0-9]*)(?:(,)([0-9]*))?\}")  # after "{": "{3}", "{2,}", "{,5}", "{1,4}"
_SPECIAL = ".\\[{()*+?^$|"
_FLAT = frozenset({Op.LITERAL, Op.NOT_LITERAL, Op.ANY, Op.IN, Op.AT})


def parse(pattern: str, flags: int = 0) -> list[Item]:
    """The items of ``pattern`` (a regex ``re`` compiles with ``flags``); ``Unsupported`` for what is not read here.
    Flags set at its start ("(?i)…") are left to ``flags``, which ``re.compile`` already reports them in."""
    if flags & re.VERBOSE:
        raise Unsupported("a VERBOSE regex")
    parser = _Parser(pattern)
    items = parser.alternation(top=True)
    if parser.index != len(pattern):
        raise Unsupported(f"an unbalanced ')' at {parser.index}")
    return items


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.index = 0
        self.groups = 0

    def peek(self) -> str | None:
        return self.pattern[self.index] if self.index < len(self.pattern) else None

    def take(self, expected: str) -> bool:
        if self.pattern.startswith(expected, self.index):
            self.index += len(expected)
            return True
        return False

    def next(self) -> str:
        char = self.peek()
        if char is None:
            raise Unsupported("a regex that ends early")
        self.index += 1
        return char

    def alternation(self, *, top: bool = False) -> list[Item]:
        """Alternatives up to the ``)`` that closes them (not taken) or the end, folded as ``re``'s parser does."""
        branches = [self.sequence(first=top)]
        while self.take("|"):
            branches.append(self.sequence())
        if len(branches) == 1:
            return branches[0]
        items: list[Item] = []
        # Only items without a sequence inside are compared, as re's parser does (it compares those by identity).
        while all(branches) and branches[0][0][0] in _FLAT and all(branch[0] == branches[0][0] for branch in branches):
            items.append(branches[0][0])  # the item they all start with, read once before them
            for branch in branches:
                del branch[0]
        members: list[tuple[Op, Any]] = []
        for branch in branches:
            if len(branch) != 1:
                break
            op, argument = branch[0]
            if op is Op.LITERAL:
                members.append((op, argument))
            elif op is Op.IN and argument[0][0] is not Op.NEGATE:
                members.extend(argument)
            else:
                break
        else:
            return [*items, (Op.IN, _unique(members))]
        return [*items, (Op.BRANCH, (None, branches))]

    def sequence(self, *, first: bool = False) -> list[Item]:
        items: list[Item] = []
        while (char := self.peek()) is not None and char not in "|)":
            self.index += 1
            if char == "\\":
                items.append(self.escape())
            elif char not in _SPECIAL:
                items.append((Op.LITERAL, ord(char)))
            elif char == "[":
                items.append(self.char_class())
            elif char in _REPEAT_CHARS:
                self.repeat(char, items)
            elif char == ".":
                items.append((Op.ANY, None))
            elif char == "^":
                items.append((Op.AT, At.BEGINNING))
            elif char == "$":
                items.append((Op.AT, At.END))
            else:  # "("
                group = self.group(at_start=first and not items)
                if group is not None:
                    items.append(group)
        # A non-capturing group without flags is only its items (kept whole until here for a quantifier after it).
        spliced: list[Item] = []
        for op, argument in items:
            if op is Op.SUBPATTERN and argument[0] is None and not argument[1] and not argument[2]:
                spliced += argument[3]
            else:
                spliced.append((op, argument))
        return spliced

    def escape(self) -> Item:
        char = self.next()
        if char in _CATEGORIES:
            return (Op.IN, [(Op.CATEGORY, _CATEGORIES[char])])
        if char in _POSITIONS:
            return (Op.AT, _POSITIONS[char])
        return (Op.LITERAL, self.escaped_character(char))

    def escaped_character(self, char: str) -> int:
        """The code point of ``\\char``, of a letter or digit only those of ``_CONTROLS``; any other escaped
        character stands for itself."""
        if char in _CONTROLS:
            return ord(_CONTROLS[char])
        if char.isascii() and char.isalnum():
            raise Unsupported(f"the escape \\{char} at {self.index - 2}")
        return ord(char)

    def char_class(self) -> Item:
        negate = self.take("^")
        members: list[tuple[Op, Any]] = []
        while True:
            char = self.next()
            if char == "]" and members:
                break
            first = self.class_member(char)
            # "a-z" is a range; "-" before "]" is itself.
            if self.peek() == "-" and self.pattern[self.index + 1 : self.index + 2] not in ("]", ""):
                self.index += 1
                last = self.class_member(self.next())
                if first[0] is not Op.LITERAL or last[0] is not Op.LITERAL:
                    raise Unsupported(f"a range of a category at {self.index}")
                members.append((Op.RANGE, (first[1], last[1])))
            else:
                members.append(first)
        members = _unique(members)
        if len(members) == 1 and members[0][0] is Op.LITERAL:
            return (Op.NOT_LITERAL if negate else Op.LITERAL, members[0][1])
        return (Op.IN, [(Op.NEGATE, None), *members] if negate else members)

    def class_member(self, char: str) -> tuple[Op, Any]:
        if char != "\\":
            return (Op.LITERAL, ord(char))
        char = self.next()
        if char in _CATEGORIES:
            return (Op.CATEGORY, _CATEGORIES[char])
        if char == "b":  # in a class, \b is the backspace
            return (Op.LITERAL, 8)
        return (Op.LITERAL, self.escaped_character(char))

    def repeat(self, char: str, items: list[Item]) -> None:
        start = self.index - 1
        if char == "{":
            counts = _COUNTS.match(self.pattern, self.index)
            if counts is None or self.pattern[self.index] == "}":
                items.append((Op.LITERAL, ord("{")))  # "{" that does not start a count is itself
                return
            self.index = counts.end()
            low = int(counts.group(1) or 0)
            high = int(counts.group(3) or UNBOUNDED) if counts.group(2) else low
        else:
            low, high = {"?": (0, 1), "*": (0, UNBOUNDED), "+": (1, UNBOUNDED)}[char]
        if not items or items[-1][0] is Op.AT or items[-1][0] in REPEATS:
            raise Unsupported(f"nothing to repeat at {start}")
        body = items[-1:]
        op, argument = body[0]
        if op is Op.SUBPATTERN and argument[0] is None and not argument[1] and not argument[2]:
            body = argument[3]
        kind = Op.MIN_REPEAT if self.take("?") else Op.POSSESSIVE_REPEAT if self.take("+") else Op.MAX_REPEAT
        items[-1] = (kind, (low, high, body))

    def group(self, *, at_start: bool) -> Item | None:
        """The group that starts here (its "(" taken), or None for flags that apply to the whole regex."""
        start = self.index - 1
        group: int | None = None
        add = remove = 0
        if self.take("?:"):
            pass
        elif self.take("?P<"):
            end = self.pattern.find(">", self.index)
            if end < 0 or not self.pattern[self.index : end].isidentifier():
                raise Unsupported(f"a group name at {start}")
            self.index = end + 1
            self.groups += 1
            group = self.groups
        elif self.take("?#"):
            end = self.pattern.find(")", self.index)
            if end < 0:
                raise Unsupported(f"an unterminated comment at {start}")
            self.index = end + 1
            return None  # a comment: nothing (a quantifier after it repeats what came before, as in re)
        elif (kind := next((k for k in ("?=", "?!", "?<=", "?<!", "?>") if self.take(k)), None)) is not None:
            items = self.closed(start)
            if kind == "?>":
                return (Op.ATOMIC_GROUP, items)
            return (Op.ASSERT if kind in ("?=", "?<=") else Op.ASSERT_NOT, (-1 if "<" in kind else 1, items))
        elif self.take("?"):
            add, remove, ends = self.flags(start)
            if ends == ")":
                if not at_start:
                    raise Unsupported(f"global flags not at the start, at {start}")
                if add & re.VERBOSE:
                    raise Unsupported("a VERBOSE regex")
                return None  # already in the flags the regex was compiled with
            if (add | remove) & re.VERBOSE:
                raise Unsupported(f"a VERBOSE group at {start}")
        else:
            self.groups += 1
            group = self.groups
        return (Op.SUBPATTERN, (group, add, remove, self.closed(start)))

    def closed(self, start: int) -> list[Item]:
        items = self.alternation()
        if not self.take(")"):
            raise Unsupported(f"an unterminated group at {start}")
        return items

    def flags(self, start: int) -> tuple[int, int, str]:
        """Inline flags after "(?": those added, those removed, and the ")" or ":" that ends them."""
        masks = [0, 0]
        side = 0
        while (char := self.next()) not in ":)":
            if char == "-" and side == 0:
                side = 1
            elif char in _FLAGS:
                masks[side] |= _FLAGS[char]
            else:
                raise Unsupported(f"the group syntax at {start}")
        if side and char == ")":
            raise Unsupported(f"flags removed for the whole regex at {start}")
        return masks[0], masks[1], char


def _unique(members: list[tuple[Op, Any]]) -> list[tuple[Op, Any]]:
    return list(dict.fromkeys(members))
