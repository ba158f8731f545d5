"""semantic-text-splitter's TextSplitter and MarkdownSplitter as chunkbench strategies, sized in cl100k_base tokens.

The splitters count with :func:`~chunkbench.chunking.library_strategies.count_tokens` (``from_callback``): our offline
cl100k_base, the count every strategy uses. (``from_tiktoken_model`` also works offline, its vocabulary is compiled
in, and cuts the same chunks, but is slower here.) ``chunk_indices`` gives each chunk's offset in characters.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import Field, model_validator

from chunkbench.chunking.base import ChunkingInput, StrategyParams
from chunkbench.chunking.library_strategies import LibraryStrategy, Piece, count_tokens
from chunkbench.models import StrategyName


class TextSplitterParams(StrategyParams):
    """The chunk capacity (a maximum, or a range), overlap and trimming, in cl100k_base tokens."""

    capacity: int = Field(512, ge=1, le=8192, description="Maximum tokens per chunk (cl100k_base)")
    capacity_min: int | None = Field(
        None,
        ge=1,
        le=8192,
        description=(
            "With it, capacity is the range capacity_min..capacity: a chunk is full once it reaches capacity_min "
            "tokens (null: fill each chunk as close to capacity as it goes)"
        ),
    )
    overlap: int = Field(0, ge=0, description="Tokens consecutive chunks may share at most")
    trim: bool = Field(True, description="Trim whitespace from both ends of each chunk")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.capacity_min is not None and self.capacity_min > self.capacity:
            raise ValueError(f"capacity_min ({self.capacity_min}) must be at most capacity ({self.capacity})")
        if self.overlap >= (self.capacity_min or self.capacity):
            raise ValueError(f"overlap ({self.overlap}) must be less than the chunk capacity")
        return self

    @property
    def chunk_capacity(self) -> int | tuple[int, int]:
        return (self.capacity_min, self.capacity) if self.capacity_min is not None else self.capacity


class _SemanticTextSplitter(LibraryStrategy):
    """Runs one semantic-text-splitter class (``splitter_class``) with :class:`TextSplitterParams`."""

    params_model = TextSplitterParams
    library = "semantic-text-splitter"
    extra = "text-splitter"
    modules = ("semantic_text_splitter",)
    # Chunks are the markdown's own text in order (trimmed at the edges): contiguous windows.
    expands_neighbours = True
    size_params: ClassVar[dict[str, int]] = {"capacity": 0}
    splitter_class: ClassVar[str]

    def split(self, document: ChunkingInput) -> list[Piece]:
        import semantic_text_splitter

        params: TextSplitterParams = self.params  # type: ignore[assignment]
        splitter_type: Any = getattr(semantic_text_splitter, self.splitter_class)
        splitter = splitter_type.from_callback(
            count_tokens, params.chunk_capacity, overlap=params.overlap, trim=params.trim
        )
        # chunk_indices gives character offsets (not bytes): checked by the tests on non-ASCII text.
        return [Piece(text, start) for start, text in splitter.chunk_indices(document.markdown)]


class TextSplitter(_SemanticTextSplitter):
    """semantic-text-splitter's TextSplitter: the largest semantic units (sentences, words…) that fit, merged."""

    # Named, not registered: importing the module adds no strategy name; its entry point registers the class.
    name = StrategyName.stored("text_splitter")
    description = (
        "semantic-text-splitter's TextSplitter.from_callback(count_tokens, capacity): splits at the largest "
        "semantic level that fits (paragraphs, sentences, words, graphemes) and merges neighbours up to capacity "
        "cl100k_base tokens."
    )
    splitter_class = "TextSplitter"


class MarkdownSplitter(_SemanticTextSplitter):
    """semantic-text-splitter's MarkdownSplitter: the same, on markdown's structure (headings, blocks, items)."""

    name = StrategyName.stored("text_splitter_markdown")
    description = (
        "semantic-text-splitter's MarkdownSplitter.from_callback(count_tokens, capacity): splits at the largest "
        "markdown level that fits (sections under headings, blocks, list items, sentences, words) and merges "
        "neighbours up to capacity cl100k_base tokens."
    )
    splitter_class = "MarkdownSplitter"
