"""Ingest: an upload, a file or a folder's files stored as documents; a mail's attachments as child documents.

A document's identity within its tenant is its **source key**: the path relative to the folder it was ingested
from (POSIX separators), or the filename of a single file or upload. Replacement, "unchanged" and
``duplicate_of`` are decided on it; ``filename`` (the base name) is only what a person reads.

Separate from ``documents.library`` (list, show, delete, resolve, set the language): this is the write path
from bytes to rows, the rest reads or removes what it stored.
"""

from __future__ import annotations

import hashlib
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.documents import language_detection
from chunkbench.documents.discovery import SkippedFile, SourceFile, discover_files
from chunkbench.documents.ingest_results import IngestOutcome, IngestResult
from chunkbench.documents.library import attachment_source_key, attachments_of, forget_vectors
from chunkbench.documents.parsers import DocumentParser, parse_document, parser_for, registered_formats
from chunkbench.documents.parsers.text import VERBATIM
from chunkbench.errors import (
    ChunkbenchError,
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
from chunkbench.storage.schema import DocumentRow

_COPY_BLOCK = 1024 * 1024
_SOURCE_KEY_MAX_CHARS = 1024  # documents.source_key
# A mail attached to a mail attached to a mail…: deeper attachments are reported, not ingested.
_MAX_ATTACHMENT_DEPTH = 3
_TEMP_NAME_MAX_BYTES = 200  # below every file system's name limit


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_COPY_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


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
    for child in attachments_of(repo, key) if existing is not None or attachments else ():
        old_attachments[child.source_key] = (child.id, corpora.corpora_of(child.id))
        repo.delete(child)
    if existing is not None:
        replaced_id = existing.id
        # Deleting the row cascades to its memberships: a re-ingest must not drop the document from its corpora.
        memberships = corpora.corpora_of(existing.id)
        repo.delete(existing)
    guess = language_detection.document_language(parsed, min_confidence=settings.language_min_confidence)
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
        guess = language_detection.document_language(item.parsed, min_confidence=min_confidence)
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
    guess: language_detection.LanguageGuess,
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
            forget_vectors(database, settings, tenant_id, document_id)
    return result


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
