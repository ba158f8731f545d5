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
from collections import Counter
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
_WORD = re.compile(r"\w+")


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

    @classmethod
    def check_available(cls) -> None:
        require(cls)

    @abstractmethod
    def split(self, document: ChunkingInput) -> list[Piece]:
        """The library's chunks of ``document.markdown``, in document order."""

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        pieces = [piece for piece in self.split(document) if piece.text.strip()]
        spans, differed = locate(document.markdown, pieces, strategy=str(self.name))
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
    importable = all(_importable(module) for module in cls.modules)
    return LibraryInfo(cls.library, library_version(cls.library) if importable else None, cls.extra)


def listing(cls: type[ChunkingStrategy]) -> dict[str, Any]:
    """What every listing (CLI, ``GET /strategies``, the dashboard) shows of a strategy's library: nothing for
    chunkbench's own; else the library, its version here (None: not installed), and the command that installs it."""
    found = info(cls)
    if found is None:
        return {}
    return {
        "library": found.library,
        "library_version": found.version,
        "available": found.available,
        "install": found.install,
    }


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


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
        self._words: list[tuple[str, int, int]] | None = None
        self.word_starts: list[int] = []

    def words(self, markdown: str) -> list[tuple[str, int, int]]:
        """The markdown's words with their offsets (read once, on the first piece that needs them)."""
        if self._words is None:
            self._words = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(markdown)]
            self.word_starts = [start for _, start, _ in self._words]
        return self._words

    def index_of(self, offset: int) -> int:
        """The skeleton position of the first kept character at or after ``offset``."""
        return bisect.bisect_left(self.offsets, offset)


def locate(markdown: str, pieces: list[Piece], *, strategy: str) -> tuple[list[tuple[int, int]], int]:
    """Each piece's ``(start, end)`` in ``markdown``, in order, and how many pieces' text differed from their span.

    Pieces run in document order (they may overlap), so each is looked for from the previous one's start on. A
    piece is, in order of preference: where the library says it starts, when the markdown holds its text there;
    its text found verbatim; its text found once whitespace is ignored on both sides; or, for a piece whose
    characters were rewritten too (a serialised table, a heading whose ``#`` were dropped), the span from where its
    first words occur to where its last words do. A piece found none of these ways is an error naming it.
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
        if start > cursor:
            # The same words, spaced otherwise, may stand before that copy: there is the piece (the library cut it
            # from the first place after the last piece), and the copy belongs to a later piece.
            skeleton = skeleton or _Skeleton(markdown)
            earlier = _respaced_before(markdown, skeleton, text, cursor, start)
            if earlier is not None:
                differed += 1
                spans.append(earlier)
                cursor = earlier[0]
                continue
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


def _respaced_before(markdown: str, skeleton: _Skeleton, text: str, cursor: int, before: int) -> tuple[int, int] | None:
    """The first span from ``cursor`` on that starts before ``before`` and holds ``text``'s words with other spacing
    (its characters without whitespace, and the same words: "the rapist" is not "therapist")."""
    bare = _bare(text)
    if not bare:
        return None
    at = skeleton.text.find(bare, skeleton.index_of(cursor), skeleton.index_of(before) - 1 + len(bare))
    if at < 0:
        return None
    span = skeleton.offsets[at], skeleton.offsets[at + len(bare) - 1] + 1
    return span if markdown[span[0] : span[1]].split() == text.split() else None


def _loose(markdown: str, skeleton: _Skeleton, text: str, cursor: int) -> tuple[int, int] | None:
    bare = _bare(text)
    if not bare:
        return None
    at = skeleton.text.find(bare, skeleton.index_of(cursor))
    if at >= 0:
        return skeleton.offsets[at], skeleton.offsets[at + len(bare) - 1] + 1
    return _by_words(markdown, skeleton, text, cursor)


def _by_words(markdown: str, skeleton: _Skeleton, text: str, cursor: int) -> tuple[int, int] | None:
    """Rewritten characters (a serialised table, a heading without its ``#``): the span from where the piece's first
    words occur to where its last words do, when it holds at least half of the piece's words."""
    words = _WORD.findall(text)
    if not words:
        return None
    document = skeleton.words(markdown)
    names = [w for w, _, _ in document]
    first = bisect.bisect_left(skeleton.word_starts, cursor)
    head = _find_run(names, words, first, from_start=True)
    if head is None:
        return None
    least = head + max(0, len(words) // 2 - 1)
    tail = _find_run(names, words, least, from_start=False)
    if tail is None:
        tail = _find_run(names, words, head, from_start=False)
    end = tail if tail is not None and tail >= head else head
    covered = Counter(names[head : end + 1])
    found = sum(min(count, covered[word]) for word, count in Counter(words).items())
    if found * 2 < len(words):
        return None
    start, stop = document[head][1], document[end][2]
    # The punctuation around the first and last words ("| day", "The end.") belongs to the span when it is there.
    first_word = _WORD.search(text)
    assert first_word is not None  # text has words (`words` is not empty, checked above)
    before = text[: first_word.start()].strip()
    after = text[list(_WORD.finditer(text))[-1].end() :].strip()
    if before and markdown[max(0, start - len(before)) : start] == before:
        start -= len(before)
    if after and markdown.startswith(after, stop):
        stop += len(after)
    return start, stop


def _find_run(names: list[str], words: list[str], begin: int, *, from_start: bool) -> int | None:
    """The first position from ``begin`` of the piece's first (or last) three words in a row, else two, else one:
    the index of the run's first word (``from_start``) or of its last."""
    for size in range(min(3, len(words)), 0, -1):
        run = words[:size] if from_start else words[-size:]
        for index in range(begin, len(names) - size + 1):
            if names[index : index + size] == run:
                return index if from_start else index + size - 1
    return None


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"
