"""The typed core of an Experiment and the JSON it is stored as (``ExperimentRow``) and returned as by the API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionReference


def question_to_json(question: BenchmarkQuestion) -> dict[str, Any]:
    """A question as an Experiment stores it: every field of seed 000 §10.1, and the references as offsets into
    the Experiment's one document with the text they select (the document itself is the Experiment's)."""
    return {
        "id": question.id,
        "question": question.question,
        "expected_answer": question.expected_answer,
        "category": question.category,
        "difficulty": question.difficulty,
        "references": [
            {"start_index": r.start_index, "end_index": r.end_index, "content": r.content}
            for r in question.references
            if r.has_offsets
        ],
    }


def question_from_json(data: Mapping[str, Any]) -> BenchmarkQuestion:
    """The question an Experiment stored (``question_to_json``)."""
    return BenchmarkQuestion(
        id=str(data["id"]),
        question=data["question"],
        expected_answer=data.get("expected_answer"),
        category=data.get("category"),
        difficulty=data.get("difficulty"),
        references=tuple(
            QuestionReference(r["content"], int(r["start_index"]), int(r["end_index"]))
            for r in data.get("references") or ()
        ),
    )
