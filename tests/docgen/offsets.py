"""The offset check every format's test makes: each node's span in the markdown is that node, exactly."""

from __future__ import annotations

import re

from chunkbench.models import NodeType, ParseResult

# What markdown adds around a paragraph's text: emphasis, list and quote markers, code fences, link targets.
_FENCE = re.compile(r"\A```[^\n]*\n(.*)\n```\Z", re.DOTALL)
_LINE_MARK = re.compile(r"^(?:[ \t]*(?:[-+*]|\d+\.)[ \t]+|(?:> ?)+)", re.MULTILINE)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def _collapsed(text: str) -> str:
    """Spaces collapsed line by line, as the plain text's are."""
    return "\n".join(" ".join(line.split()) for line in text.split("\n"))


def markdown_as_text(span: str) -> str:
    """The text a markdown span writes: its marks dropped, spaces collapsed."""
    return _collapsed(_LINK.sub(r"\1", _LINE_MARK.sub("", span)).replace("*", "").replace("`", ""))


def same_text(span: str, text: str) -> bool:
    """Whether a paragraph's span in the markdown writes its text (a code fence holds it as it is)."""
    fenced = _FENCE.match(span)
    if fenced:
        return _collapsed(fenced.group(1)) == _collapsed(text)
    return span == text or markdown_as_text(span) == markdown_as_text(text)


def assert_exact_offsets(result: ParseResult) -> None:
    """A section's span opens with its heading line and runs to its last child; a paragraph's span is its text
    (as markdown writes it); nothing of the markdown lies outside the root."""
    root = result.tree.root
    assert (root.start_index, root.end_index) == (0, len(result.markdown))
    for node in root.iter_nodes():
        span = result.markdown[node.start_index : node.end_index]
        if node.node_type in (NodeType.SECTION, NodeType.ARTICLE):
            heading = f"{'#' * min(node.heading_level or 1, 6)} {node.heading}"
            assert span == heading or span.startswith(f"{heading}\n\n"), (heading, span[:80])
            if node.children:
                assert node.end_index == node.children[-1].end_index
        elif node.node_type is NodeType.PARAGRAPH:
            assert same_text(span, node.text), (span, node.text)
