"""Turn a parser's flat list of blocks into the Document Tree, markdown and plain text.

Every parser emits :class:`Block` objects in reading order and calls :func:`build_parse_result`,
so all formats share one notion of headings, sections, articles and paragraph offsets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from chunkbench.models import DocumentTree, NodeType, ParseResult, TreeNode
from chunkbench.text.normalize import normalize_text

# A heading that names a numbered legal unit is an ``article`` node rather than a ``section``.
_ARTICLE_HEADING = re.compile(r"^\s*(article|art\.|ماده)(\s|$|[\d۰-۹])", re.IGNORECASE)
_MARKDOWN_MAX_LEVEL = 6
_BLOCK_SEPARATOR = "\n\n"


@dataclass
class Block:
    """One unit of a document in reading order."""

    kind: Literal["heading", "paragraph"]
    text: str
    level: int = 0  # heading level, 1 = top
    # How the block is written in markdown (list markers, emphasis, a code fence…); ``None`` = ``text``.
    markdown: str | None = None


def heading_markdown(text: str, level: int) -> str:
    return f"{'#' * min(max(level, 1), _MARKDOWN_MAX_LEVEL)} {text}"


def build_parse_result(
    blocks: list[Block],
    *,
    title: str | None = None,
    page_count: int | None = None,
    heading_source: str | None = None,
    warnings: list[str] | None = None,
) -> ParseResult:
    """Normalise the blocks' text, lay them out as markdown and nest them into a Document Tree."""
    root = TreeNode(node_type=NodeType.DOCUMENT, heading=title, heading_level=0)
    stack: list[TreeNode] = [root]
    pieces: list[str] = []
    plain: list[str] = []
    offset = 0
    paragraphs = 0

    for block in blocks:
        text = normalize_text(block.text)
        if not text:
            continue
        if block.kind == "heading":
            level = max(block.level, 1)
            rendered = heading_markdown(" ".join(text.split()), level)
        else:
            rendered = normalize_text(block.markdown, keep_layout=True) if block.markdown is not None else text
        if pieces:
            offset += len(_BLOCK_SEPARATOR)
        start, end = offset, offset + len(rendered)
        pieces.append(rendered)
        plain.append(text)
        offset = end

        if block.kind == "heading":
            while len(stack) > 1 and (stack[-1].heading_level or 0) >= level:
                stack.pop()
            kind = NodeType.ARTICLE if _ARTICLE_HEADING.match(text) else NodeType.SECTION
            node = TreeNode(kind, heading=" ".join(text.split()), heading_level=level, start_index=start)
            stack[-1].children.append(node)
            stack.append(node)
        else:
            paragraphs += 1
            stack[-1].children.append(TreeNode(NodeType.PARAGRAPH, text=text, start_index=start, end_index=end))
        for open_node in stack:
            open_node.end_index = end

    markdown = _BLOCK_SEPARATOR.join(pieces)
    root.end_index = len(markdown)
    return ParseResult(
        tree=DocumentTree(root=root),
        markdown=markdown,
        plain_text=_BLOCK_SEPARATOR.join(plain),
        paragraph_count=paragraphs,
        page_count=page_count,
        heading_source=heading_source,
        warnings=list(warnings or []),
    )
