"""Legacy Word (.doc) parser: LibreOffice converts it to .docx, which the DOCX parser reads."""

from __future__ import annotations

import tempfile
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers import libreoffice
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.docx import OLE_MAGIC, ZIP_MAGIC, DocxParser
from chunkbench.documents.parsers.ole import ole_stream_head, refuse_encrypted
from chunkbench.errors import CorruptDocumentError, EncryptedDocumentError
from chunkbench.models import ParseResult

# Files saved as "Word 97-2003" by other tools are often RTF; LibreOffice reads those too.
_RTF_MAGIC = b"{\\rtf"


# Word's File Information Block starts with this magic; bit 0 of byte 11 is fEncrypted.
_FIB_MAGIC = b"\xec\xa5"
_FIB_FLAGS_BYTE = 11
_FIB_ENCRYPTED = 0x01


def _check_word_container(path: Path) -> None:
    """Refuse OLE files that are not Word documents, and password-protected ones.

    LibreOffice imports an OLE file it does not recognise as plain text (garbage in, garbage
    indexed), and an encrypted one fails with an unhelpful message: both are caught here.
    """
    refuse_encrypted(path)
    fib = ole_stream_head(path, "WordDocument", _FIB_FLAGS_BYTE + 1)
    if fib is None or (fib and not fib.startswith(_FIB_MAGIC)):
        raise CorruptDocumentError(
            f"'{path.name}' is an Office container file but holds no readable Word document (it may be "
            "damaged, or an Excel/PowerPoint file renamed .doc). Upload the original Word file."
        )
    if len(fib) > _FIB_FLAGS_BYTE and fib[_FIB_FLAGS_BYTE] & _FIB_ENCRYPTED:
        raise EncryptedDocumentError(
            f"'{path.name}' is password-protected. Open it in Word, remove the password "
            "(File → Info → Protect Document), save it as .docx, and upload that."
        )


@register
class DocParser(DocumentParser):
    """Word 97–2003 documents, converted with LibreOffice headless."""

    suffixes = (".doc",)
    mime_type = "application/msword"
    label = "legacy Word document (.doc)"

    def sniff(self, head: bytes) -> bool:
        return head.startswith((OLE_MAGIC, ZIP_MAGIC, _RTF_MAGIC))

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        with path.open("rb") as handle:
            head = handle.read(len(OLE_MAGIC))
        if head.startswith(ZIP_MAGIC):  # a .docx named .doc: no conversion needed
            return DocxParser().parse(path, settings)
        libreoffice.find_soffice(settings)  # say .doc is unsupported here before judging the file
        if head.startswith(OLE_MAGIC):
            _check_word_container(path)
        with tempfile.TemporaryDirectory(prefix="chunkbench-doc-") as out_dir:
            converted = libreoffice.convert(path, "docx", Path(out_dir), settings)
            return DocxParser().parse(converted, settings)
