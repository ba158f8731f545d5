"""OpenDocument text (.odt) and RTF: LibreOffice converts them to .docx, which the DOCX parser reads (heading
styles become Word's Heading N, so headings survive)."""

from __future__ import annotations

import tempfile
import zipfile
import zlib
from pathlib import Path

from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.parsers import libreoffice
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.docx import DocxParser
from chunkbench.documents.parsers.zip_container import ZIP_MAGIC, check_entries
from chunkbench.errors import CorruptDocumentError, EncryptedDocumentError
from chunkbench.models import ParseResult

RTF_MAGIC = b"{\\rtf"
_ODT_MIMETYPE = b"application/vnd.oasis.opendocument.text"
_MANIFEST = "META-INF/manifest.xml"
_META = "meta.xml"
_DC = "{http://purl.org/dc/elements/1.1/}"
_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
_META_MAX_BYTES = 1024 * 1024
_RESAVE = "LibreOffice Writer"


def _convert_and_parse(path: Path, settings: Settings, needed_for: str) -> ParseResult:
    with tempfile.TemporaryDirectory(prefix="chunkbench-lo-doc-") as out_dir:
        converted = libreoffice.convert(path, "docx", Path(out_dir), settings, needed_for)
        return DocxParser().parse(converted, settings)


def _metadata(meta: bytes) -> tuple[str | None, str | None]:
    """``dc:title`` and ``dc:language`` of ``meta.xml`` (the DOCX LibreOffice writes keeps them where python-docx
    does not look)."""
    if len(meta) > _META_MAX_BYTES:
        return None, None
    root = etree.fromstring(meta, _XML_PARSER)
    title, language = root.find(f".//{_DC}title"), root.find(f".//{_DC}language")
    return (
        " ".join("".join(title.itertext()).split()) or None if title is not None else None,
        (language.text or "").strip() or None if language is not None else None,
    )


def _check_odt_package(path: Path, settings: Settings) -> tuple[str | None, str | None]:
    """Refuse zip bombs, password-protected files and zips that are not OpenDocument text before LibreOffice
    spends its timeout on them; the title and language ``meta.xml`` declares."""
    try:
        with zipfile.ZipFile(path) as archive:
            check_entries(path, archive, settings)
            names = set(archive.namelist())
            mimetype = archive.read("mimetype").strip() if "mimetype" in names else b""
            if mimetype != _ODT_MIMETYPE or "content.xml" not in names:
                raise CorruptDocumentError(
                    f"'{path.name}' is a zip file but not an OpenDocument text (its mimetype is "
                    f"{mimetype.decode(errors='replace') or 'missing'!r}). Open it in {_RESAVE} and save it as .odt."
                )
            # ODF encryption (ODF 1.2 §4.8) is declared per file in the manifest.
            if _MANIFEST in names and b"encryption-data" in archive.read(_MANIFEST):
                raise EncryptedDocumentError(
                    f"'{path.name}' is password-protected. Open it in {_RESAVE}, remove the password "
                    "(File → Properties → Security, or save without 'Save with password'), and upload it again."
                )
            return _metadata(archive.read(_META)) if _META in names else (None, None)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError, etree.XMLSyntaxError) as exc:
        raise CorruptDocumentError(
            f"'{path.name}' is damaged: its zip container cannot be read ({exc}). "
            f"Open it in {_RESAVE}, save it again, and re-upload."
        ) from exc


@register
class OdtParser(DocumentParser):
    """OpenDocument text (LibreOffice Writer, Google Docs' export), converted with LibreOffice headless."""

    suffixes = (".odt",)
    mime_type = "application/vnd.oasis.opendocument.text"
    label = "OpenDocument text (.odt)"

    def sniff(self, head: bytes) -> bool:
        return head.startswith(ZIP_MAGIC)

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        needed_for = "OpenDocument text (.odt) files"
        libreoffice.find_soffice(settings, needed_for)  # say .odt is unsupported here before judging the file
        title, language = _check_odt_package(path, settings)
        result = _convert_and_parse(path, settings, needed_for)
        result.tree.root.heading = title or result.tree.root.heading
        result.declared_language = language
        return result


@register
class RtfParser(DocumentParser):
    """Rich Text Format, converted with LibreOffice headless (its ``\\s`` heading styles become Heading N)."""

    suffixes = (".rtf",)
    mime_type = "application/rtf"
    label = "RTF document"

    def sniff(self, head: bytes) -> bool:
        return head.lstrip().startswith(RTF_MAGIC)

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        return _convert_and_parse(path, settings, "RTF files")
