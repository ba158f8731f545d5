"""XML files through lxml, with entity expansion, DTD loading and network access off: elements that hold other
elements become sections, leaf elements ``tag: text`` lines, mixed content (text with inline markup) paragraphs.

A file whose root is XHTML's ``<html>`` is a web page and goes to the HTML parser (headings from ``h1``–``h6``). A
file that declares entities (``<!ENTITY …>``) is refused: entities are how XXE (reading the server's files) and
billion-laughs (exponential expansion) attacks work, and a document that needs them is rare enough to convert.
"""

from __future__ import annotations

import re
from pathlib import Path

from lxml import etree

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register, text_starts_with
from chunkbench.documents.parsers.html import HtmlParser
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError
from chunkbench.models import ParseResult

_XHTML = "{http://www.w3.org/1999/xhtml}"
_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.IGNORECASE)
_WHERE = re.compile(r", line \d+, column \d+$")
# Children (or attributes) whose text names their element, in the order they are preferred.
TITLE_NAMES = ("title", "name", "heading", "label", "caption", "subject", "id")
_MAX_TITLE_CHARS = 120
_MAX_LEVEL = 6  # markdown's deepest heading; deeper elements are sections at this level


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def local_name(element: etree._Element) -> str:
    return etree.QName(element).localname


def _elements(element: etree._Element) -> list[etree._Element]:
    """Child elements (comments, processing instructions and entity references are not elements)."""
    return [child for child in element if isinstance(child.tag, str)]


def _has_own_text(element: etree._Element) -> bool:
    """Text directly in the element, beside its children (mixed content such as ``<p>a <b>b</b> c</p>``)."""
    return bool((element.text or "").strip()) or any((child.tail or "").strip() for child in element)


def _text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _attributes(element: etree._Element) -> str:
    return ", ".join(f"{etree.QName(name).localname}={value}" for name, value in sorted(element.attrib.items()))


def _title(element: etree._Element) -> str | None:
    """A title-like attribute or leaf child's text."""
    attributes = {etree.QName(name).localname.lower(): value for name, value in element.attrib.items()}
    children: dict[str, etree._Element] = {}
    for child in _elements(element):
        children.setdefault(local_name(child).lower(), child)
    for name in TITLE_NAMES:
        child = children.get(name)
        if child is not None and not _elements(child):
            text = _text(child)
            if text and len(text) <= _MAX_TITLE_CHARS:
                return text
        value = " ".join(attributes.get(name, "").split())
        if value and len(value) <= _MAX_TITLE_CHARS:
            return value
    return None


def _leaf_line(element: etree._Element) -> str:
    """``tag: text``; attributes in brackets after the tag (``price (currency=EUR): 5``)."""
    name = local_name(element)
    attributes = _attributes(element)
    label = f"{name} ({attributes})" if attributes else name
    text = _text(element)
    return f"{label}: {text}" if text else (label if attributes else "")


class _Walk:
    """Blocks in document order; consecutive leaf lines become one paragraph."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._lines: list[str] = []

    def flush(self) -> None:
        if self._lines:
            text = "\n".join(self._lines)
            self.blocks.append(Block("paragraph", text, markdown=text))
            self._lines = []

    def element(self, element: etree._Element, level: int) -> None:
        children = _elements(element)
        if not children or _has_own_text(element):
            if children:  # prose with inline markup: its text is a paragraph of its own
                self.flush()
                text = _text(element)
                if text:
                    self.blocks.append(Block("paragraph", text, markdown=text))
                return
            line = _leaf_line(element)
            if line:
                self._lines.append(line)
            return
        self.flush()
        title = _title(element)
        name = local_name(element)
        self.blocks.append(Block("heading", f"{name}: {title}" if title else name, level=min(level, _MAX_LEVEL)))
        for child in children:
            self.element(child, level + 1)
        self.flush()


def element_blocks(root: etree._Element) -> list[Block]:
    """The document's elements as sections and lines (see the module docstring)."""
    walk = _Walk()
    walk.element(root, 1)
    walk.flush()
    return walk.blocks


@register
class XmlParser(DocumentParser):
    """XML documents through lxml (no entities, no DTD, no network); XHTML goes to the HTML parser."""

    suffixes = (".xml",)
    mime_type = "application/xml"
    label = "XML file"

    def sniff(self, head: bytes) -> bool:
        return text_starts_with(head, ("<",))

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        data = path.read_bytes()
        if _ENTITY_DECLARATION.search(data.replace(b"\x00", b"")):
            raise CorruptDocumentError(
                f"'{path.name}' declares XML entities (<!ENTITY …>), which chunkbench never expands: they are how "
                "XXE and billion-laughs attacks work. Remove the DOCTYPE's entity declarations (replace each "
                "reference with its text) and upload it again."
            )
        try:
            root = etree.fromstring(data, _parser())
        except etree.XMLSyntaxError as exc:
            line, column = exc.position if exc.position else (exc.lineno, 0)
            reason = _WHERE.sub("", exc.msg)  # libxml2 ends some messages with the place; it is said once, below
            raise CorruptDocumentError(
                f"'{path.name}' is not well-formed XML: {reason} (line {line}, column {column}). "
                "Fix the file there, or export it again.",
                line=line,
                column=column,
            ) from exc
        if root.tag == f"{_XHTML}html" or (root.tag == "html" and root.find("body") is not None):
            return HtmlParser().parse(path, settings)
        blocks = element_blocks(root)
        if not any(block.kind == "paragraph" for block in blocks):
            raise EmptyDocumentError(f"'{path.name}' holds no text, only elements.")
        title = _title(root)
        return build_parse_result(blocks, title=title, heading_source="elements")
