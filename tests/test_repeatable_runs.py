"""Runs that repeat (issue 23): equal scores are ordered by the chunk's place, on both engines, in every ranking.

The end-to-end test runs one corpus Experiment (dense, BM25 and hybrid; Neighbor Expansion; extractive answers)
in two processes with different ``PYTHONHASHSEED``, each on its own data directory with the documents ingested
in opposite orders, and compares the figures byte for byte. Its corpus repeats one paragraph at the start of six
documents, so dense and BM25 scores tie exactly across documents and a top-3 cut runs through a six-way tie; the
test asserts those ties.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkbench.errors import VectorStoreError
from chunkbench.models import StrategyName
from chunkbench.storage.engine import VectorQuery
from chunkbench.storage.fusion import RRF_K, cut_is_settled, ranked, reciprocal_rank_fusion, tie_key
from chunkbench.storage.points import PointFilter, QueryMode
from chunkbench.storage.vectors import VectorStore
from chunkgen import chunks_from_texts
from stand_in import LOCAL_MODE_WARNINGS
from test_vectors import DIM, ENCODER, MODEL, vectors

pytestmark = LOCAL_MODE_WARNINGS

ROOT = Path(__file__).resolve().parents[1]
# The paragraph every site's document opens with: its chunks are the same text, so their scores tie exactly.
SHARED = (
    "Every visitor signs the register at the front desk, wears the yellow badge at all times, and is accompanied "
    "by a member of staff in the laboratories and the server rooms."
)
SITES = {
    "aachen": ("seven", "blue", "north"),
    "bergen": ("eight", "green", "south"),
    "cork": ("nine", "red", "east"),
    "delft": ("six", "white", "west"),
    "essen": ("ten", "black", "river"),
    "faro": ("five", "grey", "harbour"),
}


def _site(city: str, hour: str, colour: str, gate: str) -> str:
    name = city.title()
    return (
        f"{SHARED}\n\nThe {name} site opens at {hour} in the morning and closes at six in the evening.\n\n"
        f"Parcels for {name} are left at the {gate} gate, in the {colour} container next to the lodge.\n\n"
        f"The {name} canteen serves soup on Mondays and fish on Fridays.\n"
    )


def _questions() -> list[dict[str, Any]]:
    # Two questions about the shared paragraph, owned by documents that are not first by name: which copies a
    # top-k keeps decides their recall, so an order of equal scores that changed would change the figures.
    questions: list[dict[str, Any]] = [
        {"id": "register", "document_id": "delft.txt", "question": "Where does a visitor sign the register?",
         "expected_answer": "at the front desk",
         "references": [{"content": "Every visitor signs the register at the front desk"}]},
        {"id": "badge", "document_id": "bergen.txt", "question": "Which badge does a visitor wear?",
         "expected_answer": "the yellow badge", "references": [{"content": "wears the yellow badge at all times"}]},
    ]  # fmt: skip
    for city, (hour, colour, gate) in SITES.items():
        name = city.title()
        questions += [
            {"id": f"opens-{city}", "document_id": f"{city}.txt", "question": f"When does the {name} site open?",
             "expected_answer": f"at {hour} in the morning",
             "references": [{"content": f"opens at {hour} in the morning"}]},
            {"id": f"parcels-{city}", "document_id": f"{city}.txt", "question": f"Where are parcels for {name} left?",
             "references": [{"content": f"left at the {gate} gate, in the {colour} container"}]},
        ]  # fmt: skip
    return questions


def _start(folder: Path, files: list[Path], questions: Path, hash_seed: str) -> subprocess.Popen[str]:
    """tests/repeat_run.py in a fresh process on its own data directory (and its own SQLite database)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("CHUNKBENCH_")}
    environment.update(
        CHUNKBENCH_DATA_DIR=str(folder), PYTHONHASHSEED=hash_seed, HF_HUB_OFFLINE="1",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
    )  # fmt: skip
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "repeat_run.py"), str(questions), *map(str, files)],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = process.communicate(timeout=240)
    assert process.returncode == 0, stderr[-4000:] + stdout[-2000:]
    return json.loads(stdout)


def _figures(experiment: dict[str, Any]) -> str:
    """The Experiment's figures as canonical JSON: aggregates (latency aside), the Decision, every cell's metrics,
    answer and retrieved chunks in rank order, each document named by its source key (ids are fresh per ingest).

    A retrieved chunk's score is left to :func:`_scores`: Qdrant sums a BM25 query's terms in an order of its own
    per process, so a score of three or more matched terms may differ in its last float32 bit between processes,
    and the 6 places a cell keeps then differ in the last place when the score sits on a rounding boundary.
    """
    keys = {d["id"]: d["source_key"] for d in experiment["corpus"]["documents"]}
    timing = {"latency_ms_p50", "latency_ms_p95", "latency_ms_stages"}
    aggregate = {
        key: {name: value for name, value in figures.items() if name not in timing}
        for key, figures in experiment["aggregate"].items()
    }
    cells = sorted(
        [cell["config_key"], cell["question_id"], cell["status"], cell["metrics"], cell["answer"],
         [[keys.get(c.get("document_id")), c["chunk_index"], c["start_index"], c["end_index"], c["role"]]
          for c in cell["retrieved"]]]
        for cell in experiment["cells"]
    )  # fmt: skip
    return json.dumps({"aggregate": aggregate, "decision": experiment["decision"], "cells": cells}, sort_keys=True)


def _scores(experiment: dict[str, Any]) -> list[float]:
    """Every retrieved chunk's stored score, cell by cell in (configuration, question) order."""
    cells = sorted(experiment["cells"], key=lambda cell: (cell["config_key"], cell["question_id"]))
    return [chunk["score"] or 0.0 for cell in cells for chunk in cell["retrieved"]]


def _exact_ties(ranking: list[list[Any]]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """Pairs of chunks of different documents with exactly the same score in ``ranking`` ([name, index, score])."""
    return [
        ((a[0], a[1]), (b[0], b[1]))
        for position, a in enumerate(ranking)
        for b in ranking[position + 1 :]
        if a[2] == b[2] and a[0] != b[0]
    ]


@pytest.mark.model  # tests/repeat_run.py, in two subprocesses, embeds with MiniLM
def test_a_corpus_experiment_run_twice_in_two_processes_gives_byte_identical_figures(tmp_path: Path) -> None:
    documents = tmp_path / "documents"
    documents.mkdir()
    files = []
    for city, values in SITES.items():
        path = documents / f"{city}.txt"
        path.write_text(_site(city, *values), encoding="utf-8")
        files.append(path)
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(_questions()), encoding="utf-8")

    # Two processes at once (separate data directories): they share nothing but the code.
    running = [
        _start(tmp_path / "first", files, questions, hash_seed="1"),
        _start(tmp_path / "second", list(reversed(files)), questions, hash_seed="2"),
    ]
    try:
        first, second = (_result(process) for process in running)
    finally:
        for process in running:
            process.kill()

    # The rankings tie exactly, across documents: six copies of the shared paragraph in dense and BM25, more than
    # a top-3 keeps; and fused scores in the hybrid rankings (a chunk ranked (a, b) and another (b, a)).
    rankings = first["rankings"]
    for retriever in ("dense", "bm25"):
        top = rankings["Where does a visitor sign the register?"][retriever][:6]
        assert len({score for _name, _index, score in top}) == 1, top
        assert [name for name, _index, _score in top] == [f"{city}.txt" for city in sorted(SITES)]
    assert any(_exact_ties(ranking["hybrid"]) for ranking in rankings.values())
    assert first["experiment"]["status"] == second["experiment"]["status"] == "completed"
    assert {c["config_key"].split("/")[1] for c in first["experiment"]["cells"]} == {"dense", "bm25", "hybrid"}
    # fixed_size's hits come with their neighbours (Neighbor Expansion ±1): the context the answerer reads.
    assert any(c["role"] == "neighbor" for cell in first["experiment"]["cells"] for c in cell["retrieved"])
    # The ingest order differed, so the documents' ids did; the documents did not.
    first_ids = {d["id"] for d in first["experiment"]["corpus"]["documents"]}
    assert first_ids.isdisjoint(d["id"] for d in second["experiment"]["corpus"]["documents"])

    # Equal scores in the same order, not only the same figures (scores to BM25's last bit, see _figures).
    for question, ranking in first["rankings"].items():
        for retriever, rows in ranking.items():
            again = second["rankings"][question][retriever]
            assert [row[:2] for row in rows] == [row[:2] for row in again], (question, retriever)
            assert [row[2] for row in rows] == pytest.approx([row[2] for row in again], rel=1e-6, abs=0)
    assert _figures(first["experiment"]) == _figures(second["experiment"])
    assert _scores(first["experiment"]) == pytest.approx(_scores(second["experiment"]), rel=0, abs=1.5e-6)
    # The cut through the six-way tie keeps aachen, bergen and cork (their neighbours come from the same documents):
    # bergen's badge is found, delft's register is not.
    cells = {(c["config_key"], c["question_id"]): c["metrics"] for c in first["experiment"]["cells"]}
    assert cells[("fixed_size/dense/k3/n1-1", "badge")]["recall"] == 1.0
    assert cells[("fixed_size/dense/k3/n1-1", "register")]["recall"] == 0.0


# ---------------------------------------------------------------- the store's order, on both engines


NAMES = ["delta.md", "alpha.md", "echo.md", "charlie.md", "bravo.md"]
TEXTS = ["the shared opening paragraph about badges", "kiwi orchard notes", "mango market notes"]


def _store_duplicates(store: VectorStore, names: list[str]) -> np.ndarray:
    """The same three chunks (same texts, same vectors) in one document per name, stored in ``names``' order, each
    document with a fresh random id as an ingest gives it; returns the dense vectors."""
    for name in names:
        chunks = chunks_from_texts(uuid.uuid4().hex, TEXTS, name=name)
        dense, sparse = vectors(chunks, seed=7)
        store.replace_document_chunks(
            StrategyName.FIXED_SIZE, MODEL, DIM, tenant_id="t1", chunks=chunks, dense=dense, sparse=sparse
        )
    return dense


def _search(store: VectorStore, mode: QueryMode, dense: np.ndarray, top_k: int) -> list[tuple[str, int, float]]:
    rows = store.search(
        StrategyName.FIXED_SIZE, MODEL, mode=mode, tenant_id="t1", document_id=None, top_k=top_k,
        dense=dense[0], sparse=ENCODER.encode_query("shared opening paragraph"), prefetch_limit=4,
    )  # fmt: skip
    return [(payload["document_name"], payload["chunk_index"], score) for payload, score in rows]


@pytest.mark.parametrize("reverse", [False, True])
def test_equal_scores_come_by_document_name_then_chunk_whatever_the_insertion_order(
    store: VectorStore, reverse: bool
) -> None:
    dense = _store_duplicates(store, list(reversed(NAMES)) if reverse else NAMES)
    alphabetical = sorted(NAMES)
    for mode in (QueryMode.DENSE, QueryMode.SPARSE):
        # Five copies tie exactly; a cut at 1 or 3 keeps the first by name (the store fetched past the tie).
        found = _search(store, mode, dense, top_k=5)
        assert len({score for _n, _i, score in found}) == 1
        assert [(name, index) for name, index, _ in found] == [(name, 0) for name in alphabetical]
        assert _search(store, mode, dense, top_k=1) == found[:1]
        assert _search(store, mode, dense, top_k=3) == found[:3]
    # Each vector ranks the copies the same way, so RRF gives them distinct scores in that order; the dense arm's
    # 4 candidates stop inside the tie, and which 4 never depends on the engine.
    fused = _search(store, QueryMode.FUSION, dense, top_k=4)
    assert [(name, index) for name, index, _ in fused] == [(name, 0) for name in alphabetical[:4]]
    assert [score for *_, score in fused] == [2 / (RRF_K + rank) for rank in range(4)]


def test_an_engine_runs_no_fusion_query_itself(store: VectorStore) -> None:
    dense = _store_duplicates(store, NAMES[:1])
    name = store.ensure_collection(StrategyName.FIXED_SIZE, MODEL, DIM)
    query = VectorQuery(QueryMode.FUSION, PointFilter("t1"), limit=2, dense=dense[0].tolist())
    with pytest.raises(VectorStoreError, match="fuses them"):
        store.engine.query(name, query)


# ---------------------------------------------------------------- the order itself


def _row(name: str, index: int, score: float) -> tuple[dict[str, Any], float]:
    return {"document_name": name, "chunk_index": index, "chunk_id": f"{name}-{index}"}, score


def test_rrf_ties_are_exact_and_broken_by_the_chunks_place_not_by_the_input_order() -> None:
    # x is ranked (0, 1), y (1, 0): the same fused score, 1/2 + 1/3, to the last bit.
    x, y, z = _row("b.md", 4, 0.0), _row("a.md", 9, 0.0), _row("a.md", 2, 0.0)
    for dense, sparse in (([x, y, z], [y, x]), ([y, x, z], [x, y])):
        fused = reciprocal_rank_fusion([dense, sparse], limit=3)
        assert [tie_key(p) for p, _ in fused] == [("a.md", 9, "a.md-9"), ("b.md", 4, "b.md-4"), ("a.md", 2, "a.md-2")]
        assert fused[0][1] == fused[1][1] == 1 / RRF_K + 1 / (RRF_K + 1)
    assert reciprocal_rank_fusion([[x, y]], limit=1)[0][0] is x[0]


def test_a_cut_is_settled_only_when_no_tie_runs_past_what_the_engine_returned() -> None:
    rows = ranked([_row("c.md", 0, 0.5), _row("a.md", 0, 0.5), _row("b.md", 0, 0.9)])
    assert [p["document_name"] for p, _ in rows] == ["b.md", "a.md", "c.md"]
    assert not cut_is_settled(rows, depth=2, fetched=3)  # the third 0.5 may have company the engine left out
    assert cut_is_settled(rows, depth=1, fetched=3)  # 0.9 > 0.5: nothing left out ties with the cut
    assert cut_is_settled(rows, depth=2, fetched=4)  # fewer rows than asked: the engine had no more
