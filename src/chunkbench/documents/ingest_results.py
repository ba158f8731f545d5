"""What an ingest reports: each file's outcome (``IngestResult``) and a folder's counts (``IngestSummary``).

Separate from ``documents.ingest`` because every face reads these (routes, CLI, schemas, the chatbot) without the
ingest machinery, and so the ingest module stays readable.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, Field, computed_field

from chunkbench.documents.discovery import SkipCode, SkippedFile, SkipReason
from chunkbench.errors import ChunkbenchError
from chunkbench.storage.schema import DocumentRow


class IngestOutcome(StrEnum):
    CREATED = "created"
    REPLACED = "replaced"  # same source key, new content: the old document (and what hangs on it) is gone
    UNCHANGED = "unchanged"  # same source key, same bytes: nothing to do
    FAILED = "failed"  # refused: read and found bad (corrupt, encrypted, scanned, …); ``error`` says why
    SKIPPED = "skipped"  # found in a folder, not read (hidden, unsupported type, empty, …); ``skip_reason`` says why


@dataclass
class IngestResult:
    """What happened to one file."""

    filename: str
    outcome: IngestOutcome
    source_key: str
    document: DocumentRow | None = None
    duplicate_of: str | None = None  # another document (other source key) with identical content
    replaced_id: str | None = None
    error: ChunkbenchError | None = None
    warnings: tuple[str, ...] = ()
    # The documents found inside this one (a mail's attachments), each stored as its own document.
    attachments: tuple[IngestResult, ...] = ()
    # The replaced document's attachments, deleted with it: their vectors go once the transaction commits.
    removed_attachment_ids: tuple[str, ...] = ()
    skip_reason: SkipReason | None = None

    def with_attachments(self) -> Iterator[IngestResult]:
        """This result, then its attachments' results, depth first."""
        yield self
        for attachment in self.attachments:
            yield from attachment.with_attachments()

    @classmethod
    def skipped(cls, found: SkippedFile) -> IngestResult:
        return cls(found.path.name, IngestOutcome.SKIPPED, found.source_key, skip_reason=found.reason)


_SKIP_LABELS = {
    SkipCode.UNSUPPORTED_TYPE: "unsupported",
    SkipCode.HIDDEN: "hidden",
    SkipCode.TOO_LARGE: "too large",
    SkipCode.EMPTY: "empty",
    SkipCode.NOT_A_REGULAR_FILE: "not regular",  # links, sockets, pipes
    SkipCode.UNREADABLE: "unreadable",
}


class IngestSummary(BaseModel):
    """What a folder ingest did, counted in files: ``files == ingested + refused + skipped`` always."""

    files: int = Field(description="Files found (a hidden folder counts its files)")
    ingested: int = Field(description="created + replaced + unchanged")
    created: int
    replaced: int
    unchanged: int
    refused: int = Field(description="Read and refused (outcome failed): corrupt, encrypted, scanned, …")
    skipped: int = Field(description="Not read (outcome skipped): the sum of skipped_by_reason")
    skipped_by_reason: dict[SkipCode, int] = Field(description="Skipped files by reason code; only non-zero ones")

    @classmethod
    def of(cls, results: Iterable[IngestResult]) -> IngestSummary:
        outcomes = dict.fromkeys(IngestOutcome, 0)
        by_reason = dict.fromkeys(SkipCode, 0)
        for result in results:
            if result.skip_reason is not None:
                by_reason[result.skip_reason.code] += result.skip_reason.files
            else:
                outcomes[result.outcome] += 1
        ingested = sum(outcomes[o] for o in (IngestOutcome.CREATED, IngestOutcome.REPLACED, IngestOutcome.UNCHANGED))
        skipped = sum(by_reason.values())
        return cls(
            files=ingested + outcomes[IngestOutcome.FAILED] + skipped,
            ingested=ingested,
            created=outcomes[IngestOutcome.CREATED],
            replaced=outcomes[IngestOutcome.REPLACED],
            unchanged=outcomes[IngestOutcome.UNCHANGED],
            refused=outcomes[IngestOutcome.FAILED],
            skipped=skipped,
            skipped_by_reason={code: count for code, count in by_reason.items() if count},  # SkipCode order
        )

    @computed_field(  # type: ignore[prop-decorator]  # pydantic's documented form; mypy cannot type it
        description='One line for people: "213 files: 190 ingested, 12 refused, 11 unsupported"'
    )
    @property
    def line(self) -> str:
        ingested = f"{self.ingested} ingested"
        if self.replaced or self.unchanged:
            kinds = [(self.created, "new"), (self.replaced, "replaced"), (self.unchanged, "unchanged")]
            ingested += " (" + ", ".join(f"{count} {label}" for count, label in kinds if count) + ")"
        parts = [ingested, f"{self.refused} refused"]
        parts += [f"{count} {_SKIP_LABELS[code]}" for code, count in self.skipped_by_reason.items()]
        return f"{self.files} file{'' if self.files == 1 else 's'}: " + ", ".join(parts)
