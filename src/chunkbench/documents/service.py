"""Documents service: ingest (upload or directory), list, show, delete. Routes and CLI call only this.

A document's identity within its tenant is its **source key**: the path relative to the folder it was ingested
from (POSIX separators), or the filename of a single file or upload. Replacement, "unchanged" and
``duplicate_of`` are decided on it; ``filename`` (the base name) is only what a person reads.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

import py3langid
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document, parser_for, supported_suffixes
from chunkbench.documents.parsers.text import VERBATIM
from chunkbench.embedding.languages import UNDETERMINED
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
from chunkbench.storage.schema import DocumentRow
from chunkbench.storage.vectors import get_vector_store

logger = logging.getLogger(__name__)

_COPY_BLOCK = 1024 * 1024
_LANGUAGE_SAMPLE_CHARS = 4000
_TOKEN = re.compile(r"\S+")
_NO_LINGUISTIC_CONTENT = "zxx"  # py3langid's (ISO 639-2) code for text in no language
_MIN_LETTER_SHARE = 0.5  # of a sample's visible characters; below it the sample is mostly numbers and table rules
_SOURCE_KEY_MAX_CHARS = 1024  # documents.source_key
_AMBIGUOUS_SHOWN = 10


class IngestOutcome(StrEnum):
    CREATED = "created"
    REPLACED = "replaced"  # same source key, new content: the old document (and what hangs on it) is gone
    UNCHANGED = "unchanged"  # same source key, same bytes: nothing to do
    FAILED = "failed"


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest and the source key it is stored under."""

    path: Path
    source_key: str


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


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_COPY_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def _word_sample(text: str) -> str:
    """The text's first words with a letter in them, up to ``_LANGUAGE_SAMPLE_CHARS`` characters.

    Numbers, dates, amounts and table rules (``| --- |``) say nothing about a language, and a sheet full of them
    reads to py3langid as Italian or as "zxx" (no linguistic content) though its headers are English words.
    """
    words: list[str] = []
    size = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if any(char.isalpha() for char in token):
            words.append(token)
            size += len(token) + 1
            if size >= _LANGUAGE_SAMPLE_CHARS:
                break
    return " ".join(words)


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of the dominant language (py3langid ships its model: no download); ``und`` for text without
    words (numbers only) or without linguistic content; ``None`` for no text."""
    sample = text[:_LANGUAGE_SAMPLE_CHARS].strip()
    if not sample:
        return None
    visible = sum(1 for char in sample if not char.isspace())
    if sum(1 for char in sample if char.isalpha()) < visible * _MIN_LETTER_SHARE:
        # Mostly figures: classify the words alone. Prose keeps its own sample (its line breaks are features).
        sample = _word_sample(text)
        if not sample:
            return UNDETERMINED
    language, _score = py3langid.classify(sample)
    return UNDETERMINED if language == _NO_LINGUISTIC_CONTENT else language


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
    if size == 0:
        raise EmptyDocumentError(f"'{filename}' is empty (0 bytes). Upload a file with content.")
    if size > settings.max_upload_bytes:
        raise FileTooLargeError(
            f"'{filename}' is {size / 1048576:.1f} MB; the limit is {settings.max_upload_mb:g} MB "
            "(CHUNKBENCH_MAX_UPLOAD_MB).",
            size_bytes=size,
        )
    content_hash = sha256_file(path)
    repo = DocumentRepository(session, tenant_id)
    existing = repo.get_by_source_key(key)
    same_mode = existing is not None and (existing.heading_source == VERBATIM) == verbatim
    if existing is not None and existing.content_hash == content_hash and same_mode:
        return IngestResult(filename, IngestOutcome.UNCHANGED, key, document=existing)

    parsed = parse_document(path, settings, filename=filename, verbatim=verbatim)
    twin = repo.find_by_hash(content_hash)
    replaced_id = None
    corpora = CorpusRepository(session, tenant_id)
    memberships: list[str] = []
    if existing is not None:
        replaced_id = existing.id
        # Deleting the row cascades to its memberships: a re-ingest must not drop the document from its corpora.
        memberships = corpora.corpora_of(existing.id)
        repo.delete(existing)
    row = repo.add(_new_row(filename, key, content_hash, size, parser.mime_type, parsed))
    for name in memberships:
        corpora.add_documents(corpora.get(name), [row.id])
    corpus_generation.bump(session, tenant_id)  # in the same transaction as the change
    return IngestResult(
        filename,
        IngestOutcome.REPLACED if replaced_id else IngestOutcome.CREATED,
        key,
        document=row,
        duplicate_of=twin.id if twin is not None and twin.id != replaced_id else None,
        replaced_id=replaced_id,
        warnings=tuple(parsed.warnings),
    )


def _new_row(
    filename: str, source_key: str, content_hash: str, size: int, mime_type: str, parsed: ParseResult
) -> DocumentRow:
    row = DocumentRow(
        id=uuid.uuid4().hex,
        filename=filename,
        source_key=source_key,
        content_hash=content_hash,
        file_size=size,
        mime_type=mime_type,
        page_count=parsed.page_count,
        # Source code is never held to a written language (documents.language will classify text properly).
        language=UNDETERMINED if parsed.kind == "code" else detect_language(parsed.plain_text),
        language_source="detected",
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
        if corpus is not None:
            corpora = CorpusRepository(session, tenant_id)
            corpora.add_documents(corpora.get_or_create(corpus), [result.document.id])
    if result.replaced_id is not None:
        _forget_vectors(database, settings, tenant_id, result.replaced_id)
    return result


def _forget_vectors(database: Database, settings: Settings, tenant_id: str, document_id: str) -> None:
    # After the SQL commit (DESIGN: deletes flip SQL first): a crash in between leaves unreachable
    # vectors of a document that no longer exists, never a document without its vectors.
    get_vector_store(settings).delete_document(tenant_id, document_id)
    # Bumped again: an answer cached between the commit and now could still have seen those vectors.
    with database.session() as session:
        corpus_generation.bump(session, tenant_id)


def discover_files(paths: Iterable[Path]) -> Iterator[SourceFile]:
    """Supported files under the given files and directories, recursively, sorted, hidden ones skipped.

    A file found in a folder is keyed by its path relative to that folder (``a/notes.txt`` and ``b/notes.txt``
    are two documents); a file named directly, by its filename.
    """
    suffixes = set(supported_suffixes())
    for path in paths:
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                relative = candidate.relative_to(path)
                if any(part.startswith(".") for part in relative.parts):
                    continue
                if candidate.is_file() and candidate.suffix.lower() in suffixes:
                    yield SourceFile(candidate, relative.as_posix())
        else:
            yield SourceFile(path, path.name)


def ingest_paths(
    database: Database,
    settings: Settings,
    sources: Iterable[SourceFile],
    *,
    tenant_id: str,
    corpus: str | None = None,
    verbatim: bool = False,
) -> Iterator[IngestResult]:
    """Ingest files one by one, each in its own transaction (a hostile file fails alone); every file ingested
    (created, replaced or unchanged) joins ``corpus``, which is made if missing; ``verbatim`` as ``ingest_file``.

    A bad corpus name refuses the whole call here, before any file is read.
    """
    name = corpus_name(corpus) if corpus is not None else None
    return _ingest_each(database, settings, sources, tenant_id=tenant_id, corpus=name, verbatim=verbatim)


def _ingest_each(
    database: Database,
    settings: Settings,
    sources: Iterable[SourceFile],
    *,
    tenant_id: str,
    corpus: str | None,
    verbatim: bool = False,
) -> Iterator[IngestResult]:
    for source in sources:
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
    below that folder; with ``corpus``, every file ingested joins it."""
    root = resolve_in_data_dir(settings, relative)
    return list(ingest_paths(database, settings, discover_files([root]), tenant_id=tenant_id, corpus=corpus))


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
    """Delete a document; its queries, experiments and runs go with it (cascade), then its vectors."""
    with database.session() as session:
        repo = DocumentRepository(session, tenant_id)
        row = repo.get(document_id)
        repo.delete(row)
        corpus_generation.bump(session, tenant_id)
    _forget_vectors(database, settings, tenant_id, document_id)
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
