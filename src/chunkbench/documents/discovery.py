"""Folder discovery: every file under a folder is either a source to ingest or a skipped file with its reason.

Nothing under a folder goes unreported: hidden files, unsupported types, empty, oversized, unreadable files and
anything that is not a regular file (a broken link, a link out of the folder, a socket) each come back as a
:class:`SkippedFile` with a typed :class:`SkipReason`. A hidden folder (``.git``) is one entry with its file count.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from chunkbench.config import Settings
from chunkbench.documents.parsers import supported_suffixes

_SUPPORTED_SHOWN = 40  # the supported list in a message; every new parser makes it longer


class SkipCode(StrEnum):
    """Why a file found in a folder was not read."""

    UNSUPPORTED_TYPE = "unsupported_type"
    HIDDEN = "hidden"
    TOO_LARGE = "too_large"
    EMPTY = "empty"
    NOT_A_REGULAR_FILE = "not_a_regular_file"
    UNREADABLE = "unreadable"


class SkipReason(BaseModel):
    """Why one entry of a folder was skipped: a stable code, a message that says what to do, details."""

    model_config = {"frozen": True}

    code: SkipCode
    message: str
    files: int = Field(1, description="How many files the entry stands for: a hidden folder's file count, else 1")
    details: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest and the source key it is stored under."""

    path: Path
    source_key: str


@dataclass(frozen=True)
class SkippedFile:
    """A file (or hidden folder) found under a folder and not read, keyed by its path below that folder."""

    path: Path
    source_key: str
    reason: SkipReason


def discover_files(paths: Iterable[Path], settings: Settings | None = None) -> Iterator[SourceFile | SkippedFile]:
    """Every file under the given files and directories, recursively, in path order: a source, or skipped with its
    reason. Sizes are checked here only with ``settings`` (``ingest_file`` refuses an oversized file either way).

    A file found in a folder is keyed by its path relative to that folder (``a/notes.txt`` and ``b/notes.txt``
    are two documents); a file named directly, by its filename, and is always a source: naming a hidden or
    unsupported file is asking for it, so ingestion gives its own answer.
    """
    limit = settings.max_upload_bytes if settings is not None else None
    limit_mb = settings.max_upload_mb if settings is not None else None
    suffixes = frozenset(supported_suffixes())  # at run time: parsers register new suffixes
    for path in paths:
        if path.is_dir():
            root = path.resolve()
            yield from _walk(path, root, Path(), suffixes, limit, limit_mb)
        else:
            yield SourceFile(path, path.name)


def _walk(
    folder: Path,
    root: Path,
    relative: Path,
    suffixes: frozenset[str],
    limit: int | None,
    limit_mb: float | None,
) -> Iterator[SourceFile | SkippedFile]:
    try:
        # Sorted by name, depth first: the same order as sorting the relative paths part by part.
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        yield _unreadable_folder(folder, relative, exc)
        return
    for entry in entries:
        path = Path(entry.path)
        key = relative / entry.name
        if entry.name.startswith("."):
            yield _hidden(path, key, entry)
        elif entry.is_dir(follow_symlinks=False):
            yield from _walk(path, root, key, suffixes, limit, limit_mb)
        else:
            yield _classify(path, key.as_posix(), root, suffixes, limit, limit_mb)


def _classify(
    path: Path, key: str, root: Path, suffixes: frozenset[str], limit: int | None, limit_mb: float | None
) -> SourceFile | SkippedFile:
    """A file that is not hidden: a source, or why not; nothing is read, only its metadata."""
    name = path.name
    oddity = _not_regular(path, root)
    if oddity is not None:
        return SkippedFile(path, key, oddity)
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        return SkippedFile(path, key, _unsupported(name, suffix, suffixes))
    try:
        size = path.stat().st_size
    except OSError as exc:
        return SkippedFile(path, key, _unreadable(name, exc))
    if size == 0:
        return SkippedFile(
            path,
            key,
            SkipReason(code=SkipCode.EMPTY, message=f"'{name}' is empty (0 bytes): nothing to ingest."),
        )
    if limit is not None and size > limit:
        message = (
            f"'{name}' is {size / 1048576:.1f} MB; the limit is {limit_mb:g} MB: raise CHUNKBENCH_MAX_UPLOAD_MB "
            "to ingest it."
        )
        return SkippedFile(
            path,
            key,
            SkipReason(code=SkipCode.TOO_LARGE, message=message, details={"size_bytes": size, "limit_bytes": limit}),
        )
    if not os.access(path, os.R_OK):
        return SkippedFile(path, key, _unreadable(name, PermissionError("permission denied")))
    return SourceFile(path, key)


def _not_regular(path: Path, root: Path) -> SkipReason | None:
    """Why ``path`` is not a regular file inside the folder, or None: links are followed only to files inside it."""
    name = path.name
    kind = None
    if path.is_symlink():
        target = path.resolve()
        if not target.exists():
            # Targets are not named: through the API they would show server paths outside the data directory.
            kind, message = "broken link", f"'{name}' is a broken link: what it points to does not exist."
        elif not target.is_relative_to(root):
            kind = "link outside the folder"
            message = f"'{name}' links outside the folder: ingest what it points to by name to include it."
        elif target.is_dir():
            kind = "link to a folder"
            message = f"'{name}' links to a folder, and links to folders are not followed: ingest that folder itself."
        if kind is not None:
            return SkipReason(code=SkipCode.NOT_A_REGULAR_FILE, message=message, details={"kind": kind})
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # a vanished or unreadable file: the size check reports it
    if stat.S_ISREG(mode):
        return None
    kinds = {stat.S_IFSOCK: "socket", stat.S_IFIFO: "named pipe", stat.S_IFCHR: "device", stat.S_IFBLK: "device"}
    what = kinds.get(stat.S_IFMT(mode), "special file")
    return SkipReason(
        code=SkipCode.NOT_A_REGULAR_FILE,
        message=f"'{name}' is a {what}, not a regular file: there is nothing to ingest.",
        details={"kind": what},
    )


def _unsupported(name: str, suffix: str, suffixes: frozenset[str]) -> SkipReason:
    ordered = sorted(suffixes)
    shown = ", ".join(ordered[:_SUPPORTED_SHOWN]) + (" …" if len(ordered) > _SUPPORTED_SHOWN else "")
    what = f"'{suffix}' is not a supported type" if suffix else f"'{name}' has no extension, so its type is unknown"
    return SkipReason(
        code=SkipCode.UNSUPPORTED_TYPE,
        message=f"{what} (supported: {shown}). Convert it to a supported format to ingest it.",
        details={"extension": suffix},
    )


def _unreadable(name: str, exc: OSError) -> SkipReason:
    return SkipReason(
        code=SkipCode.UNREADABLE,
        message=f"'{name}' cannot be read ({exc.strerror or exc}): check its permissions.",
    )


def _unreadable_folder(folder: Path, relative: Path, exc: OSError) -> SkippedFile:
    # Its files cannot be listed, let alone counted: the folder stands as one entry.
    key = relative.as_posix() if relative.parts else "."
    reason = SkipReason(
        code=SkipCode.UNREADABLE,
        message=f"The folder '{key}' cannot be listed ({exc.strerror or exc}): check its permissions.",
        details={"folder": True},
    )
    return SkippedFile(folder, key, reason)


def _hidden(path: Path, key: Path, entry: os.DirEntry[str]) -> SkippedFile:
    """A dot-file, or a dot-folder as one entry with its file count (``.git`` can hold thousands)."""
    if entry.is_dir(follow_symlinks=False):
        count = sum(len(files) for _folder, _dirs, files in os.walk(path))
        reason = SkipReason(
            code=SkipCode.HIDDEN,
            message=f"hidden folder with {count:,} file(s): ingest it by name (its own path) to include it.",
            files=count,
            details={"folder": True},
        )
    else:
        reason = SkipReason(code=SkipCode.HIDDEN, message="hidden file: ingest it by name to include it.")
    return SkippedFile(path, key.as_posix(), reason)
