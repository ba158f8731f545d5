"""Semantic parent-child chunking: similar adjacent paragraphs form a parent; its small children are searched."""

from __future__ import annotations

from itertools import pairwise
from typing import ClassVar, Self

import numpy as np
from pydantic import Field, model_validator

from chunkbench.chunking.base import (
    Chunk,
    ChunkFactory,
    ChunkingInput,
    StrategyParams,
    register_strategy,
)
from chunkbench.chunking.strategies.semantic import (
    BoundaryStrategy,
    UnitTable,
    adjacent_similarity,
    boundary_embeddings,
    embedding_text,
    fit_units,
    partition,
    split_to_fit,
)
from chunkbench.models import NodeType, StrategyName
from chunkbench.text.sentences import Span, split_sentences

_HEADING_NODES = (NodeType.SECTION, NodeType.ARTICLE)


class SemanticParentChildParams(StrategyParams):
    """Parameters of the ``semantic_parent_child`` strategy."""

    threshold: float | None = Field(
        None, gt=0, le=1, description="Paragraphs join a parent while cosine >= threshold; None = Boundary's."
    )
    parent_max_tokens: int = Field(1024, ge=32, le=8192, description="Cap on a parent (one paragraph may exceed).")
    child_max_tokens: int = Field(256, ge=16, le=4096, description="Hard cap on a child's cl100k token count.")

    @model_validator(mode="after")
    def _child_smaller_than_parent(self) -> Self:
        if self.child_max_tokens >= self.parent_max_tokens:
            raise ValueError(
                f"child_max_tokens ({self.child_max_tokens}) must be smaller than "
                f"parent_max_tokens ({self.parent_max_tokens})"
            )
        return self


def paragraph_units(document: ChunkingInput) -> list[Span]:
    """The tree's paragraphs as spans covering the document; heading lines join the paragraph after them.

    Each unit runs to the next one's start, so headings with no paragraph after them (the end of the
    document) stay with the paragraph before, and text the tree does not cover is never lost.
    """
    points: list[int] = []
    run_start: int | None = None
    for node in document.tree.root.iter_nodes():
        if node.node_type in _HEADING_NODES:
            run_start = node.start_index if run_start is None else run_start
        elif node.node_type == NodeType.PARAGRAPH:
            points.append(node.start_index if run_start is None else run_start)
            run_start = None
    return partition(document.markdown, points)


@register_strategy
class SemanticParentChildStrategy(BoundaryStrategy):
    """Parents: runs of similar paragraphs; children: pieces of one paragraph, linked by ``parent_id``."""

    name = StrategyName.SEMANTIC_PARENT_CHILD
    has_parents = True
    description = (
        "Adjacent paragraphs join a parent while the Boundary model's similarity stays >= threshold and "
        "the parent fits parent_max_tokens; each paragraph is cut into children of <= child_max_tokens, "
        "which are searched, with the parent given as context."
    )
    params_model = SemanticParentChildParams
    params: SemanticParentChildParams
    # Only the children are embedded (parents are context, never searched): their cap follows the Corpus model.
    size_params: ClassVar[dict[str, int]] = {"child_max_tokens": 0}

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        """Each parent followed by its children; children numbered through the document, parents apart."""
        markdown = document.markdown
        paragraphs = paragraph_units(document)
        if not paragraphs:
            return []
        rows = boundary_embeddings(self.boundary, [embedding_text(markdown[s:e]) for s, e in paragraphs])
        table = UnitTable(markdown, paragraphs)

        factory = ChunkFactory(self.name, document)
        chunks: list[Chunk] = []
        child_index = 0
        for parent_index, (a, b) in enumerate(self._parents(table, adjacent_similarity(rows))):
            parent = factory.make(parent_index, *table.span(a, b), is_parent=True)
            chunks.append(parent)
            for paragraph in range(a, b):
                for start, end in self._children(table, paragraph):
                    chunks.append(factory.make(child_index, start, end, parent_id=parent.chunk_id))
                    child_index += 1
        return chunks

    def _parents(self, table: UnitTable, similarity: np.ndarray) -> list[tuple[int, int]]:
        """Paragraph runs cut where similarity < threshold or the parent would pass ``parent_max_tokens``."""
        limit = self.params.parent_max_tokens
        edges = [0]
        for unit in range(1, len(table)):
            if similarity[unit - 1] < self.threshold_used or table.estimate(edges[-1], unit + 1) > limit:
                edges.append(unit)
        edges.append(len(table))
        parents: list[tuple[int, int]] = []
        for a, b in pairwise(edges):
            # The estimate can miss a junction merge by a token: the exact count decides.
            parents.extend(split_to_fit(a, b, lambda a, b: table.count(a, b) > limit, similarity))
        return parents

    def _children(self, table: UnitTable, paragraph: int) -> list[Span]:
        """One paragraph in pieces of at most ``child_max_tokens``: whole if it fits, else packed sentences."""
        limit = self.params.child_max_tokens
        start, end = table.span(paragraph, paragraph + 1)
        if table.tokens[paragraph] <= limit:
            return [(start, end)]
        markdown = table.markdown
        sentences = partition(markdown[start:end], [s for s, _ in split_sentences(markdown[start:end])])
        units, _owner = fit_units(markdown, [(start + s, start + e) for s, e in sentences], limit)
        pieces = UnitTable(markdown, units)
        edges = [0]
        for unit in range(1, len(pieces)):
            if pieces.estimate(edges[-1], unit + 1) > limit:
                edges.append(unit)
        edges.append(len(pieces))
        # No similarity inside a paragraph: a piece the estimate got wrong is halved.
        flat = np.zeros(max(len(pieces) - 1, 0))
        groups = [
            part
            for a, b in pairwise(edges)
            for part in split_to_fit(a, b, lambda a, b: pieces.count(a, b) > limit, flat)
        ]
        return [pieces.span(a, b) for a, b in groups]
