"""Question files in the metadata store (list, read, save validated, delete) and their validation against
documents from the database or from text files.

A question file is a row of ``question_files`` holding the bytes as they were uploaded or written, per tenant: a
tenant never lists, reads or overwrites another tenant's files, and every replica (and worker) on the same
database sees the same files without sharing a disk.

Before they moved into the database they lived under ``{data_dir}/files`` (the default tenant's in ``files/``
itself, every other tenant's in ``files/<tenant id>/``). Such a folder is imported once, on the tenant's first use
of its question files with a database that has not imported it (``import_legacy_files``); the folder is left as it
is, and files put there afterwards are not read.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.documents import library
from chunkbench.embedding import roles
from chunkbench.embedding.registry import Purpose
from chunkbench.errors import (
    ChunkbenchError,
    FileTooLargeError,
    InvalidRequestError,
    NotFoundError,
    PathOutsideDataDirError,
    QuestionFileExistsError,
    QuestionFileNotFoundError,
    QuestionSetError,
)
from chunkbench.evaluation.locate import DocumentCatalog, EvidenceReport, resolve_evidence
from chunkbench.evaluation.questions import QUESTION_FILE_SUFFIXES, QuestionSet, parse_question_set
from chunkbench.evaluation.synthetic import (
    GenerationOptions,
    GenerationResult,
    generate_questions,
    no_questions_error,
    require_llm,
)
from chunkbench.models import DocumentState
from chunkbench.storage.app_settings import AppSettingsRepository
from chunkbench.storage.db import Database
from chunkbench.storage.question_files import QuestionFileRepository
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import DEFAULT_TENANT, DocumentRow, QuestionFileRow

logger = logging.getLogger(__name__)

# A plain file name: letters, digits, '.', '_', '-', spaces; no separators, nothing hidden.
_SAFE_NAME = re.compile(r"^\w[\w .-]{0,199}$")
# app_settings key recording that a tenant's old question-file folder was imported into this database.
IMPORT_KEY_PREFIX = "question_files_imported:"
# Where question files live, as messages and the CLI say it.
STORED_IN = "the database"


@dataclass(frozen=True)
class QuestionFileInfo:
    """A question file as listed: size and time, and its question count or why it cannot be read."""

    name: str
    size_bytes: int
    modified_at: datetime
    format: str | None
    question_count: int | None
    reference_count: int | None
    error: str | None = None


def files_dir(settings: Settings, tenant_id: str = DEFAULT_TENANT) -> Path:
    """The tenant's folder of question files from before they moved into the database (tenant ids are slugs: no
    separators, no dots); read once by ``import_legacy_files``, never written."""
    root = settings.data_dir / "files"
    return root if tenant_id == DEFAULT_TENANT else root / tenant_id


def check_name(name: str) -> str:
    """``name`` if it is a usable question-file name: separators, ``..``, hidden names or a wrong suffix are a 400."""
    if "/" in name or "\\" in name or name in {".", ".."} or "\x00" in name:
        raise PathOutsideDataDirError(
            f"'{name}' is a path; give the bare name of a question file (GET /admin/questions lists them).",
            name=name,
        )
    if not _SAFE_NAME.match(name):
        raise InvalidRequestError(
            f"'{name}' is not a usable file name: use letters, digits, '.', '_', '-' and spaces, "
            "starting with a letter or digit (at most 200 characters).",
            name=name,
        )
    if Path(name).suffix.lower() not in QUESTION_FILE_SUFFIXES:
        raise InvalidRequestError(
            f"'{name}' must end in {', '.join(QUESTION_FILE_SUFFIXES)} (question JSON, JSON lines or Chroma CSV).",
            name=name,
        )
    return name


# --------------------------------------------------------------------------- files from before the database


def import_legacy_files(session: Session, settings: Settings, tenant_id: str = DEFAULT_TENANT) -> list[str] | None:
    """Import the tenant's old folder of question files into the database, once per database; the names imported,
    or None when there was nothing to do (no folder, or imported before).

    Each file keeps its bytes and its modification time. A file the database already holds under that name (another
    replica imported the shared folder first) keeps the database's version. A link in the folder that leads out of
    it stops the import with an error naming it (its target would become a downloadable question file); the folder
    is only read, never changed. Runs in ``session``'s transaction (the caller commits; rolled back, the next use
    imports).
    """
    folder = files_dir(settings, tenant_id)
    if not folder.is_dir():
        return None
    marks = AppSettingsRepository(session)
    key = IMPORT_KEY_PREFIX + tenant_id
    if marks.get(key) is not None:
        return None
    root = folder.resolve()
    candidates: list[Path] = []
    for path in sorted(folder.iterdir()):
        # Only what the folder listing showed: question-file names (subfolders are other tenants' or eval inputs).
        if path.suffix.lower() not in QUESTION_FILE_SUFFIXES or not _SAFE_NAME.match(path.name):
            continue
        if not path.resolve().is_relative_to(root):
            raise PathOutsideDataDirError(
                f"'{path.name}' in {folder} points outside it, so it is not imported into the database with the "
                "other question files. Replace the link by the file itself (or remove it), then retry.",
                name=path.name,
            )
        if path.is_file():
            candidates.append(path)
    repository = QuestionFileRepository(session, tenant_id)
    imported: list[str] = []
    kept: list[str] = []
    for path in candidates:
        try:
            content = path.read_bytes()
            modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except OSError as exc:
            raise ChunkbenchError(
                f"Cannot read the question file {path} to import it into the database: {exc}. Make it readable "
                "by chunkbench (or move it out of the folder), then retry.",
                name=path.name,
            ) from exc
        if repository.insert(path.name, content, at=modified) is not None:
            imported.append(path.name)
        else:
            kept.append(path.name)
    marks.set(
        key,
        json.dumps(
            {"folder": str(folder), "imported": imported, "already_in_database": kept,
             "at": datetime.now(UTC).isoformat(timespec="seconds")}
        ),
    )  # fmt: skip
    logger.warning(
        "Imported %d question file(s) of tenant %s from %s into the database (%d already there); the folder is no "
        "longer read: delete it once you are satisfied.",
        len(imported), tenant_id, folder, len(kept),
    )  # fmt: skip
    return imported


def _store(session: Session, settings: Settings, tenant_id: str) -> QuestionFileRepository:
    """The tenant's question files, its old folder imported first (a stat when there is none, then one read).

    The import commits in a transaction of its own: held in the caller's, its writes would keep SQLite's one write
    lock until the request ends, and a benchmark writes its Experiment through another connection meanwhile. A
    caller already writing to SQLite holds that lock (another connection would wait on it): it imports in its own
    transaction instead.
    """
    folder = files_dir(settings, tenant_id)
    if folder.is_dir() and AppSettingsRepository(session).get(IMPORT_KEY_PREFIX + tenant_id) is None:
        bind = session.get_bind()
        if isinstance(bind, Engine) and not (bind.dialect.name == "sqlite" and _writing(session)):
            with Session(bind) as own, own.begin():
                import_legacy_files(own, settings, tenant_id)
        else:
            import_legacy_files(session, settings, tenant_id)
    return QuestionFileRepository(session, tenant_id)


def _writing(session: Session) -> bool:
    """Whether the session's SQLite connection has begun writing (pysqlite opens a transaction only for a write)."""
    return bool(getattr(session.connection().connection.dbapi_connection, "in_transaction", False))


def _not_found(name: str, hint: str = " GET /admin/questions lists them.") -> QuestionFileNotFoundError:
    return QuestionFileNotFoundError(f"No question file '{name}' in {STORED_IN}.{hint}", name=name)


# --------------------------------------------------------------------------- the files


def _info(row: QuestionFileRow) -> QuestionFileInfo:
    try:
        question_set = parse_question_set(row.content, row.name)
    except QuestionSetError as exc:
        return QuestionFileInfo(row.name, row.size_bytes, row.updated_at, None, None, None, exc.message)
    return QuestionFileInfo(
        row.name, row.size_bytes, row.updated_at, question_set.format, len(question_set), question_set.reference_count
    )


def list_question_files(
    session: Session, settings: Settings, tenant_id: str = DEFAULT_TENANT
) -> list[QuestionFileInfo]:
    """Every question file of the tenant (by name), each with its question count or its parse error."""
    return [_info(row) for row in _store(session, settings, tenant_id).list()]


def _row(session: Session, settings: Settings, name: str, tenant_id: str) -> QuestionFileRow:
    check_name(name)  # before the import: a bad name is refused as such
    row = _store(session, settings, tenant_id).get(name)
    if row is None:
        raise _not_found(name)
    return row


def question_file_exists(session: Session, settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> bool:
    check_name(name)
    return _store(session, settings, tenant_id).exists(name)


def question_file_content(session: Session, settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> bytes:
    """A question file's bytes as stored (what a download gives)."""
    return _row(session, settings, name, tenant_id).content


def read_question_file(session: Session, settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> QuestionSet:
    return parse_question_set(question_file_content(session, settings, name, tenant_id), name)


def file_info(session: Session, settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> QuestionFileInfo:
    return _info(_row(session, settings, name, tenant_id))


def save_question_file(
    session: Session,
    settings: Settings,
    name: str,
    content: bytes,
    *,
    overwrite: bool = False,
    limit_size: bool = True,
    tenant_id: str = DEFAULT_TENANT,
) -> tuple[QuestionFileInfo, bool]:
    """Validate ``content`` as a question set, then store it (one row, written whole); returns the file and whether
    it replaced one.

    Nothing is written when the name, size (uploads: ``limit_size``) or content is bad, or when the file exists
    and ``overwrite`` is off.
    """
    check_name(name)
    if limit_size and len(content) > settings.max_question_file_bytes:
        raise FileTooLargeError(
            f"'{name}' is over the {settings.max_question_file_mb:g} MB limit of question files "
            f"({settings.max_question_file_bytes:,} bytes; CHUNKBENCH_MAX_QUESTION_FILE_MB).",
            size_bytes=len(content),
            limit_bytes=settings.max_question_file_bytes,
        )
    parse_question_set(content, name)
    repository = _store(session, settings, tenant_id)
    row = repository.get(name, for_update=True)
    if row is None:
        created = repository.insert(name, content)
        if created is not None:
            return _info(created), False
        row = repository.get(name, for_update=True)  # another writer stored it meanwhile
    if row is None or not overwrite:
        raise QuestionFileExistsError(
            f"A question file '{name}' already exists. Send overwrite=true to replace it, or choose another name.",
            name=name,
        )
    return _info(repository.replace(row, content)), True


def delete_question_file(session: Session, settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> None:
    check_name(name)
    if not _store(session, settings, tenant_id).delete(name):
        raise _not_found(name, "")


# One lock per (tenant, name) for a read-change-write of one file by this process's threads (authoring): SQLite
# has no row lock, and PostgreSQL's (``for_update``) covers the other replicas.
_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def file_lock(name: str, tenant_id: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault((tenant_id, name), threading.Lock())


# --------------------------------------------------------------------------- documents to validate against

# Documents without markdown yet (or whose parsing failed) have nothing to place evidence in.
_UNPARSED = {DocumentState.DISCOVERED.value, DocumentState.PARSING.value, DocumentState.FAILED.value}


def catalog_of(documents: Sequence[DocumentRow]) -> DocumentCatalog:
    """The documents' markdown by id (chunk offsets live in it), found by id, source key, filename or either's stem.

    A filename that two documents share (``a/notes.txt``, ``b/notes.txt``) names neither: their source keys do.
    """
    unique = list({row.id: row for row in documents}.values())
    filenames = Counter(row.filename for row in unique)
    aliases = {row.source_key: row.id for row in unique}
    aliases |= {row.filename: row.id for row in unique if filenames[row.filename] == 1 and row.filename not in aliases}
    return DocumentCatalog({row.id: row.parsed_text or "" for row in unique}, aliases)


def catalog_from_database(session: Session, names: Sequence[str], *, tenant_id: str) -> DocumentCatalog:
    """The named documents (ids or file names; an unknown one is a 404), or every parsed one when none is named."""
    if names:
        return catalog_of([library.resolve(session, name, tenant_id=tenant_id) for name in dict.fromkeys(names)])
    rows, _total = DocumentRepository(session, tenant_id).list(limit=100_000)
    return catalog_of([row for row in rows if row.status not in _UNPARSED])


def _catalog_of_named(session: Session, names: Sequence[str], *, tenant_id: str) -> DocumentCatalog:
    """The documents a question set names that exist (by id, source key, file name, or file stem as Chroma names
    corpora); unknown names are left out and reported per reference."""
    repo = DocumentRepository(session, tenant_id)
    rows: list[DocumentRow] = []
    everything: Sequence[DocumentRow] | None = None
    for name in names:
        row = repo.get_optional(name) or repo.get_by_source_key(name) or repo.get_by_filename(name)
        if row is None:
            everything = everything if everything is not None else repo.list(limit=100_000)[0]
            stems = [r for r in everything if Path(r.filename).stem == name]
            row = stems[0] if len(stems) == 1 else None
        if row is not None:
            rows.append(row)
    return catalog_of(rows)


def catalog_from_files(path: Path) -> DocumentCatalog:
    """Text files as documents, keyed by file name (and found by stem): a file, or every file in a folder.

    Read as UTF-8 exactly as stored, like Chroma's corpora, so offsets are character offsets into the file.
    """
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    elif path.is_file():
        files = [path]
    else:
        raise NotFoundError(f"'{path}' does not exist.", path=str(path))
    texts: dict[str, str] = {}
    for file in files:
        try:
            texts[file.name] = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidRequestError(f"'{file}' cannot be read as UTF-8 text: {exc}.", path=str(file)) from exc
    return DocumentCatalog(texts)


def validate(question_set: QuestionSet, catalog: DocumentCatalog, *, threshold: float) -> EvidenceReport:
    """Place every reference of the set in the catalog's documents (see ``resolve_evidence``)."""
    try:
        return resolve_evidence(question_set, catalog, threshold=threshold)
    except ValueError as exc:
        raise InvalidRequestError(str(exc)) from exc


def validate_against_database(
    session: Session,
    question_set: QuestionSet,
    *,
    tenant_id: str,
    document_names: Sequence[str] = (),
    threshold: float,
) -> EvidenceReport:
    """Validate against the given documents, else the ones the set names, else every parsed document."""
    if document_names:
        catalog = catalog_from_database(session, document_names, tenant_id=tenant_id)
    elif named := question_set.document_names():
        catalog = _catalog_of_named(session, named, tenant_id=tenant_id)
    else:
        catalog = catalog_from_database(session, [], tenant_id=tenant_id)
    return validate(question_set, catalog, threshold=threshold)


# --------------------------------------------------------------------------- synthetic questions


def default_generated_name(filename: str) -> str:
    """``{document stem}_synthetic.json`` with any character a question file name may not hold replaced."""
    stem = re.sub(r"[^\w .-]", "_", Path(filename).stem).strip(" .") or "document"
    return f"{stem[:180]}_synthetic.json"


def generate_question_file(
    database: Database,
    settings: Settings,
    document: str,
    options: GenerationOptions,
    *,
    tenant_id: str,
    out: str | None = None,
    overwrite: bool = False,
) -> tuple[GenerationResult, QuestionFileInfo]:
    """Generate questions about a document (id or file name) with the configured LLM and save them as question JSON.

    Everything that can be refused is checked before the first LLM call: the LLM, the document, the output name.
    """
    client = require_llm(settings)
    # A short session: generation takes minutes and must not hold the database.
    with database.session() as session:
        row = library.resolve(session, document, tenant_id=tenant_id)
        document_id, filename, text = row.id, row.filename, row.parsed_text
        spec = roles.resolve_corpus_model(session, row.last_corpus_embedding_model_id)
        name = out or default_generated_name(filename)
        if question_file_exists(session, settings, name, tenant_id) and not overwrite:
            raise QuestionFileExistsError(
                f"A question file '{name}' already exists. Pass overwrite (--overwrite) or choose another name.",
                name=name,
            )

    def embed(texts: Sequence[str], purpose: Purpose) -> np.ndarray:
        return roles.embed_texts(spec, texts, purpose, settings)

    result = generate_questions(text, client, embed, options, document_id=document_id)
    if not result.question_set.questions:
        raise no_questions_error(result)
    result.question_set.metadata = {
        "generator": "chunkbench synthetic questions (Chroma's method)",
        "document_id": document_id,
        "document": filename,
        "llm_model": client.model,
        "embedding_model": spec.id,
        "requested": options.count,
        "attempts": result.attempts,
        "rejected": result.rejection_counts(),
        "dropped_excerpts": result.dropped_excerpts,
        "options": asdict(options),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    with database.session() as session:
        info, _replaced = save_question_file(
            session,
            settings,
            name,
            result.question_set.to_json().encode("utf-8"),
            overwrite=overwrite,
            limit_size=False,
            tenant_id=tenant_id,
        )
    return result, info
