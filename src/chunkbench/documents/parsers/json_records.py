"""JSON and JSON Lines (.json, .jsonl, .ndjson) through the standard library: records as sections, their fields as
``key: value`` lines (nested objects flattened to dotted keys, list items to ``key[i]``).

A list of records (a JSON array, or one record per JSON Lines line): a section per record, headed by its title-like
field (``title``, ``name``, ``heading``, ``subject``, ``label``, ``id`` …), else "Record N". One object: a section per
top-level key; a key whose value is a list of records (``{"articles": [...]}``, the shape of exported knowledge
bases) holds those records as sub-sections.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register, text_starts_with
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError
from chunkbench.models import ParseResult

# Fields that name a record, in the order they are preferred (compared case-insensitively).
TITLE_FIELDS = ("title", "name", "heading", "subject", "label", "question", "id", "key", "slug", "uuid")
_MAX_TITLE_CHARS = 200  # a longer "title" is text, not a name


def record_title(record: dict[str, Any]) -> str | None:
    """The record's title-like field's value, if it has one that is a short scalar."""
    by_name = {str(key).lower(): value for key, value in reversed(record.items())}  # first spelling wins
    for field in TITLE_FIELDS:
        value = by_name.get(field)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = " ".join(str(value).split())
            if text and len(text) <= _MAX_TITLE_CHARS:
                return text
    return None


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def field_lines(value: Any, prefix: str = "") -> list[str]:
    """``key: value`` lines; nested objects as dotted keys, lists of scalars on one line, other lists by index."""
    if isinstance(value, dict):
        lines: list[str] = []
        for key, item in value.items():
            lines.extend(field_lines(item, f"{prefix}.{key}" if prefix else str(key)))
        return lines
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            joined = ", ".join(_scalar(item) for item in value)
            return [f"{prefix}: {joined}" if prefix else joined] if value else []
        lines = []
        for index, item in enumerate(value):
            lines.extend(field_lines(item, f"{prefix}[{index}]"))
        return lines
    text = " ".join(_scalar(value).split())  # a field is one line; its own line breaks would read as fields
    return [f"{prefix}: {text}" if prefix else text]


def _paragraph(lines: list[str]) -> list[Block]:
    text = "\n".join(line for line in lines if line.strip())
    return [Block("paragraph", text, markdown=text)] if text else []


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def record_blocks(records: list[Any], level: int) -> list[Block]:
    """A section per record: its title-like field (else "Record N") as the heading, its fields as lines."""
    blocks: list[Block] = []
    for number, record in enumerate(records, start=1):
        title = record_title(record) if isinstance(record, dict) else None
        blocks.append(Block("heading", title or f"Record {number}", level=level))
        blocks.extend(_paragraph(field_lines(record)))
    return blocks


def value_blocks(value: Any) -> list[Block]:
    """A parsed JSON document as blocks (see the module docstring)."""
    if isinstance(value, list):
        return record_blocks(value, level=1)
    if isinstance(value, dict):
        blocks: list[Block] = []
        for key, item in value.items():
            blocks.append(Block("heading", str(key), level=1))
            blocks.extend(record_blocks(item, level=2) if _is_records(item) else _paragraph(field_lines(item)))
        return blocks
    return _paragraph(field_lines(value))


def _invalid(path: Path, error: json.JSONDecodeError, line: int | None = None) -> CorruptDocumentError:
    where = f"line {line}, column {error.colno}" if line is not None else f"line {error.lineno}, column {error.colno}"
    return CorruptDocumentError(
        f"'{path.name}' is not valid JSON: {error.msg} at {where}. Fix the file there (or export it again).",
        line=line if line is not None else error.lineno,
        column=error.colno,
    )


def _too_deep(path: Path) -> CorruptDocumentError:
    return CorruptDocumentError(
        f"'{path.name}' nests its JSON too deeply to read (hundreds of levels). Flatten the structure and upload it "
        "again."
    )


def _decoded(path: Path) -> tuple[str, list[str]]:
    decoded = decode(path.read_bytes())
    return decoded.text, decoded.notes


@register
class JsonParser(DocumentParser):
    """A JSON document: a list of records, or an object whose top-level keys become sections."""

    suffixes = (".json",)
    mime_type = "application/json"
    label = "JSON file"

    def sniff(self, head: bytes) -> bool:
        return text_starts_with(head, ("{", "["))

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        text, notes = _decoded(path)
        try:
            blocks = value_blocks(json.loads(text))
        except json.JSONDecodeError as exc:
            raise _invalid(path, exc) from exc
        except RecursionError as exc:  # from the decoder, or from flattening what it could still read
            raise _too_deep(path) from exc
        if not any(block.kind == "paragraph" for block in blocks):
            raise EmptyDocumentError(f"'{path.name}' holds no values (an empty list or object).")
        return build_parse_result(blocks, heading_source="records", warnings=notes)


@register
class JsonLinesParser(DocumentParser):
    """JSON Lines: one record per line, each a section."""

    suffixes = (".jsonl", ".ndjson")
    mime_type = "application/x-ndjson"
    label = "JSON Lines file"

    def sniff(self, head: bytes) -> bool:
        return text_starts_with(head, ("{", "["))

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        text, notes = _decoded(path)
        records: list[Any] = []
        # Not splitlines(): JSON strings may hold U+2028 and other characters it splits on.
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise _invalid(path, exc, line=number) from exc
            except RecursionError as exc:
                raise _too_deep(path) from exc
        try:
            blocks = record_blocks(records, level=1)
        except RecursionError as exc:
            raise _too_deep(path) from exc
        if not any(block.kind == "paragraph" for block in blocks):
            raise EmptyDocumentError(f"'{path.name}' holds no records with values.")
        return build_parse_result(blocks, heading_source="records", warnings=notes)
