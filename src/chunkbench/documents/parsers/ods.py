"""OpenDocument spreadsheets (.ods): one section per sheet, each cell as its ``text:p`` (the text the sheet shows).

Read with lxml from the package's ``content.xml``: ODF stores the displayed text of every cell beside its value, so
no number formatting has to be redone, and repeated rows and columns (``number-rows-repeated``) are expanded only
where they hold text, so a sheet that declares a million empty rows costs nothing.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.tables import table_blocks, trim_rows
from chunkbench.documents.parsers.zip_container import (
    READ_ERRORS,
    SAFE_XML,
    SMALL_PART_MAX_BYTES,
    ZIP_MAGIC,
    check_entries,
    damaged,
    read_capped,
)
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError, EncryptedDocumentError
from chunkbench.models import ParseResult

_LABEL = "OpenDocument spreadsheet (.ods)"
_MIMETYPE = b"application/vnd.oasis.opendocument.spreadsheet"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_ROW_GROUPS = frozenset({f"{_TABLE}table-header-rows", f"{_TABLE}table-rows", f"{_TABLE}table-row-group"})
_CELLS = frozenset({f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell"})
# Repeated cells or rows that hold text are real (a filled-down column); past these counts they are a bomb.
# Columns: at most this many per row are read (Excel's own limit is 16,384; sheets read as text are far narrower).
_MAX_REPEAT_COLUMNS = 1024
_MAX_REPEATED_ROWS = 10_000  # rows added by repetition, per sheet (rows written out are bounded by the file size)
_MAX_SPACES = 64  # one text:s element's spaces


def _count(value: str | None, cap: int) -> int:
    """A repeat count attribute, at least 1 and at most ``cap`` (missing or not a number: 1)."""
    return min(int(value), cap) if value and value.isdigit() and int(value) > 0 else 1


def _repeat(element: etree._Element, attribute: str, cap: int) -> int:
    return _count(element.get(f"{_TABLE}{attribute}"), cap)


def _inline_text(element: etree._Element, parts: list[str]) -> None:
    """A paragraph's text: spans and links read through, ``text:s`` spaces, tabs and line breaks kept."""
    if element.text:
        parts.append(element.text)
    for child in element:
        if child.tag == f"{_TEXT}s":
            parts.append(" " * _count(child.get(f"{_TEXT}c"), _MAX_SPACES))
        elif child.tag in (f"{_TEXT}tab", f"{_TEXT}line-break"):
            parts.append(" ")
        elif child.tag != f"{_OFFICE}annotation" and isinstance(child.tag, str):
            _inline_text(child, parts)
        if child.tail:
            parts.append(child.tail)


def _cell_text(cell: etree._Element) -> str:
    paragraphs = []
    for paragraph in cell.iter(f"{_TEXT}p", f"{_TEXT}h"):
        if any(ancestor.tag == f"{_OFFICE}annotation" for ancestor in paragraph.iterancestors()):
            continue  # a comment on the cell, not what it shows
        parts: list[str] = []
        _inline_text(paragraph, parts)
        paragraphs.append("".join(parts))
    return " ".join(paragraphs)


def _row_cells(row: etree._Element) -> list[str]:
    """The row's cells, left to right; empty cells after the last one with text are dropped (rows end with a
    cell repeated to the sheet's last column)."""
    cells: list[str] = []
    pending_empty = 0
    for cell in row:
        if cell.tag not in _CELLS:
            continue
        repeat = _repeat(cell, "number-columns-repeated", _MAX_REPEAT_COLUMNS)
        text = _cell_text(cell)
        if not text.strip():
            pending_empty += repeat
            continue
        cells.extend([""] * min(pending_empty, _MAX_REPEAT_COLUMNS))
        pending_empty = 0
        cells.extend([text] * repeat)
        if len(cells) > _MAX_REPEAT_COLUMNS:
            return cells[:_MAX_REPEAT_COLUMNS]
    return cells


def _iter_rows(container: etree._Element) -> Iterator[etree._Element]:
    for child in container:
        if child.tag == f"{_TABLE}table-row":
            yield child
        elif child.tag in _ROW_GROUPS:
            yield from _iter_rows(child)


def _sheet_rows(table: etree._Element) -> list[list[str]]:
    rows: list[list[str]] = []
    repeated = 0
    for row in _iter_rows(table):
        cells = _row_cells(row)
        if any(cell.strip() for cell in cells):
            extra = min(_repeat(row, "number-rows-repeated", _MAX_REPEATED_ROWS) - 1, _MAX_REPEATED_ROWS - repeated)
            repeated += extra
            rows.extend([cells] * (1 + extra))
    return rows


def _hidden_styles(root: etree._Element) -> set[str]:
    """Names of the table styles that hide a sheet (``table:display="false"``)."""
    return {
        style.get(f"{_STYLE}name", "")
        for style in root.iter(f"{_STYLE}style")
        if style.find(f"{_STYLE}table-properties[@{_TABLE}display='false']") is not None
    }


def _title(archive: zipfile.ZipFile, names: set[str]) -> str | None:
    if "meta.xml" not in names:
        return None
    title = etree.fromstring(read_capped(archive, "meta.xml", SMALL_PART_MAX_BYTES, _LABEL), SAFE_XML).find(
        f".//{_DC_TITLE}"
    )
    return (title.text or "").strip() or None if title is not None else None


def spreadsheet_blocks(path: Path, settings: Settings) -> tuple[list[Block], str | None, list[str]]:
    """Sections per visible sheet, the document's title (``meta.xml``) and the parse notes."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = check_entries(path, archive, settings)
            mimetype = read_capped(archive, "mimetype", SMALL_PART_MAX_BYTES, _LABEL) if "mimetype" in names else b""
            if "content.xml" not in names or mimetype.strip() != _MIMETYPE:
                raise CorruptDocumentError(
                    f"'{path.name}' is a zip file but not an OpenDocument spreadsheet "
                    f"(its mimetype is '{mimetype.decode('ascii', 'replace').strip() or 'missing'}'). "
                    "Open it in LibreOffice Calc and save it as .ods again."
                )
            if "META-INF/manifest.xml" in names:
                manifest = read_capped(archive, "META-INF/manifest.xml", SMALL_PART_MAX_BYTES, _LABEL)
                if b"encryption-data" in manifest:
                    raise EncryptedDocumentError(
                        f"'{path.name}' is password-protected. Open it in LibreOffice Calc, remove the password "
                        "(File → Properties → Security), save, and upload it again."
                    )
            root = etree.fromstring(
                read_capped(archive, "content.xml", settings.max_docx_uncompressed_bytes, _LABEL), SAFE_XML
            )
            title = _title(archive, names)
    except READ_ERRORS as exc:
        raise damaged(path, exc) from exc
    hidden = _hidden_styles(root)
    blocks: list[Block] = []
    notes: list[str] = []
    for table in root.iter(f"{_TABLE}table"):
        if table.getparent() is None or table.getparent().tag != f"{_OFFICE}spreadsheet":
            continue  # a table inside a cell or a chart: not a sheet
        name = table.get(f"{_TABLE}name") or f"Sheet {len(blocks) + 1}"
        if table.get(f"{_TABLE}style-name") in hidden:
            notes.append(f"Sheet '{name}' is hidden and was not ingested.")
            continue
        rows = trim_rows(_sheet_rows(table))
        if not rows:
            notes.append(f"Sheet '{name}' is empty.")
            continue
        blocks.append(Block("heading", name, level=1))
        blocks.extend(table_blocks(rows))
    return blocks, title, notes


@register
class OdsParser(DocumentParser):
    """OpenDocument spreadsheets (.ods) through lxml, after a zip-bomb check."""

    suffixes = (".ods",)
    mime_type = "application/vnd.oasis.opendocument.spreadsheet"
    label = _LABEL

    def sniff(self, head: bytes) -> bool:
        return head.startswith(ZIP_MAGIC)

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        blocks, title, notes = spreadsheet_blocks(path, settings)
        if not blocks:
            raise EmptyDocumentError(f"'{path.name}' has no cells with text in any visible sheet.")
        return build_parse_result(blocks, title=title, heading_source="sheets", warnings=notes)
