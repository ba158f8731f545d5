"""Question sets: chunkbench's JSON (docs/benchmarks.md), Chroma's ``questions_df.csv`` and JSONL, evidence optional.

Every format loads into one ``QuestionSet`` of ``BenchmarkQuestion``s. Evidence is a list of references: with
character offsets into a document (checked later), or plain gold snippets that ``evaluation.locate`` finds.
``BenchmarkQuestion`` and ``QuestionReference`` are the one model of a question and its evidence: question
files, Chroma's data, corpus evaluation and benchmarks all use them; a resolved reference (what
``locate.resolve_evidence`` returns) has its document, offsets and the text they select.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from chunkbench.errors import QuestionSetError

QuestionFormat = Literal["json", "chroma_csv", "jsonl"]
QUESTION_FILE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv")
# An upload that names hundreds of problems is one problem: the wrong file.
_MAX_PROBLEMS = 50


@dataclass(frozen=True)
class QuestionReference:
    """Evidence for a question: ``content`` at ``[start_index, end_index)`` of ``document``, or a snippet to locate.

    ``document`` is a document id or file name; None means the question's document.
    """

    content: str
    start_index: int | None = None
    end_index: int | None = None
    document: str | None = None

    @property
    def has_offsets(self) -> bool:
        return self.start_index is not None and self.end_index is not None

    @property
    def span(self) -> tuple[int, int]:
        """``(start_index, end_index)``; only for a reference with offsets."""
        if self.start_index is None or self.end_index is None:
            raise ValueError(f"The reference {self.content[:40]!r} has no offsets; locate it first.")
        return (self.start_index, self.end_index)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.document is not None:
            data["document"] = self.document
        data["content"] = self.content
        if self.has_offsets:
            data["start_index"] = self.start_index
            data["end_index"] = self.end_index
        return data


@dataclass(frozen=True)
class BenchmarkQuestion:
    """One question of a set (the fields of docs/benchmarks.md, plus the document it is about and its evidence)."""

    id: str
    question: str
    expected_answer: str | None = None
    category: str | None = None
    difficulty: str | None = None
    document_id: str | None = None
    references: tuple[QuestionReference, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "expected_answer": self.expected_answer,
            "category": self.category,
            "difficulty": self.difficulty,
        }
        if self.document_id is not None:
            data["document_id"] = self.document_id
        if self.references:
            data["references"] = [reference.to_dict() for reference in self.references]
        return data


@dataclass
class QuestionSet:
    """The questions of one file, in file order, with the format they were read from."""

    questions: list[BenchmarkQuestion]
    format: QuestionFormat = "json"
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[BenchmarkQuestion]:
        return iter(self.questions)

    def get(self, question_id: str) -> BenchmarkQuestion | None:
        return next((q for q in self.questions if q.id == question_id), None)

    @property
    def reference_count(self) -> int:
        return sum(len(q.references) for q in self.questions)

    def document_names(self) -> list[str]:
        """Every document the questions or their references name, in first-seen order."""
        names: dict[str, None] = {}
        for question in self.questions:
            if question.document_id:
                names[question.document_id] = None
            for reference in question.references:
                if reference.document:
                    names[reference.document] = None
        return list(names)

    def to_json(self) -> str:
        """The set as question JSON (``{"questions": [...]}``, docs/benchmarks.md), references with their offsets."""
        body: dict[str, Any] = {}
        if self.metadata:
            body["metadata"] = self.metadata
        body["questions"] = [question.to_dict() for question in self.questions]
        return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


# --------------------------------------------------------------------------- parsing


class _Problems:
    """Collects every problem of a file, each naming where it is, so one upload reports them all."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[dict[str, Any]] = []

    def add(self, where: str, message: str, field_name: str | None = None, **location: int) -> None:
        if len(self.items) < _MAX_PROBLEMS:
            item: dict[str, Any] = {"where": where, **location, "message": message}
            if field_name is not None:
                item["field"] = field_name
            self.items.append(item)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        first = self.items[0]
        more = f" (and {len(self.items) - 1} more problem{'s' if len(self.items) > 2 else ''})"
        raise QuestionSetError(
            f"{self.source}: {first['where']}: {first['message']}{more if len(self.items) > 1 else ''}",
            file=self.source,
            problems=self.items,
        )


def _text(value: Any) -> str | None:
    """A scalar field as text (ids and answers may be written as numbers); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TypeError(f"must be a string, not {type(value).__name__}")
    return str(value)


def _offset(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"must be an integer, not {type(value).__name__}")
    number = int(value)
    if isinstance(value, float) and value != number:
        raise ValueError(f"must be an integer, not {value}")
    if number < 0:
        raise ValueError(f"must be ≥ 0, not {number}")
    return number


def _reference(raw: Any, position: int, where: str, problems: _Problems, **location: int) -> QuestionReference | None:
    """A reference from a snippet string or a ``{document|document_id, content, start_index, end_index}`` object."""
    here = f"{where}, reference {position}"
    if isinstance(raw, str):
        if not raw.strip():
            problems.add(here, "the snippet is empty", field_name="references", **location)
            return None
        return QuestionReference(raw)
    if not isinstance(raw, Mapping):
        problems.add(here, f"must be a string or an object, not {type(raw).__name__}", "references", **location)
        return None
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        problems.add(here, "'content' must be a non-empty string", field_name="content", **location)
        return None
    start, end = raw.get("start_index"), raw.get("end_index")
    if (start is None) != (end is None):
        name = "end_index" if end is None else "start_index"
        problems.add(here, "give both 'start_index' and 'end_index', or neither", field_name=name, **location)
        return None
    try:
        document = _text(raw.get("document", raw.get("document_id", raw.get("corpus_id"))))
    except TypeError as exc:
        problems.add(here, f"'document' {exc}", field_name="document", **location)
        return None
    if start is None:
        return QuestionReference(content, document=document)
    try:
        start_index, end_index = _offset(start), _offset(end)
    except (TypeError, ValueError) as exc:
        problems.add(here, f"offset {exc}", field_name="start_index", **location)
        return None
    if end_index <= start_index:
        problems.add(here, f"end_index {end_index} ≤ start_index {start_index}", field_name="end_index", **location)
        return None
    return QuestionReference(content, start_index, end_index, document)


def _question(
    raw: Any, default_id: str, where: str, problems: _Problems, *, document_key: str | None = None, **location: int
) -> BenchmarkQuestion | None:
    """A question from one JSON object or CSV row (already decoded to a mapping)."""
    if not isinstance(raw, Mapping):
        problems.add(where, f"must be an object, not {type(raw).__name__}", field_name=None, **location)
        return None
    question = raw.get("question")
    if not isinstance(question, str) or not question.strip():
        problems.add(where, "'question' must be a non-empty string", field_name="question", **location)
        return None
    values: dict[str, str | None] = {}
    for name, keys in {
        "id": ("id",),
        "expected_answer": ("expected_answer", "answer"),
        "category": ("category",),
        "difficulty": ("difficulty",),
        "document_id": (document_key,) if document_key else ("document_id", "document", "corpus_id"),
    }.items():
        # The first key with a value wins (JSONL's ``answer`` is the JSON format's ``expected_answer``).
        key = next((k for k in keys if raw.get(k) not in (None, "")), None)
        try:
            values[name] = _text(raw[key]) if key else None
        except TypeError as exc:
            problems.add(where, f"'{key}' {exc}", field_name=key, **location)
            return None
    raw_references = raw.get("references") or []
    if isinstance(raw_references, str):
        raw_references = [raw_references]
    if not isinstance(raw_references, list):
        problems.add(where, "'references' must be a list", field_name="references", **location)
        return None
    before = len(problems.items)
    references = [_reference(r, i, where, problems, **location) for i, r in enumerate(raw_references)]
    if len(problems.items) > before:
        return None
    return BenchmarkQuestion(
        id=values["id"] or default_id,
        question=question.strip(),
        expected_answer=values["expected_answer"],
        category=values["category"],
        difficulty=values["difficulty"],
        document_id=values["document_id"],
        references=tuple(r for r in references if r is not None),
    )


# benchmark_cells.question_id is VARCHAR(200): PostgreSQL refuses longer values (SQLite would not say so).
MAX_QUESTION_ID_LENGTH = 200


def _check_unique_ids(questions: list[BenchmarkQuestion], problems: _Problems) -> None:
    seen: set[str] = set()
    for question in questions:
        if len(question.id) > MAX_QUESTION_ID_LENGTH:
            problems.add(
                f"question '{question.id[:40]}…'",
                f"the id has {len(question.id)} characters; at most {MAX_QUESTION_ID_LENGTH} are allowed",
                "id",
            )
        if question.id in seen:
            problems.add(f"question '{question.id}'", "the id is used twice; question ids must be unique", "id")
        seen.add(question.id)


def _parse_json(data: Any, problems: _Problems) -> tuple[list[BenchmarkQuestion], dict[str, Any]]:
    metadata: dict[str, Any] = {}
    if isinstance(data, Mapping):
        if "questions" not in data:
            problems.add("top level", "an object needs a 'questions' list", field_name="questions")
            return [], metadata
        raw_metadata = data.get("metadata")
        metadata = raw_metadata if isinstance(raw_metadata, dict) else {}
        data = data["questions"]
    if not isinstance(data, list):
        problems.add("top level", 'expected a list of questions or {"questions": [...]}', field_name="questions")
        return [], metadata
    questions = [_question(item, f"q{i + 1}", f"question {i}", problems, index=i) for i, item in enumerate(data)]
    return [q for q in questions if q is not None], metadata


def _parse_jsonl(text: str, problems: _Problems) -> list[BenchmarkQuestion]:
    questions: list[BenchmarkQuestion] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {line_number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(where, f"not JSON: {exc.msg} at column {exc.colno}", line=line_number)
            continue
        question = _question(item, f"q{len(questions) + 1}", where, problems, line=line_number)
        if question is not None:
            questions.append(question)
    return questions


def _csv_references(value: str) -> Any:
    """Chroma writes the references column with ``json.dumps``; hand-made files sometimes use Python literals."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        # literal_eval only reads literals: no code runs.
        return ast.literal_eval(value)


def _parse_csv(text: str, problems: _Problems) -> list[BenchmarkQuestion]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = reader.fieldnames or []
    if "question" not in columns:
        problems.add("header", f"needs a 'question' column (found: {', '.join(columns) or 'none'})", "question")
        return []
    document_key = next((c for c in ("corpus_id", "document_id", "document") if c in columns), None)
    questions: list[BenchmarkQuestion] = []
    for row_number, row in enumerate(reader):
        where = f"row {row_number} (line {reader.line_num})"
        item: dict[str, Any] = dict(row)
        raw_references = (row.get("references") or "").strip()
        if raw_references:
            try:
                item["references"] = _csv_references(raw_references)
            except (ValueError, SyntaxError) as exc:
                problems.add(where, f"'references' is not a JSON list: {exc}", "references", row=row_number)
                continue
        else:
            item["references"] = []
        # Chroma's loader numbers questions by row: the same ids here.
        question = _question(item, str(row_number), where, problems, document_key=document_key, row=row_number)
        if question is not None:
            questions.append(question)
    return questions


def detect_format(name: str, text: str) -> QuestionFormat:
    """The format from the file name's suffix, else from the content (a JSON document, JSON lines, or CSV)."""
    suffix = Path(name).suffix.lower()
    if suffix == ".csv":
        return "chroma_csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    stripped = text.lstrip()
    if suffix == ".json" or stripped[:1] in ("[", "{"):
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            # Several objects, one per line, in a .json file: JSON lines after all.
            if stripped[:1] == "{" and exc.msg == "Extra data":
                return "jsonl"
        return "json"
    return "chroma_csv"


def parse_question_set(content: bytes | str, name: str) -> QuestionSet:
    """Parse a question file's content; raises ``QuestionSetError`` (422) listing every problem found."""
    problems = _Problems(name)
    if isinstance(content, bytes):
        try:
            # utf-8-sig: spreadsheet programs put a BOM in front of CSV exports.
            text = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise QuestionSetError(
                f"{name}: not UTF-8 text (byte {exc.start}). Save the file as UTF-8.", file=name
            ) from exc
    else:
        text = content.removeprefix("\ufeff")
    if not text.strip():
        raise QuestionSetError(f"{name}: the file is empty.", file=name)
    question_format = detect_format(name, text)
    metadata: dict[str, Any] = {}
    if question_format == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise QuestionSetError(
                f"{name}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
                file=name,
                problems=[{"where": f"line {exc.lineno}", "line": exc.lineno, "message": exc.msg}],
            ) from exc
        questions, metadata = _parse_json(data, problems)
    elif question_format == "jsonl":
        questions = _parse_jsonl(text, problems)
    else:
        questions = _parse_csv(text, problems)
    _check_unique_ids(questions, problems)
    problems.raise_if_any()
    if not questions:
        raise QuestionSetError(f"{name}: the file holds no questions.", file=name)
    return QuestionSet(questions, question_format, name, metadata)


def load_question_set(path: Path | str) -> QuestionSet:
    """Read and parse a question file (question JSON, Chroma CSV or JSONL, told apart by suffix and content)."""
    file = Path(path)
    try:
        content = file.read_bytes()
    except OSError as exc:
        raise QuestionSetError(f"{file}: cannot be read: {exc.strerror or exc}.", file=str(file)) from exc
    question_set = parse_question_set(content, file.name)
    return replace(question_set, source=str(file))
