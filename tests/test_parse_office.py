"""PPTX, XLSX/XLSM and ODS on real files written by python-pptx, openpyxl and odfpy: a section per slide or sheet,
exact offsets, tables with their header row, numbers as the sheet displays them, notes, hostile packages."""

from __future__ import annotations

import datetime as dt
import io
import os
import random
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from odf import dc
from odf.opendocument import OpenDocumentSpreadsheet
from odf.style import Style, TableProperties
from odf.table import Table, TableCell, TableRow
from odf.text import P
from pptx import Presentation
from pptx.util import Inches

from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.documents.parsers.excel_format import display_value
from chunkbench.documents.parsers.tables import ROWS_PER_BLOCK
from chunkbench.errors import (
    ArchiveBombError,
    CorruptDocumentError,
    DocumentProcessingError,
    EmptyDocumentError,
    EncryptedDocumentError,
    UnsupportedFileTypeError,
)
from chunkbench.models import NodeType, ParseResult, TreeNode
from docgen import office


def assert_exact_offsets(result: ParseResult) -> None:
    """Every paragraph's span in the markdown is its text; every section's span starts with its heading line and
    ends where its last child does."""
    for node in result.tree.root.iter_nodes():
        span = result.markdown[node.start_index : node.end_index]
        if node.node_type is NodeType.PARAGRAPH:
            assert span == node.text
        elif node.node_type in (NodeType.SECTION, NodeType.ARTICLE):
            assert span.startswith(f"{'#' * min(node.heading_level or 1, 6)} {node.heading}")
            if node.children:
                assert node.end_index == node.children[-1].end_index


def sections(result: ParseResult) -> list[TreeNode]:
    return list(result.tree.root.children)


def paragraphs(node: TreeNode) -> list[str]:
    return [child.text or "" for child in node.children if child.node_type is NodeType.PARAGRAPH]


# ---------------------------------------------------------------------------------------------- PPTX


def make_deck(path: Path) -> Path:
    deck = Presentation()
    deck.core_properties.title = "Quarterly Review"
    deck.core_properties.language = "en-GB"
    cover = deck.slides.add_slide(deck.slide_layouts[0])
    cover.shapes.title.text = "Q3 at a glance"
    cover.placeholders[1].text = "Finance team, October 2026"

    revenue = deck.slides.add_slide(deck.slide_layouts[1])
    revenue.shapes.title.text = "Revenue"
    body = revenue.placeholders[1].text_frame  # the layout places it 1.6 in from the top
    body.text = "Revenue grew 12% year on year"
    second = body.add_paragraph()
    second.text = "Europe led the growth"
    second.level = 1
    # Added last but placed lowest and highest: reading order is by position, not by order in the file.
    footer_note = revenue.shapes.add_textbox(Inches(0.5), Inches(6.5), Inches(4), Inches(0.5))
    footer_note.text_frame.text = "Source: finance ledger"
    stamp = revenue.shapes.add_textbox(Inches(6), Inches(1.0), Inches(2), Inches(0.5))
    stamp.text_frame.text = "Draft"
    revenue.notes_slide.notes_text_frame.text = "Mention the new Lisbon office."

    regions = deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title placeholder
    table = regions.shapes.add_table(3, 3, Inches(0.5), Inches(0.5), Inches(6), Inches(1.5)).table
    for r, row in enumerate([["Region", "Q2", "Q3"], ["Europe", "1.2 M", "1.5 M"], ["Asia | Pacific", "0.9 M", ""]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    group = regions.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(0.5), Inches(5), Inches(3), Inches(0.5)).text_frame.text = "Grouped lower"
    group.shapes.add_textbox(Inches(4), Inches(4), Inches(3), Inches(0.5)).text_frame.text = "Grouped upper"

    backup = deck.slides.add_slide(deck.slide_layouts[1])
    backup.shapes.title.text = "Backup numbers"
    backup.placeholders[1].text = "Not for the audience"
    backup._element.set("show", "0")
    deck.save(str(path))
    return path


@pytest.fixture(scope="module")
def deck_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def deck(tmp_path_factory: pytest.TempPathFactory, deck_settings: Settings) -> ParseResult:
    return parse_document(make_deck(tmp_path_factory.mktemp("pptx") / "review.pptx"), deck_settings)


def test_pptx_slides_are_sections_headed_by_their_titles(deck: ParseResult) -> None:
    assert deck.tree.headings() == [(1, "Q3 at a glance"), (1, "Revenue"), (2, "Notes"), (1, "Slide 3")]
    assert deck.tree.root.heading == "Quarterly Review"  # core properties
    assert deck.declared_language == "en-GB"
    assert deck.heading_source == "slides"
    assert deck.warnings == ["Slide 4 is hidden and was not ingested."]
    assert "Backup" not in deck.markdown and "Not for the audience" not in deck.markdown
    assert_exact_offsets(deck)


def test_pptx_body_text_in_reading_order_and_notes_under_their_slide(deck: ParseResult) -> None:
    cover, revenue, slide3 = sections(deck)
    assert paragraphs(cover) == ["Finance team, October 2026"]
    assert paragraphs(revenue) == [
        "Draft",
        "Revenue grew 12% year on year\nEurope led the growth",
        "Source: finance ledger",
    ]
    notes = revenue.children[-1]
    assert (notes.node_type, notes.heading, paragraphs(notes)) == (
        NodeType.SECTION,
        "Notes",
        ["Mention the new Lisbon office."],
    )
    # A group's shapes are read in their own reading order, after the table above them.
    assert paragraphs(slide3)[1:] == ["Grouped upper", "Grouped lower"]


def test_pptx_tables_are_markdown_tables_with_their_header_row(deck: ParseResult) -> None:
    table = paragraphs(sections(deck)[2])[0]
    assert table == (
        "| Region | Q2 | Q3 |\n| --- | --- | --- |\n| Europe | 1.2 M | 1.5 M |\n| Asia \\| Pacific | 0.9 M | |"
    )
    assert table in deck.markdown


def test_pptx_without_core_title_is_named_by_its_first_slide_title(tmp_path: Path, settings: Settings) -> None:
    deck = Presentation()
    untitled = deck.slides.add_slide(deck.slide_layouts[1])  # a title placeholder left empty
    untitled.placeholders[1].text = "Agenda items"
    deck.slides.add_slide(deck.slide_layouts[0]).shapes.title.text = "Roadmap 2027"
    deck.save(str(tmp_path / "plan.pptx"))
    result = parse_document(tmp_path / "plan.pptx", settings)
    assert result.tree.headings() == [(1, "Slide 1"), (1, "Roadmap 2027")]
    assert result.tree.root.heading == "Roadmap 2027" and result.declared_language is None
    assert result.markdown == "# Slide 1\n\nAgenda items\n\n# Roadmap 2027"


def test_pptx_without_text_is_empty(tmp_path: Path, settings: Settings) -> None:
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[6])
    deck.save(str(tmp_path / "blank.pptx"))
    with pytest.raises(EmptyDocumentError, match="no text on its slides"):
        parse_document(tmp_path / "blank.pptx", settings)


def test_pptx_hostile_packages(tmp_path: Path, settings: Settings) -> None:
    bomb = office.make_zip_bomb(tmp_path / "bomb.pptx")
    with pytest.raises(ArchiveBombError, match="zip bomb"):
        parse_document(bomb, settings)
    (tmp_path / "noise.pptx").write_bytes(b"PK\x03\x04" + os.urandom(2048))
    with pytest.raises(CorruptDocumentError, match="damaged"):
        parse_document(tmp_path / "noise.pptx", settings)
    (tmp_path / "text.pptx").write_bytes(b"just some words, not a deck")
    with pytest.raises(UnsupportedFileTypeError, match="named like a PowerPoint deck"):
        parse_document(tmp_path / "text.pptx", settings)
    legacy = office.make_fake_ole(tmp_path / "old.pptx", "PowerPoint Document", b"\x00" * 16)
    with pytest.raises(CorruptDocumentError, match="legacy binary PowerPoint file"):
        parse_document(legacy, settings)
    # A real zip of another format: the deck's main part is another kind.
    docx_as_pptx = tmp_path / "report.pptx"
    office.make_structured_docx(docx_as_pptx)
    with pytest.raises(CorruptDocumentError, match="Office file but not a PowerPoint deck"):
        parse_document(docx_as_pptx, settings)


# ---------------------------------------------------------------------------------------------- number formats


@pytest.mark.parametrize(
    ("value", "number_format", "shown"),
    [
        (1234.5, "0.00", "1234.50"),
        (2.675, "0.00", "2.68"),  # half away from zero, on the decimal value (binary 2.675 is 2.67499…)
        (1234567.891, "#,##0", "1,234,568"),
        (0.256, "0%", "26%"),
        (0.2567, "0.0%", "25.7%"),
        (1234.567, "$#,##0.00", "$1,234.57"),
        (-1234.567, "$#,##0.00", "-$1,234.57"),
        (-1234.5, "#,##0.00_);[Red](#,##0.00)", "(1,234.50)"),
        (0, '#,##0.00;-#,##0.00;"–"', "–"),
        (1234.5, "[$€-407] #,##0.00", "€ 1,234.50"),
        (2.5, '0.0 "kg"', "2.5 kg"),
        (1234567, '#,##0,"k"', "1,235k"),
        (12345.678, "0.00E+00", "1.23E+04"),
        (0.5, "#.00", ".50"),
        (-0.001, "0.00", "0.00"),  # no "-0.00"
        (0.1 + 0.2, "General", "0.3"),
        (1234567.891, "General", "1234567.891"),
        (True, "General", "TRUE"),
        (dt.datetime(2026, 3, 7), "yyyy-mm-dd", "2026-03-07"),
        (dt.datetime(2026, 3, 7), "m/d/yyyy", "3/7/2026"),
        (dt.datetime(2026, 3, 7), "d-mmm-yy", "7-Mar-26"),
        (dt.datetime(2026, 3, 7), "dddd, mmmm d, yyyy", "Saturday, March 7, 2026"),
        (dt.datetime(2026, 3, 7, 14, 5), "m/d/yyyy h:mm", "3/7/2026 14:05"),
        (dt.datetime(2026, 3, 7, 14, 5), "h:mm AM/PM", "2:05 PM"),
        (dt.timedelta(hours=30, minutes=5), "[h]:mm", "30:05"),
        (46088, "yyyy-mm-dd", "2026-03-07"),  # a serial date with a date format
        ("n/a", "0.00", "n/a"),
    ],
)
def test_excel_number_formats_display_like_the_sheet(value: object, number_format: str, shown: str) -> None:
    assert display_value(value, number_format) == shown


@hypothesis_settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**18), 10**18)),
    number_format=st.one_of(
        st.sampled_from(["0.00", "#,##0", "0%", "yyyy-mm-dd", "[h]:mm", "0.00E+00", "# ?/?", '"x";;', "@", ";;;"]),
        st.text(alphabet='0#?.,%Ee+-;"\\[]$ymdhsAP/:_* @', max_size=20),
    ),
)
def test_any_number_and_format_displays_without_failing(value: float, number_format: str) -> None:
    assert isinstance(display_value(value, number_format), str)


# ---------------------------------------------------------------------------------------------- XLSX


def make_workbook(path: Path) -> Path:
    workbook = openpyxl.Workbook()
    workbook.properties.title = "FY26 Budget"
    budget = workbook.active
    budget.title = "Budget"
    budget.append([None])  # a blank first row and column: trimmed
    budget.append([None, "Item", "Amount", "Share", "Due", "Growth"])
    budget.append([None, "Rent", 1234.5, 0.256, dt.date(2026, 3, 7), 0.0345])
    budget.append([None, "Staff", 98765.432, 0.7, dt.date(2026, 12, 31), -0.012])
    budget.append([])
    budget.append([None, "Total", "=SUM(C3:C4)"])  # openpyxl stores no result: read as empty, with a warning
    for row in budget.iter_rows(min_row=3, max_row=6):
        row[2].number_format = "$#,##0.00"
        row[3].number_format = "0%"
        row[4].number_format = "m/d/yyyy"
        row[5].number_format = "0.0%"
    log = workbook.create_sheet("Log")
    log.append(["n", "square"])
    for n in range(1, 121):
        log.append([n, n * n])
    workbook.create_sheet("Empty")
    lookup = workbook.create_sheet("Lookup")
    lookup["A1"] = "internal rates"
    lookup.sheet_state = "hidden"
    workbook.save(path)
    return path


@pytest.fixture(scope="module")
def workbook(tmp_path_factory: pytest.TempPathFactory, deck_settings: Settings) -> ParseResult:
    return parse_document(make_workbook(tmp_path_factory.mktemp("xlsx") / "budget.xlsx"), deck_settings)


def test_xlsx_one_section_per_visible_sheet_with_notes(workbook: ParseResult) -> None:
    assert workbook.tree.headings() == [(1, "Budget"), (1, "Log")]
    assert workbook.tree.root.heading == "FY26 Budget"
    assert workbook.heading_source == "sheets"
    assert workbook.warnings == [
        "Sheet 'Budget': 1 formula cell(s) have no stored result (C6) and read as empty. "
        "Open the file in Excel or LibreOffice and save it, so the results are stored.",
        "Sheet 'Empty' is empty.",
        "Sheet 'Lookup' is hidden and was not ingested.",
    ]
    assert "internal rates" not in workbook.markdown
    assert_exact_offsets(workbook)


def test_xlsx_numbers_as_the_sheet_displays_them(workbook: ParseResult) -> None:
    assert paragraphs(sections(workbook)[0]) == [
        "| Item | Amount | Share | Due | Growth |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| Rent | $1,234.50 | 26% | 3/7/2026 | 3.5% |\n"
        "| Staff | $98,765.43 | 70% | 12/31/2026 | -1.2% |\n"
        "| Total | | | | |"
    ]


def test_xlsx_long_sheets_are_split_into_blocks_that_repeat_the_header(workbook: ParseResult) -> None:
    blocks = paragraphs(sections(workbook)[1])
    assert len(blocks) == 3  # 120 rows in blocks of 50
    assert all(block.startswith("| n | square |\n| --- | --- |\n") for block in blocks)
    assert [block.count("\n") - 1 for block in blocks] == [ROWS_PER_BLOCK, ROWS_PER_BLOCK, 20]
    assert blocks[1].split("\n")[2] == "| 51 | 2601 |" and blocks[2].endswith("| 120 | 14400 |")


def test_xlsm_is_read_as_a_workbook(tmp_path: Path, settings: Settings) -> None:
    workbook = openpyxl.Workbook()
    workbook.active.title = "Macros"
    workbook.active.append(["step", "cost"])
    workbook.active.append(["load", 3])
    workbook.save(tmp_path / "tool.xlsm")
    result = parse_document(tmp_path / "tool.xlsm", settings)
    assert result.markdown == "# Macros\n\n| step | cost |\n| --- | --- |\n| load | 3 |"


def test_xlsx_without_values_is_empty(tmp_path: Path, settings: Settings) -> None:
    workbook = openpyxl.Workbook()
    workbook.active["B2"] = "   "
    workbook.save(tmp_path / "blank.xlsx")
    with pytest.raises(EmptyDocumentError, match="no cells with values"):
        parse_document(tmp_path / "blank.xlsx", settings)


def test_xlsx_hostile_and_protected_files(tmp_path: Path, settings: Settings) -> None:
    bomb = office.make_zip_bomb(tmp_path / "bomb.xlsx")
    with pytest.raises(ArchiveBombError, match="zip bomb"):
        parse_document(bomb, settings)
    (tmp_path / "noise.xlsx").write_bytes(b"PK\x03\x04" + os.urandom(2048))
    with pytest.raises(CorruptDocumentError, match="damaged"):
        parse_document(tmp_path / "noise.xlsx", settings)
    office.make_encrypted_docx(make_workbook(tmp_path / "plain.xlsx"), tmp_path / "locked.xlsx")
    with pytest.raises(EncryptedDocumentError, match="password-protected") as caught:
        parse_document(tmp_path / "locked.xlsx", settings)
    assert "Excel" in caught.value.message


def test_xlsx_declaring_a_huge_dimension_reads_only_its_rows(tmp_path: Path, settings: Settings) -> None:
    path = make_workbook(tmp_path / "wide.xlsx")
    rewritten = tmp_path / "huge-dimension.xlsx"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            data = source.read(entry)
            if entry.filename == "xl/worksheets/sheet2.xml":
                data = data.replace(b'<dimension ref="A1:B121"/>', b'<dimension ref="A1:XFD1048576"/>')
                assert b"XFD1048576" in data
            target.writestr(entry, data)
    result = parse_document(rewritten, settings)
    assert len(paragraphs(sections(result)[1])) == 3


# ---------------------------------------------------------------------------------------------- ODS


def _ods_row(*cells: str | tuple[str, str] | int, repeat: int | None = None) -> TableRow:
    """A row: ``"text"`` a string cell, ``(shown, value)`` a number cell showing ``shown``, an int that many empty
    cells (one repeated element)."""
    row = TableRow(numberrowsrepeated=repeat) if repeat else TableRow()
    for cell in cells:
        if isinstance(cell, int):
            row.addElement(TableCell(numbercolumnsrepeated=cell))
            continue
        shown, value = cell if isinstance(cell, tuple) else (cell, None)
        element = TableCell(valuetype="float", value=value) if value is not None else TableCell(valuetype="string")
        element.addElement(P(text=shown))
        row.addElement(element)
    return row


def make_ods(path: Path) -> Path:
    document = OpenDocumentSpreadsheet()
    document.meta.addElement(dc.Title(text="Price list"))
    hidden = Style(name="hiddenTable", family="table")
    hidden.addElement(TableProperties(display="false"))
    document.automaticstyles.addElement(hidden)
    prices = Table(name="Prices")
    prices.addElement(_ods_row("Item", "Price", 3, "Stock", "Updated"))
    # What the sheet shows is stored beside the value: "1,234.50" for 1234.5, "12%" for 0.12.
    prices.addElement(_ods_row("Tea", ("1,234.50", "1234.5"), 3, ("12%", "0.12"), ("07/03/2026", "46088")))
    prices.addElement(_ods_row("Coffee", ("€ 9.99", "9.99"), 3, ("5%", "0.05"), "—"))
    prices.addElement(_ods_row(1, repeat=1_048_000))  # how Calc fills a sheet to its last row: costs nothing
    document.spreadsheet.addElement(prices)
    secret = Table(name="Secret", stylename=hidden)
    secret.addElement(_ods_row("margins"))
    document.spreadsheet.addElement(secret)
    document.spreadsheet.addElement(Table(name="Blank"))
    document.save(str(path))
    return path


def test_ods_sheets_show_their_displayed_text(tmp_path: Path, settings: Settings) -> None:
    result = parse_document(make_ods(tmp_path / "prices.ods"), settings)
    assert result.tree.headings() == [(1, "Prices")]
    assert result.tree.root.heading == "Price list"
    assert paragraphs(sections(result)[0]) == [
        "| Item | Price | Stock | Updated |\n"
        "| --- | --- | --- | --- |\n"
        "| Tea | 1,234.50 | 12% | 07/03/2026 |\n"
        "| Coffee | € 9.99 | 5% | — |"
    ]
    assert result.warnings == ["Sheet 'Secret' is hidden and was not ingested.", "Sheet 'Blank' is empty."]
    assert_exact_offsets(result)


def test_ods_repeated_rows_with_text_are_expanded_up_to_a_cap(tmp_path: Path, settings: Settings) -> None:
    document = OpenDocumentSpreadsheet()
    sheet = Table(name="Fill")
    sheet.addElement(_ods_row("status"))
    sheet.addElement(_ods_row("open", repeat=3))  # a filled-down column: three real rows
    sheet.addElement(_ods_row("spam", repeat=1_000_000_000))  # a billion rows from a few bytes: capped
    document.spreadsheet.addElement(sheet)
    document.save(str(tmp_path / "fill.ods"))
    table_lines = [line for line in parse_document(tmp_path / "fill.ods", settings).markdown.split("\n") if "|" in line]
    assert table_lines.count("| open |") == 3
    # At most 10,000 rows are added by repetition per sheet: "open" took 2 of them, "spam" the rest.
    assert table_lines.count("| spam |") == 1 + (10_000 - 2)


def test_ods_hostile_files(tmp_path: Path, settings: Settings) -> None:
    bomb = office.make_zip_bomb(tmp_path / "bomb.ods")
    with pytest.raises(ArchiveBombError, match="zip bomb"):
        parse_document(bomb, settings)
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "x"
    workbook.save(tmp_path / "excel.ods")  # a zip, but not OpenDocument
    with pytest.raises(CorruptDocumentError, match="not an OpenDocument spreadsheet"):
        parse_document(tmp_path / "excel.ods", settings)
    # Calc's password protection: the parts are encrypted, and the manifest says how.
    locked = tmp_path / "locked.ods"
    with zipfile.ZipFile(make_ods(tmp_path / "plain.ods")) as source, zipfile.ZipFile(locked, "w") as target:
        for entry in source.infolist():
            data = source.read(entry)
            if entry.filename == "META-INF/manifest.xml":
                entry_xml = b'manifest:full-path="content.xml" manifest:media-type="text/xml"'
                data = data.replace(
                    entry_xml + b"/>",
                    entry_xml + b'><manifest:encryption-data manifest:checksum="x"/></manifest:file-entry>',
                )
                assert b"encryption-data" in data
            target.writestr(entry, data)
    with pytest.raises(EncryptedDocumentError, match="password-protected"):
        parse_document(locked, settings)
    empty = OpenDocumentSpreadsheet()
    empty.spreadsheet.addElement(Table(name="Sheet1"))
    empty.save(str(tmp_path / "empty.ods"))
    with pytest.raises(EmptyDocumentError, match="no cells with text"):
        parse_document(tmp_path / "empty.ods", settings)


# ---------------------------------------------------------------------------------------------- damaged parts


def _mutants(seed_file: Path, count: int, rng: random.Random) -> Iterator[bytes]:
    """Copies of a real package with one XML part damaged: bytes changed, cut out, or markup inserted."""
    with zipfile.ZipFile(seed_file) as source:
        entries = [(entry.filename, source.read(entry)) for entry in source.infolist()]
    xml_parts = [index for index, (name, _) in enumerate(entries) if name.endswith(".xml")]
    for _ in range(count):
        victim = rng.choice(xml_parts)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
            for index, (name, data) in enumerate(entries):
                if index == victim:
                    damaged = bytearray(data)
                    for _ in range(rng.randint(1, 5)):
                        at = rng.randrange(len(damaged))
                        roll = rng.random()
                        if roll < 0.4:
                            damaged[at] = rng.randrange(32, 127)
                        elif roll < 0.7:
                            del damaged[at : at + rng.randint(1, 40)]
                        else:
                            damaged[at:at] = rng.choice([b"<x>", b"</", b'"', b"-1", b"999999999999", b'r="ZZ9"'])
                    data = bytes(damaged)
                target.writestr(name, data)
        yield buffer.getvalue()


@pytest.mark.parametrize(("suffix", "make"), [(".pptx", make_deck), (".xlsx", make_workbook), (".ods", make_ods)])
def test_damaged_parts_are_typed_errors_never_crashes(tmp_path: Path, settings: Settings, suffix, make) -> None:
    rng = random.Random(f"damaged{suffix}")  # deterministic: the same mutants every run
    outcomes = Counter()
    for number, data in enumerate(_mutants(make(tmp_path / f"seed{suffix}"), 60, rng)):
        path = tmp_path / f"mutant{number}{suffix}"
        path.write_bytes(data)
        try:
            parse_document(path, settings)
            outcomes["parsed"] += 1
        except DocumentProcessingError as exc:
            assert 400 <= exc.status_code < 500
            outcomes[exc.code] += 1
    assert outcomes["corrupt_document"] > 0  # the mutations really do break files


# ---------------------------------------------------------------------------------------------- through the API


@pytest.mark.parametrize(
    ("name", "make", "mime_type", "first_heading"),
    [
        (
            "review.pptx",
            make_deck,
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "Q3 at a glance",
        ),
        ("budget.xlsx", make_workbook, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "Budget"),
        ("prices.ods", make_ods, "application/vnd.oasis.opendocument.spreadsheet", "Prices"),
    ],
)
def test_office_files_upload_through_the_documents_api(
    client, tmp_path, settings, name, make, mime_type, first_heading
):
    path = make(tmp_path / name)
    response = client.post("/documents", files={"file": (name, path.read_bytes())})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["document"]["mime_type"] == mime_type
    detail = client.get(f"/documents/{body['document']['id']}").json()
    assert detail["headings"][0]["heading"] == first_heading
    markdown = client.get(f"/documents/{body['document']['id']}/markdown").text
    assert markdown == parse_document(path, settings).markdown
    language_notes = [w for w in body["warnings"] if w.startswith("Language undetermined")]  # an unsure guess
    assert [w for w in body["warnings"] if w not in language_notes] == parse_document(path, settings).warnings


def test_a_zip_bomb_upload_is_a_400_and_leaves_nothing(client, tmp_path):
    bomb = office.make_zip_bomb(tmp_path / "bomb.xlsx")
    response = client.post("/documents", files={"file": ("bomb.xlsx", bomb.read_bytes())})
    assert response.status_code == 400 and response.json()["error"] == "archive_bomb"
    assert client.get("/documents").json()["total"] == 0


@pytest.mark.model
def test_a_workbook_is_chunked_with_exact_offsets_and_rows_under_their_header(client, tmp_path):
    """End to end: upload, process with a built-in strategy, and every chunk is a slice of the markdown."""
    path = make_workbook(tmp_path / "budget.xlsx")
    document = client.post("/documents", files={"file": ("budget.xlsx", path.read_bytes())}).json()["document"]
    # Read from its words, not its numbers and table rules (which py3langid takes for "no language" or Italian); a
    # few header words read English with confidence below 0.8, which is und (never a made-up language).
    assert document["language"] in ("en", "und")
    document_id = document["id"]
    processed = client.post(
        f"/documents/{document_id}/process",
        params={"wait": "true"},
        json={"strategies": ["recursive"], "params": {"recursive": {"chunk_size": 200, "chunk_overlap": 0}}},
    )
    assert processed.status_code == 200, processed.text
    chunks = client.get(f"/admin/chunks/{document_id}", params={"strategy": "recursive"}).json()["chunks"]
    markdown = client.get(f"/documents/{document_id}/markdown").text
    assert len(chunks) > 3
    assert all(markdown[chunk["start_index"] : chunk["end_index"]] == chunk["text"] for chunk in chunks)
    # The Log sheet's 120 rows come in blocks that each start with the header row.
    assert sum(chunk["text"].startswith("| n | square |") for chunk in chunks) >= 3
