"""The zip-bomb guard shared by every zip-based format (DOCX, PPTX, XLSX, ODS): sizes, entry count and compression
ratio are checked before any library inflates a part, and a part is never inflated past a cap."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path, PurePosixPath

from lxml import etree

from chunkbench.config import Settings
from chunkbench.errors import ArchiveBombError, CorruptDocumentError

ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
# Compression ratios of real office parts stay far below this; zip bombs are in the thousands.
MAX_RATIO = 200
_RATIO_MIN_BYTES = 1024 * 1024
SMALL_PART_MAX_BYTES = 1024 * 1024  # relationships, properties, manifests
OFFICE_DOCUMENT_REL = "/officeDocument"
# Entity expansion and network access stay off for every part read here: the parts are the uploader's bytes.
SAFE_XML = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
# OSError: a damaged local header makes zipfile seek before the start of the file.
READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, etree.XMLSyntaxError)


def read_capped(archive: zipfile.ZipFile, name: str, cap: int, label: str) -> bytes:
    """Inflate one entry, stopping past ``cap`` bytes whatever its header declares."""
    with archive.open(name) as handle:
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise ArchiveBombError(
            f"The {label}'s part '{name}' inflates beyond {cap // (1024 * 1024)} MB: it looks like "
            "a zip bomb. If it is a genuine document, split it or raise CHUNKBENCH_MAX_DOCX_UNCOMPRESSED_MB."
        )
    return data


def check_entries(path: Path, archive: zipfile.ZipFile, settings: Settings) -> set[str]:
    """Refuse an archive with too many entries, too large once inflated, or absurdly compressed; its entry names.

    The limits are the ``CHUNKBENCH_MAX_DOCX_*`` settings, named for the first zip format they guarded.
    """
    entries = archive.infolist()
    if len(entries) > settings.max_docx_entries:
        raise ArchiveBombError(
            f"'{path.name}' holds {len(entries)} files inside its zip container (at most "
            f"{settings.max_docx_entries} allowed): it looks like a zip bomb. If it is genuine, "
            "raise CHUNKBENCH_MAX_DOCX_ENTRIES."
        )
    if sum(entry.file_size for entry in entries) > settings.max_docx_uncompressed_bytes:
        raise ArchiveBombError(
            f"'{path.name}' would inflate beyond {settings.max_docx_uncompressed_bytes // (1024 * 1024)} MB "
            "when unzipped: it looks like a zip bomb. If it is a genuine document, split it or raise "
            "CHUNKBENCH_MAX_DOCX_UNCOMPRESSED_MB."
        )
    for entry in entries:
        if entry.file_size > _RATIO_MIN_BYTES and entry.file_size > MAX_RATIO * max(entry.compress_size, 1):
            raise ArchiveBombError(
                f"'{path.name}' contains '{entry.filename}', compressed more than {MAX_RATIO}:1 to inflate to "
                f"{entry.file_size // (1024 * 1024)} MB: it looks like a zip bomb. "
                "Re-save the document in the application that made it and upload it again."
            )
    return {entry.filename for entry in entries}


def package_targets(archive: zipfile.ZipFile, names: set[str], label: str) -> dict[str, str]:
    """An OOXML package's relationships (``_rels/.rels``): the type's last path segment → part name."""
    if "_rels/.rels" not in names:
        return {}
    root = etree.fromstring(read_capped(archive, "_rels/.rels", SMALL_PART_MAX_BYTES, label), SAFE_XML)
    targets: dict[str, str] = {}
    for rel in root:
        rel_type, target = rel.get("Type", ""), rel.get("Target", "")
        if target and rel.get("TargetMode") != "External":
            targets[rel_type[rel_type.rfind("/") :]] = str(PurePosixPath(target.lstrip("/")))
    return targets


def open_guarded(path: Path, settings: Settings, label: str, main_part: str) -> set[str]:
    """Check an OOXML package (zip bomb, damage, its main part present) before a library opens it; its entry
    names. ``main_part`` is where the format's main part lives when the relationships do not say."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = check_entries(path, archive, settings)
            main = package_targets(archive, names, label).get(OFFICE_DOCUMENT_REL, main_part)
            if main in names and PurePosixPath(main).name != PurePosixPath(main_part).name:
                raise CorruptDocumentError(
                    f"'{path.name}' is an Office file but not a {label}: its main part is '{main}'. "
                    "Rename it with the extension of its real format (.docx, .xlsx, .pptx) and upload it again."
                )
            if main not in names:
                raise CorruptDocumentError(
                    f"'{path.name}' is a zip file but not a {label} (no '{main}' inside). "
                    "Open it in the application that made it and save it again in this format."
                )
            # The declared sizes were checked above; this bounds what is really inflated, and checks the CRC of
            # the part that matters before the library reads it.
            read_capped(archive, main, settings.max_docx_uncompressed_bytes, label)
            return names
    except READ_ERRORS as exc:
        raise damaged(path, exc) from exc


def damaged(path: Path, exc: BaseException) -> CorruptDocumentError:
    """The error for a zip container that cannot be read."""
    return CorruptDocumentError(
        f"'{path.name}' is damaged: its zip container cannot be read ({exc}). "
        "Open it in the application that made it, save it again, and re-upload."
    )
