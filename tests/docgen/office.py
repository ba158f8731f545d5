"""Word fixtures for parser tests: .docx files from python-docx, hostile zips, encrypted and .doc files."""

from __future__ import annotations

import io
import os
import struct
import zipfile
from pathlib import Path

from docx import Document
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from chunkbench.config import Settings
from chunkbench.documents.parsers import libreoffice
from chunkbench.documents.parsers.docx import OLE_MAGIC

_MB = 1024 * 1024

STRUCTURED_HEADINGS = [
    (1, "Annual Report"),
    (1, "Introduction"),
    (2, "Scope"),
    (2, "Regional Scope"),  # custom style based on Heading 2
    (1, "Article 5"),
    (3, "Details"),
    (2, "Outline Only"),  # a plain paragraph with w:outlineLvl=1
]
FARSI_HEADING = "ماده ۵"
# Arabic yeh/kaf as some Farsi keyboards and converters produce them; normalisation fixes them.
FARSI_PARAGRAPH_SOURCE = "من می‌خواهم کتاب‌ها را بخوانم. اين كتاب خوب است."
FARSI_PARAGRAPH = "من می‌خواهم کتاب‌ها را بخوانم. این کتاب خوب است."


def _set_outline_level(paragraph, level: int) -> None:
    outline = OxmlElement("w:outlineLvl")
    outline.set(qn("w:val"), str(level))
    paragraph._p.get_or_add_pPr().append(outline)


def make_structured_docx(path: Path) -> Path:
    """Title, Heading 1–3, a custom heading style, lists, a table between paragraphs, Word line breaks."""
    document = Document()
    document.core_properties.title = "Structured Report"
    document.add_paragraph("Annual Report", style="Title")
    document.add_heading("Introduction", level=1)
    document.add_paragraph("The introduction explains the report.")
    document.add_heading("Scope", level=2)
    paragraph = document.add_paragraph("First line")
    run = paragraph.add_run()
    run.add_break()
    run.add_text("second\tline with a co\u00adoperative soft hyphen.")
    document.add_paragraph("Alpha bullet", style="List Bullet")
    document.add_paragraph("Beta bullet", style="List Bullet")
    document.add_paragraph("Nested bullet", style="List Bullet 2")
    document.add_paragraph("Between the lists.")
    document.add_paragraph("First step", style="List Number")
    document.add_paragraph("Second step", style="List Number")
    regional = document.styles.add_style("Regional Heading", WD_STYLE_TYPE.PARAGRAPH)
    regional.base_style = document.styles["Heading 2"]
    document.add_paragraph("Regional Scope", style=regional)
    document.add_paragraph("Before the table.")
    table = document.add_table(rows=3, cols=3)
    for row_index, row in enumerate(table.rows):
        for column_index, cell in enumerate(row.cells):
            cell.text = f"r{row_index}c{column_index}"
    merged = table.cell(2, 1).merge(table.cell(2, 2))
    merged.text = "merged cell"
    document.add_paragraph("After the table.")
    document.add_heading("Article 5", level=1)
    document.add_paragraph("Article five text.")
    document.add_heading("Details", level=3)
    document.add_paragraph("Detail text.")
    outline = document.add_paragraph("Outline Only")
    _set_outline_level(outline, 1)
    document.add_paragraph("Closing paragraph.")
    document.save(str(path))
    return path


def make_farsi_docx(path: Path) -> Path:
    """A Farsi document with ZWNJ words and Arabic ي/ك letters."""
    document = Document()
    document.add_heading(FARSI_HEADING, level=1)
    document.add_paragraph(FARSI_PARAGRAPH_SOURCE)
    document.add_heading("ماده ۶", level=1)
    document.add_paragraph("متن ماده‌ی ششم.")
    document.save(str(path))
    return path


def make_zip_bomb(path: Path, inflated_mb: int = 300) -> Path:
    """A zip named .docx whose document part inflates to ``inflated_mb`` of zeros (about 300 kB on disk)."""
    chunk = bytes(_MB)
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        archive.open("word/document.xml", "w", force_zip64=True) as handle,
    ):
        for _ in range(inflated_mb):
            handle.write(chunk)
    return path


def make_incompressible_docx(source: Path, path: Path, media_mb: int) -> Path:
    """A copy of a real .docx with an incompressible image part of ``media_mb`` added."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as copy:
        for entry in original.infolist():
            copy.writestr(entry, original.read(entry))
        copy.writestr("word/media/noise.bin", os.urandom(media_mb * _MB))
    return path


def make_lying_zip(path: Path, inflated_mb: int = 20, declared_bytes: int = 1000) -> Path:
    """A zip whose headers declare a tiny document part that really inflates to ``inflated_mb``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", bytes(inflated_mb * _MB))
    data = bytearray(buffer.getvalue())
    real = inflated_mb * _MB
    # The uncompressed size sits at offset 22 of the local header and 24 of the central entry.
    for start, offset in ((data.find(b"PK\x03\x04"), 22), (data.rfind(b"PK\x01\x02"), 24)):
        assert struct.unpack_from("<I", data, start + offset)[0] == real
        struct.pack_into("<I", data, start + offset, declared_bytes)
    path.write_bytes(bytes(data))
    return path


def make_many_entries_zip(path: Path, entries: int) -> Path:
    """A zip named .docx holding ``entries`` tiny files."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("word/document.xml", b"<w:document/>")
        for index in range(entries - 1):
            archive.writestr(f"word/media/{index}.bin", b"")
    return path


def make_encrypted_docx(source: Path, path: Path, password: str = "secret") -> Path:
    """``source`` encrypted with a password the way Word does it (an OLE file with EncryptedPackage)."""
    from msoffcrypto.format.ooxml import OOXMLFile

    with source.open("rb") as handle, path.open("wb") as out:
        OOXMLFile(handle).encrypt(password, out)
    return path


def make_fake_ole(path: Path, stream: str, stream_head: bytes) -> Path:
    """An OLE2 file whose directory names one 8 kB ``stream`` starting with ``stream_head``, rest zeros.

    Enough to exercise the checks made before LibreOffice is run, not a file Word could open.
    """
    sector = 512
    header = bytearray(sector)
    header[:8] = OLE_MAGIC
    struct.pack_into("<H", header, 30, 9)  # sector shift: 512-byte sectors
    struct.pack_into("<I", header, 56, 4096)  # mini-stream cutoff
    entry = bytearray(128)
    name = stream.encode("utf-16-le")
    entry[: len(name)] = name
    struct.pack_into("<H", entry, 64, len(name) + 2)
    struct.pack_into("<II", entry, 116, 1, 8192)  # starts at sector 1, 8 kB long
    directory = bytes(entry).ljust(sector, b"\0")
    body = stream_head.ljust(8192, b"\0")
    path.write_bytes(bytes(header) + directory + body)
    return path


def make_doc(source: Path, out_dir: Path, settings: Settings) -> Path:
    """A legacy Word 97 .doc converted from a .docx by LibreOffice."""
    return libreoffice.convert(source, "doc:MS Word 97", out_dir, settings)
