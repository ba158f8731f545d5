"""DOCX and DOC parsing on real files: structure, Farsi text, hostile zips, encryption, LibreOffice."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import docx
import pytest

from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.documents.parsers.docx import OLE_MAGIC
from chunkbench.errors import (
    ArchiveBombError,
    ConversionError,
    ConverterUnavailableError,
    CorruptDocumentError,
    EmptyDocumentError,
    EncryptedDocumentError,
    UnsupportedFileTypeError,
)
from chunkbench.models import NodeType, ParseResult
from docgen import office

needs_libreoffice = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice not installed")


def assert_offsets_consistent(result: ParseResult) -> None:
    """Sections start at their heading line; a paragraph's span is its text, list markers aside."""
    for node in result.tree.root.iter_nodes():
        span = result.markdown[node.start_index : node.end_index]
        if node.node_type in (NodeType.SECTION, NodeType.ARTICLE):
            assert span.startswith(f"{'#' * min(node.heading_level or 1, 6)} {node.heading}")
        elif node.node_type == NodeType.PARAGRAPH:
            span_lines, text_lines = span.split("\n"), node.text.split("\n")
            assert len(span_lines) == len(text_lines)
            assert all(line.endswith(text) for line, text in zip(span_lines, text_lines, strict=True))


@pytest.fixture(scope="module")
def lo_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def structured_docx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return office.make_structured_docx(tmp_path_factory.mktemp("docx") / "report.docx")


@pytest.fixture(scope="module")
def structured(structured_docx: Path, lo_settings: Settings) -> ParseResult:
    return parse_document(structured_docx, lo_settings)


@pytest.fixture(scope="module")
def farsi_docx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return office.make_farsi_docx(tmp_path_factory.mktemp("fa") / "farsi.docx")


@pytest.fixture(scope="module")
def converted_doc(structured_docx: Path, lo_settings: Settings, tmp_path_factory) -> Path:
    return office.make_doc(structured_docx, tmp_path_factory.mktemp("doc"), lo_settings)


def test_docx_headings_levels_and_title(structured: ParseResult) -> None:
    assert structured.tree.headings() == office.STRUCTURED_HEADINGS
    heading_lines = [line for line in structured.markdown.split("\n") if line.startswith("#")]
    assert heading_lines == [f"{'#' * level} {text}" for level, text in office.STRUCTURED_HEADINGS]
    assert structured.tree.root.heading == "Structured Report"  # core properties win over the Title
    assert structured.page_count == 1
    assert structured.heading_source == "styles"


def test_docx_article_and_section_nodes(structured: ParseResult) -> None:
    kinds = {node.heading: node.node_type for node in structured.tree.root.iter_nodes() if node.heading_level}
    assert kinds["Article 5"] is NodeType.ARTICLE
    assert kinds["Introduction"] is NodeType.SECTION
    article = next(node for node in structured.tree.root.iter_nodes() if node.heading == "Article 5")
    assert [child.heading for child in article.children if child.heading] == ["Details", "Outline Only"]


def test_docx_table_flattened_between_its_paragraphs(structured: ParseResult) -> None:
    table = "r0c0 | r0c1 | r0c2\nr1c0 | r1c1 | r1c2\nr2c0 | merged cell"
    assert f"Before the table.\n\n{table}\n\nAfter the table." in structured.markdown
    assert structured.markdown.count("merged cell") == 1


def test_docx_lists_are_one_block_each(structured: ParseResult) -> None:
    assert "- Alpha bullet\n- Beta bullet\n- Nested bullet\n\nBetween the lists." in structured.markdown
    assert "1. First step\n2. Second step" in structured.markdown
    texts = [node.text for node in structured.tree.root.iter_nodes() if node.node_type is NodeType.PARAGRAPH]
    assert "Alpha bullet\nBeta bullet\nNested bullet" in texts


def test_docx_line_breaks_tabs_and_soft_hyphens(structured: ParseResult) -> None:
    assert "First line\nsecond line with a cooperative soft hyphen." in structured.plain_text
    assert "\u00ad" not in structured.markdown


def test_docx_tree_offsets(structured: ParseResult) -> None:
    assert_offsets_consistent(structured)
    closing = next(node for node in structured.tree.root.iter_nodes() if node.text == "Closing paragraph.")
    assert structured.markdown[closing.start_index : closing.end_index] == "Closing paragraph."
    assert structured.tree.root.end_index == len(structured.markdown)


def test_docx_farsi_text(farsi_docx: Path, settings: Settings) -> None:
    result = parse_document(farsi_docx, settings)
    assert result.tree.headings() == [(1, office.FARSI_HEADING), (1, "ماده ۶")]
    assert [node.node_type for node in result.tree.root.children] == [NodeType.ARTICLE, NodeType.ARTICLE]
    assert office.FARSI_PARAGRAPH in result.plain_text
    assert "می\u200cخواهم" in result.markdown and "کتاب\u200cها" in result.markdown
    assert "ي" not in result.markdown and "ك" not in result.markdown
    assert_offsets_consistent(result)


def test_docx_zip_bomb_is_refused(tmp_path: Path, settings: Settings) -> None:
    bomb = office.make_zip_bomb(tmp_path / "bomb.docx")
    with pytest.raises(ArchiveBombError) as caught:
        parse_document(bomb, settings)
    assert caught.value.status_code == 400
    assert "zip bomb" in caught.value.message


def test_docx_absurd_compression_ratio_is_refused(tmp_path: Path, settings: Settings) -> None:
    bomb = office.make_zip_bomb(tmp_path / "small-bomb.docx", inflated_mb=20)  # under the size limit
    with pytest.raises(ArchiveBombError, match="compressed more than"):
        parse_document(bomb, settings)


def test_docx_total_uncompressed_size_limit(structured_docx: Path, tmp_path: Path, settings: Settings) -> None:
    big = office.make_incompressible_docx(structured_docx, tmp_path / "big.docx", media_mb=2)
    settings.max_docx_uncompressed_mb = 1
    with pytest.raises(ArchiveBombError, match="CHUNKBENCH_MAX_DOCX_UNCOMPRESSED_MB"):
        parse_document(big, settings)


def test_docx_lying_sizes_are_not_trusted(tmp_path: Path, settings: Settings) -> None:
    liar = office.make_lying_zip(tmp_path / "liar.docx")
    with pytest.raises((ArchiveBombError, CorruptDocumentError)) as caught:
        parse_document(liar, settings)
    assert caught.value.status_code == 400


def test_docx_too_many_entries(tmp_path: Path, settings: Settings) -> None:
    settings.max_docx_entries = 100
    crowded = office.make_many_entries_zip(tmp_path / "crowded.docx", entries=101)
    with pytest.raises(ArchiveBombError, match="101 files") as caught:
        parse_document(crowded, settings)
    assert caught.value.status_code == 400


def test_docx_corrupt_zip(tmp_path: Path, settings: Settings) -> None:
    broken = tmp_path / "broken.docx"
    broken.write_bytes(b"PK\x03\x04" + os.urandom(2048))
    with pytest.raises(CorruptDocumentError):
        parse_document(broken, settings)


def test_docx_truncated_zip(structured_docx: Path, tmp_path: Path, settings: Settings) -> None:
    truncated = tmp_path / "truncated.docx"
    truncated.write_bytes(structured_docx.read_bytes()[:3000])
    with pytest.raises(CorruptDocumentError):
        parse_document(truncated, settings)


def test_docx_without_document_part(tmp_path: Path, settings: Settings) -> None:
    other = tmp_path / "other.docx"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("content.xml", "<office/>")
    with pytest.raises(CorruptDocumentError, match="not a Word document"):
        parse_document(other, settings)


def test_docx_not_a_zip_is_unsupported(tmp_path: Path, settings: Settings) -> None:
    text = tmp_path / "notes.docx"
    text.write_text("just text")
    with pytest.raises(UnsupportedFileTypeError):
        parse_document(text, settings)


def test_encrypted_docx(structured_docx: Path, tmp_path: Path, settings: Settings) -> None:
    locked = office.make_encrypted_docx(structured_docx, tmp_path / "locked.docx")
    with pytest.raises(EncryptedDocumentError, match="password") as caught:
        parse_document(locked, settings)
    assert caught.value.status_code == 400
    # The same file named .doc is refused before LibreOffice is asked.
    renamed = locked.rename(tmp_path / "locked.doc")
    with pytest.raises(EncryptedDocumentError):
        parse_document(renamed, settings)


def test_empty_docx(tmp_path: Path, settings: Settings) -> None:
    empty = tmp_path / "empty.docx"
    docx.Document().save(str(empty))
    with pytest.raises(EmptyDocumentError):
        parse_document(empty, settings)


@needs_libreoffice
def test_ole_file_named_docx(converted_doc: Path, tmp_path: Path, settings: Settings) -> None:
    misnamed = tmp_path / "legacy.docx"
    shutil.copy(converted_doc, misnamed)
    with pytest.raises(CorruptDocumentError, match=r"Rename it with the \.doc extension"):
        parse_document(misnamed, settings)


@needs_libreoffice
def test_doc_has_the_headings_of_its_source(
    converted_doc: Path, structured: ParseResult, lo_settings: Settings
) -> None:
    result = parse_document(converted_doc, lo_settings)
    # LibreOffice exports a custom style based on a heading with outline level "body text", so
    # Word and this parser both see it as a paragraph after the round trip.
    expected = [heading for heading in structured.tree.headings() if heading != (2, "Regional Scope")]
    assert result.tree.headings() == expected
    assert "r0c0 | r0c1 | r0c2" in result.markdown
    assert "- Alpha bullet" in result.markdown
    assert_offsets_consistent(result)


@needs_libreoffice
def test_docx_named_doc_is_read_directly(structured_docx: Path, tmp_path: Path, settings: Settings) -> None:
    misnamed = tmp_path / "report.doc"
    shutil.copy(structured_docx, misnamed)
    assert parse_document(misnamed, settings).tree.headings() == office.STRUCTURED_HEADINGS


def test_doc_without_libreoffice(tmp_path: Path, settings: Settings) -> None:
    legacy = tmp_path / "legacy.doc"
    legacy.write_bytes(OLE_MAGIC + bytes(4096))
    settings.libreoffice_binary = "no-such-soffice-binary"
    with pytest.raises(ConverterUnavailableError) as caught:
        parse_document(legacy, settings)
    assert caught.value.status_code == 415
    assert "libreoffice-writer-nogui" in caught.value.message


@needs_libreoffice
def test_random_bytes_doc(tmp_path: Path, settings: Settings) -> None:
    garbage = tmp_path / "garbage.doc"
    garbage.write_bytes(OLE_MAGIC + os.urandom(4096))
    with pytest.raises((ConversionError, CorruptDocumentError)) as caught:
        parse_document(garbage, settings)
    assert caught.value.status_code == 400


@needs_libreoffice
def test_doc_with_a_bad_word_stream(tmp_path: Path, settings: Settings) -> None:
    fake = office.make_fake_ole(tmp_path / "fake.doc", "WordDocument", os.urandom(64))
    with pytest.raises(CorruptDocumentError, match="no readable Word document"):
        parse_document(fake, settings)


@needs_libreoffice
def test_spreadsheet_named_doc(tmp_path: Path, settings: Settings) -> None:
    sheet = office.make_fake_ole(tmp_path / "sheet.doc", "Workbook", b"\x09\x08")
    with pytest.raises(CorruptDocumentError, match="Excel/PowerPoint"):
        parse_document(sheet, settings)


@needs_libreoffice
def test_password_protected_legacy_doc(tmp_path: Path, settings: Settings) -> None:
    fib = b"\xec\xa5\xc1\x00" + bytes(7) + b"\x01"  # wIdent, nFib, …, fEncrypted
    locked = office.make_fake_ole(tmp_path / "locked.doc", "WordDocument", fib)
    with pytest.raises(EncryptedDocumentError, match="password"):
        parse_document(locked, settings)
