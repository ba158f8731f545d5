"""A benchmark's questions: inline or a question-set file, every evidence span placed in the document's text.

Loading and placing are the question-set library's (``evaluation.questions`` / ``evaluation.locate``); this
module picks the questions that are about the benchmarked document and refuses a set whose evidence cannot
all be placed, naming each snippet and the closest text, before anything runs.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from sqlalchemy.orm import Session

from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.config import Settings
from chunkbench.errors import BenchmarkError
from chunkbench.evaluation import service as question_files
from chunkbench.evaluation.locate import DocumentCatalog, resolve_evidence
from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionSet, parse_question_set
from chunkbench.storage.schema import DocumentRow

_SHOWN_PROBLEMS = 5


def _names(document: DocumentRow) -> set[str]:
    return {document.id, document.filename, Path(document.filename).stem}


def _about(question: BenchmarkQuestion, names: set[str]) -> bool:
    """A question is about the document unless it (or its evidence) names another one."""
    named = {question.document_id} | {r.document for r in question.references}
    named.discard(None)
    return not named or bool(named & names) or any(Path(str(n)).stem in names for n in named)


def resolve_benchmark_questions(
    session: Session, settings: Settings, request: BenchmarkIn, document: DocumentRow, *, tenant_id: str
) -> list[BenchmarkQuestion]:
    """The questions about the document: unique ids, every reference placed in the document (its id, exact
    offsets and the text they select)."""
    if request.question_set is not None:
        question_set = question_files.read_question_file(settings, request.question_set, tenant_id)
    else:
        body = {"questions": [q.model_dump(exclude_none=True) for q in request.questions or []]}
        question_set = parse_question_set(json.dumps(body), "request.json")
    names = _names(document)
    about = [q for q in question_set if _about(q, names)]
    if not about:
        raise BenchmarkError(
            f"None of the {len(question_set)} questions is about '{document.filename}': they name other documents.",
            document_id=document.id,
        )
    catalog = DocumentCatalog({document.id: document.parsed_text or ""}, {document.filename: document.id})
    # Every reference is placed in this document: a question naming it by file name or stem still matches.
    text = document.parsed_text or ""
    anchored = QuestionSet(
        [_anchored(q, document.id, text) for q in about], question_set.format, question_set.source,
        question_set.metadata,
    )  # fmt: skip
    report = resolve_evidence(anchored, catalog, threshold=settings.question_match_threshold)
    if not report.ok:
        shown = "; ".join(
            f"question {p.question_id} reference {p.reference_index + 1}: {p.message or p.status}"
            + (f" (closest text: {p.closest_text[:80]!r}, similarity {p.score:.2f})" if p.closest_text else "")
            for p in report.problems[:_SHOWN_PROBLEMS]
        )
        raise BenchmarkError(
            f"{len(report.problems)} evidence snippet(s) cannot be placed in '{document.filename}': {shown}. "
            "Fix them (chunkbench questions validate shows every one) or remove the references.",
            document_id=document.id,
        )
    return [_in_document(q, text) for q in report.resolved()]


def _anchored(question: BenchmarkQuestion, document_id: str, text: str) -> BenchmarkQuestion:
    """The question pinned to the document; offsets that do not select their content in the parsed text become
    snippets to locate, since a user's offsets usually count in the source file, not in our markdown of it."""
    references = tuple(
        replace(
            reference,
            document=document_id,
            **(
                {}
                if text[reference.start_index or 0 : reference.end_index or 0] == reference.content
                else {"start_index": None, "end_index": None}
            ),
        )
        for reference in question.references
    )
    return replace(question, document_id=document_id, references=references)


def _in_document(question: BenchmarkQuestion, text: str) -> BenchmarkQuestion:
    """The resolved question with only its placed references, each with the text its offsets select."""
    references = tuple(
        replace(r, content=text[r.start_index : r.end_index])
        for r in question.references
        if r.start_index is not None and r.end_index is not None
    )
    return replace(question, references=references)
