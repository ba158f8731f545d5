"""Tables in a document's markdown: where each one is, its header rows and its row boundaries.

chunkbench's parsers write two shapes: GitHub-flavoured tables (``| a | b |``, then a ``| --- |`` rule: CSV, XLSX,
ODS, PPTX, markdown sources) and pipe rows (``a | b`` lines, no rule: DOCX and HTML tables, one block per table).
The Document Tree has no table node (a table is one paragraph block), so tables are read from the markdown.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

# A GFM delimiter row: cells of dashes with optional alignment colons, at least one pipe.
_RULE = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")
# Between two cells of a pipe row: an unescaped pipe with a space either side.
_PIPE_CELL = re.compile(r"(?<!\\)[ \t]\|[ \t]")
_FENCE = re.compile(r"[ \t]{0,3}(```|~~~)")


@dataclass(frozen=True)
class MarkdownTable:
    """One table of the markdown: ``[start, end)`` from its header row to its last row, without surrounding space.

    ``header_end`` is where its header rows end (the header row, and the rule under it when there is one);
    ``rows`` are the ``(start, end)`` of every line from the header row on, the rule included.
    """

    start: int
    end: int
    header_end: int
    rows: tuple[tuple[int, int], ...]

    @property
    def body_start(self) -> int:
        """Where the first row after the header rows starts (``end`` for a table of header rows only)."""
        return next((start for start, _ in self.rows if start >= self.header_end), self.end)

    def header(self, markdown: str) -> str:
        return markdown[self.start : self.header_end]

    def body_row_starts(self) -> list[int]:
        """Where each row after the header rows starts: the places a table may be cut between rows."""
        return [start for start, _ in self.rows if start >= self.header_end]


def _lines(markdown: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every line, without its line break."""
    lines, position = [], 0
    for line in markdown.split("\n"):
        lines.append((position, position + len(line)))
        position += len(line) + 1
    return lines


def _blocks(markdown: str) -> list[list[tuple[int, int]]]:
    """Runs of non-blank lines outside fenced code (a code block's ``a | b`` lines are no table)."""
    blocks: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    fenced = False
    for start, end in _lines(markdown):
        line = markdown[start:end]
        if _FENCE.match(line):
            fenced = not fenced
            current = []
            continue
        if fenced or not line.strip():
            if current:
                blocks.append(current)
            current = []
            continue
        current.append((start, end))
    if current and not fenced:
        blocks.append(current)
    return blocks


def _table(markdown: str, lines: list[tuple[int, int]], header_lines: int) -> MarkdownTable:
    rows = tuple((start + len(markdown[start:end]) - len(markdown[start:end].lstrip()), end) for start, end in lines)
    end = rows[-1][0] + len(markdown[rows[-1][0] : rows[-1][1]].rstrip())
    return MarkdownTable(rows[0][0], end, rows[header_lines - 1][1], rows)


def _gfm_tables(markdown: str, block: list[tuple[int, int]]) -> list[MarkdownTable]:
    """GFM tables of one block: a line with a pipe over a rule, then the lines with a pipe that follow."""
    tables: list[MarkdownTable] = []
    i = 0
    while i + 1 < len(block):
        head, rule = (markdown[a:b] for a, b in block[i : i + 2])
        if "|" in head and "|" in rule and _RULE.fullmatch(rule):
            j = i + 2
            while j < len(block) and "|" in markdown[block[j][0] : block[j][1]]:
                j += 1
            tables.append(_table(markdown, block[i:j], 2))
            i = j
        else:
            i += 1
    return tables


def find_tables(markdown: str) -> list[MarkdownTable]:
    """Every table of ``markdown``, in document order: GFM tables, and blocks of two or more pipe rows."""
    tables: list[MarkdownTable] = []
    for block in _blocks(markdown):
        gfm = _gfm_tables(markdown, block)
        if gfm:
            tables += gfm
        elif len(block) >= 2 and all(_PIPE_CELL.search(markdown, a, b) for a, b in block):
            tables.append(_table(markdown, block, 1))
    return tables


class TableIndex:
    """Answers "which table holds this offset?" for a document's tables."""

    def __init__(self, tables: list[MarkdownTable]) -> None:
        self.tables = tables
        self._starts = [table.start for table in tables]

    def at(self, offset: int) -> MarkdownTable | None:
        """The table whose ``[start, end)`` holds ``offset``, or None."""
        position = bisect_right(self._starts, offset) - 1
        if position < 0 or offset >= self.tables[position].end:
            return None
        return self.tables[position]

    def holding(self, start: int, end: int) -> MarkdownTable | None:
        """The table that holds all of ``[start, end)`` (a non-empty range), or None."""
        table = self.at(start)
        return table if table is not None and end <= table.end else None
