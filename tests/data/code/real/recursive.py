"""Recursive chunking: split at the strongest separator that makes pieces fit, then pack pieces greedily."""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from typing import Any, ClassVar, Self

import numpy as np
from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from chunkbench.chunking.base import (
    Chunk,
    ChunkFactory,
    ChunkingInput,
    ChunkingStrategy,
    StrategyParams,
    register_strategy,
)
from chunkbench.models import NodeType, StrategyName
from chunkbench.text.tokens import Tokenizer, get_tokenizer

Span = tuple[int, int]
Sized = tuple[int, int, int]  # (start, end, exact token count)

# Separators below the heading level, strongest first; a piece is cut after each match, so the
# separator stays at the end of the piece before it and the pieces tile the text exactly.
_SEPARATORS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n[^\S\n]*\n\s*"),  # blank line: paragraphs
    re.compile(r"\n\s*"),  # line break
    re.compile(r"[.!?؟۔؛…][\"'”’»)\]]*\s+"),  # sentence end (English and Farsi), then whitespace
    re.compile(r"\s+"),  # between words
)
_TOKEN_LEVEL = len(_SEPARATORS) + 1
# Headings come from the Document Tree; markdown heading lines are the fallback for a tree without them.
_HEADING_LINE = re.compile(r"^#{1,6}[ \t]", re.MULTILINE)
_WHITESPACE = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")
_SECTION_NODES = (NodeType.SECTION, NodeType.ARTICLE)


class RecursiveParams(StrategyParams):
    """Chunk length, carried-over tokens, and the size under which a section joins the next one."""

    chunk_size: int = Field(512, ge=1, le=8192, description="Maximum tokens per chunk (cl100k_base)")
    chunk_overlap: int = Field(
        0, ge=0, description="Tokens carried over from the end of the previous chunk, cut at a word boundary"
    )
    min_chunk_tokens: int = Field(
        32,
        ge=0,
        le=8192,
        description="A section shorter than this joins the following section when both fit in one chunk",
    )
    separators: list[str] | None = Field(
        None,
        min_length=1,
        description=(
            "Literal separators, strongest first, for LangChain's RecursiveCharacterTextSplitter algorithm "
            '(Chroma\'s evaluation used ["\\n\\n", "\\n", ".", "?", "!", " ", ""]); '
            "null: chunkbench's heading-aware separators"
        ),
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Self:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be less than chunk_size ({self.chunk_size})")
        return self

    @model_serializer(mode="wrap")
    def _omit_default_separators(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Runs recorded before ``separators`` existed and runs without it must dump the same parameters.
        data = handler(self)
        if data.get("separators") is None:
            data.pop("separators", None)
        return data


class _Cutter:
    """Cuts one document; token counts during the search come from one encoding of the whole text."""

    def __init__(self, text: str, offsets: np.ndarray, tokenizer: Tokenizer) -> None:
        self.text = text
        self.offsets = offsets
        self.bounds: list[int] = offsets.tolist()
        self.tokenizer = tokenizer

    def approx(self, start: int, end: int) -> int:
        """Tokens of the whole-text encoding that overlap ``[start, end)``."""
        return bisect_left(self.bounds, end) - bisect_right(self.bounds, start) + 1

    def cut(self, start: int, end: int, level: int, limit: int) -> list[Span]:
        """Contiguous spans tiling ``[start, end)``, each about ``limit`` tokens or fewer."""
        if self.approx(start, end) <= limit:
            return [(start, end)]
        points: list[int] = []
        while level < _TOKEN_LEVEL:
            points = [m.end() for m in _SEPARATORS[level - 1].finditer(self.text, start, end) if m.end() < end]
            if points:
                break
            level += 1
        if level == _TOKEN_LEVEL:
            return self._token_spans(start, end, limit)
        return self.pack([start, *points, end], level, limit)

    def pack(self, edges: list[int], level: int, limit: int) -> list[Span]:
        """Greedily join consecutive pieces ``edges[i]..edges[i+1]``; a piece too long is cut one level deeper."""
        positions = np.asarray(edges, dtype=np.int64)
        first = (np.searchsorted(self.offsets, positions, "right") - 1).tolist()  # token holding the edge
        after = np.searchsorted(self.offsets, positions, "left").tolist()  # tokens starting before it
        spans: list[Span] = []
        i, pieces = 0, len(edges) - 1
        while i < pieces:
            if after[i + 1] - first[i] > limit:
                spans.extend(self.cut(edges[i], edges[i + 1], level + 1, limit))
                i += 1
                continue
            # The last edge whose span from edges[i] still fits; ``after`` never decreases.
            j = max(bisect_right(after, first[i] + limit, i + 1) - 1, i + 1)
            spans.append((edges[i], edges[j]))
            i = j
        return spans

    def _token_spans(self, start: int, end: int, limit: int) -> list[Span]:
        """Windows of ``limit`` whole-text tokens: the last resort for a run without whitespace."""
        first = bisect_right(self.bounds, start) - 1
        cuts = [c for c in self.bounds[first + limit : bisect_left(self.bounds, end) : limit] if start < c < end]
        edges = [start, *dict.fromkeys(cuts), end]
        return list(itertools.pairwise(edges))

    def trim(self, spans: list[Span]) -> list[Span | None]:
        """Each span without surrounding whitespace, ``None`` for a whitespace-only one."""
        text = self.text
        trimmed: list[Span | None] = []
        for start, end in spans:
            piece = text[start:end]
            stripped = piece.strip()
            head = len(piece) - len(piece.lstrip())
            trimmed.append((start + head, start + head + len(stripped)) if stripped else None)
        return trimmed

    def fit(self, start: int, end: int, size: int, limit: int) -> list[Sized]:
        """Exactly counted spans of ``[start, end)`` within ``size`` tokens, cutting finer while one is over."""
        spans = [span for span in self.trim(self.cut(start, end, 1, limit)) if span is not None]
        counts = self.tokenizer.count_many([self.text[s:e] for s, e in spans])
        sized: list[Sized] = []
        for (s, e), count in zip(spans, counts, strict=True):
            tighter = limit - (count - size)
            if count <= size or tighter < 1:
                # Over only when one character is spelt with more tokens than ``size`` (size < 4).
                sized.append((s, e, count))
            else:
                sized.extend(self.fit(s, e, size, tighter))
        return sized


class _LiteralSplitter:
    """LangChain's ``RecursiveCharacterTextSplitter`` (as Chroma's ``RecursiveTokenChunker`` ports it) on spans.

    Lengths are cl100k token counts. A separator stays at the start of the piece that follows it, so the
    pieces tile the text and every chunk is a contiguous slice of it: offsets come from the source text.
    """

    def __init__(self, text: str, size: int, overlap: int, tokenizer: Tokenizer) -> None:
        self.text = text
        self.size = size
        self.overlap = overlap
        self.tokenizer = tokenizer

    def split(self, start: int, end: int, separators: list[str]) -> list[Span]:
        """Chunks of ``[start, end)`` before stripping: the first separator present splits, long pieces recurse."""
        separator, finer = separators[-1], []
        for position, candidate in enumerate(separators):
            if candidate == "":
                separator = candidate
                break
            if self.text.find(candidate, start, end) >= 0:
                separator, finer = candidate, separators[position + 1 :]
                break
        pieces = self._pieces(start, end, separator)
        lengths = self.tokenizer.count_many([self.text[a:b] for a, b in pieces])
        chunks: list[Span] = []
        fitting: list[Sized] = []
        for (a, b), length in zip(pieces, lengths, strict=True):
            # Strictly below the size, as LangChain's ``_split_text``.
            if length < self.size:
                fitting.append((a, b, length))
                continue
            if fitting:
                chunks += self.merge(fitting)
                fitting = []
            chunks += self.split(a, b, finer) if finer else [(a, b)]
        if fitting:
            chunks += self.merge(fitting)
        return chunks

    def _pieces(self, start: int, end: int, separator: str) -> list[Span]:
        if not separator:
            return [(i, i + 1) for i in range(start, end)]
        cuts = [m.start() for m in re.finditer(re.escape(separator), self.text[start:end])]
        edges = [start, *(start + c for c in cuts), end]
        return [(a, b) for a, b in itertools.pairwise(edges) if a < b]

    def merge(self, pieces: list[Sized]) -> list[Span]:
        """LangChain's ``_merge_splits`` with an empty joiner: pack greedily by summed piece lengths; each
        new chunk keeps the previous chunk's trailing pieces while they sum to at most ``overlap``."""
        chunks: list[Span] = []
        first, total = 0, 0  # current chunk = pieces[first:i], ``total`` = their summed lengths
        for i, (_a, _b, length) in enumerate(pieces):
            if total + length > self.size and first < i:
                chunks.append((pieces[first][0], pieces[i - 1][1]))
                while total > self.overlap or (total + length > self.size and total > 0):
                    total -= pieces[first][2]
                    first += 1
            total += length
        if first < len(pieces):
            chunks.append((pieces[first][0], pieces[-1][1]))
        return chunks


def _literal_spans(text: str, separators: list[str], size: int, overlap: int) -> list[Sized]:
    """Chunks of the literal-separator mode: LangChain's chunks, whitespace-stripped, empty ones dropped."""
    tokenizer = get_tokenizer()
    splitter = _LiteralSplitter(text, size, overlap, tokenizer)
    spans: list[Span] = []
    for start, end in splitter.split(0, len(text), separators):
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            head = start + len(piece) - len(piece.lstrip())
            spans.append((head, head + len(stripped)))
    counts = tokenizer.count_many([text[a:b] for a, b in spans])
    return [(a, b, count) for (a, b), count in zip(spans, counts, strict=True)]


def _section_starts(document: ChunkingInput) -> list[int]:
    """Where each heading starts: the tree's sections and articles, else markdown heading lines."""
    starts: list[int] = []
    # Only sections hold sections: walk those, not the (many) paragraphs.
    stack = [document.tree.root]
    while stack:
        sections = [c for c in stack.pop().children if c.node_type in _SECTION_NODES]
        starts += [section.start_index for section in sections]
        stack += sections
    if not starts:
        starts = [m.start() for m in _HEADING_LINE.finditer(document.markdown)]
    return sorted({s for s in starts if 0 <= s < len(document.markdown)})


def _last_leading_heading(text: str, section_starts: list[int], start: int, end: int) -> int:
    """Start of the last heading in the run of heading lines that opens ``text[start:end]``, else ``start``."""
    position = bisect_left(section_starts, start)
    anchor = start
    while position < len(section_starts) and section_starts[position] == anchor:
        line_end = text.find("\n", anchor, end)
        following = position + 1
        if (
            line_end < 0
            or following == len(section_starts)
            or section_starts[following] >= end
            or text[line_end : section_starts[following]].strip()
        ):
            break
        anchor, position = section_starts[following], following
    return anchor


@register_strategy
class RecursiveStrategy(ChunkingStrategy):
    """Split at the strongest separator that makes pieces fit, then pack adjacent pieces greedily.

    Separators, strongest first: headings (from the Document Tree; markdown ``#`` lines if the tree
    has none), blank lines, line breaks, sentence ends (``. ! ? …`` and Farsi ``؟ ۔ ؛`` before
    whitespace), whitespace, and token windows for a run longer than a chunk. A piece that fits is
    never split further, and pieces are packed only with their siblings of the same level, so a chunk
    boundary falls inside a paragraph only when that paragraph alone is over ``chunk_size``.

    Every heading starts a chunk, except that a section shorter than ``min_chunk_tokens`` (a heading
    followed straight by a sub-heading, a one-line section) joins the section after it. Chunks that do
    not start a section begin with up to ``chunk_overlap`` tokens from the end of the previous chunk,
    taken from the first word boundary; pieces are packed to ``chunk_size - chunk_overlap`` to make room.
    Chunks are exact slices of the markdown without surrounding whitespace, and never over
    ``chunk_size`` tokens by an exact count.

    With ``separators`` (literal strings, strongest first) the strategy instead runs LangChain's
    ``RecursiveCharacterTextSplitter`` algorithm, the one Chroma's evaluation used: split at the first
    separator that occurs, keeping it at the start of the following piece; recurse into pieces of
    ``chunk_size`` tokens or more with the remaining separators (``""`` splits into characters); pack
    consecutive pieces greedily while their summed token counts stay within ``chunk_size``, each chunk
    starting with the previous chunk's last pieces summing to at most ``chunk_overlap`` tokens; strip
    whitespace. Headings and ``min_chunk_tokens`` play no part, and a chunk can exceed ``chunk_size``
    by the few tokens BPE merges add when pieces are joined, or by a piece no separator splits.
    """

    name = StrategyName.RECURSIVE
    settings_defaults: ClassVar[dict[str, str]] = {"chunk_size": "chunk_size"}
    size_params: ClassVar[dict[str, int]] = {"chunk_size": 0}
    description = (
        "Splits at headings, then paragraphs, lines, sentences and words only as deep as needed, "
        "and packs the pieces into chunks of up to chunk_size tokens."
    )
    params_model = RecursiveParams

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        return self.make_chunks(document, self.name)

    def make_chunks(self, document: ChunkingInput, strategy: StrategyName) -> list[Chunk]:
        """The chunks of :meth:`spans`, labelled as ``strategy``'s (contextual retrieval reuses these cuts).

        A chunk that opens with headings only (a short section joined to the next) takes the heading
        path of its first body text, the innermost of those headings, rather than of its first line.
        """
        factory = ChunkFactory(strategy, document)
        text, section_starts = document.markdown, _section_starts(document)
        chunks: list[Chunk] = []
        for index, (start, end, count) in enumerate(self._spans(document, section_starts)):
            chunk = factory.make(index, start, end, token_count=count)
            anchor = _last_leading_heading(text, section_starts, start, end)
            if anchor != start:
                chunk.heading_path = factory.headings.path_at(anchor)
            chunks.append(chunk)
        return chunks

    def spans(self, document: ChunkingInput) -> list[Sized]:
        """``(start, end, token_count)`` of every chunk, in document order."""
        return self._spans(document, _section_starts(document))

    def _spans(self, document: ChunkingInput, section_starts: list[int]) -> list[Sized]:
        params: RecursiveParams = self.params  # type: ignore[assignment]
        text = document.markdown
        if not text.strip():
            return []
        if params.separators is not None:
            return _literal_spans(text, list(params.separators), params.chunk_size, params.chunk_overlap)
        tokenizer = get_tokenizer()
        _ids, offsets = tokenizer.boundaries(text)
        cutter = _Cutter(text, offsets, tokenizer)
        size, overlap = params.chunk_size, params.chunk_overlap
        limit = size - overlap

        edges = sorted({0, *section_starts, len(text)})
        spans: list[Span] = []
        opens: list[bool] = []  # does the span start a section: no overlap is carried into it
        pending: int | None = None  # start of short sections waiting to join the next one
        for start, end in itertools.pairwise(edges):
            begin = start if pending is None else pending
            pending = None
            pieces = cutter.cut(begin, end, 1, limit)
            if len(pieces) == 1:
                if end < len(text) and cutter.approx(begin, end) < params.min_chunk_tokens:
                    pending = begin
                    continue
                spans.append(pieces[0])
                opens.append(True)
            elif begin != start and cutter.approx(start, end) <= limit:
                # The short sections and this one do not fit together: keep them apart.
                spans += [(begin, start), (start, end)]
                opens += [True, True]
            else:
                spans += pieces
                opens += [True] + [False] * (len(pieces) - 1)

        kept = [(span, opened) for span, opened in zip(cutter.trim(spans), opens, strict=True) if span]
        own = [span for span, _ in kept]
        if overlap:
            starts = self._carry(cutter, own, [opened for _, opened in kept], overlap)
        else:
            starts = [start for start, _ in own]
        counts = tokenizer.count_many([text[s:e] for s, (_, e) in zip(starts, own, strict=True)])

        chunks: list[Sized] = []
        for start, (own_start, end), count in zip(starts, own, counts, strict=True):
            if start != own_start and (count > size or (chunks and start <= chunks[-1][0])):
                # Drop the carried tokens when they make the chunk too long, or when the previous chunk
                # was cut finer and the carry would now start where that chunk's last piece starts.
                start, count = own_start, tokenizer.count(text[own_start:end])
            if count <= size:
                chunks.append((start, end, count))
            else:
                chunks.extend(cutter.fit(start, end, size, limit - (count - size)))
        return chunks

    @staticmethod
    def _carry(cutter: _Cutter, spans: list[Span], opens: list[bool], overlap: int) -> list[int]:
        """Chunk starts moved back to take up to ``overlap`` tokens from the previous chunk's end."""
        text, bounds = cutter.text, cutter.bounds
        starts = [spans[0][0]] if spans else []
        for (prev_start, prev_end), (start, _end), opened in zip(spans, spans[1:], opens[1:], strict=False):
            if opened:
                starts.append(start)
                continue
            carry = max(bounds[max(bisect_left(bounds, prev_end) - overlap, 0)], prev_start + 1)
            if not text[carry - 1].isspace() and (space := _WHITESPACE.search(text, carry, prev_end)):
                # Start the carried text at a word boundary; text without spaces keeps the token boundary.
                carry = space.end()
            word = _NON_SPACE.search(text, carry, prev_end)
            starts.append(word.start() if word else start)
        return starts
