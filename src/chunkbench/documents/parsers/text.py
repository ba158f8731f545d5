"""Markdown and plain-text parsers."""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from markdown_it.token import Token

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import TextFormatParser, register
from chunkbench.documents.parsers.code import VERBATIM, code_result, suffix_language
from chunkbench.documents.parsers.code_sniff import sniff_code_language
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.parsers.encoding import decode_text as decode_text  # where plugins import it from
from chunkbench.documents.parsers.text_headings import text_blocks
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.models import DocumentTree, NodeType, ParseResult, TreeNode

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FRONT_MATTER_TITLE = re.compile(r"^title[ \t]*:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def _read_text(path: Path) -> tuple[str, list[str]]:
    """The file's text with ``\\n`` line ends, and the parse notes on its encoding (none for UTF-8)."""
    decoded = decode(path.read_bytes())
    return decoded.text.replace("\r\n", "\n").replace("\r", "\n"), decoded.notes


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


# VERBATIM (from code.py, which text.py imports): the heading source of a document read verbatim (how a re-ingest
# tells the two modes apart).


def verbatim_result(path: Path) -> ParseResult:
    """The file's text exactly as decoded (line ends as Python's text mode reads them): no normalisation, no
    headings, one Document Tree root over it. Span-annotated datasets (Chroma's, COVID-QA) give evidence offsets into
    the raw text, and a reproduction must chunk the very characters those offsets count."""
    source, notes = _read_text(path)
    # Source code stays code verbatim too (never held to a written language), with no outline.
    code_language = suffix_language(path.name, source) or (
        sniff_code_language(source) if path.suffix.lower() == ".txt" else None
    )
    if code_language is not None:
        return code_result(source, code_language, warnings=notes, structure=False)
    paragraphs = sum(1 for block in re.split(r"\n\s*\n", source) if block.strip())
    tree = DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(source)))
    return ParseResult(tree, source, source, paragraphs, heading_source=VERBATIM, warnings=notes)


@register
class MarkdownParser(TextFormatParser):
    """Markdown through markdown-it-py (CommonMark plus tables)."""

    suffixes = (".md", ".markdown")
    mime_type = "text/markdown"
    label = "Markdown file"
    verbatim = True

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        source, notes = _read_text(path)
        title, body = _split_front_matter(source)
        blocks = markdown_blocks(body)
        if title is None:
            title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
        return build_parse_result(blocks, title=title, heading_source="markdown", warnings=notes)


@register
class TextParser(TextFormatParser):
    """Plain text: paragraphs are separated by blank lines (line breaks inside one are kept); headings by the rules
    of ``text_headings.py``."""

    suffixes = (".txt",)
    mime_type = "text/plain"
    label = "text file"
    verbatim = True

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        source, notes = _read_text(path)
        code_language = sniff_code_language(source)  # source code saved as .txt is read as code
        if code_language is not None:
            return code_result(source, code_language, warnings=notes)
        blocks = text_blocks(source)
        found = any(block.kind == "heading" for block in blocks)
        return build_parse_result(blocks, heading_source="text_rules" if found else "none", warnings=notes)
