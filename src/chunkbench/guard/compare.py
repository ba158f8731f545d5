"""The PII comparison harness (docs/service.md): two detectors, one policy, masked output.

Every detection is reported as entity type, offset and length, with what the shared policy does with it —
never the detected text, so the harness can run on a real corpus and its output be shared. Agreement is counted
per file: the same type on the same span (``both``), overlapping spans that differ in type or bounds
(``overlap``), and what only one detector found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document, parser_for
from chunkbench.errors import ChunkbenchError, InvalidRequestError
from chunkbench.guard.pii import PiiDetector, PiiEntity, PiiPolicy


@dataclass(frozen=True)
class MaskedDetection:
    """A detection without its text: type, ``[start, end)`` offsets, length, and the policy's action."""

    entity: str
    start: int
    end: int
    length: int
    action: str  # redact | keep

    @classmethod
    def of(cls, entity: PiiEntity, policy: PiiPolicy) -> MaskedDetection:
        action = "redact" if policy.should_redact(entity) else "keep"
        return cls(entity.type.value, entity.start, entity.end, entity.end - entity.start, action)


@dataclass
class Agreement:
    both: int = 0
    overlap: int = 0
    only: dict[str, int] = field(default_factory=dict)


@dataclass
class FileComparison:
    """One file: its masked detections per detector and how far the detectors agree."""

    path: str
    characters: int
    detections: dict[str, list[MaskedDetection]]
    agreement: Agreement
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def agreement(first: Sequence[PiiEntity], second: Sequence[PiiEntity], names: tuple[str, str]) -> Agreement:
    """``both``: same type and span; ``overlap``: spans that overlap otherwise; the rest found by one only."""
    exact = {(e.type, e.start, e.end) for e in first} & {(e.type, e.start, e.end) for e in second}
    rest_first = [e for e in first if (e.type, e.start, e.end) not in exact]
    rest_second = [e for e in second if (e.type, e.start, e.end) not in exact]

    def overlaps(entity: PiiEntity, others: Sequence[PiiEntity]) -> bool:
        return any(entity.start < other.end and other.start < entity.end for other in others)

    overlapping_first = [e for e in rest_first if overlaps(e, rest_second)]
    overlapping_second = [e for e in rest_second if overlaps(e, rest_first)]
    return Agreement(
        both=len(exact),
        overlap=len(overlapping_first),
        only={
            names[0]: len(rest_first) - len(overlapping_first),
            names[1]: len(rest_second) - len(overlapping_second),
        },
    )


def compare_text(
    text: str, detectors: Mapping[str, PiiDetector], policy: PiiPolicy, *, path: str = "<text>"
) -> FileComparison:
    """Run every detector on ``text`` and apply the one policy to each detection."""
    found = {name: detector.detect(text) for name, detector in detectors.items()}
    names = tuple(found)
    if len(names) != 2:
        raise InvalidRequestError(f"The comparison takes exactly two detectors, got {len(names)}.")
    return FileComparison(
        path=path,
        characters=len(text),
        detections={name: [MaskedDetection.of(e, policy) for e in entities] for name, entities in found.items()},
        agreement=agreement(found[names[0]], found[names[1]], (names[0], names[1])),
    )


def read_text(path: Path, settings: Settings) -> str:
    """A file's text: documents chunkbench parses (PDF, DOCX, HTML, MD…) as their plain text, others as UTF-8."""
    try:
        parser_for(path.name)
    except ChunkbenchError:
        return path.read_text(encoding="utf-8", errors="replace")
    return parse_document(path, settings).plain_text


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given, folders as every file below them (sorted); a missing path is an error."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise InvalidRequestError(f"'{path}' is neither a file nor a folder.", path=str(path))
    return files


def compare_files(
    paths: Sequence[Path], detectors: Mapping[str, PiiDetector], policy: PiiPolicy, settings: Settings
) -> list[FileComparison]:
    """``compare_text`` on each file; a file that cannot be read is reported with its error, not raised."""
    results: list[FileComparison] = []
    for path in expand_paths(paths):
        try:
            text = read_text(path, settings)
        except (ChunkbenchError, OSError) as exc:
            message = exc.message if isinstance(exc, ChunkbenchError) else str(exc)
            empty = Agreement(only=dict.fromkeys(detectors, 0))
            results.append(FileComparison(str(path), 0, {name: [] for name in detectors}, empty, error=message))
            continue
        results.append(compare_text(text, detectors, policy, path=str(path)))
    return results
