"""PDF parser on real generated PDFs (fpdf2, LibreOffice, Pillow, pypdf): no mocks. The Text-layer Gate and OCR have
their own files (test_pdf_text_gate.py, test_pdf_ocr.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.documents.parsers.libreoffice import convert
from chunkbench.errors import (
    CorruptDocumentError,
    EncryptedDocumentError,
    UnsupportedFileTypeError,
)
from chunkbench.models import ParseResult
from chunkbench.text.normalize import normalize_text
from docgen import pdfs

BIG_CHAPTERS = 52  # 2 pages a chapter → 104 pages


@pytest.fixture(scope="session")
def pdf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pdfs")


@pytest.fixture(scope="session")
def session_settings(pdf_dir: Path) -> Settings:
    return Settings(_env_file=None, data_dir=pdf_dir / "data")


@pytest.fixture(scope="session")
def report_pdf(pdf_dir: Path, session_settings: Settings) -> Path:
    """LibreOffice PDF (with its default outline) of a DOCX with Heading 1/2/3 and a table."""
    return convert(pdfs.make_report_docx(pdf_dir), "pdf", pdf_dir, session_settings)


@pytest.fixture(scope="session")
def farsi_lo_pdf(pdf_dir: Path, session_settings: Settings) -> Path:
    return convert(pdfs.make_farsi_docx(pdf_dir), "pdf", pdf_dir, session_settings)


@pytest.fixture(scope="session")
def big_pdf(pdf_dir: Path) -> Path:
    return pdfs.make_structured_pdf(pdf_dir, chapters=BIG_CHAPTERS, name="big.pdf")


def parse(path: Path, settings: Settings) -> ParseResult:
    return parse_document(path, settings)


REPORT_HEADINGS = [
    (1, "Introduction"),
    (2, "Background"),
    (3, "Earlier work"),
    (1, "Results"),
    (2, "Discussion"),
]


@pytest.mark.libreoffice
def test_libreoffice_outline_gives_headings_and_levels(report_pdf: Path, settings: Settings) -> None:
    result = parse(report_pdf, settings)
    assert result.heading_source == "outline"
    assert result.tree.headings() == REPORT_HEADINGS
    assert result.page_count == 1
    assert result.tree.root.heading == "Quarterly Report"  # PDF metadata title


@pytest.mark.libreoffice
def test_libreoffice_without_outline_falls_back_to_fonts(report_pdf: Path, pdf_dir: Path, settings: Settings) -> None:
    result = parse(pdfs.strip_outline(report_pdf, pdf_dir), settings)
    assert result.heading_source == "font"
    # Heading 3 is bold at the body size: found by the "bold at body size" branch of the rule.
    assert result.tree.headings() == REPORT_HEADINGS


@pytest.mark.libreoffice
def test_table_is_flattened_row_by_row(report_pdf: Path, settings: Settings) -> None:
    result = parse(report_pdf, settings)
    table = "\n".join(" | ".join(row) for row in pdfs.TABLE_ROWS)
    assert table in result.markdown
    before, after = result.plain_text.split(table)
    assert before.rstrip().endswith("The prices are listed in the table below.")
    assert after.lstrip().startswith("The table ends here and the text goes on.")


def test_fpdf_outline_is_used(pdf_dir: Path, settings: Settings) -> None:
    result = parse(pdfs.make_structured_pdf(pdf_dir, chapters=3, outline=True), settings)
    assert result.heading_source == "outline"
    assert result.tree.headings() == pdfs.structured_headings(3)


def test_big_pdf_headings_page_count_and_running_lines(big_pdf: Path, settings: Settings) -> None:
    result = parse(big_pdf, settings)
    assert result.page_count == BIG_CHAPTERS * 2
    assert result.heading_source == "font"
    assert result.tree.headings() == pdfs.structured_headings(BIG_CHAPTERS)
    # The running header and the "Page N" footer are gone; body text that mentions pages is not.
    assert "ACME Corp" not in result.plain_text
    assert "Page 7" not in result.plain_text
    assert "Paragraph 2 of Chapter 52 Overview of topic 52." in result.plain_text


def test_running_lines_stay_on_short_documents(pdf_dir: Path, settings: Settings) -> None:
    # Two pages are too few to tell a running header from content: nothing is removed.
    result = parse(pdfs.make_structured_pdf(pdf_dir, chapters=1, name="one-chapter.pdf"), settings)
    assert result.page_count == 2
    assert "ACME Corp" in result.plain_text


def test_numbering_heuristics_when_fonts_say_nothing(pdf_dir: Path, settings: Settings) -> None:
    result = parse(pdfs.make_numbered_plain_pdf(pdf_dir), settings)
    assert result.heading_source == "heuristic"
    assert result.tree.headings() == [
        (1, "Chapter 1 General provisions"),
        (2, "1.1 Scope"),
        (2, "1.2 Definitions"),
        (1, "Chapter 2 Obligations"),
        (2, "2.1 Duties of the parties"),
    ]
    assert "1. This sentence starts with a number" in result.plain_text


def test_hyphenated_line_breaks_are_joined(pdf_dir: Path, settings: Settings) -> None:
    result = parse(pdfs.make_hyphenated_pdf(pdf_dir), settings)
    first, second = result.plain_text.split("\n\n")
    assert first == (
        "This paragraph contains an example of a hyphenated word and a well-known compound "
        "that stays hyphenated only when it has to."
    )
    assert second.startswith("A second paragraph follows after a gap.")
    assert result.paragraph_count == 2


FARSI_PARAGRAPHS = [normalize_text(p) for p in (pdfs.FA_PARAGRAPH_1, pdfs.FA_PARAGRAPH_2, pdfs.FA_PARAGRAPH_3)]


def _assert_farsi(result: ParseResult, headings: list[tuple[int, str]]) -> None:
    assert result.tree.headings() == headings
    paragraphs = [n.text for n in result.tree.root.iter_nodes() if n.node_type == "paragraph"]
    # Logical order (digits, punctuation and the Latin run in place) and every ZWNJ kept.
    assert paragraphs == FARSI_PARAGRAPHS
    assert result.plain_text.count("\u200c") == sum(
        s.count("\u200c") for s in (*FARSI_PARAGRAPHS, *(h for _, h in headings))
    )


def test_farsi_fpdf2_logical_order_and_zwnj(pdf_dir: Path, settings: Settings) -> None:
    result = parse(pdfs.make_farsi_fpdf(pdf_dir), settings)
    # Both headings are 18 pt: the numbering keyword (فصل) keeps them at one level.
    assert result.heading_source == "font"
    _assert_farsi(result, [(1, normalize_text(pdfs.FA_HEADING_1)), (1, normalize_text(pdfs.FA_HEADING_2))])


@pytest.mark.libreoffice
def test_farsi_libreoffice_logical_order_and_zwnj(farsi_lo_pdf: Path, settings: Settings) -> None:
    result = parse(farsi_lo_pdf, settings)
    assert result.heading_source == "outline"
    _assert_farsi(result, [(1, normalize_text(pdfs.FA_HEADING_1)), (2, normalize_text(pdfs.FA_HEADING_2))])


def test_encrypted_pdf(pdf_dir: Path, settings: Settings) -> None:
    source = pdfs.make_numbered_plain_pdf(pdf_dir)
    with pytest.raises(EncryptedDocumentError, match="password-protected; remove the password"):
        parse(pdfs.make_encrypted_pdf(source, pdf_dir), settings)


def test_truncated_pdf_is_corrupt(pdf_dir: Path, settings: Settings) -> None:
    source = pdfs.make_numbered_plain_pdf(pdf_dir)
    with pytest.raises(CorruptDocumentError) as caught:
        parse(pdfs.make_truncated_pdf(source, pdf_dir), settings)
    assert caught.value.status_code == 400


def test_random_bytes_named_pdf_are_refused_by_sniffing(pdf_dir: Path, settings: Settings) -> None:
    with pytest.raises(UnsupportedFileTypeError) as caught:
        parse(pdfs.make_random_pdf(pdf_dir), settings)
    assert caught.value.status_code == 415
