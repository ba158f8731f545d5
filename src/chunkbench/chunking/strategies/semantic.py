"""Semantic chunking: sentences grouped until the Boundary model sees the topic change.

Also home of the pieces both semantic strategies share: the checked Boundary embeddings, exact-span
units with cheap token estimates, token windows for over-long units and the split-at-weakest-link rule.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from chunkbench.chunking.base import (
    BoundaryEmbedder,
    Chunk,
    ChunkFactory,
    ChunkingInput,
    ChunkingStrategy,
    ContextPrefixer,
    StrategyParams,
    register_strategy,
)
from chunkbench.errors import ChunkingError
from chunkbench.models import NodeType, StrategyName
from chunkbench.text.sentences import Span, split_sentences
from chunkbench.text.tokens import get_tokenizer

# Strength of a gap that must not be cut by similarity and is split last when a size cap forces it:
# between two token windows of one sentence, and right after a heading. Above any cosine (<= 1).
GLUED = 2.0
_HEADING_MARKER = re.compile(r"^#{1,6}[ \t]+", re.MULTILINE)
_HEADING_NODES = (NodeType.SECTION, NodeType.ARTICLE)


class SemanticParams(StrategyParams):
    """Parameters of the ``semantic`` strategy."""

    threshold: float | None = Field(
        None, gt=0, le=1, description="Cut where adjacent cosine < threshold; None = the Boundary model's."
    )
    min_chunk_size: int = Field(3, ge=1, description="Sentence units per chunk, where the caps allow.")
    max_tokens: int = Field(512, ge=16, le=8192, description="Hard cap on a chunk's cl100k token count.")
    respect_headings: bool = Field(True, description="A markdown heading line always starts a new chunk.")


def resolve_threshold(boundary: BoundaryEmbedder, override: float | None) -> float:
    """The threshold a run uses: the strategy parameter if given, else the Boundary model's own."""
    value = override if override is not None else boundary.threshold
    try:
        threshold = float(value)
    except (TypeError, ValueError) as exc:
        raise ChunkingError(f"The Boundary model '{boundary.model_id}' has no usable threshold ({value!r}).") from exc
    if not 0 < threshold <= 1:
        raise ChunkingError(
            f"The Boundary model '{boundary.model_id}' has threshold {threshold}; it must be in (0, 1]."
        )
    return threshold


def boundary_embeddings(boundary: BoundaryEmbedder, texts: list[str]) -> np.ndarray:
    """The Boundary model's rows for ``texts`` in one call, checked and L2-normalised."""
    raw = boundary.embed(texts)
    try:
        rows = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ChunkingError(
            f"The Boundary model '{boundary.model_id}' returned something that is not a matrix of numbers."
        ) from exc
    if rows.ndim != 2 or rows.shape[0] != len(texts) or rows.shape[1] == 0:
        raise ChunkingError(
            f"The Boundary model '{boundary.model_id}' returned embeddings of shape {rows.shape} for "
            f"{len(texts)} texts; expected one row per text. Mismatched embeddings are not used."
        )
    if not np.isfinite(rows).all():
        raise ChunkingError(f"The Boundary model '{boundary.model_id}' returned non-finite embeddings.")
    # Rows should arrive normalised; normalising again makes the dot product a cosine whatever the
    # provider did. An all-zero row stays zero: similar to nothing.
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def adjacent_similarity(rows: np.ndarray) -> np.ndarray:
    """Cosine between each normalised row and the next (length ``len(rows) - 1``)."""
    return np.einsum("ij,ij->i", rows[:-1], rows[1:])


def embedding_text(text: str) -> str:
    """What the Boundary model reads for a unit: its text without markdown heading markers."""
    return _HEADING_MARKER.sub("", text).strip() or text


def trim(text: str, start: int, end: int) -> Span | None:
    """``(start, end)`` without surrounding whitespace, or ``None`` if nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def partition(text: str, points: Sequence[int]) -> list[Span]:
    """``text`` cut at ``points`` into trimmed spans: every non-whitespace character lands in one span."""
    edges = sorted({0, len(text), *(p for p in points if 0 < p < len(text))})
    return [span for start, end in pairwise(edges) if (span := trim(text, start, end))]


def heading_lines(document: ChunkingInput) -> list[Span]:
    """The markdown heading lines, located by the tree's section and article nodes, in order."""
    markdown = document.markdown
    spans: list[Span] = []
    for node in document.tree.root.iter_nodes():
        if node.node_type in _HEADING_NODES and 0 <= node.start_index < len(markdown):
            line_end = markdown.find("\n", node.start_index)
            spans.append((node.start_index, len(markdown) if line_end < 0 else line_end))
    return sorted(spans)


def token_windows(markdown: str, start: int, end: int, max_tokens: int) -> list[Span]:
    """``markdown[start:end]`` cut on token boundaries into trimmed spans of at most ``max_tokens`` tokens."""
    tokenizer = get_tokenizer()
    _ids, offsets = tokenizer.boundaries(markdown[start:end])
    total = len(offsets) - 1
    spans: list[Span] = []
    first = 0
    while first < total:
        last = min(first + max_tokens, total)
        while True:
            span = trim(markdown, start + int(offsets[first]), start + int(offsets[last]))
            # Re-encoding a window can differ at its edges (a character split across tokens is
            # kept whole): shrink until the exact count fits.
            if span is None or last == first + 1 or tokenizer.count(markdown[span[0] : span[1]]) <= max_tokens:
                break
            last -= 1
        if span is not None:
            spans.append(span)
        first = last
    return spans


def fit_units(markdown: str, spans: list[Span], max_tokens: int) -> tuple[list[Span], np.ndarray]:
    """Spans with every over-long one cut into token windows, and the index of the span each came from."""
    counts = get_tokenizer().count_many([markdown[s:e] for s, e in spans])
    units: list[Span] = []
    owner: list[int] = []
    for index, (span, count) in enumerate(zip(spans, counts, strict=True)):
        pieces = [span] if count <= max_tokens else token_windows(markdown, *span, max_tokens)
        units.extend(pieces)
        owner.extend([index] * len(pieces))
    return units, np.asarray(owner, dtype=np.int64)


class UnitTable:
    """Adjacent spans of a document with token counts, to size any run of units in O(1).

    ``estimate(a, b)`` sums the count of unit ``a`` and of every later unit together with the
    whitespace before it. That equals the count of the joined slice except where BPE merges across a
    junction, which only happens rarely and by a token; ``count`` is the exact check.
    """

    def __init__(self, markdown: str, spans: list[Span]) -> None:
        tokenizer = get_tokenizer()
        self.markdown = markdown
        self.starts = np.array([s for s, _ in spans], dtype=np.int64)
        self.ends = np.array([e for _, e in spans], dtype=np.int64)
        self.tokens = np.asarray(tokenizer.count_many([markdown[s:e] for s, e in spans]), dtype=np.int64)
        joined = tokenizer.count_many([markdown[self.ends[i - 1] : self.ends[i]] for i in range(1, len(spans))])
        self._joined = np.concatenate(([0], np.cumsum(np.asarray(joined, dtype=np.int64))))

    def __len__(self) -> int:
        return len(self.starts)

    def span(self, a: int, b: int) -> Span:
        """Character span of units ``a..b-1``."""
        return int(self.starts[a]), int(self.ends[b - 1])

    def estimate(self, a: int, b: int) -> int:
        return int(self.tokens[a] + self._joined[b - 1] - self._joined[a])

    def count(self, a: int, b: int) -> int:
        start, end = self.span(a, b)
        return get_tokenizer().count(self.markdown[start:end])


def split_to_fit(a: int, b: int, too_long: Callable[[int, int], bool], strength: np.ndarray) -> list[tuple[int, int]]:
    """Units ``a..b-1`` split at their weakest gap, again and again, until no part is ``too_long``.

    ``strength[j]`` is the similarity across the gap between unit ``j`` and ``j + 1``. A single unit
    is never split (callers make units fit first). Iterative, so a long run cannot hit the recursion limit.
    """
    parts: list[tuple[int, int]] = []
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if b - a == 1 or not too_long(a, b):
            parts.append((a, b))
            continue
        gaps = strength[a : b - 1]
        # Among equally weak gaps the most central one, so flat similarity does not peel single units.
        weakest = np.flatnonzero(gaps == gaps.min())
        cut = a + 1 + int(weakest[np.argmin(np.abs(weakest - (len(gaps) - 1) / 2))])
        pending.extend(((cut, b), (a, cut)))  # left half popped first: parts stay in order
    return parts


class BoundaryStrategy(ChunkingStrategy):
    """A strategy that cuts where the Boundary model's similarity drops (semantic, parent-child)."""

    needs_boundary = True
    boundary: BoundaryEmbedder

    def __init__(
        self,
        params: StrategyParams | None = None,
        *,
        boundary: BoundaryEmbedder | None = None,
        prefixer: ContextPrefixer | None = None,
    ) -> None:
        super().__init__(params, boundary=boundary, prefixer=prefixer)
        # Known before chunking so the service can store it with the run.
        self.threshold_used = resolve_threshold(self.boundary, self.params.threshold)  # type: ignore[attr-defined]

    def run_details(self) -> dict[str, Any]:
        return {"boundary_model_id": self.boundary.model_id, "threshold_used": self.threshold_used}


@register_strategy
class SemanticStrategy(BoundaryStrategy):
    """Sentences grouped while adjacent Boundary cosine stays >= threshold, under a hard token cap."""

    name = StrategyName.SEMANTIC
    settings_defaults: ClassVar[dict[str, str]] = {"min_chunk_size": "semantic_min_chunk_size"}
    size_params: ClassVar[dict[str, int]] = {"max_tokens": 0}
    description = (
        "Sentence groups cut where the Boundary model's adjacent-sentence similarity drops below the "
        "threshold; small groups merged, long ones split at their weakest link; never over max_tokens."
    )
    params_model = SemanticParams
    params: SemanticParams

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        markdown = document.markdown
        max_tokens = self.params.max_tokens
        sentences, heading_flags = self._sentences(document)
        if not sentences:
            return []
        rows = boundary_embeddings(self.boundary, [embedding_text(markdown[s:e]) for s, e in sentences])
        similarity = adjacent_similarity(rows)

        spans, owner = fit_units(markdown, sentences, max_tokens)
        table = UnitTable(markdown, spans)
        is_heading = heading_flags[owner]
        # Gap j lies between unit j and unit j + 1.
        new_sentence = owner[1:] != owner[:-1]
        # Padded so the last sentence's windows index something; their gaps are glued anyway.
        strength = np.where(new_sentence, np.append(similarity, GLUED)[owner[:-1]], GLUED)
        strength[is_heading[:-1]] = GLUED  # a heading belongs to what follows it
        forced = np.zeros(len(spans) - 1, dtype=bool)
        if self.params.respect_headings:
            # A run of headings with nothing between them starts one chunk together.
            forced = new_sentence & is_heading[1:] & ~is_heading[:-1]
        edges = [0, *(np.flatnonzero(forced | (strength < self.threshold_used)) + 1).tolist(), len(spans)]

        fitted: list[tuple[int, int]] = []
        for a, b in pairwise(edges):
            fitted.extend(split_to_fit(a, b, lambda a, b: table.estimate(a, b) > max_tokens, strength))
        merged = self._merge_small(fitted, owner, rows, forced, table)
        final: list[tuple[int, int]] = []
        for a, b in merged:
            final.extend(split_to_fit(a, b, lambda a, b: table.count(a, b) > max_tokens, strength))

        factory = ChunkFactory(self.name, document)
        return [factory.make(index, *table.span(a, b)) for index, (a, b) in enumerate(final)]

    def _sentences(self, document: ChunkingInput) -> tuple[list[Span], np.ndarray]:
        """Sentence spans covering the document, each heading line one of them, and which are headings."""
        markdown = document.markdown
        headings = heading_lines(document)
        heading_starts = [s for s, _ in headings]
        points: list[int] = []
        for start, _end in split_sentences(markdown):
            # A sentence start inside a heading line would split the heading; the line stays whole.
            position = bisect.bisect_right(heading_starts, start) - 1
            if position < 0 or not headings[position][0] < start < headings[position][1]:
                points.append(start)
        for start, end in headings:
            points.extend((start, end))
        sentences = partition(markdown, points)
        starts = set(heading_starts)
        return sentences, np.array([s in starts for s, _ in sentences], dtype=bool)

    def _merge_small(
        self,
        groups: list[tuple[int, int]],
        owner: np.ndarray,
        rows: np.ndarray,
        forced: np.ndarray,
        table: UnitTable,
    ) -> list[tuple[int, int]]:
        """Groups under ``min_chunk_size`` sentences merged into their more similar neighbour that fits.

        A merge never crosses a forced (heading) cut and never makes the estimate exceed ``max_tokens``:
        the cap wins over the minimum. Similarity is between the groups' mean sentence embeddings.
        """
        min_size, max_tokens = self.params.min_chunk_size, self.params.max_tokens
        if min_size <= 1:
            return groups

        def centroid(a: int, b: int) -> np.ndarray:
            vector = rows[owner[a] : owner[b - 1] + 1].sum(axis=0)
            norm = np.linalg.norm(vector)
            return vector / norm if norm > 0 else vector

        merged: list[tuple[int, int]] = []
        carried: int | None = None  # start of a small group merged into the next one
        for index, (a, b) in enumerate(groups):
            if carried is not None:
                a, carried = carried, None
            if owner[b - 1] - owner[a] + 1 >= min_size:
                merged.append((a, b))
                continue
            options: list[tuple[float, int]] = []
            if merged and not forced[a - 1] and table.estimate(merged[-1][0], b) <= max_tokens:
                options.append((float(centroid(*merged[-1]) @ centroid(a, b)), -1))
            if index + 1 < len(groups) and not forced[b - 1]:
                following = groups[index + 1]
                if table.estimate(a, following[1]) <= max_tokens:
                    options.append((float(centroid(*following) @ centroid(a, b)), 1))
            if not options:
                merged.append((a, b))
            elif max(options)[1] < 0:
                merged[-1] = (merged[-1][0], b)
            else:
                carried = a
        return merged
