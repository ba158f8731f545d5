"""LangChain's text splitters (``langchain-text-splitters``) as chunkbench strategies, sized in cl100k tokens.

``langchain_recursive`` runs ``RecursiveCharacterTextSplitter``, ``langchain_token`` runs ``TokenTextSplitter``'s
algorithm (``split_text_on_tokens``) on our offline cl100k_base, and ``langchain_markdown_header`` runs
``MarkdownHeaderTextSplitter`` (optionally followed by the recursive splitter inside each section, LangChain's
documented pattern). The library is imported when a strategy splits, so listing them never needs it.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from chunkbench.chunking.base import ChunkingInput, StrategyParams
from chunkbench.chunking.library_strategies import LibraryStrategy, Piece, count_tokens
from chunkbench.models import StrategyName
from chunkbench.text.tokens import get_tokenizer

_LIBRARY = "langchain-text-splitters"
_EXTRA = "langchain"
_MODULES = ("langchain_text_splitters",)
# RecursiveCharacterTextSplitter's own default separators.
LANGCHAIN_SEPARATORS = ["\n\n", "\n", " ", ""]
_HEADER_MARKER = re.compile(r"^#{1,6}$")


def _length_function(length: str) -> Any:
    return count_tokens if length == "tokens" else len


def _check_overlap(size: int | None, overlap: int) -> None:
    if size is not None and overlap >= size:
        raise ValueError(f"chunk_overlap ({overlap}) must be less than chunk_size ({size})")


# --------------------------------------------------------------------------- RecursiveCharacterTextSplitter


class LangChainRecursiveParams(StrategyParams):
    """RecursiveCharacterTextSplitter's parameters, under LangChain's names; lengths in cl100k tokens by default."""

    chunk_size: int = Field(512, ge=1, le=8192, description="Maximum length of a chunk, in `length` units")
    chunk_overlap: int = Field(0, ge=0, description="Length shared by consecutive chunks, in `length` units")
    separators: list[str] | None = Field(
        None,
        min_length=1,
        description=(
            'Separators, strongest first; null: LangChain\'s ["\\n\\n", "\\n", " ", ""]. Chroma\'s evaluation used '
            '["\\n\\n", "\\n", ".", "?", "!", " ", ""]'
        ),
    )
    keep_separator: bool | Literal["start", "end"] = Field(
        True, description="Keep each separator with the piece after it (true/'start'), before it ('end'), or drop it"
    )
    is_separator_regex: bool = Field(False, description="Read the separators as regular expressions")
    length: Literal["tokens", "characters"] = Field(
        "tokens", description="What chunk_size and chunk_overlap count: cl100k_base tokens or characters"
    )

    @model_validator(mode="after")
    def _valid(self) -> Self:
        _check_overlap(self.chunk_size, self.chunk_overlap)
        if self.is_separator_regex:
            for separator in self.separators or []:
                try:
                    re.compile(separator)
                except re.error as exc:
                    raise ValueError(f"separators: {separator!r} is not a regular expression ({exc})") from None
        return self


class LangChainRecursive(LibraryStrategy):
    """LangChain's RecursiveCharacterTextSplitter: split at the strongest separator that makes pieces fit, merge."""

    # Named, not registered: importing the module adds no strategy name; its entry point registers the class.
    name = StrategyName.stored("langchain_recursive")
    description = (
        "LangChain's RecursiveCharacterTextSplitter (langchain_text_splitters), lengths in cl100k_base tokens by "
        "default: splits at the strongest separator that makes pieces fit, then merges pieces up to chunk_size."
    )
    params_model = LangChainRecursiveParams
    library = _LIBRARY
    extra = _EXTRA
    modules = _MODULES
    # Its chunks are the markdown's own text in order (stripped at the edges): contiguous windows.
    expands_neighbours = True
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}

    def split(self, document: ChunkingInput) -> list[Piece]:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        params: LangChainRecursiveParams = self.params  # type: ignore[assignment]
        splitter = RecursiveCharacterTextSplitter(
            separators=list(params.separators) if params.separators is not None else None,
            keep_separator=params.keep_separator,
            is_separator_regex=params.is_separator_regex,
            chunk_size=params.chunk_size,
            chunk_overlap=params.chunk_overlap,
            length_function=_length_function(params.length),
        )
        texts = splitter.split_text(document.markdown)
        return _placed(document.markdown, texts, params.chunk_overlap, _length_function(params.length))


def _placed(markdown: str, texts: list[str], overlap: int, length: Any) -> list[Piece]:
    """The splitter's chunks with where each starts: from the previous chunk's end on, or, with an overlap, from the
    earliest start whose overlap with the previous chunk is within ``overlap``.

    A chunk's text can occur earlier too (a repeated disclaimer, a table row): searching from the previous chunk's
    start would place it inside the previous chunk. A chunk not found verbatim (regex separators dropped and
    re-joined) is left to ``locate`` without a start.
    """
    pieces: list[Piece] = []
    previous: tuple[int, int] | None = None
    for text in texts:
        floor = 0 if previous is None else _overlap_floor(markdown, *previous, overlap, length)
        start = markdown.find(text, floor)
        if start < 0:
            pieces.append(Piece(text))
            continue
        pieces.append(Piece(text, start))
        previous = (start, start + len(text))
    return pieces


def _overlap_floor(markdown: str, start: int, end: int, overlap: int, length: Any) -> int:
    """The first offset after ``start`` from which ``markdown[offset:end]`` measures at most ``overlap`` (+2 tokens:
    the length of a join is not exactly the sum of its parts' lengths)."""
    if overlap == 0:
        return end
    limit = overlap + (2 if length is count_tokens else 0)
    low, high = start + 1, end
    while low < high:
        middle = (low + high) // 2
        if length(markdown[middle:end]) <= limit:
            high = middle
        else:
            low = middle + 1
    return low


# --------------------------------------------------------------------------- TokenTextSplitter


class LangChainTokenParams(StrategyParams):
    """TokenTextSplitter's window length and overlap, in cl100k_base tokens."""

    chunk_size: int = Field(512, ge=1, le=8192, description="Tokens per chunk (cl100k_base)")
    chunk_overlap: int = Field(50, ge=0, description="Tokens shared by consecutive chunks")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Self:
        _check_overlap(self.chunk_size, self.chunk_overlap)
        return self


class _SourceTokens:
    """cl100k_base for ``split_text_on_tokens``: ``encode`` gives token positions, ``decode`` the source slice.

    LangChain's TokenTextSplitter decodes each window of token ids on its own; a window that ends inside a
    multi-byte character then decodes to U+FFFD, text the document does not hold. Here the window arithmetic is
    LangChain's, and a window of positions ``[a, b)`` is the markdown from token ``a``'s first character to token
    ``b``'s (``Tokenizer.boundaries``): the same text wherever the window ends between characters.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        _ids, offsets = get_tokenizer().boundaries(text)
        self.offsets: list[int] = offsets.tolist()
        self.starts: list[int] = []

    def encode(self, text: str) -> list[int]:
        return list(range(len(self.offsets) - 1))

    def decode(self, positions: list[int]) -> str:
        start, end = self.offsets[positions[0]], self.offsets[positions[-1] + 1]
        if start < end:
            self.starts.append(start)
        return self.text[start:end]


class LangChainToken(LibraryStrategy):
    """LangChain's TokenTextSplitter algorithm on chunkbench's offline cl100k_base."""

    name = StrategyName.stored("langchain_token")
    description = (
        "LangChain's TokenTextSplitter algorithm (langchain_text_splitters.base.split_text_on_tokens) on cl100k_base "
        "without tiktoken's download: windows of chunk_size tokens, each chunk_overlap tokens into the previous one."
    )
    params_model = LangChainTokenParams
    library = _LIBRARY
    extra = _EXTRA
    modules = _MODULES
    expands_neighbours = True
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}

    def split(self, document: ChunkingInput) -> list[Piece]:
        from langchain_text_splitters.base import Tokenizer, split_text_on_tokens

        params: LangChainTokenParams = self.params  # type: ignore[assignment]
        tokens = _SourceTokens(document.markdown)
        tokenizer = Tokenizer(
            chunk_overlap=params.chunk_overlap,
            tokens_per_chunk=params.chunk_size,
            decode=tokens.decode,
            encode=tokens.encode,
        )
        texts = split_text_on_tokens(text=document.markdown, tokenizer=tokenizer)
        return [Piece(text, start) for text, start in zip(texts, tokens.starts, strict=True)]


# --------------------------------------------------------------------------- MarkdownHeaderTextSplitter


class LangChainMarkdownHeaderParams(StrategyParams):
    """MarkdownHeaderTextSplitter's headers and header stripping, and an optional size split inside each section."""

    headers_to_split_on: list[str] = Field(
        ["#", "##", "###"], min_length=1, description="The heading markers that start a section ('#' … '######')"
    )
    strip_headers: bool = Field(True, description="Leave the heading lines out of the chunks")
    chunk_size: int | None = Field(
        None,
        ge=1,
        le=8192,
        description=(
            "null: each section is one chunk; a number: each section is split further by "
            "RecursiveCharacterTextSplitter into chunks of at most this many cl100k_base tokens"
        ),
    )
    chunk_overlap: int = Field(0, ge=0, description="Tokens shared by consecutive chunks of a section split further")

    @field_validator("headers_to_split_on")
    @classmethod
    def _markers(cls, markers: list[str]) -> list[str]:
        bad = [marker for marker in markers if not _HEADER_MARKER.match(marker)]
        if bad:
            raise ValueError(f"{bad} are not heading markers: each must be one to six '#'")
        if len(set(markers)) != len(markers):
            raise ValueError("each heading marker may appear once")
        return markers

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Self:
        if self.chunk_size is None and self.chunk_overlap:
            raise ValueError("chunk_overlap needs chunk_size: a section kept whole overlaps nothing")
        _check_overlap(self.chunk_size, self.chunk_overlap)
        return self


class LangChainMarkdownHeader(LibraryStrategy):
    """LangChain's MarkdownHeaderTextSplitter: a chunk per markdown section, optionally split further by size."""

    name = StrategyName.stored("langchain_markdown_header")
    description = (
        "LangChain's MarkdownHeaderTextSplitter (langchain_text_splitters): one chunk per section under the chosen "
        "heading levels, heading lines stripped; with chunk_size, each section split further by "
        "RecursiveCharacterTextSplitter in cl100k_base tokens."
    )
    params_model = LangChainMarkdownHeaderParams
    library = _LIBRARY
    extra = _EXTRA
    modules = _MODULES
    # No expands_neighbours: the splitter rewrites text (headings dropped, lines re-joined), and its chunks leave
    # the heading lines out, so consecutive chunks are not contiguous windows. No size_params either: the default
    # (null) means "sections whole", which a Corpus model's size must not silently replace.

    def split(self, document: ChunkingInput) -> list[Piece]:
        from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

        params: LangChainMarkdownHeaderParams = self.params  # type: ignore[assignment]
        headers = [(marker, f"Header {len(marker)}") for marker in params.headers_to_split_on]
        sections = MarkdownHeaderTextSplitter(headers, strip_headers=params.strip_headers).split_text(document.markdown)
        texts = [section.page_content for section in sections]
        if params.chunk_size is not None:
            splitter = RecursiveCharacterTextSplitter(
                chunk_size=params.chunk_size, chunk_overlap=params.chunk_overlap, length_function=count_tokens
            )
            texts = [piece for text in texts for piece in splitter.split_text(text)]
        return _placed(document.markdown, texts, params.chunk_overlap, count_tokens)
