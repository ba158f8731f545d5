"""EPUB 2 and 3 e-books with ``zipfile`` and lxml: chapters in spine order, titled by the table of contents."""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urldefrag

from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.parsers.html import declared_charset, page_blocks
from chunkbench.documents.parsers.zip_container import ZIP_MAGIC, check_entries
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import ArchiveBombError, CorruptDocumentError, EncryptedDocumentError
from chunkbench.models import ParseResult

_CONTAINER = "META-INF/container.xml"
_ENCRYPTION = "META-INF/encryption.xml"
_CONTAINER_NS = "urn:oasis:names:tc:opendocument:xmlns:container"
_OPF_NS = "http://www.idpf.org/2007/opf"
_DC_NS = "http://purl.org/dc/elements/1.1/"
_NCX_NS = "http://www.daisy.org/z3986/2005/ncx/"
_XHTML_NS = "http://www.w3.org/1999/xhtml"
_EPUB_NS = "http://www.idpf.org/2007/ops"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})
_NCX_TYPE = "application/x-dtbncx+xml"
# No DTDs, no entities, no network: an e-book's XML is data, never instructions (billion laughs, XXE).
_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
_RESAVE = "your e-book editor (Calibre, Sigil)"
_NOT_WORD = re.compile(r"\W+")


@dataclass(frozen=True)
class _Item:
    """A manifest entry: its path inside the zip, media type and EPUB 3 properties."""

    path: str
    media_type: str
    properties: frozenset[str]


def _corrupt(path: Path, what: str) -> CorruptDocumentError:
    return CorruptDocumentError(
        f"'{path.name}' is not a readable EPUB: {what}. Open it in {_RESAVE}, save it as EPUB again, and re-upload."
    )


class _Book:
    """The zip of one EPUB: capped reads of its parts, XML parsed safely."""

    def __init__(self, archive: zipfile.ZipFile, path: Path, settings: Settings) -> None:
        self.archive = archive
        self.path = path
        self.names = set(archive.namelist())
        self._cap = settings.max_docx_uncompressed_bytes

    def read(self, name: str) -> bytes:
        """An entry's bytes, stopping past the inflation cap whatever its header declares (a lying zip)."""
        with self.archive.open(name) as handle:
            data = handle.read(self._cap + 1)
        if len(data) > self._cap:
            raise ArchiveBombError(
                f"The e-book's part '{name}' inflates beyond {self._cap // (1024 * 1024)} MB: it looks like a zip "
                "bomb. If it is a genuine book, split it or raise CHUNKBENCH_MAX_DOCX_UNCOMPRESSED_MB."
            )
        return data

    def xml(self, name: str) -> etree._Element:
        if name not in self.names:
            raise _corrupt(self.path, f"'{name}' is missing")
        try:
            return etree.fromstring(self.read(name), _XML_PARSER)
        except etree.XMLSyntaxError as exc:
            raise _corrupt(self.path, f"'{name}' is not well-formed XML ({exc})") from exc


def _resolve(base: str, href: str) -> str:
    """A manifest or TOC link as a path inside the zip (relative to the file that holds it; URL-decoded)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(base), unquote(urldefrag(href).url)))


def _opf_path(book: _Book) -> str:
    if _CONTAINER not in book.names:
        raise _corrupt(book.path, f"it has no '{_CONTAINER}' (every EPUB names its package document there)")
    rootfile = book.xml(_CONTAINER).find(f".//{{{_CONTAINER_NS}}}rootfile")
    full_path = rootfile.get("full-path") if rootfile is not None else None
    if not full_path:
        raise _corrupt(book.path, f"'{_CONTAINER}' names no package document (OPF)")
    if full_path not in book.names:
        raise _corrupt(book.path, f"its package document '{full_path}' (OPF) is missing")
    return full_path


def _manifest(opf: etree._Element, opf_path: str) -> dict[str, _Item]:
    items: dict[str, _Item] = {}
    for item in opf.iterfind(f"{{{_OPF_NS}}}manifest/{{{_OPF_NS}}}item"):
        item_id, href = item.get("id"), item.get("href")
        if item_id and href:
            properties = frozenset((item.get("properties") or "").split())
            items[item_id] = _Item(_resolve(opf_path, href), item.get("media-type", ""), properties)
    return items


def _text(element: etree._Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def _nav_titles(book: _Book, nav_path: str) -> dict[str, str]:
    """EPUB 3: the first title the ``<nav epub:type="toc">`` gives each file."""
    nav = book.xml(nav_path)
    tocs = [n for n in nav.iter(f"{{{_XHTML_NS}}}nav") if "toc" in (n.get(f"{{{_EPUB_NS}}}type") or "").split()]
    titles: dict[str, str] = {}
    for toc in tocs[:1]:
        for link in toc.iter(f"{{{_XHTML_NS}}}a"):
            href, title = link.get("href"), _text(link)
            if href and title:
                titles.setdefault(_resolve(nav_path, href), title)
    return titles


def _ncx_titles(book: _Book, ncx_path: str) -> dict[str, str]:
    """EPUB 2: the first title the NCX's ``navPoint``s give each file, in play order."""
    ncx = book.xml(ncx_path)
    titles: dict[str, str] = {}
    for point in ncx.iter(f"{{{_NCX_NS}}}navPoint"):
        label = _text(point.find(f"{{{_NCX_NS}}}navLabel/{{{_NCX_NS}}}text"))
        content = point.find(f"{{{_NCX_NS}}}content")
        if label and content is not None and content.get("src"):
            titles.setdefault(_resolve(ncx_path, content.get("src", "")), label)
    return titles


def _toc_titles(book: _Book, opf: etree._Element, manifest: dict[str, _Item]) -> tuple[dict[str, str], str | None]:
    """Chapter titles by file from the navigation document (EPUB 3) or the NCX (EPUB 2); and the navigation
    document's path (it is a list of the chapters, not text of the book)."""
    nav = next((item.path for item in manifest.values() if "nav" in item.properties), None)
    if nav is not None and nav in book.names:
        titles = _nav_titles(book, nav)
        if titles:
            return titles, nav
    spine = opf.find(f"{{{_OPF_NS}}}spine")
    ncx_id = spine.get("toc") if spine is not None else None
    ncx = manifest.get(ncx_id or "") or next((i for i in manifest.values() if i.media_type == _NCX_TYPE), None)
    if ncx is not None and ncx.path in book.names:
        return _ncx_titles(book, ncx.path), nav
    return {}, nav


def _encrypted_parts(book: _Book) -> set[str]:
    """The parts ``META-INF/encryption.xml`` lists: DRM encrypts chapters; obfuscated fonts (DRM-free books do
    that too) never hold text, so only an encrypted chapter refuses the book."""
    if _ENCRYPTION not in book.names:
        return set()
    references = book.xml(_ENCRYPTION).iter("{http://www.w3.org/2001/04/xmlenc#}CipherReference")
    return {posixpath.normpath(unquote(ref.get("URI", ""))) for ref in references if ref.get("URI")}


def _same_title(heading: str, title: str) -> bool:
    """Whether a page's heading repeats its contents entry (``Chapter 1 - The Eve`` and ``Chapter 1 The Eve``)."""
    return _NOT_WORD.sub("", heading).casefold() == _NOT_WORD.sub("", title).casefold()


def _chapter_blocks(markup: bytes, title: str | None) -> list[Block]:
    """One chapter: its title as a level-1 heading, the page's own headings below it; the page's first heading is
    the title itself when the table of contents names none (or names it the same)."""
    decoded = decode(markup, declared_charset(markup))
    blocks = page_blocks(decoded.text).blocks
    first = next((block for block in blocks if block.kind == "heading"), None)
    if first is not None and (title is None or _same_title(first.text, title)):
        title = title or " ".join(first.text.split())
        blocks.remove(first)
    if title is None:
        return blocks
    # The page's remaining headings keep their relative depth, the shallowest just below the chapter's title.
    levels = [block.level for block in blocks if block.kind == "heading"]
    shift = 2 - min(levels, default=2)
    for block in blocks:
        if block.kind == "heading":
            block.level += shift
    return [Block("heading", title, level=1), *blocks]


def _read_book(book: _Book) -> ParseResult:
    opf_path = _opf_path(book)
    opf = book.xml(opf_path)
    manifest = _manifest(opf, opf_path)
    titles, nav_path = _toc_titles(book, opf, manifest)
    encrypted = _encrypted_parts(book)
    blocks: list[Block] = []
    warnings: list[str] = []
    chapters = 0
    for itemref in opf.iterfind(f"{{{_OPF_NS}}}spine/{{{_OPF_NS}}}itemref"):
        item = manifest.get(itemref.get("idref", ""))
        if item is None or item.media_type not in _CHAPTER_TYPES or item.path == nav_path:
            continue
        if item.path in encrypted:
            raise EncryptedDocumentError(
                f"'{book.path.name}' is DRM-protected: its chapter '{item.path}' is encrypted and cannot be read. "
                "Use a DRM-free copy of the book."
            )
        if item.path not in book.names:
            warnings.append(f"The spine names '{item.path}', which the e-book does not contain; it was skipped.")
            continue
        chapter = _chapter_blocks(book.read(item.path), titles.get(item.path))
        chapters += bool(chapter)
        blocks.extend(chapter)
    if not chapters:
        raise _corrupt(book.path, "its spine names no XHTML chapter with text")
    metadata = opf.find(f"{{{_OPF_NS}}}metadata")
    title = _text(metadata.find(f"{{{_DC_NS}}}title")) if metadata is not None else ""
    language = _text(metadata.find(f"{{{_DC_NS}}}language")) if metadata is not None else ""
    result = build_parse_result(blocks, title=title or None, heading_source="epub_toc", warnings=warnings)
    result.declared_language = language or None
    return result


@register
class EpubParser(DocumentParser):
    """EPUB 2/3: each spine chapter a top-level section, titled from the nav document or the NCX."""

    suffixes = (".epub",)
    mime_type = "application/epub+zip"
    label = "EPUB e-book"

    def sniff(self, head: bytes) -> bool:
        return head.startswith(ZIP_MAGIC)

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        try:
            with zipfile.ZipFile(path) as archive:
                check_entries(path, archive, settings)
                book = _Book(archive, path, settings)
                return _read_book(book)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, KeyError, OSError) as exc:
            raise _corrupt(path, f"its zip container cannot be read ({exc})") from exc
