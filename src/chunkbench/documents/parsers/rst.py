"""reStructuredText through docutils' doctree: sections → headings by depth, paragraphs, code, lists, tables."""

from __future__ import annotations

import io
import re
from pathlib import Path

import docutils
import docutils.utils
from docutils import nodes
from docutils.core import publish_doctree

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import TextFormatParser, register
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError
from chunkbench.models import ParseResult

# Real files use Sphinx's directives and roles, which docutils does not know: its errors must never fail the
# document (report and halt levels above "severe"); nothing is read from disk or the network (include, raw,
# :file:/:url: options) and no docutils.conf of the machine changes the result.
_DOCUTILS_SETTINGS = {
    "report_level": 5,
    "halt_level": 5,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "doctitle_xform": False,  # the first title stays a heading (level 1), not promoted out of the sections
    "sectsubtitle_xform": False,
    "syntax_highlight": "none",
    "_disable_config": True,
    "traceback": True,  # raise instead of printing and carrying on with half a tree
}
# An unknown role (Sphinx's :func:, :ref:…) is kept by docutils as its raw source: its text is what a reader sees.
_UNKNOWN_ROLE = re.compile(r"^:[\w.:+-]+:`(.*)`$", re.DOTALL)
_SKIPPED = (
    nodes.comment,
    nodes.system_message,
    nodes.substitution_definition,
    nodes.target,
    nodes.raw,
    nodes.pending,
    nodes.meta,
    nodes.image,
    nodes.transition,
)
_CODE = (nodes.literal_block, nodes.doctest_block, nodes.math_block)


def _inline(node: nodes.Node) -> str:
    """A node's text as a reader sees it (unknown roles shown without their markup)."""
    if isinstance(node, nodes.Text):
        return str(node)
    if isinstance(node, nodes.problematic):
        text = node.astext()
        match = _UNKNOWN_ROLE.match(text)
        return match.group(1) if match else text
    if isinstance(node, nodes.system_message):
        return ""
    return "".join(_inline(child) for child in node.children)


def _one_line(node: nodes.Node) -> str:
    return " ".join(_inline(node).split())


def _list_lines(node: nodes.Element, depth: int, lines: list[str], markdown: list[str]) -> None:
    ordered = isinstance(node, nodes.enumerated_list)
    for number, item in enumerate(node.children, start=int(node.get("start", 1)) if ordered else 1):
        own = [child for child in item.children if not isinstance(child, (nodes.bullet_list, nodes.enumerated_list))]
        text = " ".join(_one_line(child) for child in own if not isinstance(child, _SKIPPED)).strip()
        if text:
            lines.append(text)
            markdown.append(f"{'    ' * depth}{f'{number}.' if ordered else '-'} {text}")
        for child in item.children:
            if isinstance(child, (nodes.bullet_list, nodes.enumerated_list)):
                _list_lines(child, depth + 1, lines, markdown)


def _code_block(node: nodes.Element) -> Block:
    code = node.astext().strip("\n")
    names: list[str] = node.get("classes", [])
    classes = [name for name in names if name not in ("code", "math")]
    return Block("paragraph", code, markdown=f"```{classes[0] if classes else ''}\n{code}\n```")


def _walk(container: nodes.Element, depth: int, blocks: list[Block]) -> None:
    for child in container.children:
        if isinstance(child, nodes.section):
            title = next((c for c in child.children if isinstance(c, nodes.title)), None)
            if title is not None:
                blocks.append(Block("heading", _one_line(title), level=depth + 1))
            _walk(child, depth + 1, blocks)
        elif isinstance(child, nodes.title):
            if not isinstance(container, nodes.section):  # a topic's, sidebar's or admonition's title
                blocks.append(Block("paragraph", _one_line(child)))
        elif isinstance(child, (nodes.paragraph, nodes.rubric, nodes.subtitle, nodes.caption, nodes.attribution)):
            blocks.append(Block("paragraph", _inline(child).strip()))
        elif isinstance(child, _CODE):
            blocks.append(_code_block(child))
        elif isinstance(child, (nodes.bullet_list, nodes.enumerated_list)):
            lines: list[str] = []
            markdown: list[str] = []
            _list_lines(child, 0, lines, markdown)
            blocks.append(Block("paragraph", "\n".join(lines), markdown="\n".join(markdown)))
        elif isinstance(child, nodes.table):
            rows = [" | ".join(_one_line(entry) for entry in row.children) for row in child.findall(nodes.row)]
            blocks.append(Block("paragraph", "\n".join(row for row in rows if row.strip(" |"))))
        elif isinstance(child, (nodes.definition_list, nodes.field_list, nodes.docinfo, nodes.option_list)):
            blocks.append(Block("paragraph", "\n".join(_pairs(child))))
        elif isinstance(child, nodes.line_block):
            blocks.append(Block("paragraph", "\n".join(_one_line(line) for line in child.findall(nodes.line))))
        elif isinstance(child, nodes.block_quote):
            inner: list[Block] = []
            _walk(child, depth, inner)
            for block in inner:
                quoted = "\n".join(f"> {line}" for line in (block.markdown or block.text).split("\n"))
                blocks.append(Block("paragraph", block.text, markdown=quoted))
        elif isinstance(child, nodes.Element) and not isinstance(child, _SKIPPED):
            _walk(child, depth, blocks)  # admonitions, topics, containers, figures, footnotes: their content


def _pairs(node: nodes.Element) -> list[str]:
    """``term: definition`` lines of a definition, field or option list."""
    lines: list[str] = []
    for item in node.children:
        if not isinstance(item, nodes.Element):
            continue
        parts = [_one_line(part) for part in item.children if not isinstance(part, _SKIPPED)]
        parts = [part for part in parts if part]
        if parts:
            lines.append(f"{parts[0]}: {' '.join(parts[1:])}" if len(parts) > 1 else parts[0])
    return lines


@register
class RstParser(TextFormatParser):
    """reStructuredText (Python docs, Sphinx projects) through docutils, Sphinx's own directives tolerated."""

    suffixes = (".rst", ".rest")
    mime_type = "text/x-rst"
    label = "reStructuredText file"

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        decoded = decode(path.read_bytes())
        try:
            document = publish_doctree(
                decoded.text,
                source_path=path.name,
                settings_overrides={**_DOCUTILS_SETTINGS, "warning_stream": io.StringIO()},
            )
        except (docutils.utils.SystemMessage, docutils.ApplicationError, RecursionError, ValueError) as exc:
            raise CorruptDocumentError(
                f"'{path.name}' cannot be read as reStructuredText ({type(exc).__name__}: {str(exc)[:200]}). "
                "Check it with `rst2html`, or convert it to .md or .txt."
            ) from exc
        blocks: list[Block] = []
        _walk(document, 0, blocks)
        title = next((block.text for block in blocks if block.kind == "heading" and block.level == 1), None)
        return build_parse_result(blocks, title=title, heading_source="rst", warnings=decoded.notes)
