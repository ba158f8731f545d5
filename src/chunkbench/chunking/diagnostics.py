"""Per-run chunk diagnostics: how many chunks, how big, how many tiny, how many cut mid-sentence."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from chunkbench.chunking.base import Chunk

# Below this many tokens a chunk carries too little to be retrieved on its own.
TINY_CHUNK_TOKENS = 32
# A chunk ends a sentence when its last visible character closes one (Latin, Farsi, quotes)…
_SENTENCE_END = re.compile(r"[.!?؟۔…:;\"'”’»)\]|*`]\s*$")
# …or when the document itself breaks right after it (blank line, heading, end of document).
_BREAK_AFTER = re.compile(r"\s*(\n\s*\n|\n#|$)")


def ends_mid_sentence(chunk: Chunk, markdown: str) -> bool:
    if _SENTENCE_END.search(chunk.text):
        return False
    return _BREAK_AFTER.match(markdown, chunk.end_index) is None


def diagnose(chunks: list[Chunk], markdown: str) -> dict[str, Any]:
    """Diagnostics of the searchable chunks of one run (parents of parent-child are counted apart)."""
    searchable = [c for c in chunks if not c.is_parent]
    tokens = np.array([c.token_count for c in searchable], dtype=np.int64)
    if not len(tokens):
        return {"chunk_count": 0, "parent_count": len(chunks) - len(searchable)}
    covered = sum(c.end_index - c.start_index for c in searchable)
    return {
        "chunk_count": len(searchable),
        "parent_count": len(chunks) - len(searchable),
        "tokens": {
            "min": int(tokens.min()),
            "median": float(np.median(tokens)),
            "p95": float(np.percentile(tokens, 95)),
            "max": int(tokens.max()),
            "mean": round(float(tokens.mean()), 1),
            "total": int(tokens.sum()),
        },
        "tiny_share": round(float((tokens < TINY_CHUNK_TOKENS).mean()), 4),
        "tiny_threshold_tokens": TINY_CHUNK_TOKENS,
        "mid_sentence_share": round(sum(ends_mid_sentence(c, markdown) for c in searchable) / len(searchable), 4),
        # Above 1 when chunks overlap (fixed_size overlap), below 1 when text is left out.
        "coverage_ratio": round(covered / max(len(markdown), 1), 4),
    }


# A histogram has at most this many bins: enough to show a distribution's shape, few enough to read.
HISTOGRAM_MAX_BINS = 20


def histogram_bin_width(max_tokens: int) -> int:
    """The smallest round width (1, 2 or 5 × a power of ten tokens) that covers 0..``max_tokens`` in at most
    :data:`HISTOGRAM_MAX_BINS` bins."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if -(-(max_tokens + 1) // (step * scale)) <= HISTOGRAM_MAX_BINS:
                return step * scale
        scale *= 10


def token_histograms(token_counts: list[list[int]]) -> tuple[int, list[list[int]]]:
    """Histograms of several chunk sets' token counts on shared bins, so they compare side by side: the bin width
    and, per set, how many chunks fall in each bin (bin ``i`` holds ``[i × width, (i + 1) × width)``)."""
    largest = max((count for counts in token_counts for count in counts), default=0)
    width = histogram_bin_width(largest)
    bins = largest // width + 1
    histograms = []
    for counts in token_counts:
        histogram = [0] * bins
        for count in counts:
            histogram[count // width] += 1
        histograms.append(histogram)
    return width, histograms
