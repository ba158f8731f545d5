"""Contextual retrieval with an LLM: Anthropic's prompt writes each chunk's context prefix."""

from __future__ import annotations

from chunkbench.chunking.base import Chunk, ChunkingInput, ContextPrefixer
from chunkbench.config import Settings
from chunkbench.llm.client import LlmClient, get_llm_client
from chunkbench.llm.prompts import contextual_document_part, contextual_messages


class LlmContextPrefixer:
    """A ContextPrefixer that asks the LLM to situate every chunk in its whole document.

    Requests are sequential and share one prefix (the document block); an LLM failure propagates, so the
    run is recorded as failed rather than silently mixing LLM and deterministic prefixes.
    """

    mode = "llm"

    def __init__(self, client: LlmClient, *, max_tokens: int = 200) -> None:
        self.client = client
        self.max_tokens = max_tokens
        # Token usage of every prefix written by this instance, for cost reporting.
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def prefixes(self, document: ChunkingInput, chunks: list[Chunk]) -> list[str]:
        """One prefix per chunk, in the chunks' order."""
        if not chunks:
            return []
        document_part = contextual_document_part(document.markdown)
        prefixes: list[str] = []
        for chunk in chunks:
            result = self.client.chat(
                contextual_messages(document_part, chunk.text), max_tokens=self.max_tokens, temperature=0.0
            )
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens
            prefixes.append(" ".join(result.text.split()))
        return prefixes


def make_prefixer(settings: Settings) -> ContextPrefixer | None:
    """The LLM prefixer when an LLM is configured, else None (the strategy uses its deterministic default)."""
    client = get_llm_client(settings)
    return LlmContextPrefixer(client) if client is not None else None
