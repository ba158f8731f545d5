"""HTML parser: the page's main text as headings and paragraphs, navigation and scripts left out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag
from bs4.element import PreformattedString
from markdownify import MarkdownConverter

from chunkbench.config import Settings
from chunkbench.documents.headings import StyledLine
from chunkbench.documents.parsers.base import TextFormatParser, register
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.parsers.html_headings import StyleResolver, infer_headings
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.models import ParseResult

# Page furniture and non-text content: none of it belongs in the indexed text.
_DROPPED = ("script", "style", "noscript", "template", "nav", "aside", "iframe", "svg", "form", "object")
# Site-wide header/footer are dropped, but those inside an article or main are the article's own
# (its title, byline, notes: HTML's sectioning rules) and are kept.
_SITE_CHROME = ("header", "footer")
_CONTENT_ROOTS = ("article", "main")
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_LEAF_BLOCKS = frozenset({"p", "ul", "ol", "blockquote", "pre", "table", "dl", "hr", *_HEADINGS})
_CONTAINERS = frozenset(
    {
        "html", "body", "div", "section", "article", "main", "header", "footer", "figure", "figcaption",
        "address", "details", "summary", "center", "fieldset", "legend", "hgroup", "search", "dialog",
        "li", "dt", "dd", "caption", "menu", "output", "picture", "video", "audio",
    }
)  # fmt: skip
_BLOCK_TAGS = _LEAF_BLOCKS | _CONTAINERS
# Inside an inline run these end a line: a cell, a row, a list item, a nested paragraph.
_LINE_BREAKING = _BLOCK_TAGS | {"br", "tr", "td", "th"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_DECLARED_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""",
    re.IGNORECASE,
)
# Once the page is decoded its ``<?xml …?>`` says nothing more, and BeautifulSoup warns that an HTML parser fed a
# page starting with one may be reading XML (it is XHTML, which the HTML parser reads well).
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*>")
# Deeper elements are unwrapped (their text kept in order): the walkers below recurse once or twice per
# level, and a hostile page nests 100,000 divs. Real pages stay far below this.
_MAX_DEPTH = 100
_PRESCAN_BYTES = 4096  # browsers look for <meta charset> in the first 1024 bytes; be a little lenient
_SPACES = re.compile(r"\s+")


class _Markdown(MarkdownConverter):
    """markdownify with images reduced to their alt text (data: URIs would flood the index)."""

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return str(el.get("alt") or "")


# The markdown is indexed and chunked, not rendered: escaping every ``_`` and ``*`` of ordinary
# text (identifiers, footnote stars) would only add noise.
_CONVERTER = _Markdown(escape_underscores=False, escape_asterisks=False, heading_style="ATX")


def declared_charset(data: bytes) -> str | None:
    match = _DECLARED_CHARSET.search(data[:_PRESCAN_BYTES])
    if match is None:
        return None
    return (match.group(1) or match.group(2)).decode("ascii")


def _declared_language(soup: BeautifulSoup) -> str | None:
    """The page's ``<html lang>`` (or ``xml:lang``) as written, if it has one."""
    html = soup.find("html")
    if not isinstance(html, Tag):
        return None
    value = html.get("lang") or html.get("xml:lang")
    return value.strip() or None if isinstance(value, str) else None


def _is_text(node: PageElement) -> TypeGuard[NavigableString]:
    """A text node that is page text (not a comment, CDATA, doctype or processing instruction)."""
    return isinstance(node, NavigableString) and not isinstance(node, PreformattedString)


def _is_hidden(tag: Tag) -> bool:
    return (
        tag.has_attr("hidden")
        or str(tag.get("aria-hidden", "")).lower() == "true"
        or bool(_HIDDEN_STYLE.search(str(tag.get("style", ""))))
    )


def _strip_furniture(root: Tag) -> None:
    for tag in root.find_all(_DROPPED):
        tag.decompose()
    for tag in root.find_all(_SITE_CHROME):
        if tag.find_parent(_CONTENT_ROOTS) is None:
            tag.decompose()
    for tag in root.find_all(_is_hidden):
        if not tag.decomposed:
            tag.decompose()


def _flatten_deep_nesting(root: Tag) -> int:
    """Replace what lies more than ``_MAX_DEPTH`` levels below ``root`` by its text, one ``<p>`` per block, in
    order; returns how many subtrees were flattened. Iterative throughout, and each deep subtree is detached
    once (moving nodes up one level at a time costs the depth on every move in BeautifulSoup)."""
    boundary: list[Tag] = []
    stack = [(root, 0)]
    while stack:
        tag, depth = stack.pop()
        for child in tag.children:
            if not isinstance(child, Tag):
                continue
            if depth + 1 < _MAX_DEPTH:
                stack.append((child, depth + 1))
            elif any(isinstance(grandchild, Tag) for grandchild in child.children):
                boundary.append(child)
    for tag in boundary:
        paragraphs = _paragraph_texts(tag)
        tag.clear()
        for text in paragraphs:
            paragraph = Tag(name="p")
            paragraph.append(NavigableString(text))
            tag.append(paragraph)
    return len(boundary)


def _paragraph_texts(tag: Tag) -> list[str]:
    """The text under ``tag``, one string per block (a block tag's start and end both break), iteratively."""
    paragraphs: list[str] = []
    words: list[str] = []
    stack: list[tuple[PageElement, bool]] = [(tag, False)]
    while stack:
        node, leaving = stack.pop()
        if isinstance(node, Tag):
            if node.name in _LINE_BREAKING and words:
                paragraphs.append(" ".join(words))
                words = []
            if not leaving:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(node.contents))
        elif _is_text(node):
            words.extend(str(node).split())
    if words:
        paragraphs.append(" ".join(words))
    return paragraphs


def _collect_text(node: PageElement, parts: list[str]) -> None:
    if _is_text(node):
        parts.append(_SPACES.sub(" ", str(node)))
    elif isinstance(node, Tag):
        if node.name in _LINE_BREAKING:
            parts.append("\n")
        for child in node.children:
            _collect_text(child, parts)
        if node.name in _LINE_BREAKING:
            parts.append("\n")


def _plain(nodes: list[PageElement]) -> str:
    """Visible text of some nodes, HTML whitespace collapsed, one line per ``<br>`` or nested block."""
    parts: list[str] = []
    for node in nodes:
        _collect_text(node, parts)
    lines = (line.strip() for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _one_line(nodes: list[PageElement]) -> str:
    return " ".join(_plain(nodes).split("\n"))


def _inline_markdown(nodes: list[PageElement]) -> str:
    return _CONVERTER.convert("".join(str(node) for node in nodes)).strip()


def _is_block(node: PageElement) -> bool:
    """A tag that starts its own block, or an inline tag wrapping one (``<a><div>…</div></a>``)."""
    if not isinstance(node, Tag):
        return False
    return node.name in _BLOCK_TAGS or node.find(_BLOCK_TAGS) is not None


def _strings(nodes: list[PageElement]) -> Iterator[NavigableString]:
    """The page text under some nodes, in order."""
    for node in nodes:
        for string in node.descendants if isinstance(node, Tag) else (node,):
            if _is_text(string):
                yield string


class _Walker:
    """Turns a cleaned DOM into Blocks in reading order, with the font style of each paragraph."""

    def __init__(self, styles: StyleResolver | None = None) -> None:
        self.blocks: list[Block] = []
        # {block index: style} of the paragraphs, for headings by style on pages without h1–h6.
        self.styled: dict[int, StyledLine] = {}
        self._styles = styles or StyleResolver()  # one per page: a quote's inner walker shares it
        self._inline: list[PageElement] = []

    def _paragraph(self, nodes: list[PageElement], text: str, markdown: str) -> None:
        style = self._styles.styled_line(text, _strings(nodes))
        if style is not None:
            self.styled[len(self.blocks)] = style
        self.blocks.append(Block("paragraph", text, markdown=markdown))

    def walk(self, container: Tag) -> None:
        for child in container.children:
            if _is_block(child):
                self._flush()
                self._block(child)  # type: ignore[arg-type]
            elif _is_text(child) or isinstance(child, Tag):
                self._inline.append(child)
        self._flush()

    def _flush(self) -> None:
        """Bare text and inline markup between blocks is a paragraph of its own: it must not be lost."""
        nodes, self._inline = self._inline, []
        text = _plain(nodes)
        if text:
            self._paragraph(nodes, text, _inline_markdown(nodes))

    def _block(self, tag: Tag) -> None:
        name = tag.name
        if name in _HEADINGS:
            self.blocks.append(Block("heading", _one_line([tag]), level=_HEADINGS[name]))
        elif name == "p":
            self._paragraph([tag], _plain([tag]), _inline_markdown(list(tag.children)))
        elif name in ("ul", "ol"):
            texts: list[str] = []
            markdown: list[str] = []
            _list_lines(tag, 0, texts, markdown)
            self.blocks.append(Block("paragraph", "\n".join(texts), markdown="\n".join(markdown)))
        elif name == "blockquote":
            inner = _Walker(self._styles)
            inner.walk(tag)
            quoted = "\n>\n".join(
                "\n".join(f"> {line}" for line in (block.markdown or block.text).split("\n")) for block in inner.blocks
            )
            text = "\n".join(block.text for block in inner.blocks)
            self.blocks.append(Block("paragraph", text, markdown=quoted))
        elif name == "pre":
            code = tag.get_text().strip("\n")
            self.blocks.append(Block("paragraph", code, markdown=f"```{_code_language(tag)}\n{code}\n```"))
        elif name == "table" and tag.find(tuple(_HEADINGS)) is None:
            rows = "\n".join(_table_rows(tag))
            self.blocks.append(Block("paragraph", rows, markdown=rows))
        elif name == "dl":
            self.blocks.extend(_definition_list(tag))
        elif name != "hr":
            # Containers, and tables that hold headings: those are page layout (older sites, generated reference
            # manuals), and flattening them to rows would lose the headings and run the whole page together.
            self.walk(tag)


def _code_language(pre: Tag) -> str:
    code = pre.find("code")
    for cls in (code.get("class") if isinstance(code, Tag) else None) or []:
        if cls.startswith("language-"):
            return cls.removeprefix("language-")
    return ""


def _list_lines(list_tag: Tag, depth: int, texts: list[str], markdown: list[str]) -> None:
    """Items of a (nested) list: plain lines for the text, ``-``/``1.`` lines indented by depth."""
    ordered = list_tag.name == "ol"
    start = str(list_tag.get("start", "1"))
    number = int(start) if start.isdigit() else 1
    for child in list_tag.children:
        if not isinstance(child, Tag):
            continue
        if child.name in ("ul", "ol"):  # a list directly inside a list (invalid, but common)
            _list_lines(child, depth + 1, texts, markdown)
            continue
        nested = [node for node in child.children if isinstance(node, Tag) and node.name in ("ul", "ol")]
        own = [node for node in child.children if node not in nested]
        text = _one_line(own)
        if text:
            marker = f"{number}." if ordered else "-"
            number += 1
            texts.append(text)
            item_markdown = " ".join(_inline_markdown(own).split("\n"))
            markdown.append(f"{'    ' * depth}{marker} {item_markdown}")
        for sublist in nested:
            _list_lines(sublist, depth + 1, texts, markdown)


def _table_rows(table: Tag) -> list[str]:
    """One line per row, cells joined by " | "; nested tables are flattened into their cell."""
    rows: list[str] = []
    caption = table.find("caption")
    if isinstance(caption, Tag) and caption.find_parent("table") is table and _one_line([caption]):
        rows.append(_one_line([caption]))
    for row in table.find_all("tr"):
        if row.find_parent("table") is not table:
            continue
        cells = [_one_line([cell]) for cell in row.find_all(("td", "th"), recursive=False)]
        if any(cells):
            rows.append(" | ".join(cell for cell in cells if cell))
    return rows


def _definition_list(dl: Tag) -> list[Block]:
    """A ``<dl>`` as one paragraph: ``term: definition`` per definition."""
    texts: list[str] = []
    markdown: list[str] = []
    term = ""
    for child in dl.find_all(("dt", "dd")):
        if child.find_parent("dl") is not dl:
            continue
        if child.name == "dt":
            term = _one_line([child])
            continue
        definition = _one_line([child])
        if definition:
            texts.append(f"{term}: {definition}" if term else definition)
            markdown.append(f"**{term}**: {definition}" if term else definition)
    return [Block("paragraph", "\n".join(texts), markdown="\n".join(markdown))] if texts else []


@register
class HtmlParser(TextFormatParser):
    """HTML pages through BeautifulSoup (lxml), charset from BOM, ``<meta>``, or a guess."""

    suffixes = (".html", ".htm")
    mime_type = "text/html"
    label = "HTML page"

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        data = path.read_bytes()
        decoded = decode(data, declared_charset(data))
        page = page_blocks(decoded.text)
        result = build_parse_result(
            page.blocks, title=page.title or None, heading_source=page.heading_source, warnings=decoded.notes
        )
        result.declared_language = page.language
        return result


@dataclass
class HtmlPage:
    """An HTML page's blocks in reading order, its title and where its headings came from."""

    blocks: list[Block]
    title: str
    heading_source: str  # "html" (h1–h6) | "html_style" (font rule) | "none"
    language: str | None  # what its ``lang`` declares


def page_blocks(markup: str) -> HtmlPage:
    """The blocks of decoded HTML (a page, an EPUB chapter, a mail's HTML body), furniture left out."""
    soup = BeautifulSoup(_XML_DECLARATION.sub("", markup, count=1), "lxml")
    title_tag = soup.find("title")
    title = _one_line([title_tag]) if isinstance(title_tag, Tag) else ""
    root = soup.body or soup
    _strip_furniture(root)
    _flatten_deep_nesting(root)
    walker = _Walker()
    walker.walk(root)
    # Real h1–h6 are the author's headings; without them, bold or larger paragraphs are (SEC filings).
    heading_source = "html"
    if not any(block.kind == "heading" for block in walker.blocks):
        heading_source = "html_style" if infer_headings(walker.blocks, walker.styled) else "none"
    if not title:
        headings = (block.text for block in walker.blocks if block.kind == "heading" and block.level == 1)
        title = next(headings, "")
    return HtmlPage(walker.blocks, title, heading_source, _declared_language(soup))
