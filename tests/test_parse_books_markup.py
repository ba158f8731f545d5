"""EPUB (written with zipfile), ODT (odfpy) and RTF (by hand) through LibreOffice, reStructuredText and Org:
headings, chapters, exact offsets, and hostile books → typed errors."""

from __future__ import annotations

import contextlib
import io
import random
import shutil
import zipfile
from email.message import EmailMessage
from pathlib import Path

import docx
import pytest
from odf.opendocument import OpenDocumentText
from odf.style import Style
from odf.text import H, P

from chunkbench.config import Settings
from chunkbench.documents.discovery import SourceFile
from chunkbench.documents.ingest import ingest_paths
from chunkbench.documents.ingest_results import IngestOutcome
from chunkbench.documents.parsers import org, parse_document
from chunkbench.errors import (
    ArchiveBombError,
    ChunkbenchError,
    ConverterUnavailableError,
    CorruptDocumentError,
    EncryptedDocumentError,
    UnsupportedFileTypeError,
)
from chunkbench.storage.db import Database
from docgen.offsets import assert_exact_offsets
from docgen.outlook import MsgMessage, write_msg

_SKIP_WITHOUT_LIBREOFFICE = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice not installed")


def needs_libreoffice(test):
    """Marked ``libreoffice`` (``-m libreoffice`` selects them) and skipped where LibreOffice is not installed."""
    return pytest.mark.libreoffice(_SKIP_WITHOUT_LIBREOFFICE(test))


CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""


def _chapter(title: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>{title}</title></head><body>{body}</body></html>"
    )


def write_epub(path: Path, files: dict[str, str | bytes], *, container: str | None = CONTAINER) -> Path:
    """An EPUB as the OCF spec lays it out: ``mimetype`` first and stored, then the container and the book."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        if container is not None:
            archive.writestr("META-INF/container.xml", container, compress_type=zipfile.ZIP_DEFLATED)
        for name, data in files.items():
            archive.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
    return path


def _opf(manifest: str, spine: str, *, version: str = "3.0", toc: str = "") -> str:
    return f"""<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="{version}" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:1</dc:identifier>
    <dc:title>The Harbour Book</dc:title><dc:language>en-GB</dc:language>
  </metadata>
  <manifest>{manifest}</manifest>
  <spine{toc}>{spine}</spine>
</package>"""


def epub3(path: Path) -> Path:
    nav = _chapter(
        "Contents",
        '<nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="toc"><ol>'
        '<li><a href="text/ch1.xhtml">Arrival</a></li>'
        '<li><a href="text/ch%202.xhtml#start">The Storm</a></li></ol></nav>',
    )
    manifest = (
        '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        '<item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="c2" href="text/ch%202.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="css" href="style.css" media-type="text/css"/>'
    )
    spine = '<itemref idref="nav"/><itemref idref="c1"/><itemref idref="c2"/>'
    return write_epub(
        path,
        {
            "OEBPS/content.opf": _opf(manifest, spine),
            "OEBPS/nav.xhtml": nav,
            "OEBPS/style.css": "body { margin: 0 }",
            "OEBPS/text/ch1.xhtml": _chapter(
                "ch1",
                "<h1>Arrival</h1><p>The ferry reached the harbour at dawn.</p>"
                "<h2>The quay</h2><p>Fishermen were mending nets.</p>",
            ),
            "OEBPS/text/ch 2.xhtml": _chapter("ch2", '<p id="start">Wind rose in the <i>afternoon</i>.</p>'),
        },
    )


def epub2(path: Path) -> Path:
    ncx = """<?xml version="1.0" encoding="utf-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>
  <navPoint id="n1" playOrder="1">
    <navLabel><text>Chapter One: Nets</text></navLabel><content src="one.html"/></navPoint>
  <navPoint id="n2" playOrder="2"><navLabel><text>Chapter Two: Boats</text></navLabel><content src="two.html"/>
    <navPoint id="n3" playOrder="3"><navLabel><text>Sails</text></navLabel><content src="two.html#sails"/></navPoint>
  </navPoint>
</navMap></ncx>"""
    manifest = (
        '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        '<item id="one" href="one.html" media-type="application/xhtml+xml"/>'
        '<item id="two" href="two.html" media-type="application/xhtml+xml"/>'
    )
    spine = '<itemref idref="one"/><itemref idref="two"/>'
    return write_epub(
        path,
        {
            "OEBPS/content.opf": _opf(manifest, spine, version="2.0", toc=' toc="ncx"'),
            "OEBPS/toc.ncx": ncx,
            "OEBPS/one.html": _chapter("one", "<p>Nets are mended by hand.</p>"),
            "OEBPS/two.html": _chapter("two", '<p>Boats leave early.</p><h3 id="sails">Sails</h3><p>Canvas.</p>'),
        },
    )


@pytest.fixture(scope="module")
def lo_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("data"))


def test_epub3_chapters_follow_the_spine_titled_by_the_nav(tmp_path, lo_settings):
    result = parse_document(epub3(tmp_path / "harbour.epub"), lo_settings)

    assert result.tree.root.heading == "The Harbour Book"
    assert result.declared_language == "en-GB"
    # The nav document is the contents list, not text; each chapter is a top-level section, its headings below.
    assert result.tree.headings() == [(1, "Arrival"), (2, "The quay"), (1, "The Storm")]
    assert result.markdown == (
        "# Arrival\n\nThe ferry reached the harbour at dawn.\n\n## The quay\n\nFishermen were mending nets.\n\n"
        "# The Storm\n\nWind rose in the *afternoon*."
    )
    storm = result.tree.root.children[1]
    assert result.markdown[storm.start_index : storm.end_index] == "# The Storm\n\nWind rose in the *afternoon*."
    assert_exact_offsets(result)


def test_epub2_chapters_titled_by_the_ncx(tmp_path, lo_settings):
    result = parse_document(epub2(tmp_path / "boats.epub"), lo_settings)
    assert result.tree.headings() == [(1, "Chapter One: Nets"), (1, "Chapter Two: Boats"), (2, "Sails")]
    two = result.tree.root.children[1]
    assert [child.heading or child.text for child in two.children] == ["Boats leave early.", "Sails"]
    assert_exact_offsets(result)


def test_epub_without_an_opf_or_container_is_corrupt(tmp_path, lo_settings):
    no_container = write_epub(tmp_path / "a.epub", {"OEBPS/x.xhtml": _chapter("x", "<p>x</p>")}, container=None)
    with pytest.raises(CorruptDocumentError, match=r"META-INF/container\.xml"):
        parse_document(no_container, lo_settings)
    no_opf = write_epub(tmp_path / "b.epub", {"OEBPS/x.xhtml": _chapter("x", "<p>x</p>")})
    with pytest.raises(CorruptDocumentError, match=r"package document 'OEBPS/content\.opf' \(OPF\) is missing"):
        parse_document(no_opf, lo_settings)


def test_epub_zip_bomb_is_refused(tmp_path, lo_settings):
    path = epub3(tmp_path / "bomb.epub")
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("OEBPS/filler.bin", b"\0" * (30 * 1024 * 1024), compress_type=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 200_000
    with pytest.raises(ArchiveBombError, match="zip bomb"):
        parse_document(path, lo_settings)


def test_epub_with_an_encrypted_chapter_is_refused_but_obfuscated_fonts_are_not(tmp_path, lo_settings):
    encryption = """<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"
      xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>
      <enc:CipherData><enc:CipherReference URI="{uri}"/></enc:CipherData></enc:EncryptedData></encryption>"""
    drm = epub3(tmp_path / "drm.epub")
    with zipfile.ZipFile(drm, "a") as archive:
        archive.writestr("META-INF/encryption.xml", encryption.format(uri="OEBPS/text/ch1.xhtml"))
    with pytest.raises(EncryptedDocumentError, match="DRM"):
        parse_document(drm, lo_settings)
    fonts = epub3(tmp_path / "fonts.epub")
    with zipfile.ZipFile(fonts, "a") as archive:
        archive.writestr("META-INF/encryption.xml", encryption.format(uri="OEBPS/fonts/serif.otf"))
    assert parse_document(fonts, lo_settings).tree.headings()[0] == (1, "Arrival")


def test_epub_entities_are_not_expanded(tmp_path, lo_settings):
    laughs = '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    path = epub3(tmp_path / "laughs.epub")
    with zipfile.ZipFile(path) as archive:
        files = {n: archive.read(n) for n in archive.namelist() if n not in ("mimetype", "META-INF/container.xml")}
    files["OEBPS/content.opf"] = laughs + files["OEBPS/content.opf"].decode().split("?>", 1)[1].replace(
        "The Harbour Book", "&b;"
    )
    result = parse_document(write_epub(tmp_path / "laughs2.epub", files), lo_settings)
    assert "aaaaaaaaaa" not in (result.tree.root.heading or "")


def test_zip_that_is_not_an_epub_named_epub(tmp_path, lo_settings):
    path = tmp_path / "x.epub"
    path.write_bytes(b"just text")
    with pytest.raises(UnsupportedFileTypeError):
        parse_document(path, lo_settings)


RST = """\
=============
Harbour guide
=============

Boats leave at dawn; see :func:`schedule` and :ref:`tides`.

Mooring
=======

Use the *north* quay.

.. code-block:: python

   moor(boat, quay="north")

.. toctree::

   tides

- ropes
- fenders

  - large

.. note:: Fees are paid at the office.

+-------+------+
| Boat  | Fee  |
+=======+======+
| small | 10   |
+-------+------+

Tides
-----

Term
   A definition.

.. include:: /etc/passwd
"""


def test_rst_sections_become_headings_sphinx_directives_tolerated(tmp_path, lo_settings):
    path = tmp_path / "guide.rst"
    path.write_text(RST)
    result = parse_document(path, lo_settings)

    assert result.tree.headings() == [(1, "Harbour guide"), (2, "Mooring"), (3, "Tides")]
    assert result.tree.root.heading == "Harbour guide"
    # Unknown roles keep their text; code stays code; the include directive reads nothing from disk.
    assert "Boats leave at dawn; see schedule and tides." in result.markdown
    assert '```python\nmoor(boat, quay="north")\n```' in result.markdown
    assert "- ropes\n- fenders\n    - large" in result.markdown
    assert "Fees are paid at the office." in result.markdown
    assert "Boat | Fee\nsmall | 10" in result.markdown
    assert "Term: A definition." in result.markdown
    assert "root:" not in result.markdown and "toctree" not in result.markdown
    assert_exact_offsets(result)


MARKUP = Path(__file__).parent / "fixtures" / "markup"  # real files: docutils' primer, orgparse's test data


def test_real_rst_primer(lo_settings):
    result = parse_document(MARKUP / "quickstart.rst", lo_settings)
    assert result.tree.headings() == [
        (1, "A ReStructuredText Primer"),
        (2, "Structure"),
        (2, "Text styles"),
        (2, "Lists"),
        (2, "Preformatting (code samples)"),
        (2, "Sections"),
        (3, "Document Title / Subtitle"),
        (2, "Images"),
        (2, "What Next?"),
    ]
    assert "```\nAn example::\n\n    Whitespace, newlines, blank lines, and all kinds of markup" in result.markdown
    root = result.tree.root
    assert (root.start_index, root.end_index) == (0, len(result.markdown))
    for section in result.tree.root.iter_nodes():
        if section.heading_level:
            assert result.markdown[section.start_index :].startswith(f"{'#' * section.heading_level} {section.heading}")


def test_real_org_files(lo_settings):
    simple = parse_document(MARKUP / "00_simple.org", lo_settings)
    # The file's own #+SEQ_TODO keywords and :TAG: suffixes are not part of the headings.
    assert simple.tree.headings()[:4] == [(1, "Heading 0"), (2, "Heading 1"), (3, "Heading 2"), (4, "Heading 3")]
    attributes = parse_document(MARKUP / "01_attributes.org", lo_settings)
    assert attributes.markdown.startswith(
        "# A node with a lot of attributes\n\n- <2010-08-16 Mon> DateList\n- <2010-08-07 Sat>--<2010-08-08 Sun>"
    )
    assert "CLOCK" not in attributes.markdown and "Effort" not in attributes.markdown
    assert_exact_offsets(simple)
    assert_exact_offsets(attributes)


ORG = """\
#+TITLE: Harbour notes
#+AUTHOR: Ana
* TODO [#A] Moorings :work:
:PROPERTIES:
:ID: 42
:END:
SCHEDULED: <2026-12-01 Tue>
Check the [[https://example.com/quay][north quay]] ropes.
- ropes
- fenders
** Code
#+BEGIN_SRC python
moor(boat)
#+END_SRC
# a comment line
| boat | fee |
|------+-----|
| small | 10 |
* Tides
#+BEGIN_QUOTE
High water at noon.
#+END_QUOTE
"""


def test_org_headlines_become_headings_drawers_skipped(tmp_path, lo_settings):
    path = tmp_path / "notes.org"
    path.write_text(ORG)
    result = parse_document(path, lo_settings)

    assert result.tree.root.heading == "Harbour notes"
    assert result.tree.headings() == [(1, "Moorings"), (2, "Code"), (1, "Tides")]
    assert result.markdown == (
        "# Moorings\n\nCheck the [north quay](https://example.com/quay) ropes.\n- ropes\n- fenders\n\n"
        "## Code\n\n```python\nmoor(boat)\n```\n\nboat | fee\nsmall | 10\n\n"
        "# Tides\n\n> High water at noon."
    )
    assert "42" not in result.markdown and "SCHEDULED" not in result.markdown and "comment" not in result.markdown
    assert_exact_offsets(result)


def write_odt(path: Path) -> Path:
    """An OpenDocument text written by odfpy: Heading 1/2 paragraphs (text:h with outline levels), a title."""
    from odf.dc import Language, Title

    document = OpenDocumentText()
    for level in (1, 2):
        document.styles.addElement(
            Style(name=f"Heading_20_{level}", displayname=f"Heading {level}", family="paragraph")
        )
    document.meta.addElement(Title(text="Regional plan"))
    document.meta.addElement(Language(text="en-GB"))
    document.text.addElement(H(outlinelevel=1, stylename="Heading_20_1", text="Introduction"))
    document.text.addElement(P(text="The plan covers three regions."))
    document.text.addElement(H(outlinelevel=2, stylename="Heading_20_2", text="Scope"))
    document.text.addElement(P(text="Only the north is in scope this year."))
    document.save(str(path))
    return path


RTF = r"""{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Times New Roman;}}
{\stylesheet{\s0 Normal;}{\s1\outlinelevel0\b\fs32 heading 1;}{\s2\outlinelevel1\b\fs28 heading 2;}}
{\pard\plain\s1\outlinelevel0\b\fs32 Introduction\par}
{\pard\plain\s0 The plan covers three regions, caf\'e9 included.\par}
{\pard\plain\s2\outlinelevel1\b\fs28 Scope\par}
{\pard\plain\s0 Only the north is in scope.\par}
}"""


@needs_libreoffice
def test_odt_headings_survive_the_conversion(tmp_path, lo_settings):
    result = parse_document(write_odt(tmp_path / "plan.odt"), lo_settings)
    assert result.tree.headings() == [(1, "Introduction"), (2, "Scope")]
    assert result.markdown == (
        "# Introduction\n\nThe plan covers three regions.\n\n## Scope\n\nOnly the north is in scope this year."
    )
    assert result.tree.root.heading == "Regional plan"
    assert result.declared_language == "en-GB"
    assert_exact_offsets(result)


@needs_libreoffice
def test_rtf_heading_styles_survive_the_conversion(tmp_path, lo_settings):
    path = tmp_path / "plan.rtf"
    path.write_bytes(RTF.encode("ascii"))
    result = parse_document(path, lo_settings)
    assert result.tree.headings() == [(1, "Introduction"), (2, "Scope")]
    assert result.markdown == (
        "# Introduction\n\nThe plan covers three regions, café included.\n\n## Scope\n\nOnly the north is in scope."
    )
    assert_exact_offsets(result)


@needs_libreoffice  # with LibreOffice absent, any .odt is refused first for that (the test below)
def test_odt_that_is_another_zip_and_encrypted_odt_are_refused(tmp_path, lo_settings):
    other = tmp_path / "sheet.odt"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("content.xml", "<x/>")
    with pytest.raises(CorruptDocumentError, match="not an OpenDocument text"):
        parse_document(other, lo_settings)
    locked = tmp_path / "locked.odt"
    with zipfile.ZipFile(locked, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", "<x/>")
        archive.writestr("META-INF/manifest.xml", "<manifest:encryption-data/>")
    with pytest.raises(EncryptedDocumentError, match="password-protected"):
        parse_document(locked, lo_settings)


def test_without_libreoffice_odt_and_rtf_are_415_naming_the_package(tmp_path):
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", libreoffice_binary="no-such-soffice")
    path = tmp_path / "plan.rtf"
    path.write_bytes(RTF.encode("ascii"))
    for document in (write_odt(tmp_path / "plan.odt"), path):
        with pytest.raises(ConverterUnavailableError) as caught:
            parse_document(document, settings)
        assert caught.value.status_code == 415
        assert "libreoffice-writer-nogui" in caught.value.message


def test_folder_of_new_formats_ingests_each_file(tmp_path, settings):
    folder = tmp_path / "docs"
    folder.mkdir()
    epub3(folder / "harbour.epub")
    (folder / "guide.rst").write_text(RST)
    (folder / "notes.org").write_text(ORG)
    database = Database.from_settings(settings)
    try:
        sources = [SourceFile(folder / name, name) for name in ("harbour.epub", "guide.rst", "notes.org")]
        results = list(ingest_paths(database, settings, sources, tenant_id="default"))
    finally:
        database.dispose()
    assert [r.outcome for r in results] == [IngestOutcome.CREATED] * 3
    assert [r.document.heading_count for r in results] == [3, 3, 3]
    assert [r.document.mime_type for r in results] == ["application/epub+zip", "text/x-rst", "text/x-org"]


def _damaged_copies(data: bytes, count: int, seed: int) -> list[bytes]:
    """Copies of a file with bytes overwritten at random (seeded), some also cut short."""
    rng = random.Random(seed)
    copies = []
    for _ in range(count):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        copies.append(bytes(damaged[: rng.randrange(len(damaged))] if rng.random() < 0.3 else damaged))
    return copies


def test_damaged_files_only_ever_raise_typed_errors(tmp_path, lo_settings):
    """Seeded byte damage to each format's file: a parse succeeds or raises a ChunkbenchError, never anything else
    (before: zipfile's OSError on a damaged local header, zlib errors inside python-docx)."""
    document = docx.Document()
    document.add_heading("Claims", level=1)
    document.add_paragraph("Claims are paid within 30 days. " * 20)
    buffer = io.BytesIO()
    document.save(buffer)
    mail = EmailMessage()
    mail["Subject"] = "Figures"
    mail.set_content("The figures are in.")
    mail.add_attachment(b"report", maintype="application", subtype="pdf", filename="r.pdf")
    samples = {
        "epub": epub3(tmp_path / "seed.epub").read_bytes(),
        "docx": buffer.getvalue(),
        "msg": write_msg(tmp_path / "seed.msg", MsgMessage("Figures", body="In.")).read_bytes(),
        "eml": mail.as_bytes(),
        "rst": RST.encode(),
        "org": ORG.encode(),
    }
    for number, (suffix, data) in enumerate(samples.items()):
        for copy in _damaged_copies(data, 80, seed=number):
            path = tmp_path / f"damaged.{suffix}"
            path.write_bytes(copy)
            with contextlib.suppress(ChunkbenchError):
                parse_document(path, lo_settings)


@pytest.mark.slow
def test_deeply_nested_markup_is_capped_or_refused(tmp_path, lo_settings):
    outline = tmp_path / "deep.org"
    outline.write_text("".join(f"{'*' * depth} level {depth}\n" for depth in range(1, 1001)))
    headings = parse_document(outline, lo_settings).tree.headings()
    assert len(headings) == 1000 and max(level for level, _ in headings) == org.MAX_HEADLINE_LEVEL
    quotes = tmp_path / "deep.rst"
    quotes.write_text("".join(f"{'  ' * depth}level {depth}\n\n" for depth in range(1000)))
    with pytest.raises(CorruptDocumentError, match="cannot be read as reStructuredText"):
        parse_document(quotes, lo_settings)


def test_api_uploads_of_the_new_formats(client, tmp_path):
    uploads = {
        "harbour.epub": epub3(tmp_path / "harbour.epub").read_bytes(),
        "guide.rst": RST.encode(),
        "notes.org": ORG.encode(),
        "figures.msg": write_msg(tmp_path / "figures.msg", MsgMessage("Figures", body="Revenue grew.")).read_bytes(),
    }
    for name, data in uploads.items():
        response = client.post("/documents", files={"file": (name, data)})
        assert response.status_code == 201, response.text
        detail = client.get(f"/documents/{response.json()['document']['id']}").json()
        first = {
            "harbour.epub": "Arrival",
            "guide.rst": "Harbour guide",
            "notes.org": "Moorings",
            "figures.msg": "Figures",
        }
        assert detail["headings"][0] == {"level": 1, "heading": first[name]}
    wrong = client.post("/documents", files={"file": ("book.epub", b"%PDF-1.4 not a book")})
    assert wrong.status_code == 415 and wrong.json()["error"] == "unsupported_file_type"
