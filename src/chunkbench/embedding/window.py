"""How much of each text a Corpus model actually reads: chunks longer than its input window are embedded from
their first window only (MiniLM reads 256 word pieces, so a 512-token chunk is embedded from its first half)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chunkbench.config import Settings
from chunkbench.embedding.providers import get_provider
from chunkbench.embedding.registry import EmbeddingModelSpec, Purpose


@dataclass(frozen=True)
class WindowReport:
    """Each text's length in the model's tokens against the model's window."""

    model_id: str
    window: int
    counted_with: str  # "model tokenizer", "cl100k", or "cl100k (approximate)" for a server's own tokenizer
    token_counts: tuple[int, ...]

    @property
    def beyond(self) -> list[bool]:
        """Per text: whether the model cuts it."""
        return [count > self.window for count in self.token_counts]

    def summary(self) -> dict[str, Any]:
        """The share of texts, and of their tokens, beyond the window (what processing and reports show)."""
        total = sum(self.token_counts)
        unread = sum(max(0, count - self.window) for count in self.token_counts)
        texts = len(self.token_counts)
        beyond = sum(self.beyond)
        return {
            "model_id": self.model_id,
            "window_tokens": self.window,
            "counted_with": self.counted_with,
            "chunks_beyond": beyond,
            "chunk_share": round(beyond / texts, 4) if texts else 0.0,
            # Tokens the model never reads, of all the chunks' tokens.
            "token_share": round(unread / total, 4) if total else 0.0,
            "max_tokens": max(self.token_counts, default=0),
        }


def window_report(
    spec: EmbeddingModelSpec, texts: Sequence[str], settings: Settings, purpose: Purpose = "document"
) -> WindowReport | None:
    """The window report of ``texts`` for ``spec``; None when the model's window or tokenizer is unknown."""
    counted = get_provider(spec, settings).input_tokens(texts, purpose)
    if counted is None:
        return None
    counts, window, counted_with = counted
    return WindowReport(spec.id, window, counted_with, tuple(counts))
