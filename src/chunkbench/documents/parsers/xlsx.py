"""Excel workbooks (.xlsx, .xlsm) through openpyxl: one section per sheet, its rows as markdown tables, every number
as the sheet displays it."""

from __future__ import annotations

from pathlib import Path
from xml.etree.ElementTree import ParseError

import openpyxl
from lxml import etree
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.worksheet._read_only import ReadOnlyWorksheet

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import register
from chunkbench.documents.parsers.excel_format import display_value
from chunkbench.documents.parsers.office_package import OfficePackageParser
from chunkbench.documents.parsers.tables import table_blocks, trim_rows
from chunkbench.documents.parsers.zip_container import READ_ERRORS
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError
from chunkbench.models import ParseResult

_LABEL = "Excel workbook (.xlsx)"
_MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_MAX_NAMED_CELLS = 5  # formula cells named in a warning; the rest are counted
# What openpyxl raises on a damaged part (found by fuzzing real workbooks' parts): its own errors, the stdlib XML
# parser's (it reads sheets with ElementTree), lookups into a broken style table, and (on opening) OSError for a
# package with no workbook part.
_OPENPYXL_ERRORS = (
    InvalidFileException, ParseError, KeyError, IndexError, AttributeError, ValueError, TypeError, *READ_ERRORS,
)  # fmt: skip


def _uncached_formulas(sheet: ReadOnlyWorksheet) -> list[str]:
    """Cells of the sheet that hold a formula but no cached result (a file written by a program that does not
    calculate, such as openpyxl itself, writes ``<v></v>``): ``data_only`` reads them as empty."""
    cells: list[str] = []
    parser_options = {"resolve_entities": False, "no_network": True, "huge_tree": False}
    # _get_source: openpyxl's own reader of the sheet's XML stream, private and so absent from its stubs.
    with sheet._get_source() as source:  # type: ignore[attr-defined]
        for _, cell in etree.iterparse(source, events=("end",), tag=f"{_MAIN_NS}c", **parser_options):
            cached = cell.find(f"{_MAIN_NS}v")
            if cell.find(f"{_MAIN_NS}f") is not None and (cached is None or not cached.text):
                cells.append(cell.get("r") or "?")
            cell.clear(keep_tail=False)
    return cells


def _sheet_rows(sheet: ReadOnlyWorksheet) -> list[list[str]]:
    """The sheet's cells as displayed, row by row (rows as stored: no padding to a declared dimension)."""
    # A sheet may declare a dimension of A1:XFD1048576; iterating it would make a billion empty cells.
    sheet.reset_dimensions()
    # types-openpyxl binds ReadOnlyWorksheet.iter_rows to Worksheet's signature (self: Worksheet); it is shared code.
    rows = sheet.iter_rows()  # type: ignore[misc]
    return [[display_value(cell.value, cell.number_format) for cell in row] for row in rows]


def _formula_note(name: str, cells: list[str]) -> str:
    more = len(cells) - _MAX_NAMED_CELLS
    shown = ", ".join(cells[:_MAX_NAMED_CELLS]) + (f" and {more} more" if more > 0 else "")
    return (
        f"Sheet '{name}': {len(cells)} formula cell(s) have no stored result ({shown}) and read as empty. "
        "Open the file in Excel or LibreOffice and save it, so the results are stored."
    )


def workbook_blocks(path: Path) -> tuple[list[Block], str | None, list[str]]:
    """Sections per visible sheet, the workbook's title (core properties) and the parse notes."""
    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True, keep_links=False)
    except (*_OPENPYXL_ERRORS, OSError) as exc:
        raise CorruptDocumentError(
            f"'{path.name}' could not be read as an Excel workbook ({exc}). "
            "Open it in Excel or LibreOffice, save it as .xlsx again, and re-upload."
        ) from exc
    blocks: list[Block] = []
    notes: list[str] = []
    try:
        for sheet in workbook.worksheets:
            if sheet.sheet_state != "visible":
                notes.append(f"Sheet '{sheet.title}' is hidden and was not ingested.")
                continue
            rows = trim_rows(_sheet_rows(sheet))
            uncached = _uncached_formulas(sheet)
            if uncached:
                notes.append(_formula_note(sheet.title, uncached))
            if not rows:
                notes.append(f"Sheet '{sheet.title}' is empty.")
                continue
            blocks.append(Block("heading", sheet.title, level=1))
            blocks.extend(table_blocks(rows))
        title = (workbook.properties.title or "").strip() or None
    except _OPENPYXL_ERRORS as exc:
        raise CorruptDocumentError(
            f"'{path.name}' is damaged: a sheet could not be read ({exc}). "
            "Open it in Excel or LibreOffice, save it again, and re-upload."
        ) from exc
    finally:
        workbook.close()
    return blocks, title, notes


@register
class XlsxParser(OfficePackageParser):
    """Excel workbooks (.xlsx, .xlsm; macros are never run or read) through openpyxl, after a zip-bomb check."""

    suffixes = (".xlsx", ".xlsm")
    mime_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    label = _LABEL
    application = "Excel"
    main_part = "xl/workbook.xml"

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        self.check_package(path, settings)
        blocks, title, notes = workbook_blocks(path)
        if not blocks:
            raise EmptyDocumentError(f"'{path.name}' has no cells with values in any visible sheet.")
        return build_parse_result(blocks, title=title, heading_source="sheets", warnings=notes)
