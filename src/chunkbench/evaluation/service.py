"""Question files under ``{data_dir}/files`` (list, read, save validated, delete) and their validation
against documents from the database or from text files.

Each tenant has its own folder: the default tenant's is ``files/`` itself (as before tenants existed), every
other tenant's is ``files/<tenant id>/``. A tenant never lists, reads or overwrites another tenant's files.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy.orm import Session

from chunkbench.config import Settings
from chunkbench.documents import service as documents
from chunkbench.embedding import service as embedding
from chunkbench.embedding.registry import Purpose
from chunkbench.errors import (
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
from chunkbench.storage.db import Database
from chunkbench.storage.repositories import DocumentRepository
from chunkbench.storage.schema import DEFAULT_TENANT, DocumentRow

# A plain file name: letters, digits, '.', '_', '-', spaces; no separators, nothing hidden.
_SAFE_NAME = re.compile(r"^\w[\w .-]{0,199}$")


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
    """The tenant's question-file folder (tenant ids are slugs: no separators, no dots)."""
    root = settings.data_dir / "files"
    return root if tenant_id == DEFAULT_TENANT else root / tenant_id


def question_file_path(settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> Path:
    """The path of a question file by its bare name; separators, ``..``, hidden names or symlinks out are a 400."""
    if "/" in name or "\\" in name or name in {".", ".."} or "\x00" in name:
        raise PathOutsideDataDirError(
            f"'{name}' is a path; give the bare file name of a question file in {files_dir(settings, tenant_id)}.",
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
            f"'{name}' must end in {', '.join(QUESTION_FILE_SUFFIXES)} (seed JSON, JSON lines or Chroma CSV).",
            name=name,
        )
    root = files_dir(settings, tenant_id).resolve()
    path = root / name
    # A symlink planted in files/ must not lead out of it.
    if path.exists() and not path.resolve().is_relative_to(root):
        raise PathOutsideDataDirError(f"'{name}' points outside {root}.", name=name)
    return path


def _info(path: Path) -> QuestionFileInfo:
    stat = path.stat()
    modified = datetime.fromtimestamp(stat.st_mtime, UTC)
    try:
        question_set = parse_question_set(path.read_bytes(), path.name)
    except QuestionSetError as exc:
        return QuestionFileInfo(path.name, stat.st_size, modified, None, None, None, exc.message)
    return QuestionFileInfo(
        path.name, stat.st_size, modified, question_set.format, len(question_set), question_set.reference_count
    )


def list_question_files(settings: Settings, tenant_id: str = DEFAULT_TENANT) -> list[QuestionFileInfo]:
    """Every question file of the tenant (by name), each with its question count or its parse error."""
    root = files_dir(settings, tenant_id)
    if not root.is_dir():
        return []
    return [
        _info(path)
        for path in sorted(root.iterdir())
        if path.is_file() and path.suffix.lower() in QUESTION_FILE_SUFFIXES and _SAFE_NAME.match(path.name)
    ]


def question_file_content(settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> bytes:
    """A question file's bytes as stored (what a download gives)."""
    path = question_file_path(settings, name, tenant_id)
    if not path.is_file():
        raise QuestionFileNotFoundError(
            f"No question file '{name}' in {files_dir(settings, tenant_id)}. GET /admin/questions lists them.",
            name=name,
        )
    return path.read_bytes()


def read_question_file(settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> QuestionSet:
    return parse_question_set(question_file_content(settings, name, tenant_id), name)


def file_info(settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> QuestionFileInfo:
    path = question_file_path(settings, name, tenant_id)
    if not path.is_file():
        raise QuestionFileNotFoundError(f"No question file '{name}' in {files_dir(settings, tenant_id)}.", name=name)
    return _info(path)


def save_question_file(
    settings: Settings,
    name: str,
    content: bytes,
    *,
    overwrite: bool = False,
    limit_size: bool = True,
    tenant_id: str = DEFAULT_TENANT,
) -> tuple[QuestionFileInfo, bool]:
    """Validate ``content`` as a question set, then write it atomically; returns the file and whether it replaced one.

    Nothing is written when the name, size (uploads: ``limit_size``) or content is bad, or when the file exists
    and ``overwrite`` is off.
    """
    path = question_file_path(settings, name, tenant_id)
    if limit_size and len(content) > settings.max_question_file_bytes:
        raise FileTooLargeError(
            f"'{name}' is over the {settings.max_question_file_mb:g} MB limit of question files "
            f"({settings.max_question_file_bytes:,} bytes; CHUNKBENCH_MAX_QUESTION_FILE_MB).",
            size_bytes=len(content),
            limit_bytes=settings.max_question_file_bytes,
        )
    parse_question_set(content, name)
    existed = path.exists()
    if existed and not overwrite:
        raise QuestionFileExistsError(
            f"A question file '{name}' already exists. Send overwrite=true to replace it, or choose another name.",
            name=name,
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename: a reader never sees half a file.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".upload-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return _info(path), existed


def delete_question_file(settings: Settings, name: str, tenant_id: str = DEFAULT_TENANT) -> None:
    path = question_file_path(settings, name, tenant_id)
    if not path.is_file():
        raise QuestionFileNotFoundError(f"No question file '{name}' in {files_dir(settings, tenant_id)}.", name=name)
    path.unlink()


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
        return catalog_of([documents.resolve(session, name, tenant_id=tenant_id) for name in dict.fromkeys(names)])
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
    """Generate questions about a document (id or file name) with the configured LLM and save them as seed JSON.

    Everything that can be refused is checked before the first LLM call: the LLM, the document, the output name.
    """
    client = require_llm(settings)
    # A short session: generation takes minutes and must not hold the database.
    with database.session() as session:
        row = documents.resolve(session, document, tenant_id=tenant_id)
        document_id, filename, text = row.id, row.filename, row.parsed_text
        spec = embedding.resolve_corpus_model(session, row.last_corpus_embedding_model_id)
    name = out or default_generated_name(filename)
    if question_file_path(settings, name, tenant_id).exists() and not overwrite:
        raise QuestionFileExistsError(
            f"A question file '{name}' already exists. Pass overwrite (--overwrite) or choose another name.",
            name=name,
        )

    def embed(texts: Sequence[str], purpose: Purpose) -> np.ndarray:
        return embedding.embed_texts(spec, texts, purpose, settings)

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
    info, _replaced = save_question_file(
        settings,
        name,
        result.question_set.to_seed_json().encode("utf-8"),
        overwrite=overwrite,
        limit_size=False,
        tenant_id=tenant_id,
    )
    return result, info
