"""DOCX parser: body paragraphs, headings from styles, lists and tables, in document order.

This module is the registered entry: the OLE2 and Strict Open XML cases, python-docx opening the file, the title.
The package checks are ``docx_package``, the body walk ``docx_body``, OLE2 containers ``ole``.
"""

from __future__ import annotations

import tempfile
import zipfile
import zlib
from pathlib import Path

import docx
from docx.opc.exceptions import PackageNotFoundError
from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.parsers import libreoffice
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.docx_body import docx_blocks
from chunkbench.documents.parsers.docx_package import DocxPackage, inspect_package
from chunkbench.documents.parsers.ole import refuse_encrypted
from chunkbench.documents.parsers.zip_container import OLE_MAGIC, ZIP_MAGIC
from chunkbench.documents.tree import build_parse_result
from chunkbench.errors import CorruptDocumentError
from chunkbench.models import ParseResult

# A Strict Open XML file is converted by LibreOffice to the transitional .docx Word saves by default.
_TRANSITIONAL_DOCX = "docx:MS Word 2007 XML"


@register
class DocxParser(DocumentParser):
    """Word documents (.docx) through python-docx, after a zip-bomb check."""

    suffixes = (".docx",)
    mime_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    label = "Word document (.docx)"

    def sniff(self, head: bytes) -> bool:
        # A password-protected .docx is an OLE2 container: accept it here to say so in parse().
        return head.startswith((ZIP_MAGIC, OLE_MAGIC))

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        with path.open("rb") as handle:
            head = handle.read(len(OLE_MAGIC))
        if head.startswith(OLE_MAGIC):
            refuse_encrypted(path)
            raise CorruptDocumentError(
                f"'{path.name}' is not a .docx: it looks like a legacy Word (.doc) file. "
                "Rename it with the .doc extension and upload it again."
            )
        package = inspect_package(path, settings)
        if not package.strict:
            return _read_transitional(path, package)
        with tempfile.TemporaryDirectory(prefix="chunkbench-docx-") as out_dir:
            converted = libreoffice.convert(
                path, _TRANSITIONAL_DOCX, Path(out_dir), settings, needed_for="Word documents saved as Strict Open XML"
            )
            return _read_transitional(converted, inspect_package(converted, settings))


def _read_transitional(path: Path, package: DocxPackage) -> ParseResult:
    """A (transitional) .docx through python-docx: blocks in document order, the title from the core properties
    or the Title style."""
    try:
        document = docx.Document(str(path))
    except (
        PackageNotFoundError,
        KeyError,
        ValueError,
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        etree.XMLSyntaxError,
    ) as exc:  # a damaged part deflates wrong (zlib), a damaged local header seeks before the file (OSError)
        raise CorruptDocumentError(
            f"'{path.name}' could not be read as a Word document ({exc}). "
            "Open it in Word or LibreOffice, save it as .docx again, and re-upload."
        ) from exc
    blocks, title_paragraph = docx_blocks(document)
    core_title = document.core_properties.title.strip() if package.has_core_properties else ""
    result = build_parse_result(
        blocks,
        title=core_title or title_paragraph,
        page_count=package.page_count,
        heading_source="styles",
    )
    # The core property Word writes ("en-US" on most files, whatever their text: documents.language_detection decides).
    result.declared_language = (
        (document.core_properties.language or "").strip() or None if package.has_core_properties else None
    )
    return result
