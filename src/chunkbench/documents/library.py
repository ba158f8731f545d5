"""Documents service: ingest (upload or directory), list, show, delete. Routes and CLI call only this.

A document's identity within its tenant is its **source key**: the path relative to the folder it was ingested
from (POSIX separators), or the filename of a single file or upload. Replacement, "unchanged" and
``duplicate_of`` are decided on it; ``filename`` (the base name) is only what a person reads.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, Field, computed_field
from sqlalchemy import select
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.documents import language as languages
from chunkbench.documents.discovery import SkipCode, SkippedFile, SkipReason, SourceFile, discover_files
from chunkbench.documents.parsers import DocumentParser, parse_document, parser_for, registered_formats
from chunkbench.documents.parsers.text import VERBATIM
from chunkbench.embedding.registry import REGISTRY, language_warnings
from chunkbench.errors import (
    AmbiguousDocumentError,
    ChunkbenchError,
    DocumentNotFoundError,
    EmptyDocumentError,
    FileTooLargeError,
    InvalidRequestError,
    NotFoundError,
    PathOutsideDataDirError,
)
from chunkbench.models import DocumentState, ParseResult, corpus_name
from chunkbench.storage import corpus_generation
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import CorpusRepository, DocumentRepository
from chunkbench.storage.schema import DocumentRow, StrategyRunRow
from chunkbench.storage.vectors import get_vector_store

logger = logging.getLogger(__name__)

_COPY_BLOCK = 1024 * 1024
_SOURCE_KEY_MAX_CHARS = 1024  # documents.source_key
_AMBIGUOUS_SHOWN = 10
# An attachment's source key is its mail's, this separator, and its filename (``inbox/a.eml//report.pdf``). A real
# file's key can never hold it: every key is cleaned of empty path parts (``_clean_source_key``).
ATTACHMENT_SEPARATOR = "//"
# A mail attached to a mail attached to a mail…: deeper attachments are reported, not ingested.
_MAX_ATTACHMENT_DEPTH = 3
_TEMP_NAME_MAX_BYTES = 200  # below every file system's name limit


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


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_COPY_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def detect_language(text: str) -> str:
    """ISO 639-1 code of the text's language, or ``und`` (``documents.language.detect_text``)."""
    return languages.detect_text(text)[0]


def formats() -> list[tuple[str, DocumentParser]]:
    """Every file type ingested: each supported suffix with its parser (``GET /documents/formats``)."""
    return registered_formats()


def _safe_filename(filename: str) -> str:
    """The base name a client sent, without any directory part (``../x.pdf`` is ``x.pdf``)."""
    name = Path(filename.replace("\\", "/")).name.strip()
    if not name or name in {".", ".."}:
        raise InvalidRequestError("The upload has no file name. Send the file with its name.")
    return name


def _clean_source_key(source_key: str) -> str:
    """A source key as stored: relative, POSIX separators, no empty, ``.`` or ``..`` parts."""
    parts = [part for part in source_key.replace("\\", "/").split("/") if part not in ("", ".")]
    key = "/".join(parts)
    if not parts or ".." in parts or len(key) > _SOURCE_KEY_MAX_CHARS:
        raise InvalidRequestError(
            f"{source_key!r} is not a usable source key: give a relative path of at most {_SOURCE_KEY_MAX_CHARS} "
            "characters without '..' parts.",
            source_key=source_key,
        )
    return key


def ingest_file(
    session: Session,
    settings: Settings,
    path: Path,
    *,
    filename: str | None = None,
    source_key: str | None = None,
    tenant_id: str,
    verbatim: bool = False,
) -> IngestResult:
    """Parse one file and store it as a document under ``source_key`` (default: the filename); a failure raises
    and leaves nothing stored. ``verbatim``: a text or markdown file's text exactly as it is (no normalisation,
    no headings), so evidence offsets into the file stay valid; the mode is part of what "unchanged" means.

    Parsing happens before any write, so a bad file never leaves a row, and a bad re-upload never
    destroys the good document it would have replaced. A replacement keeps the replaced document's corpora.
    """
    filename = _safe_filename(filename or path.name)
    key = _clean_source_key(source_key) if source_key is not None else filename
    parser = parser_for(filename)  # 415 before reading anything
    size = path.stat().st_size
    _check_size(filename, size, settings)
    content_hash = sha256_file(path)
    repo = DocumentRepository(session, tenant_id)
    existing = repo.get_by_source_key(key)
    same_mode = existing is not None and (existing.heading_source == VERBATIM) == verbatim
    if existing is not None and existing.content_hash == content_hash and same_mode:
        return IngestResult(
            filename, IngestOutcome.UNCHANGED, key, document=existing, attachments=_unchanged(repo, existing)
        )

    parsed = parse_document(path, settings, filename=filename, verbatim=verbatim)
    warnings = list(parsed.warnings)
    # Attachments are parsed before any write too: a LibreOffice conversion never runs inside the transaction.
    attachments = _parse_attachments(settings, key, parsed, 1, warnings)
    twin = repo.find_by_hash(content_hash)
    replaced_id = None
    corpora = CorpusRepository(session, tenant_id)
    memberships: list[str] = []
    old_attachments: dict[str, tuple[str, list[str]]] = {}
    # A replaced mail's attachments go with it (found by key: also any left without their mail); the new ones keep
    # the corpora an old one of the same key had.
    for child in _attachments_of(repo, key) if existing is not None or attachments else ():
        old_attachments[child.source_key] = (child.id, corpora.corpora_of(child.id))
        repo.delete(child)
    if existing is not None:
        replaced_id = existing.id
        # Deleting the row cascades to its memberships: a re-ingest must not drop the document from its corpora.
        memberships = corpora.corpora_of(existing.id)
        repo.delete(existing)
    guess = languages.document_language(parsed, min_confidence=settings.language_min_confidence)
    row = repo.add(_new_row(filename, key, content_hash, size, parser.mime_type, parsed, guess))
    for name in memberships:
        corpora.add_documents(corpora.get(name), [row.id])
    stored = _store_attachments(
        repo, corpora, row, attachments, memberships, old_attachments, min_confidence=settings.language_min_confidence
    )
    corpus_generation.bump(session, tenant_id)  # in the same transaction as the change
    return IngestResult(
        filename,
        IngestOutcome.REPLACED if replaced_id else IngestOutcome.CREATED,
        key,
        document=row,
        duplicate_of=twin.id if twin is not None and twin.id != replaced_id else None,
        replaced_id=replaced_id,
        warnings=(*warnings, *([guess.note] if guess.note else [])),
        attachments=stored,
        removed_attachment_ids=tuple(sorted(old_id for old_id, _ in old_attachments.values())),
    )


def _check_size(filename: str, size: int, settings: Settings) -> None:
    """Refuse an empty file (400) or one over the upload limit (413), a mail's attachments alike."""
    if size == 0:
        raise EmptyDocumentError(f"'{filename}' is empty (0 bytes). Upload a file with content.")
    if size > settings.max_upload_bytes:
        raise FileTooLargeError(
            f"'{filename}' is {size / 1048576:.1f} MB; the limit is {settings.max_upload_mb:g} MB "
            "(CHUNKBENCH_MAX_UPLOAD_MB).",
            size_bytes=size,
        )


def _attachments_of(repo: DocumentRepository, source_key: str) -> list[DocumentRow]:
    """The documents found inside the one stored under ``source_key``, nested ones too (their keys extend its)."""
    return repo.with_key_prefix(f"{source_key}{ATTACHMENT_SEPARATOR}")


def attachment_source_key(parent_key: str, filename: str) -> str:
    """The source key of a file found inside the document stored under ``parent_key``."""
    return f"{parent_key}{ATTACHMENT_SEPARATOR}{filename}"


@dataclass
class _ParsedAttachment:
    """An attachment parsed (or failed) before the transaction: what will be stored as its own document."""

    filename: str
    source_key: str
    error: ChunkbenchError | None = None
    parsed: ParseResult | None = None
    mime_type: str = ""
    size: int = 0
    content_hash: str = ""
    children: list[_ParsedAttachment] = field(default_factory=list)


def _parse_attachment(settings: Settings, filename: str, data: bytes) -> tuple[ParseResult, str]:
    """An attachment's bytes through the parser of its suffix (and the checks any file gets); its MIME type."""
    parser = parser_for(filename)
    _check_size(filename, len(data), settings)
    # The attachment's own name is kept where it fits, so a parser's messages name the file the user knows.
    fits = len(filename.encode()) <= _TEMP_NAME_MAX_BYTES
    with tempfile.TemporaryDirectory(prefix="chunkbench-attachment-") as tmp:
        path = Path(tmp) / (filename if fits else f"attachment{Path(filename).suffix.lower()}")
        path.write_bytes(data)
        return parse_document(path, settings, filename=filename), parser.mime_type


def _parse_attachments(
    settings: Settings, parent_key: str, parsed: ParseResult, depth: int, warnings: list[str]
) -> list[_ParsedAttachment]:
    """Each attachment parsed on its own: one that fails (no parser, damaged, empty) is reported in ``warnings``
    and never fails the document that carries it."""
    found: list[_ParsedAttachment] = []
    for attachment in parsed.attachments:
        key = attachment_source_key(parent_key, attachment.filename)
        item = _ParsedAttachment(attachment.filename, key)
        try:
            if len(key) > _SOURCE_KEY_MAX_CHARS:
                raise InvalidRequestError(
                    f"The attachment's source key would be longer than {_SOURCE_KEY_MAX_CHARS} characters.",
                    source_key=key,
                )
            item.parsed, item.mime_type = _parse_attachment(settings, attachment.filename, attachment.data)
        except ChunkbenchError as exc:
            item.error = exc
            warnings.append(f"Attachment '{attachment.filename}' was not ingested: {exc.message}")
            found.append(item)
            continue
        item.size = len(attachment.data)
        item.content_hash = hashlib.sha256(attachment.data).hexdigest()
        if item.parsed.attachments and depth >= _MAX_ATTACHMENT_DEPTH:
            warnings.append(
                f"Attachment '{attachment.filename}' carries attachments of its own, nested deeper than "
                f"{_MAX_ATTACHMENT_DEPTH} levels: those were not ingested."
            )
        elif item.parsed.attachments:
            nested_warnings = list(item.parsed.warnings)
            item.children = _parse_attachments(settings, key, item.parsed, depth + 1, nested_warnings)
            item.parsed.warnings = nested_warnings
        found.append(item)
    return found


def _store_attachments(
    repo: DocumentRepository,
    corpora: CorpusRepository,
    parent: DocumentRow,
    attachments: list[_ParsedAttachment],
    memberships: list[str],
    old_attachments: dict[str, tuple[str, list[str]]],
    *,
    min_confidence: float,
) -> tuple[IngestResult, ...]:
    """Each parsed attachment stored as a document whose parent is ``parent``, in ``parent``'s corpora (and those
    an attachment of the same key had before a re-ingest); failures as failed results."""
    results: list[IngestResult] = []
    for item in attachments:
        if item.error is not None or item.parsed is None:
            results.append(IngestResult(item.filename, IngestOutcome.FAILED, item.source_key, error=item.error))
            continue
        twin = repo.find_by_hash(item.content_hash)
        guess = languages.document_language(item.parsed, min_confidence=min_confidence)
        new = _new_row(item.filename, item.source_key, item.content_hash, item.size, item.mime_type, item.parsed, guess)
        new.parent_id = parent.id
        row = repo.add(new)
        replaced_id, old_corpora = old_attachments.get(item.source_key, (None, []))
        for name in sorted({*memberships, *old_corpora}):
            corpora.add_documents(corpora.get(name), [row.id])
        children = _store_attachments(
            repo, corpora, row, item.children, memberships, old_attachments, min_confidence=min_confidence
        )
        results.append(
            IngestResult(
                item.filename,
                IngestOutcome.REPLACED if replaced_id else IngestOutcome.CREATED,
                item.source_key,
                document=row,
                duplicate_of=twin.id if twin is not None else None,
                replaced_id=replaced_id,
                warnings=(*item.parsed.warnings, *([guess.note] if guess.note else [])),
                attachments=children,
            )
        )
    return tuple(results)


def _unchanged(repo: DocumentRepository, document: DocumentRow) -> tuple[IngestResult, ...]:
    """An unchanged document's attachments, unchanged too (the same bytes carry the same attachments)."""
    return tuple(
        IngestResult(
            child.filename,
            IngestOutcome.UNCHANGED,
            child.source_key,
            document=child,
            attachments=_unchanged(repo, child),
        )
        for child in repo.children(document.id)
    )


def _new_row(
    filename: str,
    source_key: str,
    content_hash: str,
    size: int,
    mime_type: str,
    parsed: ParseResult,
    guess: languages.LanguageGuess,
) -> DocumentRow:
    row = DocumentRow(
        id=uuid.uuid4().hex,
        filename=filename,
        source_key=source_key,
        content_hash=content_hash,
        file_size=size,
        mime_type=mime_type,
        page_count=parsed.page_count,
        language=guess.code,
        language_confidence=guess.confidence,
        language_source=guess.source.value,
        kind=parsed.kind,
        code_language=parsed.code_language,
        paragraph_count=parsed.paragraph_count,
        heading_count=len(parsed.tree.headings()),
        heading_source=parsed.heading_source,
        ocr_pages=parsed.ocr_pages,
        parsed_text=parsed.markdown,
        document_tree=parsed.tree.to_dict(),
        chunk_counts={},
        status=DocumentState.DISCOVERED.value,
        attempts=0,
    )
    # The parse already succeeded in memory; walking the lifecycle keeps the attempt count honest.
    DocumentRepository.transition(row, DocumentState.PARSING)
    DocumentRepository.transition(row, DocumentState.PARSED)
    return row


def spool_upload(stream: BinaryIO, filename: str, settings: Settings, directory: Path) -> Path:
    """Copy an upload to a temporary file, refusing it as soon as it passes the size limit."""
    target = directory / _safe_filename(filename)
    written = 0
    with target.open("wb") as out:
        for block in iter(lambda: stream.read(_COPY_BLOCK), b""):
            written += len(block)
            if written > settings.max_upload_bytes:
                raise FileTooLargeError(
                    f"'{target.name}' is larger than the {settings.max_upload_mb:g} MB upload limit "
                    "(CHUNKBENCH_MAX_UPLOAD_MB).",
                    limit_bytes=settings.max_upload_bytes,
                )
            out.write(block)
    return target


def ingest_upload(
    database: Database, settings: Settings, stream: BinaryIO, filename: str, *, tenant_id: str
) -> IngestResult:
    """Ingest an uploaded stream (the API's ``POST /documents``); its source key is the sanitised filename."""
    parser_for(_safe_filename(filename))  # refuse an unsupported type before spooling megabytes
    with tempfile.TemporaryDirectory(prefix="chunkbench-upload-") as tmp:
        path = spool_upload(stream, filename, settings, Path(tmp))
        return _ingest_committed(database, settings, SourceFile(path, path.name), tenant_id=tenant_id)


def _ingest_committed(
    database: Database,
    settings: Settings,
    source: SourceFile,
    *,
    tenant_id: str,
    corpus: str | None = None,
    verbatim: bool = False,
) -> IngestResult:
    """Ingest in its own transaction, joining ``corpus`` (made if missing) in the same one; a replaced document's
    vectors go once the replacement is committed."""
    with database.session() as session:
        result = ingest_file(
            session, settings, source.path, source_key=source.source_key, tenant_id=tenant_id, verbatim=verbatim
        )
        if corpus is not None:  # attachments join the corpus with their mail
            corpora = CorpusRepository(session, tenant_id)
            stored = [r.document.id for r in result.with_attachments() if r.document is not None]
            corpora.add_documents(corpora.get_or_create(corpus), stored)
    for document_id in (result.replaced_id, *result.removed_attachment_ids):
        if document_id is not None:
            _forget_vectors(database, settings, tenant_id, document_id)
    return result


def _forget_vectors(database: Database, settings: Settings, tenant_id: str, document_id: str) -> None:
    # After the SQL commit (DESIGN: deletes flip SQL first): a crash in between leaves unreachable
    # vectors of a document that no longer exists, never a document without its vectors.
    get_vector_store(settings).delete_document(tenant_id, document_id)
    # Bumped again: an answer cached between the commit and now could still have seen those vectors.
    with database.session() as session:
        corpus_generation.bump(session, tenant_id)


def ingest_paths(
    database: Database,
    settings: Settings,
    sources: Iterable[SourceFile | SkippedFile],
    *,
    tenant_id: str,
    corpus: str | None = None,
    verbatim: bool = False,
) -> Iterator[IngestResult]:
    """Ingest files one by one, each in its own transaction (a hostile file fails alone); every file ingested
    (created, replaced or unchanged) joins ``corpus``, which is made if missing; ``verbatim`` as ``ingest_file``.
    A file discovery skipped comes back as a ``skipped`` result, in its place.

    A bad corpus name refuses the whole call here, before any file is read.
    """
    name = corpus_name(corpus) if corpus is not None else None
    return _ingest_each(database, settings, sources, tenant_id=tenant_id, corpus=name, verbatim=verbatim)


def _ingest_each(
    database: Database,
    settings: Settings,
    sources: Iterable[SourceFile | SkippedFile],
    *,
    tenant_id: str,
    corpus: str | None,
    verbatim: bool = False,
) -> Iterator[IngestResult]:
    for source in sources:
        if isinstance(source, SkippedFile):
            yield IngestResult.skipped(source)
            continue
        try:
            if not source.path.is_file():
                raise NotFoundError(f"'{source.path}' does not exist or is not a file.")
            result = _ingest_committed(
                database, settings, source, tenant_id=tenant_id, corpus=corpus, verbatim=verbatim
            )
        except ChunkbenchError as exc:
            result = IngestResult(source.path.name, IngestOutcome.FAILED, source.source_key, error=exc)
        yield result


def resolve_in_data_dir(settings: Settings, relative: str) -> Path:
    """A path under the data directory; anything that escapes it (``..``, absolute, symlink) is a 400."""
    data_dir = settings.data_dir.resolve()
    candidate = (data_dir / relative).resolve()
    if not candidate.is_relative_to(data_dir):
        raise PathOutsideDataDirError(
            f"'{relative}' points outside the data directory. Give a path relative to {data_dir}.",
            path=relative,
        )
    if not candidate.exists():
        raise NotFoundError(f"'{relative}' does not exist under the data directory {data_dir}.", path=relative)
    return candidate


def index_directory(
    database: Database, settings: Settings, relative: str, *, tenant_id: str, corpus: str | None = None
) -> list[IngestResult]:
    """Ingest every supported file under a folder of the data directory (``index-directory``), keyed by its path
    below that folder, and report every other file as skipped; with ``corpus``, every file ingested joins it."""
    root = resolve_in_data_dir(settings, relative)
    found = discover_files([root], settings)
    return list(ingest_paths(database, settings, found, tenant_id=tenant_id, corpus=corpus))


def get_all(
    session: Session,
    *,
    tenant_id: str,
    status: DocumentState | None = None,
    mime_types: Sequence[str] = (),
    corpus: str | None = None,
    limit: int = 100,
    offset: int = 0,
):
    """A page of documents (only the members of ``corpus``, by name or id, when given) and the total."""
    member_of = CorpusRepository(session, tenant_id).get(corpus) if corpus is not None else None
    return DocumentRepository(session, tenant_id).list(
        status=status, mime_types=mime_types, corpus=member_of, limit=limit, offset=offset
    )


def get(session: Session, document_id: str, *, tenant_id: str) -> DocumentRow:
    return DocumentRepository(session, tenant_id).get(document_id)


def corpora_of(session: Session, document_id: str, *, tenant_id: str) -> list[str]:
    """The names of the corpora a document belongs to."""
    return CorpusRepository(session, tenant_id).corpora_of(document_id)


def delete(database: Database, settings: Settings, document_id: str, *, tenant_id: str) -> DocumentRow:
    """Delete a document and its attachments (a mail's files are part of it); their queries, experiments and runs
    go with them (cascade), then their vectors."""
    with database.session() as session:
        repo = DocumentRepository(session, tenant_id)
        row = repo.get(document_id)
        attachments = _attachments_of(repo, row.source_key)
        gone = [document_id, *(child.id for child in attachments)]
        for child in attachments:
            repo.delete(child)
        repo.delete(row)
        corpus_generation.bump(session, tenant_id)
    for gone_id in gone:
        _forget_vectors(database, settings, tenant_id, gone_id)
    return row


def resolve(session: Session, reference: str, *, tenant_id: str) -> DocumentRow:
    """A document by id, by source key, or by a filename that only one document has (the CLI's ``DOC``)."""
    repo = DocumentRepository(session, tenant_id)
    row = repo.get_optional(reference) or repo.get_by_source_key(reference) or repo.get_by_filename(reference)
    if row is not None:
        return row
    keys = repo.source_keys_named(reference)
    if keys:  # the filename is there, but more than once
        shown = ", ".join(keys[:_AMBIGUOUS_SHOWN]) + (" …" if len(keys) > _AMBIGUOUS_SHOWN else "")
        raise AmbiguousDocumentError(
            f"{len(keys)} documents are named '{reference}': {shown}. Name one by its source key or id.",
            filename=reference,
            source_keys=keys,
        )
    raise DocumentNotFoundError(
        f"No document with the id, source key or filename '{reference}'. List documents with "
        "`chunkbench documents list` or GET /documents.",
        document=reference,
    )


@dataclass
class LanguageChange:
    """Documents whose language a user set, and what the models that already processed them cannot read."""

    language: str
    documents: list[DocumentRow]
    warnings: list[str]


def set_language(session: Session, document_ids: Sequence[str], code: str, *, tenant_id: str) -> LanguageChange:
    """Set documents' language (source ``user``, confidence 1); an unknown code is a 400 before anything changes.

    Nothing is re-processed: a Corpus or Boundary model that already processed a document and does not cover the
    new language is named in the warnings (process again with a model that covers it).
    """
    language = languages.user_code(code)
    repo = DocumentRepository(session, tenant_id)
    rows = [repo.get(document_id) for document_id in dict.fromkeys(document_ids)]
    for row in rows:
        row.language = language
        row.language_confidence = 1.0
        row.language_source = languages.LanguageSource.USER.value
    return LanguageChange(language, rows, _processed_warnings(session, rows, tenant_id))


def _processed_warnings(session: Session, rows: Sequence[DocumentRow], tenant_id: str) -> list[str]:
    """The language warnings of the models that built the documents' completed runs, from their language now."""
    by_name = {row.id: row.source_key for row in rows}
    used = session.execute(
        select(StrategyRunRow.document_id, StrategyRunRow.corpus_model_id, StrategyRunRow.boundary_model_id)
        .where(StrategyRunRow.tenant_id == tenant_id)
        .where(StrategyRunRow.document_id.in_(list(by_name)))
        .where(StrategyRunRow.status == "completed")
        .distinct()
    ).all()
    documents: dict[tuple[str, str], dict[str, str | None]] = {}  # (role, model) → source key → language
    language_of = {row.id: row.language for row in rows}
    for document_id, corpus_model, boundary_model in used:
        for role, model_id in (("corpus", corpus_model), ("boundary", boundary_model)):
            if model_id is not None:
                documents.setdefault((role, model_id), {})[by_name[document_id]] = language_of[document_id]
    warnings: list[str] = []
    for (role, model_id), named in sorted(documents.items()):  # sorted: the same order every time
        spec = REGISTRY.get(model_id)
        if spec is not None:
            warnings.extend(w.message for w in language_warnings(role, spec, dict(sorted(named.items()))))
    return warnings
