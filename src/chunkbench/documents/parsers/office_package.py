"""What the PPTX and XLSX parsers share before their library opens a file: the sniff, an OLE2 file named like an
OOXML one refused with its reason, and the zip-bomb guard."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser
from chunkbench.documents.parsers.ole import ole_has_stream
from chunkbench.documents.parsers.zip_container import OLE_MAGIC, ZIP_MAGIC, open_guarded
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


class OfficePackageParser(DocumentParser):
    """An Office Open XML package read by its library once ``check_package`` has passed."""

    application: ClassVar[str]  # "PowerPoint", "Excel": what the messages tell the user to open the file in
    main_part: ClassVar[str]  # the part every such package has ("ppt/presentation.xml")

    def sniff(self, head: bytes) -> bool:
        # A password-protected package is an OLE2 container: accepted here to say so in check_package().
        return head.startswith((ZIP_MAGIC, OLE_MAGIC))

    def check_package(self, path: Path, settings: Settings) -> None:
        """Refuse an OLE2 file (password-protected, or the legacy binary format) and a zip bomb, with the reason."""
        with path.open("rb") as handle:
            if handle.read(len(OLE_MAGIC)) == OLE_MAGIC:
                refuse_ole(path, self.application, self.suffixes[0])
        open_guarded(path, settings, self.label, self.main_part)
