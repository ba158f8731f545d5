"""Example plugin: a parser for ``.csv`` files, one paragraph per row written as "column: value" pairs.

After loading, ``.csv`` uploads are accepted (``POST /documents``, ``chunkbench ingest``) like any built-in type.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import looks_like_text
from chunkbench.documents.parsers.text import decode_text
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError
from chunkbench.models import ParseResult
from chunkbench.plugins import DocumentParser, register_parser


@register_parser
class CsvParser(DocumentParser):
    """A CSV table: the header row names the columns; every other row becomes one paragraph."""

    suffixes = (".csv",)
    mime_type = "text/csv"
    label = "CSV file"

    def sniff(self, head: bytes) -> bool:
        return looks_like_text(head)

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        try:
            rows = list(csv.reader(io.StringIO(decode_text(path.read_bytes()), newline="")))
        except csv.Error as exc:
            raise CorruptDocumentError(f"'{path.name}' is not valid CSV ({exc}).") from exc
        rows = [row for row in rows if any(cell.strip() for cell in row)]
        if not rows:
            return build_parse_result([], heading_source="none")
        header, body = rows[0], rows[1:]
        blocks = [Block("heading", Path(path.name).stem, level=1)]
        for row in body:
            pairs = [f"{name.strip()}: {value.strip()}" for name, value in zip(header, row, strict=False)]
            blocks.append(Block("paragraph", "; ".join(pairs)))
        return build_parse_result(blocks, title=Path(path.name).stem, heading_source="csv")
