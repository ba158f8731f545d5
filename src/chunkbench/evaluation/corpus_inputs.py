"""The documents and questions of a corpus evaluation: read from files, every reference placed in the documents."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from chunkbench.config import Settings
from chunkbench.documents.discovery import SourceFile
from chunkbench.errors import EvaluationError
from chunkbench.evaluation.locate import resolve_evidence
from chunkbench.evaluation.questions import BenchmarkQuestion, load_question_set

DOCUMENT_SUFFIXES = (".md", ".txt")
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_SHOWN = 5  # how many offending items an error message lists


def load_documents(path: Path | str) -> dict[str, str]:
    """Documents by id: a directory of ``.md``/``.txt`` files (id = file stem) or a JSONL of
    ``{"document_id", "text"}`` lines. Texts are read as UTF-8; offsets are characters of that text."""
    path = Path(path)
    if not path.exists():
        raise EvaluationError(f"Documents path {path} does not exist: give a folder of .md/.txt files or a JSONL file.")
    if path.is_dir():
        return _documents_from_folder(path)
    return _documents_from_jsonl(path)


def source_files(path: Path | str, documents: Mapping[str, str], settings: Settings) -> list[SourceFile]:
    """The files to ingest for the documents ``load_documents(path)`` read: a folder's own files (source key =
    filename, so a question's document id, the stem, finds it); a JSONL's texts written as ``.md`` files under
    ``{data_dir}/files/eval/<file stem>/`` (Markdown keeps a plain text as it is), each keyed ``<id>.md``."""
    path = Path(path)
    if path.is_dir():
        files = {file.stem: file for file in _folder_files(path)}
        return [SourceFile(files[document_id], files[document_id].name) for document_id in documents]
    folder = settings.data_dir / "files" / "eval" / _SAFE.sub("_", path.stem)
    folder.mkdir(parents=True, exist_ok=True)
    sources = []
    for document_id, text in documents.items():
        file = folder / f"{_SAFE.sub('_', document_id)}.md"
        if not file.is_file() or file.read_text(encoding="utf-8") != text:  # an unchanged file stays unchanged
            file.write_text(text, encoding="utf-8")
        sources.append(SourceFile(file, f"{document_id}.md"))
    return sources


def _folder_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)


def _documents_from_folder(folder: Path) -> dict[str, str]:
    files = _folder_files(folder)
    if not files:
        raise EvaluationError(f"{folder} holds no .md or .txt files; put the documents to evaluate there.")
    documents: dict[str, str] = {}
    for file in files:
        if file.stem in documents:
            raise EvaluationError(
                f"Two files in {folder} have the document id '{file.stem}' (the file stem); rename one of them."
            )
        documents[file.stem] = _read_text(file)
    return documents


def _documents_from_jsonl(file: Path) -> dict[str, str]:
    documents: dict[str, str] = {}
    for number, row in _jsonl_rows(file):
        document_id, text = row.get("document_id"), row.get("text")
        if not isinstance(document_id, str) or not document_id or not isinstance(text, str):
            raise EvaluationError(f'{file}: line {number} needs {{"document_id": "<id>", "text": "<text>"}}.')
        if document_id in documents:
            raise EvaluationError(f"{file}: line {number} repeats the document id '{document_id}'.")
        documents[document_id] = text
    if not documents:
        raise EvaluationError(f"{file} holds no documents.")
    return documents


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{file} is not UTF-8 text ({exc.reason}); convert it to UTF-8.") from exc
    except OSError as exc:
        raise EvaluationError(f"Cannot read {file}: {exc.strerror or exc}.") from exc


def _jsonl_rows(file: Path) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(_read_text(file).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvaluationError(
                f"{file}: line {number} is not JSON ({exc.msg}); expected one object per line."
            ) from exc
        if not isinstance(row, dict):
            raise EvaluationError(f"{file}: line {number} is not a JSON object.")
        rows.append((number, row))
    return rows


def load_questions(path: Path | str, documents: Mapping[str, str]) -> list[BenchmarkQuestion]:
    """Questions of any question-set format (Chroma's ``questions_df.csv``, JSONL of ``{id, question, document_id,
    answer?, references: [{document_id?, content, start_index, end_index}]}``, question JSON), every reference placed
    in ``documents`` (offsets checked; snippets located exact → whitespace → fuzzy) as the question-set library does.
    """
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"Question file {path} does not exist (or is a folder).")
    report = resolve_evidence(load_question_set(path), documents)
    if not report.ok:
        shown = "; ".join(
            f"question {p.question_id} reference {p.reference_index + 1} ({p.document}): {p.message or p.status}"
            for p in report.problems[:_SHOWN]
        )
        raise EvaluationError(
            f"{len(report.problems)} reference(s) of {path.name} cannot be placed in the documents: {shown}. "
            "chunkbench questions validate lists them all."
        )
    questions = []
    for question in report.resolved():
        if not question.references:
            raise EvaluationError(
                f"{path.name}: question {question.id} has no references; span evaluation needs evidence for each."
            )
        # A question naming no known document is about the one its first evidence is in.
        document_id = question.document_id if question.document_id in documents else question.references[0].document
        questions.append(replace(question, document_id=document_id))
    return questions


def placed_questions(questions: Sequence[BenchmarkQuestion], documents: dict[str, str]) -> list[BenchmarkQuestion]:
    """The questions with every reference placed in ``documents`` (document key, offsets, content); raises an
    ``EvaluationError`` naming unknown document ids, or references their offsets do not select, the first few."""
    report = resolve_evidence(questions, documents)
    unknown = sorted(
        {str(q.document_id) for q in questions if q.document_id not in documents}
        | {str(p.document) for p in report.problems if p.status == "unknown_document"}
    )
    if unknown:
        known = ", ".join(sorted(documents)[:10]) + (" …" if len(documents) > 10 else "")
        raise EvaluationError(
            f"The questions name {len(unknown)} unknown document id(s): {', '.join(unknown[:_SHOWN])}. "
            f"Known ids (file stems or JSONL document_id): {known}.",
            unknown_document_ids=unknown[:_SHOWN],
        )
    if report.problems:
        mismatches = [
            f"question {p.question_id} ref {p.reference_index} ({p.document}[{p.given_start}:{p.given_end}]): "
            f"expected {p.snippet[:40]!r}, found {(p.found or '')[:40]!r}"
            if p.status == "mismatch"
            else f"question {p.question_id} ref {p.reference_index} ({p.document}): {p.message}"
            for p in report.problems
        ]
        raise EvaluationError(
            f"{len(mismatches)} reference(s) do not match their document's text at their offsets (were the "
            f"documents edited, or read with another encoding?): {'; '.join(mismatches[:_SHOWN])}"
        )
    return report.resolved().questions
