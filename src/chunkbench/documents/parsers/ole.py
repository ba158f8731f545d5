"""OLE2 compound files (.doc, a password-protected Office file): a stream found by its directory entry.

Separate from the DOCX parser because the .doc parser and the PPTX/XLSX guard (``office_package``) read the same
containers: none of them needs python-docx to tell an encrypted or legacy file from a damaged one.
"""

from __future__ import annotations

from pathlib import Path

from chunkbench.errors import EncryptedDocumentError


def _ole_directory_entry(data: bytes, stream: str) -> int | None:
    """Offset of a stream's directory entry in an OLE2 compound file.

    Directory entries are 128-byte records on sector boundaries that start with the UTF-16-LE name
    and hold its byte length (terminator included) at offset 64, so an aligned match with the
    right length is the entry itself, not document text that happens to contain the word.
    """
    name = stream.encode("utf-16-le")
    name_length = (len(name) + 2).to_bytes(2, "little")
    position = data.find(name)
    while position != -1:
        if position % 128 == 0 and data[position + 64 : position + 66] == name_length:
            return position
        position = data.find(name, position + 1)
    return None


def ole_has_stream(path: Path, stream: str) -> bool:
    """Whether an OLE2 compound file (.doc, encrypted .docx) has a stream of that name."""
    return _ole_directory_entry(path.read_bytes(), stream) is not None


def ole_stream_head(path: Path, stream: str, length: int) -> bytes | None:
    """First bytes of an OLE2 stream; ``None`` if there is no such stream, ``b""`` if not locatable.

    A stream's first sector is named by its directory entry, so no FAT walk is needed. Streams
    under the mini-stream cutoff live elsewhere; those are reported as not locatable.
    """
    data = path.read_bytes()
    entry = _ole_directory_entry(data, stream)
    if entry is None:
        return None
    sector_shift = int.from_bytes(data[30:32], "little")
    cutoff = int.from_bytes(data[56:60], "little")
    start = int.from_bytes(data[entry + 116 : entry + 120], "little")
    size = int.from_bytes(data[entry + 120 : entry + 124], "little")
    if sector_shift not in (9, 12) or size < cutoff:
        return b""
    offset = (start + 1) << sector_shift
    return data[offset : offset + min(length, size)]


def refuse_encrypted(path: Path) -> None:
    """Raise :class:`EncryptedDocumentError` for a password-protected Office file."""
    if ole_has_stream(path, "EncryptedPackage"):
        raise EncryptedDocumentError(
            f"'{path.name}' is password-protected. Open it in Word, remove the password "
            "(File → Info → Protect Document → Encrypt with Password, clear it), save, and upload it again."
        )
