"""Rows of cells (a sheet, a CSV file, a slide's table) as markdown tables: the layout every tabular format shares.

A table is one paragraph block whose text *is* its markdown (``| a | b |`` lines), so a node's span in the document's
markdown equals its text exactly. Long tables are split into blocks of ``ROWS_PER_BLOCK`` rows that each repeat
the header row: a chunk cut from the middle of a sheet still says what its columns are.
"""

from __future__ import annotations

from chunkbench.documents.tree import Block
from chunkbench.text.normalize import ZWNJ, normalize_text

# Rows per table block below the header: about 2–4k characters of typical sheet rows, the size of a few chunks.
ROWS_PER_BLOCK = 50


def cell_text(value: str) -> str:
    """One cell on one line: normalised, whitespace collapsed, ``|`` escaped so it cannot split the cell."""
    text = " ".join(normalize_text(value).split())
    # A ZWNJ next to the space that separates cells would be dropped by normalisation of the row's text only.
    return text.strip(ZWNJ + " ").replace("|", "\\|")


def trim_rows(rows: list[list[str]]) -> list[list[str]]:
    """Cells cleaned; empty rows and columns that are empty in every row dropped; rows padded to one width."""
    cleaned = [[cell_text(cell) for cell in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    width = max((len(row) for row in cleaned), default=0)
    used = [column for column in range(width) if any(column < len(row) and row[column] for row in cleaned)]
    return [[row[column] if column < len(row) else "" for column in used] for row in cleaned]


def _row_line(cells: list[str]) -> str:
    # An empty cell is "| |", never "|  |": a double space would not survive the text's normalisation.
    return "|" + "".join(f" {cell} |" if cell else " |" for cell in cells)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table: the header row, its rule, then the rows."""
    lines = [_row_line(header), _row_line(["---"] * len(header))]
    lines.extend(_row_line(row) for row in rows)
    return "\n".join(lines)


def table_blocks(rows: list[list[str]], rows_per_block: int = ROWS_PER_BLOCK) -> list[Block]:
    """The first row as the header, the rest in blocks of ``rows_per_block`` that each repeat it; ``rows`` already
    trimmed (:func:`trim_rows`). No rows: no blocks."""
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    if not body:
        table = markdown_table(header, [])
        return [Block("paragraph", table, markdown=table)]
    blocks = []
    for start in range(0, len(body), rows_per_block):
        table = markdown_table(header, body[start : start + rows_per_block])
        blocks.append(Block("paragraph", table, markdown=table))
    return blocks
