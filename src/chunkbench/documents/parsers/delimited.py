"""CSV and TSV files through the standard library's ``csv``: one section named after the file, its rows as markdown
tables (the layout of a sheet)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import TextFormatParser, register
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.parsers.tables import table_blocks, trim_rows
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError
from chunkbench.models import ParseResult

_SNIFF_CHARS = 64 * 1024
# The delimiters a CSV file really uses; letting the sniffer pick any character makes it choose letters.
_CSV_DELIMITERS = ",;\t|"


def _sniffed(sample: str) -> type[csv.Dialect]:
    """The delimiter and quoting a CSV sample uses, else Excel's (``,`` and ``"``)."""
    try:
        return csv.Sniffer().sniff(sample, delimiters=_CSV_DELIMITERS)
    except csv.Error:
        return csv.excel  # one column, or too little text to tell: the common case


def read_rows(path: Path, dialect: type[csv.Dialect] | None) -> tuple[list[list[str]], list[str]]:
    """The file's rows (``dialect`` ``None``: sniffed) and the notes on its encoding."""
    decoded = decode(path.read_bytes())
    text = decoded.text
    dialect = dialect or _sniffed(text[:_SNIFF_CHARS])
    try:
        return list(csv.reader(io.StringIO(text, newline=""), dialect)), decoded.notes
    except csv.Error as exc:
        raise CorruptDocumentError(
            f"'{path.name}' is not valid delimited text ({exc}). Check its quoting, or export it again."
        ) from exc


class _DelimitedParser(TextFormatParser):
    dialect: type[csv.Dialect] | None = None  # None: sniffed from the file

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        rows, notes = read_rows(path, self.dialect)
        rows = trim_rows(rows)
        if not rows:
            raise EmptyDocumentError(f"'{path.name}' has no cells with values.")
        name = Path(path.name).stem
        blocks = [Block("heading", name, level=1), *table_blocks(rows)]
        return build_parse_result(blocks, title=name, heading_source="sheets", warnings=notes)


@register
class CsvParser(_DelimitedParser):
    """Comma-separated values; the delimiter (``,`` ``;`` tab ``|``) and quoting are sniffed."""

    suffixes = (".csv",)
    mime_type = "text/csv"
    label = "CSV file"


@register
class TsvParser(_DelimitedParser):
    """Tab-separated values."""

    suffixes = (".tsv",)
    mime_type = "text/tab-separated-values"
    label = "TSV file"
    dialect = csv.excel_tab
