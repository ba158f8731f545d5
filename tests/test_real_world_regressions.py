"""Regressions found by ingesting a folder of real-world files (perf/real_folder.py), each rebuilt here from a
generated fixture: a page laid out with tables around its headings, 7-bit ISO-2022 Japanese and Korean text, and
a Word document saved as Strict Open XML."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import docx
import pytest
from docx.opc.exceptions import PackageNotFoundError

from chunkbench.config import Settings
from chunkbench.documents.discovery import discover_files
from chunkbench.documents.ingest import ingest_paths
from chunkbench.documents.ingest_results import IngestOutcome
from chunkbench.documents.parsers import parse_document
from chunkbench.errors import ConverterUnavailableError
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT

needs_libreoffice = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice not installed")

# A reference manual in the style of gtk-doc/libxml2 pages: every heading sits in a layout table's cell, beside a
# menu table, and a real data table follows.
LAYOUT_PAGE = """<!DOCTYPE html><html><head><title>Reference Manual for libexample</title></head><body>
<table width="100%"><tr><td><img src="logo.png" alt=""></td><td><table><tr><td align="center">
  <h1>The Example C library</h1><h2>Reference Manual for libexample</h2>
</td></tr></table></td></tr></table>
<table><tr>
  <td valign="top"><table><tr><td><b>API Menu</b></td></tr><tr><td><ul><li>Main Menu</li><li>ChangeLog</li></ul></td>
  </tr></table></td>
  <td valign="top"><h2>Table of Contents</h2>
    <ul><li>attributes: interface for the attribute handling</li><li>keys: interface for the key matching</li></ul>
    <h3>Release figures</h3>
    <table><tr><th>Year</th><th>Releases</th></tr><tr><td>2023</td><td>4</td></tr><tr><td>2024</td><td>6</td></tr></table>
  </td>
</tr></table></body></html>"""


def test_headings_inside_layout_tables_are_kept(tmp_path: Path, settings: Settings) -> None:
    page = tmp_path / "index.html"
    page.write_text(LAYOUT_PAGE, encoding="utf-8")
    result = parse_document(page, settings)
    assert result.heading_source == "html"
    assert result.tree.headings() == [
        (1, "The Example C library"),
        (2, "Reference Manual for libexample"),
        (2, "Table of Contents"),
        (3, "Release figures"),
    ]
    # The contents list is its own paragraph under its heading, not run together with the whole page.
    assert "## Table of Contents\n\n- attributes: interface for the attribute handling\n- keys:" in result.markdown
    # A table without headings is still data: one line per row.
    assert "Year | Releases\n2023 | 4\n2024 | 6" in result.markdown


JAPANESE = (
    "Python の開発は、1990 年ごろから開始されています。\n\n"
    "開発者の Guido van Rossum は教育用のプログラミング言語を設計しました。\n"
)
KOREAN = (
    "파이썬(Python)은 배우기 쉽고, 강력한 프로그래밍 언어입니다.\n\n효율적인 고수준 데이터 구조를 가지고 있습니다.\n"
)


@pytest.mark.parametrize(
    ("codec", "text", "name"), [("iso2022_jp", JAPANESE, "ISO-2022-JP"), ("iso2022_kr", KOREAN, "ISO-2022-KR")]
)
def test_seven_bit_iso2022_text_is_decoded(
    tmp_path: Path, settings: Settings, codec: str, text: str, name: str
) -> None:
    """ISO-2022 bytes are all ASCII, so they used to pass as UTF-8 with their escape sequences in the text."""
    data = text.encode(codec)
    assert data.isascii()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_bytes(data)
    database = Database.from_settings(settings)
    try:
        [result] = ingest_paths(database, settings, discover_files([tmp_path / "notes"]), tenant_id=DEFAULT_TENANT)
    finally:
        database.dispose()
    assert result.outcome is IngestOutcome.CREATED
    assert result.document is not None
    assert result.document.parsed_text == text.strip()
    assert list(result.warnings) == [f"Decoded as {name} (recognised by its ISO-2022 escape sequences)."]


def test_ascii_with_terminal_escapes_is_still_utf8(tmp_path: Path, settings: Settings) -> None:
    """An escape character alone (a captured terminal log's colour codes) does not make a file ISO-2022."""
    log = tmp_path / "build.txt"
    log.write_bytes(b"Build log\n\n\x1b[32mPASSED\x1b[0m all 12 checks of the release.\n")
    result = parse_document(log, settings)
    assert "PASSED" in result.markdown
    assert list(result.warnings) == []


# The namespaces Strict Open XML uses in place of the transitional ones Word saves by default (ISO/IEC 29500-1).
_STRICT_NAMESPACES = {
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main": "http://purl.oclc.org/ooxml/wordprocessingml/main",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships": (
        "http://purl.oclc.org/ooxml/officeDocument/relationships"
    ),
    "http://schemas.openxmlformats.org/drawingml/2006/main": "http://purl.oclc.org/ooxml/drawingml/main",
}


def make_strict_docx(path: Path) -> Path:
    """A Word document with two headings, its XML parts moved to the Strict Open XML namespaces."""
    transitional = path.with_name("transitional.docx")
    document = docx.Document()
    document.add_heading("Scope", 1)
    document.add_paragraph("This agreement covers the supply of spare parts.")
    document.add_heading("Payment terms", 2)
    document.add_paragraph("Invoices are due within thirty days.")
    document.save(str(transitional))
    with zipfile.ZipFile(transitional) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as strict:
        for entry in source.infolist():
            data = source.read(entry.filename)
            if entry.filename.endswith((".xml", ".rels")):
                text = data.decode("utf-8")
                for old, new in _STRICT_NAMESPACES.items():
                    text = text.replace(old, new)
                data = text.encode("utf-8")
            strict.writestr(entry, data)
    transitional.unlink()
    return path


@needs_libreoffice
def test_strict_open_xml_docx_is_read(tmp_path: Path, settings: Settings) -> None:
    strict = make_strict_docx(tmp_path / "contract.docx")
    with pytest.raises((PackageNotFoundError, KeyError, ValueError)):
        docx.Document(str(strict))  # what used to make it a 400 corrupt_document
    result = parse_document(strict, settings)
    assert result.heading_source == "styles"
    assert result.tree.headings() == [(1, "Scope"), (2, "Payment terms")]
    assert "Invoices are due within thirty days." in result.markdown


def test_strict_open_xml_docx_without_libreoffice(tmp_path: Path, settings: Settings) -> None:
    strict = make_strict_docx(tmp_path / "contract.docx")
    settings.libreoffice_binary = "no-such-soffice-binary"
    with pytest.raises(ConverterUnavailableError) as caught:
        parse_document(strict, settings)
    assert caught.value.status_code == 415
    assert "Strict Open XML" in caught.value.message
    assert "libreoffice-writer-nogui" in caught.value.message
