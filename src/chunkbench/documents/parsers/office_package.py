"""What the PPTX and XLSX parsers share before their library opens a file: an OLE2 file named like an OOXML one."""

from __future__ import annotations

from pathlib import Path

from chunkbench.documents.parsers.docx import ole_has_stream
from chunkbench.errors import CorruptDocumentError, EncryptedDocumentError


def refuse_ole(path: Path, application: str, extension: str) -> None:
    """An OLE2 file named like an OOXML one: a password-protected file (encrypted packages are OLE2), or the
    application's legacy binary format."""
    if ole_has_stream(path, "EncryptedPackage"):
        raise EncryptedDocumentError(
            f"'{path.name}' is password-protected. Open it in {application}, remove the password "
            "(File → Info → Protect → Encrypt with Password, clear it), save, and upload it again."
        )
    raise CorruptDocumentError(
        f"'{path.name}' is not a {extension}: it looks like a legacy binary {application} file. "
        f"Open it in {application} or LibreOffice and save it as {extension}."
    )
