"""LlamaIndex's node parsers as strategies: SentenceSplitter, SemanticSplitterNodeParser, MarkdownNodeParser.

Each chunk starts where LlamaIndex places its node (``start_char_idx``: its text searched for in the document),
except where that search lands inside the previous node of a parser whose nodes never overlap; the base checks
every start against the markdown. Nothing here reaches a hub or the network: tokens are cl100k_base (chunkbench's
own BPE file), embeddings are the Boundary model's, and sentences are cut by NLTK's untrained Punkt tokenizer,
which is what LlamaIndex's default sentence splitter runs but without its first-use check that downloads NLTK
data (``punkt_tab``, ``stopwords``) when a cache lacks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self

from pydantic import Field, model_validator

from chunkbench.chunking.base import BoundaryEmbedder, Chunk, ChunkingInput, StrategyParams
from chunkbench.chunking.library_strategies import LibraryStrategy, Piece, TokenizerAdapter, embed_with
from chunkbench.errors import ChunkingError
from chunkbench.models import StrategyName

_LIBRARY = "llama-index-core"
_EXTRA = "llamaindex"
# Top-level names: looking up ``llama_index.core`` imports ``llama_index`` first, which raises when it is missing.
# (Every llama-index-* distribution depends on llama-index-core, so the namespace is there only with it.)
_MODULES = ("llama_index", "nltk")


def sentence_splitter() -> Callable[[str], list[str]]:
    """LlamaIndex's default sentence cutter (Punkt spans, each sentence running to the next one's start), offline."""
    from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer_internal
    from nltk.tokenize import PunktSentenceTokenizer

    # An untrained PunktSentenceTokenizer is exactly what LlamaIndex's globals_helper builds; it reads no data.
    punkt = PunktSentenceTokenizer()
    return lambda text: split_by_sentence_tokenizer_internal(text, punkt)


def parse_nodes(parser: Any, markdown: str) -> list[Any]:
    """The nodes ``parser`` makes of ``markdown``, in document order."""
    from llama_index.core.schema import Document

    return parser.get_nodes_from_documents([Document(text=markdown)], show_progress=False)


def placed_as_llamaindex_places(texts: list[str], markdown: str) -> list[Piece]:
    """Overlapping chunks as pieces, each starting where LlamaIndex would set its node's ``start_char_idx``: the
    first occurrence of its text from one character past the previous chunk's start."""
    pieces: list[Piece] = []
    search = 0
    for text in texts:
        at = markdown.find(text, search)
        pieces.append(Piece(text, at if at >= 0 else None))
        if at >= 0:
            search = at + 1
    return pieces


def consecutive_pieces(nodes: list[Any], markdown: str) -> tuple[list[Piece], int]:
    """Nodes that never overlap as pieces, each found from the previous one's end; and how many of them LlamaIndex
    placed elsewhere.

    LlamaIndex looks for each node's text from one character past the previous node's start: a short node whose
    text also occurs inside the previous one (a repeated "Thank you.") is placed there. Parsers whose nodes follow
    one another (semantic groups of sentences, header sections) are found from the previous node's end instead.
    """
    pieces: list[Piece] = []
    misplaced = 0
    cursor = 0
    for node in nodes:
        text = node.get_content()
        at = markdown.find(text, cursor)
        if at < 0:  # rewritten text (a header's spacing): the base maps it back from its characters
            pieces.append(Piece(text))
            continue
        misplaced += node.start_char_idx is not None and node.start_char_idx != at
        pieces.append(Piece(text, at))
        cursor = at + len(text)
    return pieces, misplaced


# --------------------------------------------------------------------------- SentenceSplitter


class LlamaIndexSentenceParams(StrategyParams):
    """SentenceSplitter's parameters, named as LlamaIndex names them (sizes in cl100k_base tokens)."""

    chunk_size: int = Field(1024, ge=1, le=8192, description="Most cl100k_base tokens per chunk")
    chunk_overlap: int = Field(200, ge=0, description="cl100k_base tokens of whole splits carried into the next chunk")
    paragraph_separator: str = Field(
        "\n\n\n", min_length=1, description="What separates paragraphs: the first split, before sentences"
    )
    separator: str = Field(" ", min_length=1, description="What separates words: the last split, after phrases")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Self:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be less than chunk_size ({self.chunk_size})")
        return self


class LlamaIndexSentence(LibraryStrategy):
    name: ClassVar[StrategyName] = "llamaindex_sentence"  # type: ignore[assignment]
    description: ClassVar[str] = (
        "LlamaIndex SentenceSplitter: paragraphs, then sentences, then phrases and words, merged up to chunk_size "
        "cl100k tokens with chunk_overlap tokens carried over."
    )
    params_model: ClassVar[type[StrategyParams]] = LlamaIndexSentenceParams
    library: ClassVar[str] = _LIBRARY
    extra: ClassVar[str] = _EXTRA
    modules: ClassVar[tuple[str, ...]] = _MODULES
    expands_neighbours: ClassVar[bool] = True
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}

    def split(self, document: ChunkingInput) -> list[Piece]:
        from llama_index.core.node_parser import SentenceSplitter

        params: LlamaIndexSentenceParams = self.params  # type: ignore[assignment]
        parser = SentenceSplitter(
            chunk_size=params.chunk_size,
            chunk_overlap=params.chunk_overlap,
            paragraph_separator=params.paragraph_separator,
            separator=params.separator,
            tokenizer=TokenizerAdapter(),
            chunking_tokenizer_fn=sentence_splitter(),
        )
        try:
            # split_text cuts exactly as the node path does for a document without metadata (no room to leave for
            # it), without that path's print to stdout whenever chunk_size is under 50 tokens.
            texts = parser.split_text(document.markdown)
        except ValueError as exc:
            # SentenceSplitter's "Single token exceeded chunk size": one character's tokens outgrow a tiny chunk.
            raise ChunkingError(
                f"LlamaIndex's SentenceSplitter could not cut the document with chunk_size={params.chunk_size}: {exc}. "
                "Raise chunk_size."
            ) from exc
        return placed_as_llamaindex_places(texts, document.markdown)


# --------------------------------------------------------------------------- SemanticSplitterNodeParser


def boundary_embedding(boundary: BoundaryEmbedder) -> Any:
    """The Boundary model as a LlamaIndex ``BaseEmbedding`` (LlamaIndex would otherwise default to OpenAI)."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr

    class BoundaryEmbedding(BaseEmbedding):
        """Embeds with chunkbench's Boundary model, every batch in one call."""

        _boundary: Any = PrivateAttr()

        def __init__(self, embedder: BoundaryEmbedder) -> None:
            # LlamaIndex's largest batch: a 20,000-character document is a handful of Boundary model calls.
            super().__init__(model_name=embedder.model_id, embed_batch_size=2048)
            self._boundary = embedder

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embed_with(self._boundary, texts).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    return BoundaryEmbedding(boundary)


class LlamaIndexSemanticParams(StrategyParams):
    """SemanticSplitterNodeParser's parameters, named as LlamaIndex names them."""

    buffer_size: int = Field(
        1, ge=0, le=20, description="Sentences on each side embedded with a sentence when comparing neighbours"
    )
    breakpoint_percentile_threshold: int = Field(
        95,
        ge=0,
        le=100,
        description="Percentile of neighbour dissimilarity a gap must exceed to be a cut (lower: more chunks)",
    )


class LlamaIndexSemantic(LibraryStrategy):
    name: ClassVar[StrategyName] = "llamaindex_semantic"  # type: ignore[assignment]
    description: ClassVar[str] = (
        "LlamaIndex SemanticSplitterNodeParser: cuts where the Boundary model's embeddings of neighbouring sentence "
        "groups are further apart than breakpoint_percentile_threshold of all gaps (no size limit)."
    )
    params_model: ClassVar[type[StrategyParams]] = LlamaIndexSemanticParams
    library: ClassVar[str] = _LIBRARY
    extra: ClassVar[str] = _EXTRA
    modules: ClassVar[tuple[str, ...]] = _MODULES
    needs_boundary: ClassVar[bool] = True
    expands_neighbours: ClassVar[bool] = True

    def split(self, document: ChunkingInput) -> list[Piece]:
        from llama_index.core.node_parser import SemanticSplitterNodeParser

        params: LlamaIndexSemanticParams = self.params  # type: ignore[assignment]
        assert self.boundary is not None  # needs_boundary: the base refused to build without one
        parser = SemanticSplitterNodeParser(
            embed_model=boundary_embedding(self.boundary),
            buffer_size=params.buffer_size,
            breakpoint_percentile_threshold=params.breakpoint_percentile_threshold,
            sentence_splitter=sentence_splitter(),
        )
        pieces, self._misplaced = consecutive_pieces(parse_nodes(parser, document.markdown), document.markdown)
        return pieces

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        chunks = super().chunk(document)
        self._details["boundary_model_id"] = getattr(self.boundary, "model_id", None)
        self._details["start_char_idx_corrected"] = self._misplaced
        return chunks


# --------------------------------------------------------------------------- MarkdownNodeParser


class LlamaIndexMarkdownParams(StrategyParams):
    """MarkdownNodeParser has no parameter that moves a cut (``header_path_separator`` only names metadata)."""


class LlamaIndexMarkdown(LibraryStrategy):
    name: ClassVar[StrategyName] = "llamaindex_markdown"  # type: ignore[assignment]
    description: ClassVar[str] = (
        "LlamaIndex MarkdownNodeParser: one chunk per markdown header section (headers inside code fences ignored), "
        "however long."
    )
    params_model: ClassVar[type[StrategyParams]] = LlamaIndexMarkdownParams
    library: ClassVar[str] = _LIBRARY
    extra: ClassVar[str] = _EXTRA
    modules: ClassVar[tuple[str, ...]] = _MODULES

    def split(self, document: ChunkingInput) -> list[Piece]:
        from llama_index.core.node_parser import MarkdownNodeParser

        pieces, self._misplaced = consecutive_pieces(
            parse_nodes(MarkdownNodeParser(), document.markdown), document.markdown
        )
        return pieces

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        chunks = super().chunk(document)
        self._details["start_char_idx_corrected"] = self._misplaced
        return chunks
