"""semchunk as a chunkbench strategy: ``semchunk.chunkerify`` on cl100k_base counts, offsets from the library."""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar, Self, cast

from pydantic import Field, model_validator

from chunkbench.chunking.base import ChunkingInput, StrategyParams
from chunkbench.chunking.library_strategies import LibraryStrategy, Piece, count_tokens
from chunkbench.models import StrategyName


class SemchunkParams(StrategyParams):
    """semchunk's chunk size and overlap, in cl100k_base tokens."""

    chunk_size: int = Field(512, ge=1, le=8192, description="Maximum tokens per chunk (cl100k_base)")
    overlap: int = Field(0, ge=0, description="Tokens shared by consecutive chunks (0: none)")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Self:
        if self.overlap >= self.chunk_size:
            raise ValueError(f"overlap ({self.overlap}) must be less than chunk_size ({self.chunk_size})")
        return self


class Semchunk(LibraryStrategy):
    """semchunk: recursive splits at the most meaningful separator (newlines, tabs, spaces, punctuation), merged."""

    # Named, not registered: importing the module adds no strategy name; its entry point registers the class.
    name = StrategyName.stored("semchunk")
    description = (
        "semchunk.chunkerify(count_tokens, chunk_size) with offsets=True: splits at the most meaningful separator "
        "available (runs of newlines, tabs, spaces, then sentence and clause punctuation) and merges splits up to "
        "chunk_size cl100k_base tokens; the whitespace it splits at is left out of the chunks."
    )
    params_model = SemchunkParams
    library = "semchunk"
    extra = "semchunk"
    modules = ("semchunk",)
    # Chunks are the markdown's own text in order, with the separating whitespace between them.
    expands_neighbours = True
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}

    def split(self, document: ChunkingInput) -> list[Piece]:
        import semchunk

        params: SemchunkParams = self.params  # type: ignore[assignment]
        # semchunk's own memoizing keeps one unbounded cache per counter function for the life of the process (every
        # text of every document counted); a cache of this document's texts alone goes when the split is done.
        chunker = semchunk.chunkerify(lru_cache(maxsize=None)(count_tokens), params.chunk_size, memoize=False)
        # One text with offsets=True: (texts, spans); semchunk's annotation is the union over every call shape.
        texts, offsets = cast(
            tuple[list[str], list[tuple[int, int]]],
            chunker(document.markdown, offsets=True, overlap=params.overlap or None),
        )
        return [Piece(text, start) for text, (start, _end) in zip(texts, offsets, strict=True)]
