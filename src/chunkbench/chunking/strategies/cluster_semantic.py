"""Chroma's ClusterSemanticChunker: small pieces grouped into the chunks that maximise within-chunk similarity.

The algorithm of Chroma's ``chunking_evaluation`` (``ClusterSemanticChunker``), reproduced decision for decision:

1. pieces: LangChain's recursive splitter at ``min_chunk_size`` cl100k tokens, no overlap, separators
   ``["\\n\\n", "\\n", ".", "?", "!", " ", ""]`` (our ``recursive`` strategy with literal ``separators``);
2. every piece embedded with the Boundary model, rows normalised, similarity ``S = E·Eᵀ``;
3. ``M = S − mean(strict upper triangle of S)``, ``diag(M) = 0``; a chunk of pieces ``a..b`` earns the sum of
   ``M[a..b, a..b]``;
4. dynamic programming over pieces: ``dp[i]`` is the best total reward of pieces ``0..i`` cut into chunks of at most
   ``max_chunk_size // min_chunk_size`` pieces, then backtracking from the last piece.

Chroma's DP starts every ``dp[i]`` at 0 and takes a candidate only when it is strictly greater, trying chunk sizes
1, 2, … in turn: so the smallest size wins a tie, and while no candidate ending at ``i`` is positive (only possible
in the document's opening pieces, before the first positive reward) ``segmentation[i]`` stays 0 and the backtrack
makes pieces ``0..i`` one chunk, longer than ``max_chunk_size // min_chunk_size`` pieces. We keep that behaviour:
these are Chroma's chunks. Chroma joins a chunk's pieces with ``' '``; we take the exact markdown span from the
first piece's start to the last piece's end, so the chunk keeps the whitespace between its pieces.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np
from pydantic import Field, model_validator

from chunkbench.chunking.base import (
    Chunk,
    ChunkFactory,
    ChunkingInput,
    ChunkingStrategy,
    StrategyParams,
    register_strategy,
)
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.chunking.strategies.semantic import boundary_embeddings
from chunkbench.models import StrategyName

# The separators ClusterSemanticChunker hands its RecursiveTokenChunker, strongest first.
CLUSTER_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


class ClusterSemanticParams(StrategyParams):
    """Chroma's two sizes, in cl100k tokens: the pieces' and the largest chunk's (in whole pieces)."""

    max_chunk_size: int = Field(
        400,
        ge=1,
        le=8192,
        description="Largest chunk, in cl100k tokens: at most max_chunk_size // min_chunk_size pieces",
    )
    min_chunk_size: int = Field(50, ge=1, le=8192, description="Size of the pieces chunks are built from (cl100k)")

    @model_validator(mode="after")
    def _pieces_fit(self) -> Self:
        if self.min_chunk_size > self.max_chunk_size:
            raise ValueError(
                f"min_chunk_size ({self.min_chunk_size}) must not exceed max_chunk_size ({self.max_chunk_size}): "
                "a chunk holds at least one piece"
            )
        return self

    @property
    def max_cluster(self) -> int:
        """The most pieces one chunk may hold (Chroma's ``max_cluster``)."""
        return self.max_chunk_size // self.min_chunk_size


def reward_band(matrix: np.ndarray, width: int) -> np.ndarray:
    """``band[e, d]`` = what the pair of pieces ``e − d`` and ``e`` adds to a chunk holding both, from a full matrix.

    ``band[e, 0] = M[e, e]`` and ``band[e, d] = M[e − d, e] + M[e, e − d]``; zero where ``e < d``.
    """
    n = matrix.shape[0]
    band = np.zeros((n, max(width, 1)), dtype=np.float64)
    band[:, 0] = np.diagonal(matrix)
    for d in range(1, min(width, n)):
        ends = np.arange(d, n)
        band[d:, d] = matrix[ends - d, ends] + matrix[ends, ends - d]
    return band


def similarity_band(rows: np.ndarray, width: int) -> np.ndarray:
    """:func:`reward_band` of Chroma's centred similarity matrix, from normalised rows without forming the matrix.

    The mean of the strict upper triangle of ``S = E·Eᵀ`` is ``(‖Σ rows‖² − Σ‖row‖²) / (n(n − 1))``; the
    diagonal of ``M`` is zero. A document of one piece has no pair: its mean is taken as 0.
    """
    n = rows.shape[0]
    band = np.zeros((n, max(width, 1)), dtype=np.float64)
    if n < 2:
        return band
    total = rows.sum(axis=0)
    mean = (float(total @ total) - float(np.einsum("ij,ij->", rows, rows))) / (n * (n - 1))
    for d in range(1, min(width, n)):
        band[d:, d] = 2.0 * (np.einsum("ij,ij->i", rows[:-d], rows[d:]) - mean)
    return band


def cluster_rewards(band: np.ndarray, max_cluster: int) -> np.ndarray:
    """``rewards[e, k]``: the sum of ``M`` over the chunk of the ``k`` pieces ending at ``e`` (−inf where none fits).

    A chunk ``s..e`` earns what each piece adds with the pieces before it in the chunk, so
    ``rewards[e, k] = rewards[e − 1, k − 1] + Σ_{d<k} band[e, d]``: prefix sums over the band, one shift per size.
    """
    n = band.shape[0]
    added = np.cumsum(band[:, :max_cluster], axis=1)  # added[e, k - 1]: piece e joining the k - 1 before it
    rewards = np.full((n, max_cluster + 1), -np.inf)
    rewards[:, 0] = 0.0
    for k in range(1, max_cluster + 1):
        before = np.empty(n)  # rewards[e - 1, k - 1]: the chunk of k - 1 pieces ending just before e
        before[:1] = 0.0 if k == 1 else -np.inf
        before[1:] = rewards[:-1, k - 1]
        rewards[:, k] = before + added[:, k - 1]
    return rewards


def optimal_segmentation(band: np.ndarray, max_cluster: int) -> list[tuple[int, int]]:
    """Chroma's ``_optimal_segmentation``: ``(first, last)`` piece of every chunk, in order (see the module doc)."""
    n = band.shape[0]
    if n == 0:
        return []
    rewards = cluster_rewards(band, max_cluster)
    best = np.zeros(n + 1)  # best[i + 1] = Chroma's dp[i]; best[0] = 0 is "no pieces before the chunk"
    segmentation = np.zeros(n, dtype=np.int64)
    for i in range(n):
        sizes = min(max_cluster, i + 1)
        candidates = rewards[i, 1 : sizes + 1] + best[i::-1][:sizes]
        # Chroma tries sizes 1, 2, … and keeps a candidate only if strictly greater than dp[i] (0 at first):
        # the first maximum, and only when positive.
        size = int(np.argmax(candidates))
        if candidates[size] > 0:
            best[i + 1] = candidates[size]
            segmentation[i] = i - size
    clusters: list[tuple[int, int]] = []
    i = n - 1
    while i >= 0:
        start = int(segmentation[i])
        clusters.append((start, i))
        i = start - 1
    clusters.reverse()
    return clusters


@register_strategy
class ClusterSemanticStrategy(ChunkingStrategy):
    """Chroma's ClusterSemanticChunker: pieces of min_chunk_size tokens grouped to maximise within-chunk similarity.

    Pieces come from LangChain's recursive splitter at ``min_chunk_size`` cl100k tokens (Chroma's separators); each
    is embedded with the Boundary model; a dynamic programme cuts the sequence of pieces into chunks of at most
    ``max_chunk_size // min_chunk_size`` pieces maximising the summed similarity above the document's mean within
    each chunk. Chunks are exact markdown spans from their first piece to their last. As in Chroma, the opening
    pieces of a document that no positive reward reaches form one chunk, whatever its length.
    """

    name = StrategyName.add("cluster_semantic")
    needs_boundary = True
    # It embeds every piece of every document with the Boundary model: named explicitly, as Chroma's chunker is
    # something to compare with rather than one of chunkbench's five seed strategies.
    in_default_set: ClassVar[bool] = False
    size_params: ClassVar[dict[str, int]] = {"max_chunk_size": 0}
    description = (
        "Chroma's ClusterSemanticChunker: pieces of min_chunk_size tokens grouped, by dynamic programming over the "
        "Boundary model's similarities, into chunks of up to max_chunk_size tokens."
    )
    params_model = ClusterSemanticParams
    params: ClusterSemanticParams

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        pieces = self.pieces(document)
        if not pieces:
            return []
        markdown = document.markdown
        # Chroma embeds each piece's text as it is (no heading markers removed): so do we.
        rows = boundary_embeddings(self.boundary, [markdown[start:end] for start, end in pieces])  # type: ignore[arg-type]
        clusters = optimal_segmentation(similarity_band(rows, self.params.max_cluster), self.params.max_cluster)
        factory = ChunkFactory(self.name, document)
        return [factory.make(index, pieces[first][0], pieces[last][1]) for index, (first, last) in enumerate(clusters)]

    def pieces(self, document: ChunkingInput) -> list[tuple[int, int]]:
        """The pieces' exact spans: Chroma's RecursiveTokenChunker at ``min_chunk_size`` tokens, no overlap."""
        splitter = RecursiveStrategy(
            RecursiveParams(chunk_size=self.params.min_chunk_size, chunk_overlap=0, separators=list(CLUSTER_SEPARATORS))
        )
        return [(start, end) for start, end, _count in splitter.spans(document)]

    def run_details(self) -> dict[str, Any]:
        return {"boundary_model_id": self.boundary.model_id}  # type: ignore[union-attr]
