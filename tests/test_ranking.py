"""Rank metrics of one question, computed by hand."""

from __future__ import annotations

import math

import pytest

from chunkbench.evaluation.ranking import ChunkRef, Evidence, rank_metrics, relevant_chunk_ids

CHUNKING = [ChunkRef("d", i, 10 * i, 10 * i + 10, token_count=4 + i) for i in range(4)]  # [0,10) … [30,40)
FOREIGN = ChunkRef("e", 0, 0, 10, token_count=7)  # same offsets as d#0, other document
EVIDENCE = [Evidence("d", 5, 10), Evidence("d", 35, 36)]


def test_relevance_needs_one_shared_character_in_the_same_document() -> None:
    # [5,10) overlaps d#0 and only touches d#1 (which starts at 10); [35,36) lies in d#3.
    assert relevant_chunk_ids([*CHUNKING, FOREIGN], EVIDENCE) == {("d", 0), ("d", 3)}
    assert relevant_chunk_ids(CHUNKING, [Evidence("d", 9, 11)]) == {("d", 0), ("d", 1)}


def test_metrics_at_k_by_hand() -> None:
    relevant = relevant_chunk_ids(CHUNKING, EVIDENCE)
    retrieved = [FOREIGN, CHUNKING[1], CHUNKING[3], CHUNKING[0]]
    ideal = 1 + 1 / math.log2(3)  # two relevant chunks

    top3 = rank_metrics(retrieved, relevant, 3)  # gains 0, 0, 1
    assert top3.recall_at_k == 0.5 and top3.hit_at_k == 1.0
    assert top3.mrr == pytest.approx(1 / 3)
    assert top3.ndcg_at_k == pytest.approx((1 / math.log2(4)) / ideal)
    assert top3.tok_at_k == 7 + 5 + 7

    top4 = rank_metrics(retrieved, relevant, 4)  # gains 0, 0, 1, 1
    assert top4.recall_at_k == 1.0 and top4.mrr == pytest.approx(1 / 3)
    assert top4.ndcg_at_k == pytest.approx((1 / 2 + 1 / math.log2(5)) / ideal)
    assert top4.tok_at_k == 23

    top1 = rank_metrics(retrieved, relevant, 1)  # ideal DCG over min(1, 2) = 1 rank
    assert (top1.recall_at_k, top1.hit_at_k, top1.mrr, top1.ndcg_at_k, top1.tok_at_k) == (0, 0, 0, 0, 7)

    perfect = rank_metrics([CHUNKING[3], CHUNKING[0]], relevant, 5)
    assert perfect.ndcg_at_k == pytest.approx(1.0) and perfect.mrr == 1.0


def test_nothing_relevant_and_bad_k() -> None:
    metrics = rank_metrics(CHUNKING, set(), 2)
    assert (metrics.recall_at_k, metrics.hit_at_k, metrics.mrr, metrics.ndcg_at_k) == (0, 0, 0, 0)
    assert metrics.tok_at_k == 4 + 5
    with pytest.raises(ValueError, match="k must be"):
        rank_metrics(CHUNKING, set(), 0)
