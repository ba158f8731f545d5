"""Contextual retrieval: recursive chunks, each embedded behind a short prefix that situates it in its document."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any, ClassVar

from chunkbench.chunking.base import (
    BoundaryEmbedder,
    Chunk,
    ChunkingInput,
    ChunkingStrategy,
    ContextPrefixer,
    StrategyParams,
    register_strategy,
    with_context,
)
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.errors import ChunkingError
from chunkbench.models import StrategyName

_ARABIC_SCRIPT_LETTER = re.compile(r"[\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]")
_LETTER = re.compile(r"[^\W\d_]")
_LANGUAGE_SAMPLE = 1000
# The cl100k tokens of context prefix a chunk's size default leaves room for (see ``size_params``).
CONTEXT_PREFIX_TOKENS = 50


class ContextualRetrievalParams(RecursiveParams):
    """The base chunks' parameters: contextual retrieval cuts exactly like ``recursive``."""


def _is_farsi(text: str) -> bool:
    """Most letters of the text are Arabic-script (Farsi, Arabic, Urdu)."""
    sample = text[:_LANGUAGE_SAMPLE]
    letters = len(_LETTER.findall(sample))
    return letters > 0 and len(_ARABIC_SCRIPT_LETTER.findall(sample)) * 2 > letters


class HeadingPathPrefixer:
    """The prefix without an LLM: the document's title and the chunk's heading path, in its language.

    ``This chunk is from "Annual Report 2023", section "Finance > Revenue".``; a chunk written in
    Farsi gets the same sentence in Farsi, so the prefix does not switch the embedding's language.
    """

    mode = "deterministic"

    def prefixes(self, document: ChunkingInput, chunks: list[Chunk]) -> list[str]:
        title = document.title or document.tree.root.heading or PurePath(document.document_name).stem
        title = " ".join(title.split()) or document.document_name
        return [self._prefix(title, chunk) for chunk in chunks]

    @staticmethod
    def _prefix(title: str, chunk: Chunk) -> str:
        # The document title can also be the first heading of the path; say it once.
        path = [heading for heading in chunk.heading_path if heading] if chunk.heading_path else []
        if path and path[0] == title:
            path = path[1:]
        section = " > ".join(path)
        if _is_farsi(chunk.text):
            if section:
                return f"این بخش از سند «{title}»، قسمت «{section}» است."
            return f"این بخش از سند «{title}» است."
        if section:
            return f'This chunk is from "{title}", section "{section}".'
        return f'This chunk is from "{title}".'


@register_strategy
class ContextualRetrievalStrategy(ChunkingStrategy):
    """Recursive chunks (same parameters as ``recursive``) whose embedded text is ``prefix + "\\n\\n" + text``.

    The prefix comes from ``prefixer`` (an LLM that reads the whole document, when one is configured),
    else from :class:`HeadingPathPrefixer`. ``text`` and the offsets stay the exact source slice;
    ``prefix_mode`` says which kind of prefix the last run used.
    """

    name = StrategyName.CONTEXTUAL_RETRIEVAL
    settings_defaults: ClassVar[dict[str, str]] = {"chunk_size": "chunk_size"}
    # A chunk is embedded behind its prefix: the heading-path prefix is 10–30 cl100k tokens, an LLM's "short
    # succinct context" usually 50–100; the size left for the chunk keeps room for a short one.
    size_params: ClassVar[dict[str, int]] = {"chunk_size": CONTEXT_PREFIX_TOKENS}
    description = "Recursive chunks embedded behind a short context prefix that places each chunk in its document."
    params_model = ContextualRetrievalParams
    prefixer: ContextPrefixer  # never None here: __init__ falls back to the heading path

    def __init__(
        self,
        params: StrategyParams | None = None,
        *,
        boundary: BoundaryEmbedder | None = None,
        prefixer: ContextPrefixer | None = None,
    ) -> None:
        super().__init__(params, boundary=boundary, prefixer=prefixer or HeadingPathPrefixer())
        self.prefix_mode: str = self.prefixer.mode

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        params: ContextualRetrievalParams = self.params  # type: ignore[assignment]
        chunks = RecursiveStrategy(RecursiveParams(**params.model_dump())).make_chunks(document, self.name)
        prefixes = self.prefixer.prefixes(document, chunks)
        if len(prefixes) != len(chunks):
            raise ChunkingError(
                f"The context prefixer returned {len(prefixes)} prefixes for {len(chunks)} chunks of "
                f"'{document.document_name}'."
            )
        for chunk, prefix in zip(chunks, prefixes, strict=True):
            chunk.enriched_content = with_context(prefix, chunk.text)
        self.prefix_mode = self.prefixer.mode
        return chunks

    def run_details(self) -> dict[str, Any]:
        return {"prefix_mode": self.prefix_mode}
