"""The cluster_semantic strategy (Chroma's ClusterSemanticChunker): its DP against Chroma's own loops, and its
chunks on Chroma's corpora with the real MiniLM Boundary model."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chunkbench.chunking.base import Chunk, ChunkingInput, default_strategies, strategy_class, validate_params
from chunkbench.chunking.strategies.cluster_semantic import (
    ClusterSemanticParams,
    ClusterSemanticStrategy,
    cluster_rewards,
    optimal_segmentation,
    reward_band,
    similarity_band,
)
from chunkbench.config import Settings
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import boundary_embedder
from chunkbench.errors import ChunkingError
from chunkbench.evaluation.chroma import load_chroma, published_rows, select_configs
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.text.tokens import get_tokenizer

CORPORA = DEFAULT_CHROMA_DIR / "corpora"
PREFIX = 20_000
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_NON_SPACE = re.compile(r"\S")


# --------------------------------------------------------------------------- Chroma's code, as the reference


def chroma_dp(matrix: np.ndarray, max_cluster_size: int) -> list[tuple[int, int]]:
    """The DP and backtrack of chunking_evaluation's ``ClusterSemanticChunker._optimal_segmentation``, verbatim
    after its normalisation step: plain loops, ``np.sum`` of each sub-matrix."""
    n = matrix.shape[0]
    dp = np.zeros(n)
    segmentation = np.zeros(n, dtype=int)
    for i in range(n):
        for size in range(1, max_cluster_size + 1):
            if i - size + 1 >= 0:
                adjusted_reward = np.sum(matrix[i - size + 1 : i + 1, i - size + 1 : i + 1])
                if i - size >= 0:
                    adjusted_reward += dp[i - size]
                if adjusted_reward > dp[i]:
                    dp[i] = adjusted_reward
                    segmentation[i] = i - size + 1
    clusters = []
    i = n - 1
    while i >= 0:
        start = segmentation[i]
        clusters.append((int(start), i))
        i = start - 1
    clusters.reverse()
    return clusters


def chroma_normalise(similarity: np.ndarray) -> np.ndarray:
    """Chroma's normalisation: minus the mean of the strict upper triangle, zero diagonal."""
    matrix = similarity - np.mean(similarity[np.triu_indices(similarity.shape[0], k=1)])
    np.fill_diagonal(matrix, 0)
    return matrix


def _unit_rows(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# Multiples of 1/4: every sum is exact in floating point, so ties are ties for both implementations.
dyadic_matrices = st.integers(0, 16).flatmap(
    lambda n: hnp.arrays(np.float64, (n, n), elements=st.integers(-8, 8).map(lambda v: v / 4))
)


@PROPERTY
@given(matrix=dyadic_matrices, max_cluster=st.integers(1, 9))
def test_the_vectorised_dp_makes_chromas_segmentation_ties_included(matrix: np.ndarray, max_cluster: int) -> None:
    assert optimal_segmentation(reward_band(matrix, max_cluster), max_cluster) == chroma_dp(matrix, max_cluster)


@PROPERTY
@given(matrix=dyadic_matrices, max_cluster=st.integers(1, 9))
def test_the_prefix_sum_rewards_equal_the_sub_matrix_sums(matrix: np.ndarray, max_cluster: int) -> None:
    rewards = cluster_rewards(reward_band(matrix, max_cluster), max_cluster)
    n = matrix.shape[0]
    for end in range(n):
        for size in range(1, max_cluster + 1):
            start = end - size + 1
            expected = np.sum(matrix[start : end + 1, start : end + 1]) if start >= 0 else -np.inf
            assert rewards[end, size] == expected


@PROPERTY
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 60),
    dimension=st.integers(2, 16),
    max_cluster=st.integers(1, 9),
)
def test_from_embeddings_it_chunks_as_chroma_does(seed: int, n: int, dimension: int, max_cluster: int) -> None:
    rows = _unit_rows(np.random.default_rng(seed).standard_normal((n, dimension)))
    centred = chroma_normalise(rows @ rows.T)
    band = similarity_band(rows, max_cluster)
    np.testing.assert_allclose(band, reward_band(centred, max_cluster), rtol=0, atol=1e-12)
    assert optimal_segmentation(band, max_cluster) == chroma_dp(centred, max_cluster)


def test_a_tie_goes_to_the_smallest_chunk() -> None:
    # At piece 2: one piece alone (0 + dp[1] = 2), pieces 1–2 (2·1 + 0 = 2) and 0–2 (2·(1 + 1 − 1) = 2) tie.
    matrix = np.array([[0, 1, -1], [1, 0, 1], [-1, 1, 0]], dtype=np.float64)
    assert optimal_segmentation(reward_band(matrix, 3), 3) == chroma_dp(matrix, 3) == [(0, 1), (2, 2)]


def test_pieces_no_positive_reward_reaches_form_one_chunk_longer_than_the_cap() -> None:
    # Every pair below the mean: no candidate is ever > 0, segmentation stays 0, and Chroma's backtrack makes all
    # ten pieces one chunk although a chunk may hold two.
    matrix = -np.ones((10, 10))
    np.fill_diagonal(matrix, 0)
    assert optimal_segmentation(reward_band(matrix, 2), 2) == chroma_dp(matrix, 2) == [(0, 9)]
    # Once a positive reward is reached the cap holds: the opening run ends there.
    matrix[6, 7] = matrix[7, 6] = 1
    assert optimal_segmentation(reward_band(matrix, 2), 2) == chroma_dp(matrix, 2) == [(0, 5), (6, 7), (8, 8), (9, 9)]


def test_no_pieces_and_one_piece() -> None:
    assert optimal_segmentation(similarity_band(np.zeros((0, 4)), 8), 8) == []
    assert optimal_segmentation(similarity_band(_unit_rows(np.ones((1, 4))), 8), 8) == [(0, 0)]


# --------------------------------------------------------------------------- parameters and registration


def test_parameters_are_checked_with_a_message_naming_them() -> None:
    with pytest.raises(ChunkingError, match=r"min_chunk_size \(60\) must not exceed max_chunk_size \(50\)"):
        validate_params("cluster_semantic", {"max_chunk_size": 50, "min_chunk_size": 60})
    with pytest.raises(ChunkingError, match="chunk_size"):
        validate_params("cluster_semantic", {"chunk_size": 50})
    assert ClusterSemanticParams(max_chunk_size=250, min_chunk_size=50).max_cluster == 5
    assert ClusterSemanticParams(max_chunk_size=249, min_chunk_size=50).max_cluster == 4


def test_it_is_a_boundary_strategy_named_explicitly() -> None:
    cls = strategy_class("cluster_semantic")
    assert cls is ClusterSemanticStrategy and cls.needs_boundary and cls.size_params == {"max_chunk_size": 0}
    assert "cluster_semantic" not in default_strategies()
    with pytest.raises(ChunkingError, match="needs Boundary model embeddings"):
        ClusterSemanticStrategy()


def test_the_chroma_rows_run_it_against_the_published_cluster_rows() -> None:
    folder, _corpora, _questions = load_chroma()
    published = published_rows(folder)
    rows = (("cluster_semantic-250-0", 250, 77.3, 6.0), ("cluster_semantic-200-0", 200, 75.2, 7.2))
    for name, size, recall, iou in rows:
        (config,) = select_configs(name)
        assert config.params == {"max_chunk_size": size, "min_chunk_size": 50}
        assert config.variant.name == f"cluster_semantic_{size}_0" and config.chunker == "ClusterSemanticChunker"
        validate_params(config.variant.base, config.params)
        row = published[(config.chunker, config.chunk_size, config.chunk_overlap)]
        assert (row["recall"]["mean"], row["iou"]["mean"]) == (recall, iou)


# --------------------------------------------------------------------------- Chroma's corpora, real MiniLM


@pytest.fixture(scope="module")
def offline() -> Iterator[None]:
    """No network for this module: the Boundary model and the tokenizer must come from local files."""

    def refuse(self: socket.socket, address: object) -> None:
        raise OSError(f"network access attempted: {address!r}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(socket.socket, "connect", refuse)
        yield


@pytest.fixture(scope="module")
def minilm(offline: None, tmp_path_factory: pytest.TempPathFactory):
    """The production Boundary embedder on the bundled all-MiniLM-L6-v2."""
    settings = Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("data"))
    return boundary_embedder(get_spec("all-MiniLM-L6-v2"), 0.5, settings)


def _document(text: str) -> ChunkingInput:
    tree = DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(text)))
    return ChunkingInput(document_id="d", document_name="d", markdown=text, tree=tree)


@pytest.fixture(scope="module")
def corpus_chunks(minilm) -> dict[str, tuple[str, list[tuple[int, int]], list[Chunk]]]:
    """Each corpus's first 20,000 characters: its text, its pieces and its chunks at max_chunk_size 250."""
    strategy = ClusterSemanticStrategy(ClusterSemanticParams(max_chunk_size=250), boundary=minilm)
    out = {}
    for path in sorted(CORPORA.glob("*.md")):
        document = _document(path.read_text(encoding="utf-8")[:PREFIX])
        out[path.stem] = (document.markdown, strategy.pieces(document), strategy.chunk(document))
    assert len(out) == 5
    return out


@pytest.mark.model
def test_chunks_are_exact_ordered_spans_covering_every_non_space_character(corpus_chunks) -> None:
    for name, (text, _pieces, chunks) in corpus_chunks.items():
        assert len(chunks) > 10, name
        assert all(text[c.start_index : c.end_index] == c.text and c.text == c.text.strip() for c in chunks)
        assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
        assert all(a.end_index <= b.start_index for a, b in pairwise(chunks))
        # Nothing between or around chunks but whitespace: the splitter drops only whitespace-only pieces.
        gaps = [text[: chunks[0].start_index], text[chunks[-1].end_index :]]
        gaps += [text[a.end_index : b.start_index] for a, b in pairwise(chunks)]
        assert not any(gap.strip() for gap in gaps), name
        assert "".join(_NON_SPACE.findall("".join(c.text for c in chunks))) == "".join(_NON_SPACE.findall(text))


@pytest.mark.model
def test_chunks_are_runs_of_whole_pieces_within_the_token_bound(corpus_chunks) -> None:
    tokenizer = get_tokenizer()
    params = ClusterSemanticParams(max_chunk_size=250)
    for name, (text, pieces, chunks) in corpus_chunks.items():
        assert max(tokenizer.count_many([text[a:b] for a, b in pieces])) <= params.min_chunk_size
        starts, ends = [a for a, _ in pieces], [b for _, b in pieces]
        runs = [(starts.index(c.start_index), ends.index(c.end_index)) for c in chunks]
        # Consecutive runs: every piece in exactly one chunk.
        assert runs[0][0] == 0 and runs[-1][1] == len(pieces) - 1, name
        assert all(b[0] == a[1] + 1 for a, b in pairwise(runs)), name
        for index, ((first, last), chunk) in enumerate(zip(runs, chunks, strict=True)):
            if index == 0 and last - first + 1 > params.max_cluster:
                continue  # the opening run no positive reward reached (see the module docstring): Chroma's too
            assert last - first + 1 <= params.max_cluster, name
            # The bound: at most max_cluster pieces of at most min_chunk_size tokens, plus the whitespace
            # between them where it is a token of its own ("\n\n"); here that is within max_chunk_size + gaps.
            gap_tokens = sum(tokenizer.count(text[pieces[p][1] : pieces[p + 1][0]]) for p in range(first, last))
            assert chunk.token_count <= params.max_cluster * params.min_chunk_size + gap_tokens, name


@pytest.mark.model
def test_the_same_document_chunks_the_same_way_twice(minilm, corpus_chunks) -> None:
    text, _pieces, chunks = corpus_chunks["chatlogs"]
    again = ClusterSemanticStrategy(ClusterSemanticParams(max_chunk_size=250), boundary=minilm).chunk(_document(text))
    assert [(c.start_index, c.end_index) for c in again] == [(c.start_index, c.end_index) for c in chunks]


@pytest.mark.model
def test_an_empty_document_has_no_chunks_and_a_short_one_is_one_chunk(minilm) -> None:
    strategy = ClusterSemanticStrategy(boundary=minilm)
    assert strategy.chunk(_document("  \n\n \t")) == []
    (chunk,) = strategy.chunk(_document("\n  One short sentence.  \n"))
    assert (chunk.text, chunk.start_index, chunk.end_index) == ("One short sentence.", 3, 22)
    assert strategy.run_details() == {"boundary_model_id": "all-MiniLM-L6-v2"}
