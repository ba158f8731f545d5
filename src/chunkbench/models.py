"""Core domain types shared by every package: the Document Tree, parse results, lifecycle states."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class StrategyName(StrEnum):
    """The five chunking strategies (seed 000 §4.1)."""

    FIXED_SIZE = "fixed_size"
    RECURSIVE = "recursive"
    SEMANTIC = "semantic"
    CONTEXTUAL_RETRIEVAL = "contextual_retrieval"
    SEMANTIC_PARENT_CHILD = "semantic_parent_child"


class NodeType(StrEnum):
    DOCUMENT = "document"
    SECTION = "section"
    ARTICLE = "article"  # a numbered legal/regulatory unit ("Article 5", "ماده ۵")
    PARAGRAPH = "paragraph"


class DocumentState(StrEnum):
    """Document lifecycle (seed 002 §7), plus ``parsed``: ingested and waiting to be processed.

    An upload that fails to parse leaves no row at all, so ``failed`` is reached only from the
    processing stages (chunking, embedding), with the error message and the attempt count kept.
    """

    DISCOVERED = "discovered"
    PARSING = "parsing"
    PARSED = "parsed"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    INDEXED = "indexed"
    FAILED = "failed"


# Which lifecycle moves are legal. ``failed → discovered`` is a retry; ``indexed → discovered``
# means the source changed; ``indexed → chunking`` is a re-process with other strategies.
ALLOWED_TRANSITIONS: dict[DocumentState, frozenset[DocumentState]] = {
    DocumentState.DISCOVERED: frozenset({DocumentState.PARSING}),
    DocumentState.PARSING: frozenset({DocumentState.PARSED, DocumentState.FAILED}),
    DocumentState.PARSED: frozenset({DocumentState.CHUNKING, DocumentState.DISCOVERED}),
    DocumentState.CHUNKING: frozenset({DocumentState.EMBEDDING, DocumentState.FAILED}),
    DocumentState.EMBEDDING: frozenset({DocumentState.INDEXED, DocumentState.FAILED}),
    DocumentState.INDEXED: frozenset({DocumentState.DISCOVERED, DocumentState.CHUNKING}),
    DocumentState.FAILED: frozenset({DocumentState.DISCOVERED, DocumentState.CHUNKING}),
}


@dataclass
class TreeNode:
    """One node of the Document Tree (seed 000 §4.3).

    ``start_index``/``end_index`` are character offsets into the document's markdown, covering the
    node and everything under it, so later stages (chunk heading paths, previews) need no text search.
    """

    node_type: NodeType
    text: str = ""
    heading: str | None = None
    heading_level: int | None = None
    start_index: int = 0
    end_index: int = 0
    children: list[TreeNode] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_type": self.node_type.value,
            "text": self.text,
            "heading": self.heading,
            "heading_level": self.heading_level,
            "start_index": self.start_index,
            "end_index": self.end_index,
            "children": [child.to_dict() for child in self.children],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TreeNode:
        return cls(
            node_type=NodeType(data["node_type"]),
            text=data.get("text", ""),
            heading=data.get("heading"),
            heading_level=data.get("heading_level"),
            start_index=data.get("start_index", 0),
            end_index=data.get("end_index", 0),
            children=[cls.from_dict(child) for child in data.get("children", [])],
        )

    def iter_nodes(self):
        """Depth-first, document order."""
        yield self
        for child in self.children:
            yield from child.iter_nodes()


@dataclass
class DocumentTree:
    root: TreeNode

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocumentTree:
        return cls(root=TreeNode.from_dict(data["root"]))

    def headings(self) -> list[tuple[int, str]]:
        """``(level, heading)`` of every section/article node, in document order."""
        return [
            (node.heading_level or 0, node.heading or "")
            for node in self.root.iter_nodes()
            if node.node_type in (NodeType.SECTION, NodeType.ARTICLE)
        ]


@dataclass
class ParseResult:
    """What every parser returns (seed 001 §1)."""

    tree: DocumentTree
    markdown: str
    plain_text: str
    paragraph_count: int
    page_count: int | None = None
    # How headings were found (PDF: "outline" | "font" | "heuristic" | "none"); informative only.
    heading_source: str | None = None
    warnings: list[str] = field(default_factory=list)
