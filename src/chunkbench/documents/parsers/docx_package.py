"""A .docx's zip package before python-docx opens it: the zip-bomb guard, the main part, page count, core
properties, and whether it is Strict Open XML.

Separate from the DOCX parser (``docx.py``) and its body walk (``docx_body.py``): these checks read the zip, not
WordprocessingML, and run before python-docx inflates anything.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from docx.opc.constants import RELATIONSHIP_TYPE as RT
from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.parsers.zip_container import SMALL_PART_MAX_BYTES, check_entries, read_capped
from chunkbench.errors import CorruptDocumentError

_OFFICE_DOCUMENT_REL = "/officeDocument"
_CORE_PROPERTIES_REL = "/core-properties"
_DEFAULT_MAIN_PART = "word/document.xml"
# ISO/IEC 29500 Strict, Word's "Strict Open XML Document": the same parts under other namespaces, which python-docx
# cannot read. LibreOffice converts it to the transitional .docx Word saves by default.
_STRICT_NAMESPACE = "http://purl.oclc.org/ooxml/"


@dataclass
class DocxPackage:
    """What is learned from the zip before python-docx opens it."""

    page_count: int | None
    has_core_properties: bool
    strict: bool  # Strict Open XML: converted before python-docx reads it


def _read_capped(archive: zipfile.ZipFile, name: str, cap: int) -> bytes:
    return read_capped(archive, name, cap, "Word document")


def _relationship_targets(archive: zipfile.ZipFile, names: set[str]) -> tuple[dict[str, str], bool]:
    """Package-level relationships (``_rels/.rels``): type suffix → part name; and whether the main part's
    relationship is Strict Open XML's."""
    if "_rels/.rels" not in names:
        return {}, False
    root = etree.fromstring(_read_capped(archive, "_rels/.rels", SMALL_PART_MAX_BYTES))
    targets: dict[str, str] = {}
    strict = False
    for rel in root:
        rel_type, target = rel.get("Type", ""), rel.get("Target", "")
        if target and rel.get("TargetMode") != "External":
            suffix = rel_type[rel_type.rfind("/") :]
            if suffix == _CORE_PROPERTIES_REL and rel_type != RT.CORE_PROPERTIES:
                # LibreOffice writes another type URI, which python-docx does not read: it would make up default
                # properties whose title is "Word Document" (every .doc, .odt and .rtf would be titled that).
                continue
            targets[suffix] = str(PurePosixPath(target.lstrip("/")))
            strict = strict or (suffix == _OFFICE_DOCUMENT_REL and rel_type.startswith(_STRICT_NAMESPACE))
    return targets, strict


def _page_count(app_xml: bytes) -> int | None:
    pages = etree.fromstring(app_xml).find("{*}Pages")
    if pages is None or not (pages.text or "").strip().isdigit():
        return None
    return int(pages.text.strip()) or None  # type: ignore[union-attr]


def inspect_package(path: Path, settings: Settings) -> DocxPackage:
    """Refuse zip bombs and broken packages before python-docx inflates anything."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = check_entries(path, archive, settings)
            targets, strict = _relationship_targets(archive, names)
            main_part = targets.get(_OFFICE_DOCUMENT_REL, _DEFAULT_MAIN_PART)
            if main_part not in names:
                raise CorruptDocumentError(
                    f"'{path.name}' is a zip file but not a Word document (no '{main_part}' inside). "
                    "Open it in Word or LibreOffice and save it as .docx again."
                )
            # The declared sizes were checked above; this bounds what is really inflated, and
            # checks the CRC of the part that matters before python-docx reads it.
            _read_capped(archive, main_part, settings.max_docx_uncompressed_bytes)
            app_xml = "docProps/app.xml"
            page_count = None
            if app_xml in names:
                page_count = _page_count(_read_capped(archive, app_xml, SMALL_PART_MAX_BYTES))
            return DocxPackage(page_count, targets.get(_CORE_PROPERTIES_REL) in names, strict)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, etree.XMLSyntaxError) as exc:
        raise CorruptDocumentError(
            f"'{path.name}' is damaged: its zip container cannot be read ({exc}). "
            "Open it in Word or LibreOffice, save it again, and re-upload."
        ) from exc
