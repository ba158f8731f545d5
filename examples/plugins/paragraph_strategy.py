"""Example plugin: a "paragraph" chunking strategy, one chunk per run of paragraphs of the Document Tree.

Drop this file into the folder CHUNKBENCH_PLUGINS_DIR points at; ``paragraph`` then appears in
``GET /strategies`` and ``chunkbench strategies``, and can be processed, queried and benchmarked.
"""

from __future__ import annotations

from pydantic import Field

from chunkbench.chunking.base import Chunk, ChunkFactory, ChunkingInput
from chunkbench.models import NodeType
from chunkbench.plugins import ChunkingStrategy, StrategyParams, register_strategy


class ParagraphParams(StrategyParams):
    paragraphs_per_chunk: int = Field(1, ge=1, le=50, description="Consecutive paragraphs joined into one chunk")


@register_strategy
class ParagraphStrategy(ChunkingStrategy):
    """Cuts at paragraph boundaries only: every chunk is ``paragraphs_per_chunk`` whole paragraphs."""

    name = "paragraph"
    description = "One chunk per paragraph (or per N consecutive paragraphs); headings stay in the heading path."
    params_model = ParagraphParams

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        paragraphs = [n for n in document.tree.root.iter_nodes() if n.node_type is NodeType.PARAGRAPH]
        factory = ChunkFactory(self.name, document)
        size = self.params.paragraphs_per_chunk
        chunks = []
        for index, first in enumerate(range(0, len(paragraphs), size)):
            group = paragraphs[first : first + size]
            chunks.append(factory.make(index, group[0].start_index, group[-1].end_index))
        return chunks
