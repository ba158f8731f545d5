"""A benchmark's questions: inline or a question-set file, every evidence span placed in its document's text.

Loading and placing are the question-set library's (``evaluation.questions`` / ``evaluation.locate``); this
module picks the questions that are about the benchmarked document (or refuses, in a corpus benchmark, a
question about a document outside the corpus) and refuses a set whose evidence cannot all be placed, naming
each snippet and the closest text, before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy.orm import Session

from chunkbench.benchmarking.schemas import BenchmarkIn
from chunkbench.config import Settings
from chunkbench.errors import BenchmarkError, QuestionDocumentError
from chunkbench.evaluation import question_sets
from chunkbench.evaluation.locate import DocumentCatalog, resolve_evidence
from chunkbench.evaluation.questions import BenchmarkQuestion, QuestionSet, parse_question_set
from chunkbench.storage.schema import DocumentRow

_SHOWN_PROBLEMS = 5


def _named(question: BenchmarkQuestion) -> list[str]:
    """The documents a question or its evidence names, in order."""
    names = [question.document_id, *(r.document for r in question.references)]
    return list(dict.fromkeys(n for n in names if n is not None))


def resolve_benchmark_questions(
    session: Session,
    settings: Settings,
    request: BenchmarkIn,
    documents: Sequence[DocumentRow],
    *,
    corpus_name: str | None,
    tenant_id: str,
) -> list[BenchmarkQuestion]:
    """The questions of the benchmark: unique ids, every reference placed in its document (its id, exact offsets
    and the text they select).

    One document (``corpus_name`` None): questions naming other documents are left out and every reference is
    that document's. A corpus: a question naming a document outside it is refused; a reference names its
    document, else the question's, else its snippet is located across the corpus.
    """
    if request.question_set is not None:
        question_set = question_sets.read_question_file(session, settings, request.question_set, tenant_id)
    else:
        body = {"questions": [q.model_dump(exclude_none=True) for q in request.questions or []]}
        question_set = parse_question_set(json.dumps(body), "request.json")
    catalog = question_sets.catalog_of(documents)
    if corpus_name is None:
        [document] = documents
        # A question is about the document unless it (or its evidence) names only other ones.
        about = [q for q in question_set if not (names := _named(q)) or any(catalog.find(n) for n in names)]
        if not about:
            raise BenchmarkError(
                f"None of the {len(question_set)} questions is about '{document.filename}': they name other documents.",
                document_id=document.id,
            )
        where = f"'{document.filename}'"
    else:
        about = list(question_set)
        _refuse_outsiders(about, catalog, corpus_name)
        where = f"the corpus '{corpus_name}'"
    anchored = QuestionSet(
        [_anchored(q, catalog) for q in about], question_set.format, question_set.source, question_set.metadata
    )
    report = resolve_evidence(anchored, catalog, threshold=settings.question_match_threshold)
    if not report.ok:
        shown = "; ".join(
            f"question {p.question_id} reference {p.reference_index + 1}: {p.message or p.status}"
            + (f" (closest text: {p.closest_text[:80]!r}, similarity {p.score:.2f})" if p.closest_text else "")
            for p in report.problems[:_SHOWN_PROBLEMS]
        )
        raise BenchmarkError(
            f"{len(report.problems)} evidence snippet(s) cannot be placed in {where}: {shown}. "
            "Fix them (chunkbench questions validate shows every one) or remove the references.",
            **({"document_id": documents[0].id} if corpus_name is None else {"corpus": corpus_name}),
        )
    return [_in_documents(q, catalog) for q in report.resolved()]


def _refuse_outsiders(questions: Sequence[BenchmarkQuestion], catalog: DocumentCatalog, corpus_name: str) -> None:
    outside = {q.id: [n for n in _named(q) if catalog.find(n) is None] for q in questions}
    outside = {qid: names for qid, names in outside.items() if names}
    if not outside:
        return
    shown = "; ".join(
        f"question {qid}: {', '.join(repr(n) for n in names)}" for qid, names in list(outside.items())[:5]
    )
    more = f" (and {len(outside) - 5} more questions)" if len(outside) > 5 else ""
    raise QuestionDocumentError(
        f"{len(outside)} question(s) name documents that are not in the corpus '{corpus_name}': {shown}{more}. "
        "Add those documents to the corpus (and process them), or fix the questions' document names (an id, source "
        "key, filename or filename stem).",
        corpus=corpus_name,
        questions=list(outside),
    )


def _anchored(question: BenchmarkQuestion, catalog: DocumentCatalog) -> BenchmarkQuestion:
    """The question with its document names resolved to ids (one document: that one); offsets that do not select
    their content in the parsed text become snippets to locate, since a user's offsets usually count in the
    source file, not in our markdown of it."""
    single = next(iter(catalog.texts)) if len(catalog.texts) == 1 else None
    own = single or (catalog.find(question.document_id) if question.document_id is not None else None)
    references = []
    for reference in question.references:
        key = single or (catalog.find(reference.document) if reference.document is not None else own)
        texts = [catalog.texts[key]] if key is not None else list(catalog.texts.values())
        fits = reference.has_offsets and any(
            text[reference.start_index or 0 : reference.end_index or 0] == reference.content for text in texts
        )
        # Offsets that do not select the content in its document are dropped: it is placed by its text.
        placed = replace(reference, document=key)
        references.append(placed if fits else replace(placed, start_index=None, end_index=None))
    return replace(question, document_id=own, references=tuple(references))


def _in_documents(question: BenchmarkQuestion, catalog: DocumentCatalog) -> BenchmarkQuestion:
    """The resolved question with only its placed references, each with the text its offsets select; a question
    that names no document is about its evidence's document when there is exactly one."""
    references = tuple(
        replace(r, content=catalog.texts[str(r.document)][r.start_index : r.end_index])
        for r in question.references
        if r.start_index is not None and r.end_index is not None
    )
    documents = {r.document for r in references}
    own = question.document_id or (documents.pop() if len(documents) == 1 else None)
    return replace(question, document_id=own, references=references)
