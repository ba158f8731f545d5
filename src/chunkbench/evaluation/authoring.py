"""Authoring a question set in place, one change at a time (the dashboard's Questions tab): add a question with its
evidence, add evidence to a question, remove either.

Every change is validated as an upload is (``parse_question_set``), and the evidence it adds is placed in the
documents it names by the one evidence check (``locate.resolve_evidence``: offsets must select their content
exactly) before the file is rewritten; a refused change writes nothing. Authored sets are question JSON files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.errors import (
    InvalidRequestError,
    QuestionFileExistsError,
    QuestionFileNotFoundError,
    QuestionNotFoundError,
    QuestionSetError,
)
from chunkbench.evaluation import question_sets
from chunkbench.evaluation.locate import EvidenceReport, ReferenceResult
from chunkbench.evaluation.questions import QuestionSet, parse_question_set
from chunkbench.storage.question_files import QuestionFileRepository
from chunkbench.storage.schema import DEFAULT_TENANT

AUTHORED_SUFFIX = ".json"

RawQuestion = dict[str, Any]
# A change: the questions as JSON objects → the new list, and the (question id, reference index) pairs it added.
Change = Callable[[list[RawQuestion]], tuple[list[RawQuestion], list[tuple[str, int]]]]


@dataclass(frozen=True)
class AuthoredSet:
    """The set as written, with every reference placed in the documents the set names."""

    info: question_sets.QuestionFileInfo
    question_set: QuestionSet
    report: EvidenceReport


def add_question(
    session: Session, settings: Settings, name: str, question: Mapping[str, Any], *, tenant_id: str = DEFAULT_TENANT
) -> AuthoredSet:
    """Append ``question`` (a question file's JSON object) to the set ``name``, creating the file when missing.

    Without an id it gets the first free ``q{n}`` from the set's size up; an id the set already holds is a 422.
    """

    def change(questions: list[RawQuestion]) -> tuple[list[RawQuestion], list[tuple[str, int]]]:
        draft = {**question, "id": question.get("id") or _free_id(questions)}
        added = [(str(draft["id"]), index) for index in range(len(draft.get("references") or []))]
        return [*questions, draft], added

    return _rewrite(session, settings, name, change, create=True, tenant_id=tenant_id)


def add_reference(
    session: Session,
    settings: Settings,
    name: str,
    question_id: str,
    reference: Mapping[str, Any],
    *,
    tenant_id: str = DEFAULT_TENANT,
) -> AuthoredSet:
    """Add one piece of evidence (``{document?, content, start_index?, end_index?}``) to a question of the set."""

    def change(questions: list[RawQuestion]) -> tuple[list[RawQuestion], list[tuple[str, int]]]:
        position = _position(questions, question_id, name)
        references = [*(questions[position].get("references") or []), dict(reference)]
        edited = [*questions]
        edited[position] = {**questions[position], "references": references}
        return edited, [(question_id, len(references) - 1)]

    return _rewrite(session, settings, name, change, tenant_id=tenant_id)


def remove_question(
    session: Session, settings: Settings, name: str, question_id: str, *, tenant_id: str = DEFAULT_TENANT
) -> AuthoredSet:
    """Remove a question and its evidence; the set's only question cannot go (a set is never empty)."""

    def change(questions: list[RawQuestion]) -> tuple[list[RawQuestion], list[tuple[str, int]]]:
        position = _position(questions, question_id, name)
        if len(questions) == 1:
            raise InvalidRequestError(
                f"'{question_id}' is the only question of '{name}', and a question set is never empty: delete the "
                f"file instead (DELETE /admin/questions/{name}).",
                name=name,
                question_id=question_id,
            )
        return [q for i, q in enumerate(questions) if i != position], []

    return _rewrite(session, settings, name, change, tenant_id=tenant_id)


def remove_reference(
    session: Session,
    settings: Settings,
    name: str,
    question_id: str,
    reference_index: int,
    *,
    tenant_id: str = DEFAULT_TENANT,
) -> AuthoredSet:
    """Remove one piece of evidence (0-based, as ``reference_index`` in validation results); the question stays."""

    def change(questions: list[RawQuestion]) -> tuple[list[RawQuestion], list[tuple[str, int]]]:
        position = _position(questions, question_id, name)
        references = list(questions[position].get("references") or [])
        if not 0 <= reference_index < len(references):
            raise QuestionNotFoundError(
                f"Question '{question_id}' of '{name}' has {len(references)} reference(s): there is no reference "
                f"{reference_index} (they are numbered from 0).",
                name=name,
                question_id=question_id,
                reference_index=reference_index,
            )
        del references[reference_index]
        edited = [*questions]
        edited[position] = {**questions[position], "references": references}
        return edited, []

    return _rewrite(session, settings, name, change, tenant_id=tenant_id)


# --------------------------------------------------------------------------- the one write path


def _rewrite(
    session: Session, settings: Settings, name: str, change: Change, *, create: bool = False, tenant_id: str
) -> AuthoredSet:
    """Read the set, apply ``change``, validate the result and the evidence it added, then write it and commit.

    The read and the write are one transaction under the file's lock (this process's threads) and its row lock
    (PostgreSQL: other replicas), committed before the lock is let go: two changes to one file at once must not
    lose either. A set created by another replica between the read and the write is read again and changed.
    """
    question_sets.check_name(name)
    try:
        return _rewrite_once(session, settings, name, change, create=create, tenant_id=tenant_id)
    except QuestionFileExistsError:
        return _rewrite_once(session, settings, name, change, create=create, tenant_id=tenant_id)


def _rewrite_once(
    session: Session, settings: Settings, name: str, change: Change, *, create: bool, tenant_id: str
) -> AuthoredSet:
    with question_sets.file_lock(name, tenant_id):
        # Found (the tenant's old folder imported first), then its row locked until the commit below.
        existed = question_sets.question_file_exists(session, settings, name, tenant_id)
        if existed and QuestionFileRepository(session, tenant_id).get(name, for_update=True) is not None:
            current = question_sets.read_question_file(session, settings, name, tenant_id)
            if current.format != "json" or Path(name).suffix.lower() != AUTHORED_SUFFIX:
                raise InvalidRequestError(
                    f"'{name}' is a {current.format} file; questions are authored into question JSON sets (.json). "
                    "Choose or create a .json set.",
                    name=name,
                )
        elif create:
            if Path(name).suffix.lower() != AUTHORED_SUFFIX:
                raise InvalidRequestError(
                    f"'{name}': an authored question set is question JSON; give it a name ending in .json.", name=name
                )
            current = QuestionSet([], "json", name)
        else:
            raise QuestionFileNotFoundError(
                f"No question file '{name}' in {question_sets.STORED_IN}. GET /admin/questions lists "
                "them; adding a question (POST /admin/questions/{name}/questions) creates one.",
                name=name,
            )
        questions, added = change([question.to_dict() for question in current])
        body: dict[str, Any] = {"metadata": current.metadata} if current.metadata else {}
        body["questions"] = questions
        # Validated exactly as an uploaded file: every problem named, nothing written.
        edited = parse_question_set(json.dumps(body, ensure_ascii=False), name)
        report = question_sets.validate_against_database(
            session, edited, tenant_id=tenant_id, threshold=settings.question_match_threshold
        )
        _refuse_unplaced(name, report, set(added))
        # A new set is written only if it is still new (else QuestionFileExistsError: read again and change that).
        info, _replaced = question_sets.save_question_file(
            session, settings, name, edited.to_json().encode("utf-8"), overwrite=existed, tenant_id=tenant_id
        )
        session.commit()
    return AuthoredSet(info, edited, report)


def _refuse_unplaced(name: str, report: EvidenceReport, added: set[tuple[str, int]]) -> None:
    """A 422 naming each added reference that cannot be placed (older ones are reported, not refused)."""
    problems = [r for r in report.problems if (r.question_id, r.reference_index) in added]
    if not problems:
        return
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise QuestionSetError(
        f"{name}: nothing was written: question {first.question_id}, reference {first.reference_index + 1}: "
        f"{_why(first)}{more}.",
        file=name,
        problems=[
            {
                "where": f"question '{r.question_id}', reference {r.reference_index + 1}",
                "question_id": r.question_id,
                "reference_index": r.reference_index,
                "field": "references",
                "message": _why(r),
            }
            for r in problems
        ],
    )


def _why(result: ReferenceResult) -> str:
    if result.status == "unknown_document":
        return f"there is no document '{result.document}' (name it by its id or source key: GET /documents lists them)"
    if result.document is None:
        return "there is no parsed document to place it in: upload one first"
    return result.message


def _position(questions: Sequence[RawQuestion], question_id: str, name: str) -> int:
    position = next((i for i, q in enumerate(questions) if q.get("id") == question_id), None)
    if position is None:
        raise QuestionNotFoundError(
            f"'{name}' has no question '{question_id}'. GET /admin/questions/{name} lists its questions.",
            name=name,
            question_id=question_id,
        )
    return position


def _free_id(questions: Sequence[RawQuestion]) -> str:
    """``q{n}``: the set's next number, or the first one after it that no question uses."""
    taken = {str(q.get("id")) for q in questions}
    number = len(questions) + 1
    while f"q{number}" in taken:
        number += 1
    return f"q{number}"
