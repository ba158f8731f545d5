"""API models of question sets: files, questions, evidence placement, generation."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from chunkbench.evaluation.locate import EvidenceReport
from chunkbench.evaluation.question_sets import QuestionFileInfo
from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionSet
from chunkbench.evaluation.synthetic import GenerationResult


class QuestionFileOut(BaseModel):
    name: str
    size_bytes: int
    modified_at: datetime
    format: str | None = Field(None, description="json, jsonl or chroma_csv; None when unreadable")
    question_count: int | None = None
    reference_count: int | None = None
    error: str | None = Field(None, description="Why the file cannot be read as a question set")

    @classmethod
    def of(cls, info: QuestionFileInfo) -> QuestionFileOut:
        return cls.model_validate(vars(info))


class ReferenceOut(BaseModel):
    document: str | None = None
    content: str
    start_index: int | None = None
    end_index: int | None = None


class QuestionOut(BaseModel):
    id: str
    question: str
    expected_answer: str | None = None
    category: str | None = None
    difficulty: str | None = None
    document_id: str | None = None
    references: list[ReferenceOut] = []

    @classmethod
    def of(cls, question: BenchmarkQuestion) -> QuestionOut:
        return cls.model_validate(question.to_dict())


class PlacementOut(BaseModel):
    """How one reference was placed: ``method`` offsets|exact|whitespace|fuzzy, or the closest text when not."""

    question_id: str
    reference_index: int
    status: str = Field(description="placed, mismatch, unplaced or unknown_document")
    document: str | None
    method: str | None
    score: float
    start_index: int | None
    end_index: int | None
    occurrences: int
    given_start: int | None
    given_end: int | None
    snippet: str
    closest_text: str | None
    message: str


class ValidationOut(BaseModel):
    ok: bool
    threshold: float
    documents: dict[str, str] = Field(description="Document id → file name")
    counts: dict[str, int]
    results: list[PlacementOut]

    @classmethod
    def of(cls, report: EvidenceReport) -> ValidationOut:
        return cls.model_validate(report.to_dict())


class QuestionSetOut(BaseModel):
    file: QuestionFileOut
    format: str
    metadata: dict[str, Any] = {}
    questions: list[QuestionOut]
    validation: ValidationOut | None = Field(None, description="Present when a document_id was given")

    @classmethod
    def of(cls, info: QuestionFileInfo, question_set: QuestionSet, report: EvidenceReport | None) -> QuestionSetOut:
        return cls(
            file=QuestionFileOut.of(info),
            format=question_set.format,
            metadata=question_set.metadata,
            questions=[QuestionOut.of(q) for q in question_set],
            validation=ValidationOut.of(report) if report is not None else None,
        )


class ReferenceIn(BaseModel):
    """Evidence as a question file writes it: the text at ``[start_index, end_index)`` of the document's markdown."""

    document: str | None = Field(None, description="Document id or source key; default: the question's document")
    content: str = Field(description="The evidence text; with offsets, exactly what they select")
    start_index: int | None = Field(None, ge=0, description="Character offset into the document's markdown")
    end_index: int | None = Field(None, ge=0)


class QuestionIn(BaseModel):
    """A question to add to a set (the question JSON fields); its evidence is placed before anything is written."""

    id: str | None = Field(None, description="Default: the first free q{n}")
    question: str
    expected_answer: str | None = None
    category: str | None = None
    difficulty: str | None = None
    document_id: str | None = Field(None, description="The document it is about: an id or source key")
    references: list[ReferenceIn] = []


class QuestionUploadOut(BaseModel):
    file: QuestionFileOut
    replaced: bool


class GenerateIn(BaseModel):
    document_id: str = Field(min_length=1, description="Document id or file name")
    count: int = Field(20, ge=1, le=500)
    out: str | None = Field(None, description="File name under files/ (default: {document}_synthetic.json)")
    overwrite: bool = False
    seed: int = 0
    excerpt_min_similarity: float | None = Field(None, ge=-1, le=1, description="Default: Settings (0.36)")
    duplicate_similarity: float | None = Field(None, gt=0, le=1, description="Default: Settings (0.78)")


class GenerateOut(BaseModel):
    file: QuestionFileOut
    requested: int
    generated: int
    attempts: int
    rejected: dict[str, int]
    dropped_excerpts: int
    prompt_tokens: int
    completion_tokens: int
    questions: list[QuestionOut]

    @classmethod
    def of(cls, result: GenerationResult, info: QuestionFileInfo, requested: int) -> GenerateOut:
        return cls(
            file=QuestionFileOut.of(info),
            requested=requested,
            generated=len(result.question_set),
            attempts=result.attempts,
            rejected=result.rejection_counts(),
            dropped_excerpts=result.dropped_excerpts,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            questions=[QuestionOut.of(q) for q in result.question_set],
        )
