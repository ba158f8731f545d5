"""Loading Chroma's general chunking-evaluation questions (``questions_df.csv``) with their reference spans.

The questions load into the one question model (``evaluation.questions``); their references are checked by
the one evidence check (``evaluation.locate.resolve_evidence``), re-exported here with the question-set API.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chunkbench.errors import QuestionSetError
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
    "EvidenceReport",
    "MatchMethod",
    "QuestionReference",
    "QuestionSet",
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

# Chroma's public chunking benchmark (5 corpora, 472 questions; MIT, licences in its PROVENANCE.md) ships as package
# data: `eval chroma` and the tests need nothing beside the repository.
DEFAULT_CHROMA_DIR = Path(__file__).resolve().parent / "data" / "chroma_chunking_eval"


class DatasetError(ValueError):
    """The question file is malformed or its references do not match the corpora."""


def chroma_dir(path: Path | str | None = None) -> Path:
    """The Chroma evaluation data directory: ``path`` if given, else the copy shipped with chunkbench."""
    return Path(path) if path is not None else DEFAULT_CHROMA_DIR


def load_corpora(data_dir: Path | str | None = None) -> dict[str, str]:
    """Every ``corpora/*.md`` of the data directory by corpus id, read as UTF-8 (offsets are characters)."""
    corpora_dir = chroma_dir(data_dir) / "corpora"
    # Chroma's offsets were taken on a plain ``open(...).read()`` text: the same characters as here.
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(corpora_dir.glob("*.md"))}


def load_chroma_questions(path: Path | str | None = None) -> list[BenchmarkQuestion]:
    """The questions of ``questions_df.csv`` (``path`` is the file or its directory): ids are row numbers, each
    question's ``document_id`` its ``corpus_id``, every reference with offsets."""
    file = chroma_dir(path)
    if file.is_dir():
        file = file / "questions_df.csv"
    try:
        questions = load_question_set(file).questions
    except QuestionSetError as exc:
        raise DatasetError(exc.message) from exc
    for question in questions:
        # The generic CSV reader numbers questions by row, as Chroma's loader does.
        if not question.references:
            raise DatasetError(f"{file}: row {question.id} has no references.")
        if not all(reference.has_offsets for reference in question.references):
            raise DatasetError(f"{file}: row {question.id} is malformed: a reference has no offsets.")
    return questions


def find_mismatches(questions: Sequence[BenchmarkQuestion], corpora: dict[str, str]) -> list[ReferenceResult]:
    """Every reference that cannot be used: offsets that do not select its content (``found`` is what they
    select), or an unknown corpus."""
    return resolve_evidence(questions, corpora).problems


def validate_references(questions: Sequence[BenchmarkQuestion], corpora: dict[str, str]) -> None:
    """Raise ``DatasetError`` listing the first mismatching references, if any."""
    mismatches = find_mismatches(questions, corpora)
    if mismatches:
        shown = "; ".join(
            f"question {m.question_id} ref {m.reference_index} ({m.document}): expected {m.snippet[:40]!r}, "
            f"found {'<unknown corpus>' if m.status == 'unknown_document' else (m.found or '')[:40]!r}"
            for m in mismatches[:5]
        )
        raise DatasetError(f"{len(mismatches)} reference(s) do not match their corpus: {shown}")


def reference_spans(question: BenchmarkQuestion) -> tuple[QuestionReference, ...]:
    """A question's references that carry offsets (the ones span metrics can use; resolve snippets first)."""
    return tuple(reference for reference in question.references if reference.has_offsets)
