"""Typed Experiments write and read the same JSON as before: old rows load and the API answers as it did."""

from __future__ import annotations

import json

from chunkbench.benchmarking.model import (
    BenchmarkConfig,
    CellResult,
    Configuration,
    ExperimentQuestion,
)
from chunkbench.models import StrategyName

OK_CELL = {
    "question_id": "leave", "config_key": "fixed_size/dense/k2/n1-1", "status": "ok", "error": None,
    "answer": "In the handbook [Source 1].", "answer_mode": "llm", "citations": [1],
    "retrieved": [
        {"chunk_index": 0, "start_index": 0, "end_index": 142, "role": "hit", "score": 0.780298, "tokens": 30},
        {"chunk_index": 2, "start_index": 293, "end_index": 435, "role": "neighbor", "score": None, "tokens": 30},
    ],
    "expansion_tree": [{"chunk_index": 0, "role": "hit", "start_index": 0, "end_index": 142, "text": "# Staff",
                        "score": 0.780298, "neighbors_prev": [], "neighbors_next": []}],
    "metrics": {"recall": 1.0, "tok_at_k": 90, "exact_match": 0.0, "judge_hallucination": False, "mrr": None},
    "judge": {"context_relevance": 8.0, "failures": 0, "error": None, "samples": [{"hallucination": False}]},
    "latency_ms": {"embed": 18.78, "total": 63.8, "judge": 9.2},
    "tokens": {"prompt": 22, "completion": 14, "context": 90},
}  # fmt: skip
FAILED_CELL = {
    "question_id": "hotel", "config_key": "recursive/bm25/k5", "status": "failed",
    "error": "No document with id 'x'.", "metrics": {}, "retrieved": [],
}  # fmt: skip
CONFIG = {
    "strategies": ["fixed_size", "recursive"], "retrievers": ["dense"], "top_k": [2, 3], "neighbor_prev": 1,
    "neighbor_next": 1, "rerank": ["none"], "corpus_model_id": "all-MiniLM-L6-v2", "answer_mode": "llm",
    "judge": True, "judge_repeats": 1, "primary_metric": "recall", "question_set": None, "concurrency": 1, "seed": 0,
}  # fmt: skip
QUESTION = {
    "id": "leave", "question": "How many days?", "expected_answer": "25 days", "category": None, "difficulty": None,
    "references": [{"start_index": 28, "end_index": 99, "content": "Every employee receives 25 days"}],
}  # fmt: skip


def _same_json(a: object, b: object) -> bool:
    return json.dumps(a) == json.dumps(b)  # values and key order


def test_cells_round_trip_in_both_shapes() -> None:
    ok = CellResult.model_validate(OK_CELL)
    assert ok.ok and ok.tokens.prompt == 22 and ok.retrieved[1].role == "neighbor"
    assert _same_json(ok.model_dump(mode="json"), OK_CELL)
    failed = CellResult.failed("hotel", "recursive/bm25/k5", "No document with id 'x'.")
    assert _same_json(failed.model_dump(mode="json"), FAILED_CELL)
    assert _same_json(CellResult.model_validate(FAILED_CELL).model_dump(mode="json"), FAILED_CELL)


def test_a_cells_evidence_ranks_round_trip_and_old_cells_have_none() -> None:
    evidence = {
        "depth": 20, "ranked": 7,
        "chunks": [{"chunk_index": 3, "start_index": 28, "end_index": 99, "rank": 6, "references": [0]},
                   {"chunk_index": 4, "start_index": 99, "end_index": 150, "rank": None, "references": [0, 1],
                    "document_id": "d2"}],
    }  # fmt: skip
    cell = CellResult.model_validate({**OK_CELL, "evidence": evidence})
    assert cell.evidence is not None and cell.evidence.chunks[1].references == (0, 1)
    assert _same_json(cell.model_dump(mode="json"), {**OK_CELL, "evidence": evidence})
    old = CellResult.model_validate(OK_CELL)
    assert old.evidence is None and "evidence" not in old.model_dump(mode="json")


def test_config_configurations_and_questions_round_trip() -> None:
    assert _same_json(BenchmarkConfig.model_validate(CONFIG).model_dump(mode="json"), CONFIG)
    assert BenchmarkConfig.model_validate({}).seed == 0 and BenchmarkConfig.model_validate(None).primary_metric is None
    grid = [
        Configuration(strategy=StrategyName.FIXED_SIZE, retriever="dense", top_k=2, neighbor_prev=1, neighbor_next=1),
        Configuration(strategy=StrategyName.RECURSIVE, retriever="dense", top_k=3),
    ]
    settings = {key: CONFIG[key] for key in list(CONFIG)[6:]}
    assert _same_json(BenchmarkConfig.of(grid, **settings).model_dump(mode="json"), {**CONFIG, "top_k": [2, 3]})
    for configuration in grid:
        assert Configuration.model_validate(configuration.model_dump(mode="json")) == configuration
    assert _same_json(
        ExperimentQuestion.of(ExperimentQuestion.model_validate(QUESTION).benchmark_question()).model_dump(mode="json"),
        QUESTION,
    )
    assert ExperimentQuestion.model_validate(QUESTION).benchmark_question().references[0].span == (28, 99)
