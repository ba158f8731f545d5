"""Markdown and plain-text parsers, and the byte-to-text decoding shared with the HTML parser."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from bs4 import BeautifulSoup
from charset_normalizer import from_bytes
from markdown_it import MarkdownIt
from markdown_it.token import Token

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import TextFormatParser, register
from chunkbench.documents.parsers.text_headings import text_blocks
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError
from chunkbench.models import ParseResult

# Longest BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels that browsers decode as windows-1252 (WHATWG Encoding), which also maps 0x80–0x9F to
# the curly quotes and dashes such pages really contain instead of C1 control characters.
_WINDOWS_1252_ALIASES = frozenset({"ascii", "us-ascii", "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1"})
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FRONT_MATTER_TITLE = re.compile(r"^title[ \t]*:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def decode_text(data: bytes, declared_encoding: str | None = None) -> str:
    """Decode a text file: BOM, else a declared charset, else UTF-8, else charset-normalizer's best guess."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise CorruptDocumentError(
                    f"The file starts with a {encoding.upper()} byte-order mark but is not valid "
                    f"{encoding.upper()} ({exc.reason} at byte {exc.start}). Re-save it as UTF-8."
                ) from exc
    if declared_encoding:
        encoding = declared_encoding.strip().lower()
        encoding = "cp1252" if encoding in _WINDOWS_1252_ALIASES else encoding
        try:
            return data.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            pass  # an unknown or wrong declaration: guess as if there were none
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    best = from_bytes(data).best()
    if best is None:
        raise CorruptDocumentError(
            "The file's text encoding could not be recognised (it may be binary, not text). Re-save it as UTF-8 text."
        )
    return str(best)


def _read_text(path: Path) -> str:
    return decode_text(path.read_bytes()).replace("\r\n", "\n").replace("\r", "\n")


def _inline_plain(token: Token) -> str:
    """Plain text of an inline token: markup dropped, link and image text kept."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "image":
            parts.append(_inline_plain(child))
    return "".join(parts)


def _block_plain(tokens: list[Token]) -> str:
    """Plain text of one top-level block: one line per paragraph/list item, table cells joined by " | "."""
    lines: list[str] = []
    row: list[str] | None = None
    for token in tokens:
        if token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            lines.append(" | ".join(row))
            row = None
        elif token.type == "inline":
            text = _inline_plain(token)
            if row is not None:
                row.append(text.strip())
            else:
                lines.append(text)
        elif token.type in ("fence", "code_block"):
            lines.append(token.content.rstrip("\n"))
        elif token.type == "html_block":
            lines.append(BeautifulSoup(token.content, "lxml").get_text())
    return "\n".join(line for line in lines if line.strip())


def _split_front_matter(source: str) -> tuple[str | None, str]:
    """Strip YAML front matter from the top; return its ``title:`` (if any) and the rest."""
    match = _FRONT_MATTER.match(source)
    if match is None:
        return None, source
    title_match = _FRONT_MATTER_TITLE.search(match.group(1) or "")
    title = title_match.group(1).strip("'\"").strip() if title_match else None
    return title or None, source[match.end() :]


def markdown_blocks(source: str) -> list[Block]:
    """Top-level markdown blocks: headings with their level, everything else as its source slice."""
    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    lines = source.split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        # A top-level block spans its opening token to the matching close at the same level.
        end = index
        if token.nesting == 1:
            while not (tokens[end].nesting == -1 and tokens[end].level == token.level):
                end += 1
        inner = tokens[index : end + 1]
        if token.type == "heading_open":
            blocks.append(Block("heading", _block_plain(inner), level=int(token.tag[1:])))
        elif token.map is not None and token.type != "hr":
            start_line, end_line = token.map
            markdown = "\n".join(lines[start_line:end_line]).strip("\n")
            blocks.append(Block("paragraph", _block_plain(inner), markdown=markdown))
        index = end + 1
    return blocks


@register
class MarkdownParser(TextFormatParser):
    """Markdown through markdown-it-py (CommonMark plus tables)."""

    suffixes = (".md", ".markdown")
    mime_type = "text/markdown"
    label = "Markdown file"

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        title, body = _split_front_matter(_read_text(path))
        blocks = markdown_blocks(body)
        if title is None:
            title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
        return build_parse_result(blocks, title=title, heading_source="markdown")


@register
class TextParser(TextFormatParser):
    """Plain text: paragraphs are separated by blank lines (line breaks inside one are kept); headings by the rules
    of ``text_headings.py``."""

    suffixes = (".txt",)
    mime_type = "text/plain"
    label = "text file"

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        blocks = text_blocks(_read_text(path))
        found = any(block.kind == "heading" for block in blocks)
        return build_parse_result(blocks, heading_source="text_rules" if found else "none")
