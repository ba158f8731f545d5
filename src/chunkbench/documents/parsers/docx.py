"""DOCX parser: body paragraphs, headings from styles, lists and tables, in document order."""

from __future__ import annotations

import re
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import cast

import docx
from docx.document import Document as DocxDocument
from docx.enum.style import WD_STYLE_TYPE
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.exceptions import PackageNotFoundError
from docx.oxml.ns import qn
from docx.styles.style import BaseStyle, CharacterStyle
from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.parsers import libreoffice
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.zip_container import (
    OLE_MAGIC,
    SMALL_PART_MAX_BYTES,
    ZIP_MAGIC,
    check_entries,
    read_capped,
)
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EncryptedDocumentError
from chunkbench.models import ParseResult

_MAX_STYLE_DEPTH = 16  # base-style chains are short; this only stops malicious cycles
_OFFICE_DOCUMENT_REL = "/officeDocument"
_CORE_PROPERTIES_REL = "/core-properties"
_DEFAULT_MAIN_PART = "word/document.xml"
# ISO/IEC 29500 Strict, Word's "Strict Open XML Document": the same parts under other namespaces, which python-docx
# cannot read. LibreOffice converts it to the transitional .docx Word saves by default.
_STRICT_NAMESPACE = "http://purl.oclc.org/ooxml/"
_TRANSITIONAL_DOCX = "docx:MS Word 2007 XML"

_W_P, _W_TBL, _W_TR, _W_TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_W_SDT, _W_SDT_CONTENT, _W_CUSTOM_XML = qn("w:sdt"), qn("w:sdtContent"), qn("w:customXml")
_W_VAL = qn("w:val")
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# Run content → text. Anything else (field codes, deleted text, properties) contributes nothing.
_RUN_TEXT = {
    qn("w:tab"): "\t",
    qn("w:ptab"): "\t",
    qn("w:br"): "\n",
    qn("w:cr"): "\n",
    qn("w:noBreakHyphen"): "-",
}
# Subtrees that hold no visible text of this paragraph. mc:Fallback repeats its mc:Choice (text
# boxes are stored twice); w:del/w:moveFrom are tracked deletions.
_SKIPPED = frozenset({qn("w:pPr"), qn("w:rPr"), qn("w:del"), qn("w:moveFrom"), _MC_FALLBACK})
_HEADING_STYLE = re.compile(r"heading\s*([1-9])")
_LIST_STYLE = re.compile(r"list\s*(bullet|number)(?:\s*([1-9]))?")
_SOFT_HYPHEN = "\u00ad"
_LIST_INDENT = "    "  # enough for a nested item under both "- " and "10. " markers


def _ole_directory_entry(data: bytes, stream: str) -> int | None:
    """Offset of a stream's directory entry in an OLE2 compound file.

    Directory entries are 128-byte records on sector boundaries that start with the UTF-16-LE name
    and hold its byte length (terminator included) at offset 64, so an aligned match with the
    right length is the entry itself, not document text that happens to contain the word.
    """
    name = stream.encode("utf-16-le")
    name_length = (len(name) + 2).to_bytes(2, "little")
    position = data.find(name)
    while position != -1:
        if position % 128 == 0 and data[position + 64 : position + 66] == name_length:
            return position
        position = data.find(name, position + 1)
    return None


def ole_has_stream(path: Path, stream: str) -> bool:
    """Whether an OLE2 compound file (.doc, encrypted .docx) has a stream of that name."""
    return _ole_directory_entry(path.read_bytes(), stream) is not None


def ole_stream_head(path: Path, stream: str, length: int) -> bytes | None:
    """First bytes of an OLE2 stream; ``None`` if there is no such stream, ``b""`` if not locatable.

    A stream's first sector is named by its directory entry, so no FAT walk is needed. Streams
    under the mini-stream cutoff live elsewhere; those are reported as not locatable.
    """
    data = path.read_bytes()
    entry = _ole_directory_entry(data, stream)
    if entry is None:
        return None
    sector_shift = int.from_bytes(data[30:32], "little")
    cutoff = int.from_bytes(data[56:60], "little")
    start = int.from_bytes(data[entry + 116 : entry + 120], "little")
    size = int.from_bytes(data[entry + 120 : entry + 124], "little")
    if sector_shift not in (9, 12) or size < cutoff:
        return b""
    offset = (start + 1) << sector_shift
    return data[offset : offset + min(length, size)]


def refuse_encrypted(path: Path) -> None:
    """Raise :class:`EncryptedDocumentError` for a password-protected Office file."""
    if ole_has_stream(path, "EncryptedPackage"):
        raise EncryptedDocumentError(
            f"'{path.name}' is password-protected. Open it in Word, remove the password "
            "(File → Info → Protect Document → Encrypt with Password, clear it), save, and upload it again."
        )


@dataclass
class _Package:
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


def _inspect_package(path: Path, settings: Settings) -> _Package:
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
            return _Package(page_count, targets.get(_CORE_PROPERTIES_REL) in names, strict)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, etree.XMLSyntaxError) as exc:
        raise CorruptDocumentError(
            f"'{path.name}' is damaged: its zip container cannot be read ({exc}). "
            "Open it in Word or LibreOffice, save it again, and re-upload."
        ) from exc


def _run_text(element: etree._Element, parts: list[str]) -> None:
    for child in element:
        tag = child.tag
        if tag == qn("w:t"):
            parts.append((child.text or "").replace(_SOFT_HYPHEN, ""))
        elif tag in _RUN_TEXT:
            parts.append(_RUN_TEXT[tag])
        elif tag not in _SKIPPED and isinstance(tag, str):
            _run_text(child, parts)


def paragraph_text(paragraph: etree._Element) -> str:
    """Visible text of a ``w:p``: runs, hyperlinks, fields' results, content controls, insertions."""
    parts: list[str] = []
    _run_text(paragraph, parts)
    return "".join(parts)


def _int_attr(element: etree._Element | None, default: int | None = None) -> int | None:
    value = element.get(_W_VAL) if element is not None else None
    return int(value) if value is not None and value.lstrip("-").isdigit() else default


def _iter_block_elements(container: etree._Element) -> Iterator[etree._Element]:
    """Paragraphs and tables in document order, looking through content controls and custom XML."""
    for child in container:
        if child.tag in (_W_P, _W_TBL):
            yield child
        elif child.tag == _W_SDT:
            content = child.find(_W_SDT_CONTENT)
            if content is not None:
                yield from _iter_block_elements(content)
        elif child.tag == _W_CUSTOM_XML:
            yield from _iter_block_elements(child)


def _cell_text(cell: etree._Element) -> str:
    parts: list[str] = []
    for element in _iter_block_elements(cell):
        if element.tag == _W_P:
            parts.append(paragraph_text(element))
        else:  # a nested table, flattened into its cell
            parts.extend(table_rows(element))
    return " ".join(" ".join(part.split()) for part in parts if part.strip())


def _iter_cells(row: etree._Element) -> Iterator[etree._Element]:
    for child in row:
        if child.tag == _W_TC:
            yield child
        elif child.tag in (_W_SDT, _W_CUSTOM_XML):
            content = child.find(_W_SDT_CONTENT) if child.tag == _W_SDT else child
            if content is not None:
                yield from _iter_cells(content)


def table_rows(table: etree._Element) -> list[str]:
    """One line per row, cells left to right joined by " | "; merged cells appear once."""
    rows: list[str] = []
    for row in table.iter(_W_TR):
        if next(row.iterancestors(_W_TBL)) is not table:
            continue  # a nested table's row: already part of its cell's text
        cells: list[str] = []
        for cell in _iter_cells(row):
            v_merge = cell.find(f"{qn('w:tcPr')}/{qn('w:vMerge')}")
            if v_merge is not None and v_merge.get(_W_VAL) != "restart":
                continue  # continuation of a vertically merged cell (a horizontal merge is one w:tc)
            text = _cell_text(cell)
            if text:
                cells.append(text)
        if cells:
            rows.append(" | ".join(cells))
    return rows


class _Styles:
    """Heading levels and list numbering from the document's styles and numbering definitions."""

    def __init__(self, document: DocxDocument) -> None:
        self._part = document.part
        self._levels: dict[str | None, int | None] = {}
        self._chains: dict[str | None, tuple[BaseStyle, ...]] = {}
        try:
            self._numbering: etree._Element | None = document.part.numbering_part.element
        except (KeyError, NotImplementedError):  # python-docx cannot create a missing numbering part
            self._numbering = None

    def chain(self, style_id: str | None) -> tuple[BaseStyle, ...]:
        """The paragraph style and its ``basedOn`` ancestors, nearest first (cached per style).

        python-docx looks styles up by scanning the whole styles part; uncached, that lookup was
        97% of the time on a 5,000-paragraph document.
        """
        if style_id not in self._chains:
            self._chains[style_id] = tuple(self._walk(style_id))
        return self._chains[style_id]

    def _walk(self, style_id: str | None) -> Iterator[BaseStyle]:
        style: BaseStyle | None = self._part.get_style(style_id, WD_STYLE_TYPE.PARAGRAPH)
        seen: set[str | None] = set()
        while style is not None and style.style_id not in seen and len(seen) < _MAX_STYLE_DEPTH:
            seen.add(style.style_id)
            yield style
            style = cast(CharacterStyle, style).base_style  # a paragraph style (asked for above): it has a base

    def heading_level(self, style_id: str | None) -> int | None:
        """Level of a heading style, also when localised or custom but based on a heading style.

        ``Title`` is level 1, like ``Heading 1``, rather than shifting every ``Heading N`` down
        one: levels then match the author's heading numbers, a .doc converted by LibreOffice and
        the same document's PDF outline, and a Title used as a cover line cannot push the whole
        document one level deeper. The Title also names the document when core properties don't.
        """
        if style_id not in self._levels:
            self._levels[style_id] = self._resolve_level(style_id)
        return self._levels[style_id]

    def _resolve_level(self, style_id: str | None) -> int | None:
        for style in self.chain(style_id):
            name = (style.name or "").strip().lower()
            if name == "title":
                return 1
            match = _HEADING_STYLE.fullmatch(name)
            if match:
                return int(match.group(1))
            outline = _outline_level(style.element.find(qn("w:pPr")))
            if outline is not None:
                return outline or None
        return None

    def list_level(self, paragraph: etree._Element, style_id: str | None) -> tuple[int, int | None, bool] | None:
        """``(ilvl, numId, ordered)`` of a list paragraph, or ``None`` when it is not one."""
        num_pr = paragraph.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
        if num_pr is None:
            for style in self.chain(style_id):
                num_pr = style.element.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
                if num_pr is not None:
                    break
        if num_pr is not None:
            num_id = _int_attr(num_pr.find(qn("w:numId")))
            if num_id == 0:  # numbering explicitly switched off
                return None
            ilvl = _int_attr(num_pr.find(qn("w:ilvl")), 0) or 0
            if num_id is not None:
                return ilvl, num_id, self._is_ordered(num_id, ilvl, style_id)
        for style in self.chain(style_id):
            match = _LIST_STYLE.fullmatch((style.name or "").strip().lower())
            if match:
                return int(match.group(2) or 1) - 1, None, match.group(1) == "number"
        return None

    def _is_ordered(self, num_id: int, ilvl: int, style_id: str | None) -> bool:
        fmt = self._level_format(num_id, ilvl)
        if fmt is None:  # no definition: go by the style's name
            return any("number" in (style.name or "").lower() for style in self.chain(style_id))
        return fmt not in ("bullet", "none")

    def _level_format(self, num_id: int, ilvl: int) -> str | None:
        if self._numbering is None:
            return None
        formats = self._numbering.xpath(
            f'./w:num[@w:numId="{num_id}"]/w:lvlOverride[@w:ilvl="{ilvl}"]/w:lvl/w:numFmt/@w:val'
        )
        if not formats:
            abstract = self._numbering.xpath(f'./w:num[@w:numId="{num_id}"]/w:abstractNumId/@w:val')
            if abstract:
                formats = self._numbering.xpath(
                    f'./w:abstractNum[@w:abstractNumId="{abstract[0]}"]/w:lvl[@w:ilvl="{ilvl}"]/w:numFmt/@w:val'
                )
        return str(formats[0]) if formats else None

    def start(self, num_id: int, ilvl: int) -> int:
        """First number of a numbered level (``w:start``, 1 when absent)."""
        if self._numbering is None:
            return 1
        abstract = self._numbering.xpath(f'./w:num[@w:numId="{num_id}"]/w:abstractNumId/@w:val')
        if not abstract:
            return 1
        starts = self._numbering.xpath(
            f'./w:abstractNum[@w:abstractNumId="{abstract[0]}"]/w:lvl[@w:ilvl="{ilvl}"]/w:start/@w:val'
        )
        return int(starts[0]) if starts and str(starts[0]).isdigit() else 1


def _outline_level(p_pr: etree._Element | None) -> int | None:
    """Heading level from ``w:outlineLvl`` (0-based; 9 = body text → 0), ``None`` when not set."""
    if p_pr is None:
        return None
    level = _int_attr(p_pr.find(qn("w:outlineLvl")))
    if level is None:
        return None
    return level + 1 if 0 <= level <= 8 else 0


class _ListRun:
    """Consecutive list paragraphs, emitted as one block; numbering continues per list like Word's."""

    def __init__(self, styles: _Styles) -> None:
        self._styles = styles
        self._counters: dict[tuple[int | None, int], int] = {}
        self.texts: list[str] = []
        self.markdown: list[str] = []

    def add(self, text: str, ilvl: int, num_id: int | None, ordered: bool) -> None:
        for key in [key for key in self._counters if key[0] == num_id and key[1] > ilvl]:
            del self._counters[key]  # a shallower item restarts the deeper levels below it
        if ordered:
            first = self._styles.start(num_id, ilvl) if num_id is not None else 1
            number = self._counters.get((num_id, ilvl), first - 1) + 1
            self._counters[(num_id, ilvl)] = number
            marker = f"{number}."
        else:
            marker = "-"
        line = " ".join(text.split())
        self.texts.append(line)
        self.markdown.append(f"{_LIST_INDENT * ilvl}{marker} {line}")

    def flush(self, blocks: list[Block]) -> None:
        if self.texts:
            blocks.append(Block("paragraph", "\n".join(self.texts), markdown="\n".join(self.markdown)))
            self.texts, self.markdown = [], []


def docx_blocks(document: DocxDocument) -> tuple[list[Block], str | None]:
    """The body as Blocks in document order, and the text of the first ``Title`` paragraph."""
    styles = _Styles(document)
    blocks: list[Block] = []
    lists = _ListRun(styles)
    title: str | None = None
    for element in _iter_block_elements(document.element.body):
        if element.tag == _W_TBL:
            lists.flush(blocks)
            rows = "\n".join(table_rows(element))
            blocks.append(Block("paragraph", rows, markdown=rows))
            continue
        text = paragraph_text(element)
        if not text.strip():
            continue  # empty paragraphs are spacing, even between list items
        style_id = element.style  # type: ignore[attr-defined]
        own_outline = _outline_level(element.find(qn("w:pPr")))
        level = own_outline if own_outline is not None else styles.heading_level(style_id)
        if level:
            lists.flush(blocks)
            blocks.append(Block("heading", text, level=level))
            if title is None and _is_title_style(styles, style_id):
                title = " ".join(text.split())
            continue
        listed = styles.list_level(element, style_id)
        if listed is not None:
            lists.add(text, *listed)
            continue
        lists.flush(blocks)
        blocks.append(Block("paragraph", text))
    lists.flush(blocks)
    return blocks, title


def _is_title_style(styles: _Styles, style_id: str | None) -> bool:
    return any((style.name or "").strip().lower() == "title" for style in styles.chain(style_id))


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
        package = _inspect_package(path, settings)
        if not package.strict:
            return _read_transitional(path, package)
        with tempfile.TemporaryDirectory(prefix="chunkbench-docx-") as out_dir:
            converted = libreoffice.convert(
                path, _TRANSITIONAL_DOCX, Path(out_dir), settings, needed_for="Word documents saved as Strict Open XML"
            )
            return _read_transitional(converted, _inspect_package(converted, settings))


def _read_transitional(path: Path, package: _Package) -> ParseResult:
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
    # The core property Word writes ("en-US" on most files, whatever their text: documents.language decides).
    result.declared_language = (
        (document.core_properties.language or "").strip() or None if package.has_core_properties else None
    )
    return result
