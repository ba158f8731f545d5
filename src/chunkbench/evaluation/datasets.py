"""Loading Chroma's general chunking-evaluation questions (``questions_df.csv``) with their reference spans.

The general question-set model (seed JSON, Chroma CSV, JSONL; snippets located in documents) lives in
``evaluation.questions`` and ``evaluation.locate`` and is re-exported here.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from chunkbench.evaluation.locate import (
    DocumentCatalog,
    EvidenceReport,
    MatchMethod,
    ReferenceResult,
    TextLocator,
    resolve_evidence,
)
from chunkbench.evaluation.questions import (
    BenchmarkQuestion,
    QuestionReference,
    QuestionSet,
    load_question_set,
    parse_question_set,
)

__all__ = [
    "BenchmarkQuestion",
    "DatasetError",
    "DocumentCatalog",
    "EvalQuestion",
    "EvidenceReport",
    "MatchMethod",
    "QuestionReference",
    "QuestionSet",
    "Reference",
    "ReferenceMismatch",
    "ReferenceResult",
    "TextLocator",
    "find_mismatches",
    "load_chroma_questions",
    "load_corpora",
    "load_question_set",
    "parse_question_set",
    "reference_spans",
    "resolve_evidence",
    "validate_references",
]

# CI checks the shared data out beside the repository.
DEFAULT_CHROMA_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "chroma_chunking_eval"


class DatasetError(ValueError):
    """The question file is malformed or its references do not match the corpora."""


@dataclass(frozen=True)
class Reference:
    """An excerpt that answers a question: ``corpus[start_index:end_index] == content`` (character offsets)."""

    content: str
    start_index: int
    end_index: int

    @property
    def span(self) -> tuple[int, int]:
        return (self.start_index, self.end_index)


@dataclass(frozen=True)
class EvalQuestion:
    """One question, the corpus it was written from, and its reference excerpts."""

    id: int
    question: str
    corpus_id: str
    references: list[Reference]


@dataclass(frozen=True)
class ReferenceMismatch:
    """A reference whose offsets do not select its content."""

    question_id: int
    reference_index: int
    corpus_id: str
    expected: str
    found: str


def chroma_dir(path: Path | str | None = None) -> Path:
    """The Chroma evaluation data directory: ``path`` if given, else ``<repo>/../shared/data/chroma_chunking_eval``."""
    return Path(path) if path is not None else DEFAULT_CHROMA_DIR


def load_corpora(data_dir: Path | str | None = None) -> dict[str, str]:
    """Every ``corpora/*.md`` of the data directory by corpus id, read as UTF-8 (offsets are characters)."""
    corpora_dir = chroma_dir(data_dir) / "corpora"
    # Chroma's offsets were taken on a plain ``open(...).read()`` text: the same characters as here.
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(corpora_dir.glob("*.md"))}


def load_chroma_questions(path: Path | str | None = None) -> list[EvalQuestion]:
    """The questions of ``questions_df.csv`` (``path`` is the file or its directory), ids = row numbers."""
    file = chroma_dir(path)
    if file.is_dir():
        file = file / "questions_df.csv"
    questions: list[EvalQuestion] = []
    with file.open(encoding="utf-8", newline="") as handle:
        for row_number, row in enumerate(csv.DictReader(handle)):
            try:
                raw = json.loads(row["references"])
                references = [Reference(r["content"], int(r["start_index"]), int(r["end_index"])) for r in raw]
                questions.append(EvalQuestion(row_number, row["question"], row["corpus_id"], references))
            except (KeyError, TypeError, ValueError) as exc:
                raise DatasetError(f"{file}: row {row_number} is malformed: {exc}") from exc
            if not references:
                raise DatasetError(f"{file}: row {row_number} has no references.")
    return questions


def find_mismatches(questions: list[EvalQuestion], corpora: dict[str, str]) -> list[ReferenceMismatch]:
    """Every reference whose ``corpus[start:end]`` differs from its ``content`` (unknown corpora included)."""
    mismatches: list[ReferenceMismatch] = []
    for question in questions:
        corpus = corpora.get(question.corpus_id)
        for index, reference in enumerate(question.references):
            found = "<unknown corpus>" if corpus is None else corpus[reference.start_index : reference.end_index]
            if found != reference.content:
                mismatches.append(ReferenceMismatch(question.id, index, question.corpus_id, reference.content, found))
    return mismatches


def validate_references(questions: list[EvalQuestion], corpora: dict[str, str]) -> None:
    """Raise ``DatasetError`` listing the first mismatching references, if any."""
    mismatches = find_mismatches(questions, corpora)
    if mismatches:
        shown = "; ".join(
            f"question {m.question_id} ref {m.reference_index} ({m.corpus_id}): expected {m.expected[:40]!r}, "
            f"found {m.found[:40]!r}"
            for m in mismatches[:5]
        )
        raise DatasetError(f"{len(mismatches)} reference(s) do not match their corpus: {shown}")


def reference_spans(question: BenchmarkQuestion) -> list[Reference]:
    """A question's references that carry offsets, as span-metric ``Reference``s (resolve snippets first)."""
    return [
        Reference(r.content, r.start_index, r.end_index)
        for r in question.references
        if r.start_index is not None and r.end_index is not None
    ]
