"""Table-aware chunking: prose as ``recursive`` cuts it; tables only between rows, each part under its header."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, ClassVar

import numpy as np

from chunkbench.chunking.base import Chunk, ChunkingInput, ChunkingStrategy, register_strategy, with_context
from chunkbench.chunking.strategies.recursive import (
    Cutter,
    SectionParams,
    Sized,
    Span,
    label_chunks,
    section_spans,
    section_starts,
)
from chunkbench.chunking.tables import MarkdownTable, TableIndex, find_tables
from chunkbench.models import StrategyName
from chunkbench.text.tokens import Tokenizer, get_tokenizer

# Inside a table, strongest first, level for level with recursive's separators: the sentence level becomes the
# cell level, so a row too long for a chunk is cut before a cell's ``|``, then between words, then into tokens.
_TABLE_SEPARATORS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n[^\S\n]*\n\s*"),
    re.compile(r"\n\s*"),
    re.compile(r"(?<!\\)(?=\|)"),
    re.compile(r"\s+"),
)
_CELL_LEVEL = 3
# A header longer than this share of a chunk is not repeated: the parts would hold almost no rows.
_MAX_HEADER_SHARE = 0.5


class TableAwareParams(SectionParams):
    """Recursive's size parameters: ``chunk_size`` bounds a table part together with the header it repeats."""


class TableCutter(Cutter):
    """Recursive's cutter, except inside a table: parts of whole rows, each within the chunk size together with
    the header rows it will be embedded under; a row alone over the size is cut at cells, then words."""

    def __init__(
        self,
        text: str,
        offsets: np.ndarray,
        tokenizer: Tokenizer,
        *,
        tables: TableIndex,
        header_tokens: dict[int, int],
    ) -> None:
        super().__init__(text, offsets, tokenizer)
        self.tables = tables
        # Per table start: the tokens its repeated header takes from a later part's budget (0: not repeated).
        self.header_tokens = header_tokens

    def _holding(self, start: int, end: int) -> tuple[MarkdownTable | None, int, int]:
        """The table holding ``[start, end)`` without its surrounding whitespace, and that trimmed range."""
        piece = self.text[start:end]
        stripped = piece.strip()
        if not stripped:
            return None, start, end
        head = start + len(piece) - len(piece.lstrip())
        return self.tables.holding(head, head + len(stripped)), head, head + len(stripped)

    def _budget(self, table: MarkdownTable, start: int, limit: int) -> int:
        """The tokens of a part starting at ``start``: less its repeated header when it starts after the header."""
        return limit if start < table.header_end else max(1, limit - self.header_tokens[table.start])

    def separators(self, start: int, end: int) -> tuple[re.Pattern[str], ...]:
        table, _, _ = self._holding(start, end)
        return _TABLE_SEPARATORS if table is not None else super().separators(start, end)

    def cut(self, start: int, end: int, level: int, limit: int) -> list[Span]:
        table, head, tail = self._holding(start, end)
        if table is None:
            return super().cut(start, end, level, limit)
        budget = self._budget(table, head, limit)
        if self.approx(start, end) <= budget:
            return [(start, end)]
        rows = [row for row in table.body_row_starts() if head < row < tail]
        if not rows:
            # Inside one row (or the header rows): cells, then words.
            return super().cut(start, end, max(level, _CELL_LEVEL), budget)
        return self._rows(table, [start, *rows, end], limit)

    def _rows(self, table: MarkdownTable, edges: list[int], limit: int) -> list[Span]:
        """Consecutive rows ``edges[i]..edges[i+1]`` packed greedily into parts within their budget."""
        parts: list[Span] = []
        i, pieces = 0, len(edges) - 1
        while i < pieces:
            budget = self._budget(table, edges[i], limit)
            j = i + 1
            while j < pieces and self.approx(edges[i], edges[j + 1]) <= budget:
                j += 1
            if j == i + 1 and self.approx(edges[i], edges[j]) > budget:
                parts.extend(super().cut(edges[i], edges[j], _CELL_LEVEL, budget))
            else:
                parts.append((edges[i], edges[j]))
            i = j
        return parts

    def carry_start(self, position: int, start: int) -> int:
        """Overlap starts at a row of the chunk's own table, never inside a row; none is carried out of a table."""
        table = self.tables.at(position)
        if table is None:
            return position
        if self.tables.at(start) is not table:
            return start
        row = next((row for row in table.body_row_starts() if row >= position), start)
        return min(row, start)


@register_strategy
class TableAwareStrategy(ChunkingStrategy):
    """Prose cut exactly as ``recursive`` cuts it (same parameters, same separators); tables never cut inside a row.

    A table that fits stays one piece, packed with its neighbouring paragraphs as recursive packs any paragraph.
    A longer one is split between rows into parts; every part after the first is embedded behind the table's
    header rows (``enriched_content``) and shown to the answerer under them (``context_header``), and counts them in
    its ``chunk_size``. A single row too long for a chunk is cut before a cell's ``|``, then between words, and
    ``run_details()`` says how many rows were. Tables are GFM tables and the pipe rows DOCX and HTML tables parse
    into (:mod:`chunkbench.chunking.tables`). Overlap is carried from whole rows of the same table only.
    """

    name = StrategyName.TABLE_AWARE
    # Named explicitly (a corpus with tables), not in "all strategies": the original five stay what "all" runs.
    in_default_set: ClassVar[bool] = False
    settings_defaults: ClassVar[dict[str, str]] = {"chunk_size": "chunk_size"}
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}
    description = (
        "Recursive chunking that never cuts a table inside a row: a long table is split between rows, "
        "and every part carries the table's header row."
    )
    params_model = TableAwareParams

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._details: dict[str, Any] = {}

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        params: TableAwareParams = self.params  # type: ignore[assignment]
        text, tokenizer = document.markdown, get_tokenizer()
        tables = find_tables(text)
        index = TableIndex(tables)
        header_tokens = self._header_tokens(text, tables, params.chunk_size, tokenizer)
        cutter_type = partial(TableCutter, tables=index, header_tokens=header_tokens)
        starts = section_starts(document)
        spans = section_spans(document, params, starts, cutter_type)
        spans = self._fit_headers(text, spans, index, header_tokens, params.chunk_size, cutter_type, tokenizer)
        chunks = label_chunks(document, self.name, spans, starts)
        over = 0
        for chunk in chunks:
            table = index.at(chunk.start_index)
            if table is None or chunk.start_index < table.header_end or not header_tokens[table.start]:
                continue
            chunk.context_header = table.header(text)
            chunk.enriched_content = with_context(chunk.context_header, chunk.text)
            over += tokenizer.count(chunk.enriched_content) > params.chunk_size
        self._details = self._describe(tables, spans, header_tokens, over)
        return chunks

    @staticmethod
    def _header_tokens(text: str, tables: list[MarkdownTable], size: int, tokenizer: Tokenizer) -> dict[int, int]:
        """Per table start: the tokens its header takes in a later part (0 when it is too long to repeat)."""
        costs = tokenizer.count_many([with_context(table.header(text), "x") for table in tables])
        # ``with_context(header, "x")`` counts the separator too; "x" itself is one token.
        return {
            table.start: cost - 1 if cost - 1 <= size * _MAX_HEADER_SHARE else 0
            for table, cost in zip(tables, costs, strict=True)
        }

    @staticmethod
    def _fit_headers(
        text: str,
        spans: list[Sized],
        index: TableIndex,
        header_tokens: dict[int, int],
        size: int,
        cutter_type: partial[TableCutter],
        tokenizer: Tokenizer,
    ) -> list[Sized]:
        """Spans whose text behind their table's header re-encodes over ``size`` tokens cut finer once (the header
        budget was planned on the whole text's token counts, which can differ by a token at the seams)."""
        fitted: list[Sized] = []
        cutter: TableCutter | None = None
        for start, end, count in spans:
            table = index.at(start)
            if table is None or start < table.header_end or not header_tokens[table.start]:
                fitted.append((start, end, count))
                continue
            total = tokenizer.count(with_context(table.header(text), text[start:end]))
            if total <= size:
                fitted.append((start, end, count))
                continue
            if cutter is None:
                cutter = cutter_type(text, tokenizer.boundaries(text)[1], tokenizer)
            tighter = max(1, count - (total - size))
            fitted.extend(cutter.fit(start, end, tighter, tighter))
        return fitted

    @staticmethod
    def _describe(
        tables: list[MarkdownTable], spans: list[Sized], header_tokens: dict[int, int], over: int
    ) -> dict[str, Any]:
        """What the run did with tables: how many, how many split into parts, rows cut inside, headers not repeated."""
        bounds = sorted({edge for start, end, _ in spans for edge in (start, end)})
        index = TableIndex(tables)
        split: set[int] = set()
        rows_cut: set[tuple[int, int]] = set()
        for edge in bounds:
            table = index.at(edge)
            if table is None or edge == table.start:
                continue
            split.add(table.start)
            rows_cut.update(row for row in table.rows if row[0] < edge < row[1])
        return {
            "tables": len(tables),
            "tables_split": len(split),
            "rows_cut_inside": len(rows_cut),
            "headers_not_repeated": sum(1 for cost in header_tokens.values() if cost == 0),
            "parts_over_size": over,
        }

    def run_details(self) -> dict[str, Any]:
        return dict(self._details)
