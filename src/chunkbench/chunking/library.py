"""Strategies whose cuts come from another library (LangChain, LlamaIndex, chonkie, …): the arena (issue 24).

A :class:`LibraryStrategy` is a strategy like the built-in ones: its own parameters (named as its library names
them), its capabilities, and chunks with exact ``start_index``/``end_index`` into the document's markdown. The
library only says where to cut: :meth:`LibraryStrategy.split` returns the library's pieces, as text and, when the
library reports one, the offset it says the piece starts at, and :func:`locate` maps each piece back to the
markdown. A piece the library gave verbatim is found where it is; a piece whose text the library rewrote (stripped
whitespace, a serialised table, a dropped heading marker) becomes the markdown span that covers its text from its
first character to its last, and the run says how many pieces differed (``run_details()["text_differed"]``).

The library is an optional extra (``pip install 'chunkbench[langchain]'``): the strategy is always listed, with its
library, the installed version or none, and the install command; running it without the library is a 400
(:class:`~chunkbench.errors.MissingExtraError`) that names that command.
"""

from __future__ import annotations

import bisect
import importlib.util
import re
from abc import abstractmethod
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import Any, ClassVar

import numpy as np

from chunkbench.chunking.base import (
    BoundaryEmbedder,
    Chunk,
    ChunkFactory,
    ChunkingInput,
    ChunkingStrategy,
    ContextPrefixer,
    StrategyParams,
)
from chunkbench.errors import ChunkingError, MissingExtraError
from chunkbench.text.tokens import get_tokenizer

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Piece:
    """One chunk as the library returned it: its text, and where it says the text starts (None: it does not say)."""

    text: str
    start: int | None = None


@dataclass(frozen=True)
class LibraryInfo:
    """What the listings show of a library strategy: the distribution, its version here, and how to install it."""

    library: str
    version: str | None
    extra: str

    @property
    def available(self) -> bool:
        return self.version is not None

    @property
    def install(self) -> str:
        return f"pip install 'chunkbench[{self.extra}]'"


class LibraryStrategy(ChunkingStrategy):
    """A strategy whose cuts are a library's; subclasses set the class variables and implement :meth:`split`."""

    # The distribution that ships the splitter (its version is listed and recorded), the chunkbench extra that
    # installs it, and the modules that must be importable for it to run.
    library: ClassVar[str]
    extra: ClassVar[str]
    modules: ClassVar[tuple[str, ...]]
    in_default_set: ClassVar[bool] = False

    def __init__(
        self,
        params: StrategyParams | None = None,
        *,
        boundary: BoundaryEmbedder | None = None,
        prefixer: ContextPrefixer | None = None,
    ) -> None:
        require(type(self))
        super().__init__(params, boundary=boundary, prefixer=prefixer)
        self._details: dict[str, Any] = {}

    @abstractmethod
    def split(self, document: ChunkingInput) -> list[Piece]:
        """The library's chunks of ``document.markdown``, in document order."""

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        pieces = [piece for piece in self.split(document) if piece.text.strip()]
        spans, differed = locate(document.markdown, pieces, strategy=self.name.value)
        factory = ChunkFactory(self.name, document)
        self._details = {
            "library": self.library,
            "library_version": library_version(self.library),
            "text_differed": differed,
        }
        return [factory.make(index, start, end) for index, (start, end) in enumerate(spans)]

    def run_details(self) -> dict[str, Any]:
        return dict(self._details)


# --------------------------------------------------------------------------- availability


@cache
def library_version(distribution: str) -> str | None:
    """The installed version of ``distribution``; None when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def info(cls: type[ChunkingStrategy]) -> LibraryInfo | None:
    """The library behind ``cls``; None for a strategy of chunkbench's own."""
    if not issubclass(cls, LibraryStrategy):
        return None
    importable = all(importlib.util.find_spec(module) is not None for module in cls.modules)
    return LibraryInfo(cls.library, library_version(cls.library) if importable else None, cls.extra)


def require(cls: type[LibraryStrategy]) -> None:
    """Raise :class:`MissingExtraError` when ``cls``'s library is not installed."""
    found = info(cls)
    if found is not None and not found.available:
        raise MissingExtraError(
            f"The '{cls.name}' strategy runs {found.library}, which is not installed. Install it with: {found.install}",
            strategy=str(cls.name),
            library=found.library,
            install=found.install,
        )


# --------------------------------------------------------------------------- what libraries need from us


def count_tokens(text: str) -> int:
    """cl100k_base tokens, as every strategy counts them: the length function handed to libraries."""
    return get_tokenizer().count(text)


class TokenizerAdapter:
    """cl100k_base behind the encode/decode shape tokenizer-taking libraries call (LlamaIndex, chonkie)."""

    def encode(self, text: str, *args: Any, **kwargs: Any) -> list[int]:
        return get_tokenizer().encode(text).tolist()

    def decode(self, tokens: Any, *args: Any, **kwargs: Any) -> str:
        return get_tokenizer().decode(list(tokens))

    def __call__(self, text: str) -> list[int]:
        return self.encode(text)


def embed_with(boundary: BoundaryEmbedder | None, texts: list[str]) -> np.ndarray:
    """The Boundary model's rows for ``texts`` (the embedding-based splitters embed with it, never a hub model)."""
    if boundary is None:
        raise ChunkingError("This strategy needs Boundary model embeddings, and none were given.")
    return np.asarray(boundary.embed(list(texts)), dtype=np.float32)


# --------------------------------------------------------------------------- mapping pieces back to the markdown


def _bare(text: str) -> str:
    """``text`` without whitespace and invisible characters (a library may drop either: LangChain's
    MarkdownHeaderTextSplitter drops every non-printable character, such as Farsi's ZWNJ, U+200C)."""
    text = _SPACE.sub("", text)
    return text if text.isprintable() else "".join(ch for ch in text if ch.isprintable())


class _Skeleton:
    """The markdown without its whitespace and invisible characters, each kept character's offset remembered: where
    a rewritten piece's characters are found when the library changed only spacing."""

    def __init__(self, markdown: str) -> None:
        self.offsets: list[int] = []
        kept: list[str] = []
        for match in re.finditer(r"\S+", markdown):
            word = match.group()
            if word.isprintable():
                kept.append(word)
                self.offsets.extend(range(match.start(), match.end()))
                continue
            for offset, character in enumerate(word, match.start()):
                if character.isprintable():
                    kept.append(character)
                    self.offsets.append(offset)
        self.text = "".join(kept)

    def index_of(self, offset: int) -> int:
        """The skeleton position of the first kept character at or after ``offset``."""
        return bisect.bisect_left(self.offsets, offset)


def locate(markdown: str, pieces: list[Piece], *, strategy: str) -> tuple[list[tuple[int, int]], int]:
    """Each piece's ``(start, end)`` in ``markdown``, in order, and how many pieces' text differed from their span.

    Pieces run in document order (they may overlap), so each is looked for from the previous one's start on. A
    piece is, in order of preference: where the library says it starts, when the markdown holds its text there;
    its text found verbatim; its text found once whitespace is ignored on both sides; or the span from its first
    line's first occurrence to its last line's, for a piece whose characters were rewritten too (a serialised
    table, a heading whose ``#`` were dropped). A piece found none of these ways is an error naming it.
    """
    spans: list[tuple[int, int]] = []
    differed = 0
    skeleton: _Skeleton | None = None
    cursor = 0
    for number, piece in enumerate(pieces):
        text = piece.text
        if piece.start is not None and markdown.startswith(text, piece.start) and piece.start >= cursor:
            start = piece.start
            spans.append((start, start + len(text)))
            cursor = start
            continue
        start = markdown.find(text, cursor)
        if start >= 0:
            spans.append((start, start + len(text)))
            cursor = start
            continue
        skeleton = skeleton or _Skeleton(markdown)
        span = _loose(markdown, skeleton, text, cursor)
        if span is None:
            raise ChunkingError(
                f"The '{strategy}' strategy returned a chunk (number {number + 1}, {_clip(text)!r}) whose text is not "
                "in the document; it cannot be given exact offsets."
            )
        differed += 1
        spans.append(span)
        cursor = span[0]
    return spans, differed


def _loose(markdown: str, skeleton: _Skeleton, text: str, cursor: int) -> tuple[int, int] | None:
    bare = _bare(text)
    if not bare:
        return None
    begin = skeleton.index_of(cursor)
    at = skeleton.text.find(bare, begin)
    if at >= 0:
        return skeleton.offsets[at], skeleton.offsets[at + len(bare) - 1] + 1
    # Rewritten characters: anchor the span on the piece's first and last lines (whitespace ignored), each the
    # longest prefix / suffix of that line the markdown holds.
    lines = [_bare(line) for line in text.splitlines() if _bare(line)]
    head = _longest_found(skeleton.text, lines[0], begin, prefix=True)
    if head is None:
        return None
    first, length = head
    tail = _longest_found(skeleton.text, lines[-1], first, prefix=False)
    last = (tail[0] + tail[1] - 1) if tail is not None else first + length - 1
    return skeleton.offsets[first], skeleton.offsets[max(last, first + length - 1)] + 1


def _longest_found(haystack: str, needle: str, begin: int, *, prefix: bool) -> tuple[int, int] | None:
    """Where the longest prefix (or suffix) of ``needle`` of at least 8 characters (or all of a shorter one) first
    occurs in ``haystack`` from ``begin``, and its length."""
    low, high, found = min(8, len(needle)), len(needle), None
    while low <= high:
        size = (low + high) // 2
        part = needle[:size] if prefix else needle[-size:]
        at = haystack.find(part, begin)
        if at >= 0:
            found, low = (at, size), size + 1
        else:
            high = size - 1
    return found


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"
