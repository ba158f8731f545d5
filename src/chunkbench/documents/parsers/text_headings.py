"""Plain-text heading detection: a text file's blank-line blocks as headings and paragraphs.

A text file has no styles, so each rule reads a line and what stands around it: markdown marks (``## Title``, a
title underlined with ``===``/``---``), keyword headings (``CHAPTER I``, ``Article 5``, ``فصل ۱``), numbering
(``1.2 Scope``), a roman numeral alone, and short lines in capitals. The line rules are the format-free ones of
documents/headings.py, shared with the PDF parser's heuristics; this module adds what only plain text needs:
where a heading may stand in a block, and the context that unmasks a false one (a list, a table of contents, a
wrapped sentence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import groupby
from typing import Literal

from chunkbench.documents.headings import (
    MAX_HEURISTIC_CHARS,
    HeadingMatch,
    KeywordLine,
    heuristic_levels,
    is_capitals_heading,
    keyword_line,
    looks_like_sentence,
    match_heading_pattern,
)
from chunkbench.documents.tree import Block

# Paragraphs are separated by blank lines (spaces on them allowed).
_BLANK_LINES = re.compile(r"\n[^\S\n]*\n\s*")
# Markdown ATX ("## Title ##": the closing marks are dropped) and setext underlines (=== level 1, --- level 2).
# Unlike markdown, a "#" line must start at the margin: indented, it is a comment in quoted code or a licence.
_ATX = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_HASH_LINE = re.compile(r"^\s*(#+)(?:[ \t]|$)")
_SETEXT = re.compile(r"^ {0,3}(?:={3,}|-{3,})[ \t]*$")
# Chapters numbered by a roman numeral alone ("IV", "XII.").
_ROMAN_LINE = re.compile(r"^[IVXLC]+\.?$")
# Column layout (tabs, pipes, runs of spaces) and dot leaders: table rows and table-of-contents lines.
_TABLE_LIKE = re.compile(r"\t|\||\S {3,}\S|(?:\. ?){4,}|…|_{4,}")
_NUMBER_PREFIX = re.compile(r"^[\d۰-۹٠-٩.\-)\s]+")
# A run of this many headings of one kind with nothing between them is a list or a table of contents.
_LIST_RUN = 2
# Capitals are looser evidence of a list (a title page's lines, a heading over a heading): a longer run.
_CAPITALS_RUN = 3


@dataclass
class _Piece:
    """Lines of one blank-line block: a paragraph or a heading candidate (``pattern``: keyword or numbering)."""

    lines: list[str]
    block: int
    kind: Literal["paragraph", "markdown", "pattern", "capitals"] = "paragraph"
    level: int = 0  # a markdown heading's own level
    match: HeadingMatch | None = None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def signature(self) -> tuple[str, str, int] | None:
        """What makes two neighbouring headings "of one kind": ``Article 1`` / ``Article 2``, ``1.`` / ``2.``."""
        if self.kind == "capitals":
            return ("capitals", "", 0)
        if self.kind == "pattern" and self.match is not None:
            return ("pattern", self.match.kind, self.match.depth)
        return None


def text_blocks(text: str) -> list[Block]:
    """The file's blocks in reading order, headings with their levels."""
    pieces: list[_Piece] = []
    for number, block in enumerate(_BLANK_LINES.split(text)):
        if block.strip():
            pieces.extend(_block_pieces(block.split("\n"), number))
    pieces = _merge_paragraphs(_drop_false_headings(pieces))
    return _to_blocks(pieces)


def _block_pieces(lines: list[str], block: int) -> list[_Piece]:
    """One blank-line block: split by its markdown headings if it has any, else read by :func:`_run_pieces`."""
    marks = _markdown_headings(lines)
    if not marks:
        return _run_pieces(lines, block)
    # Between markdown headings the lines are text: the rules for lines standing alone do not apply there.
    pieces: list[_Piece] = []
    run: list[str] = []
    index = 0
    while index < len(lines):
        if index in marks:
            if run:
                pieces.append(_Piece(run, block))
                run = []
            level, title, used = marks[index]
            pieces.append(_Piece([title], block, "markdown", level=level))
            index += used
        else:
            run.append(lines[index])
            index += 1
    if run:
        pieces.append(_Piece(run, block))
    return pieces


def _markdown_headings(lines: list[str]) -> dict[int, tuple[int, str, int]]:
    """``{first line: (level, title, lines used)}``: ``#`` lines, and a block's first line underlined."""
    marks = {index: (level, title, 1) for index, (level, title) in _atx_headings(lines).items()}
    if 0 not in marks and len(lines) >= 2 and _SETEXT.match(lines[1]) and _setext_title(lines[0]):
        marks[0] = (1 if "=" in lines[1] else 2, lines[0].strip(), 2)
    return marks


def _atx_headings(lines: list[str]) -> dict[int, tuple[int, str]]:
    """``{line: (level, title)}`` of the markdown ``#`` headings in a block."""
    # Consecutive lines that start with the same "#" mark are comments (a script, a config file), not headings.
    marks = [match.group(1) if (match := _HASH_LINE.match(line)) else None for line in lines]
    found: dict[int, tuple[int, str]] = {}
    for index, line in enumerate(lines):
        neighbours = (marks[index - 1] if index else None, marks[index + 1] if index + 1 < len(lines) else None)
        match = _ATX.match(line)
        if match is None or marks[index] in neighbours:
            continue
        title = match.group(2).strip()
        if title and not title[0].islower() and not looks_like_sentence(title):  # "# or": a comment
            found[index] = (len(match.group(1)), title)
    return found


def _setext_title(line: str) -> bool:
    text = line.strip()
    return bool(text) and len(text) < MAX_HEURISTIC_CHARS and not _TABLE_LIKE.search(text)


def _run_pieces(lines: list[str], block: int) -> list[_Piece]:
    """Lines without markdown headings: a heading alone, a keyword heading over its text, or a paragraph."""
    if not lines:
        return []
    if len(lines) == 1:
        return [_line_heading(lines[0], block) or _Piece(lines, block)]
    # In a longer block only a keyword heading may start it ("Article 5" over the article's text), and only
    # when nothing after its number could continue a sentence: "Section 3 applies to ..." is a sentence.
    keyword = _keyword(lines[0])
    if keyword is not None and keyword.separated and not any(_is_pattern(line) for line in lines[1:]):
        match = HeadingMatch(keyword.kind)
        if len(lines) == 2 and not keyword.title and _is_title(lines[1]):  # "CHAPTER I." over "Down the Hole"
            return [_Piece([line.strip() for line in lines], block, "pattern", match=match)]
        return [_Piece([lines[0].strip()], block, "pattern", match=match), _Piece(lines[1:], block)]
    if len(lines) == 2 and all(_capitals(line) for line in lines):  # a capitals heading wrapped over two lines
        return [_Piece([line.strip() for line in lines], block, "capitals")]
    return [_Piece(lines, block)]


def _line_heading(line: str, block: int) -> _Piece | None:
    """A line standing alone between blank lines, as a heading candidate if a rule says it is one."""
    text = line.strip()
    if not text or _TABLE_LIKE.search(text):
        return None
    keyword = _keyword(text)
    if keyword is not None:
        return _Piece([text], block, "pattern", match=HeadingMatch(keyword.kind))
    if _ROMAN_LINE.match(text):
        return _Piece([text], block, "pattern", match=HeadingMatch("numbered", 1))
    numbered = match_heading_pattern(text)
    # A title in lower case after the number ("1. buy milk") is a list item.
    if numbered is not None and not _NUMBER_PREFIX.sub("", text)[:1].islower():
        return _Piece([text], block, "pattern", match=numbered)
    if _capitals(text):
        return _Piece([text], block, "capitals")
    return None


def _keyword(line: str) -> KeywordLine | None:
    """A keyword heading line: bare (``CHAPTER IV.``: its period is no sentence end) or with a short title."""
    text = line.strip()
    if len(text) >= MAX_HEURISTIC_CHARS or _TABLE_LIKE.search(text):
        return None
    keyword = keyword_line(text)
    if keyword is None or (keyword.title and looks_like_sentence(text)):
        return None
    return keyword


def _is_pattern(line: str) -> bool:
    return _keyword(line) is not None or match_heading_pattern(line) is not None


def _capitals(line: str) -> bool:
    return is_capitals_heading(line) and not _TABLE_LIKE.search(line.strip())


def _is_title(line: str) -> bool:
    """A keyword heading's title on the next line: short, no sentence, not a heading of its own."""
    text = line.strip()
    return (
        any(ch.isalpha() for ch in text)
        and not looks_like_sentence(text)
        and not _TABLE_LIKE.search(text)
        and not _is_pattern(text)
    )


def _drop_false_headings(pieces: list[_Piece]) -> list[_Piece]:
    """Heading candidates that their context shows to be something else become paragraphs again."""
    false: set[int] = set()
    # Headings of one kind with nothing between them (1. / 2. / 3., CHAPTER I / CHAPTER II): a list or contents.
    position = 0
    for signature, group in groupby(pieces, key=lambda piece: piece.signature):
        size = len(list(group))
        if signature is not None and size >= (_CAPITALS_RUN if signature[0] == "capitals" else _LIST_RUN):
            false.update(range(position, position + size))
        position += size
    for index, piece in enumerate(pieces):
        if piece.kind not in ("pattern", "capitals"):
            continue
        following = pieces[index + 1] if index + 1 < len(pieces) else None
        # The text below goes on in lower case: the "heading" was the first line of a wrapped sentence.
        if following is not None and following.kind == "paragraph" and following.text.lstrip()[:1].islower():
            false.add(index)
        # A numbered line after "... as follows:" is the list's first item.
        previous = pieces[index - 1] if index else None
        numbered = piece.match is not None and piece.match.kind == "numbered"
        if numbered and previous is not None and previous.kind == "paragraph" and previous.text.rstrip()[-1:] == ":":
            false.add(index)
    for index in false:
        pieces[index].kind = "paragraph"
    return pieces


def _merge_paragraphs(pieces: list[_Piece]) -> list[_Piece]:
    """A false heading rejoins the paragraph it was cut from (same blank-line block)."""
    merged: list[_Piece] = []
    for piece in pieces:
        last = merged[-1] if merged else None
        if last is not None and last.kind == piece.kind == "paragraph" and last.block == piece.block:
            last.lines.extend(piece.lines)
        else:
            merged.append(piece)
    return merged


def _to_blocks(pieces: list[_Piece]) -> list[Block]:
    """Levels: markdown's own; capitals at the top; keywords by rank and numbering by depth below them."""
    matches = {id(piece): piece.match for piece in pieces if piece.kind == "pattern" and piece.match is not None}
    levels = dict(zip(matches, heuristic_levels(list(matches.values())), strict=True))
    blocks: list[Block] = []
    for piece in pieces:
        if piece.kind == "paragraph":
            blocks.append(Block("paragraph", piece.text))
        elif piece.kind == "markdown":
            blocks.append(Block("heading", piece.text, level=piece.level))
        else:
            blocks.append(Block("heading", piece.text, level=levels.get(id(piece), 1)))  # capitals: the top
    return blocks
