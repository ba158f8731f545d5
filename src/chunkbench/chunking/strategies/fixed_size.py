"""Fixed-size chunking: overlapping windows of cl100k tokens, cut as exact slices of the markdown."""

from __future__ import annotations

from typing import ClassVar, Self

import numpy as np
from pydantic import Field, model_validator

from chunkbench.chunking.base import (
    Chunk,
    ChunkFactory,
    ChunkingInput,
    ChunkingStrategy,
    StrategyParams,
    register_strategy,
)
from chunkbench.models import StrategyName
from chunkbench.text.tokens import Tokenizer, get_tokenizer

Window = tuple[int, int, int]  # (first token, end token, exact token count of the slice)


class FixedSizeParams(StrategyParams):
    """Window length and the tokens consecutive windows share."""

    chunk_size: int = Field(512, ge=1, le=8192, description="Tokens per chunk (cl100k_base)")
    chunk_overlap: int = Field(50, ge=0, description="Tokens shared by consecutive chunks")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Self:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be less than chunk_size ({self.chunk_size})")
        return self


def token_windows(text: str, offsets: np.ndarray, size: int, overlap: int, tokenizer: Tokenizer) -> list[Window]:
    """Windows over the tokens of ``text``, each re-encoding to at most ``size`` tokens.

    Window ``k+1`` starts ``overlap`` tokens before window ``k`` ends. Re-encoding a slice can give
    more tokens than the window held (BPE merges differ at the slice's edges), so a window over the
    limit loses tokens at its end until it fits, and the next window starts from that shorter end.
    """
    total = len(offsets) - 1
    if total <= 0:
        return []
    step = size - overlap
    windows: list[Window] = []
    start = 0
    while True:
        # Plan the rest assuming no window needs shrinking, count them all in one batch.
        starts = np.arange(start, total, step, dtype=np.int64)
        ends = np.minimum(starts + size, total)
        last = int(np.argmax(ends == total))  # the first window reaching the end is the last one
        starts, ends = starts[: last + 1], ends[: last + 1]
        counts = tokenizer.count_many(
            [text[offsets[a] : offsets[b]] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
        )
        over = next((i for i, count in enumerate(counts) if count > size), None)
        accepted = len(counts) if over is None else over
        windows.extend(zip(starts[:accepted].tolist(), ends[:accepted].tolist(), counts[:accepted], strict=True))
        if over is None:
            return windows
        a, b = int(starts[over]), int(ends[over])
        b, count = _shrink(text, offsets, a, b, size, tokenizer)
        windows.append((a, b, count))
        if b >= total:
            return windows
        start = max(a + 1, b - overlap)


def _shrink(text: str, offsets: np.ndarray, a: int, b: int, size: int, tokenizer: Tokenizer) -> tuple[int, int]:
    """The largest end ``<= b`` whose slice from token ``a`` re-encodes to ``size`` tokens or fewer."""
    count = tokenizer.count(text[offsets[a] : offsets[b]])
    while count > size and b - 1 > a:
        b -= 1
        # Tokens ending inside a character share its start offset: the slice only changes past them.
        while b - 1 > a and offsets[b] == offsets[b + 1]:
            b -= 1
        count = tokenizer.count(text[offsets[a] : offsets[b]])
    # Only a single character spelt with more tokens than ``size`` (chunk_size < 4) can stay over.
    return b, count


@register_strategy
class FixedSizeStrategy(ChunkingStrategy):
    """Token windows of ``chunk_size`` cl100k tokens, each starting ``chunk_overlap`` tokens before the
    previous one ends; whitespace-only windows are skipped. ``chunk_size`` 1..8192, ``chunk_overlap``
    0..chunk_size-1."""

    name = StrategyName.FIXED_SIZE
    expands_neighbours = True
    settings_defaults: ClassVar[dict[str, str]] = {"chunk_size": "chunk_size", "chunk_overlap": "chunk_overlap"}
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}
    description = "Consecutive windows of chunk_size tokens that overlap by chunk_overlap tokens."
    params_model = FixedSizeParams

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        params: FixedSizeParams = self.params  # type: ignore[assignment]
        text = document.markdown
        tokenizer = get_tokenizer()
        _ids, offsets = tokenizer.boundaries(text)
        factory = ChunkFactory(self.name, document)
        chunks: list[Chunk] = []
        bounds = offsets.tolist()
        previous = (0, 0)
        for a, b, count in token_windows(text, offsets, params.chunk_size, params.chunk_overlap, tokenizer):
            start, end = bounds[a], bounds[b]
            # A window inside the previous one (a shrunk window, or one that moved only inside a
            # character spelt with several tokens) adds nothing.
            if end <= previous[1] or text[start:end].isspace():
                continue
            previous = (start, end)
            chunks.append(factory.make(len(chunks), start, end, token_count=count))
        return chunks
