"""Outlook .msg mails, read directly over olefile (BSD-2) by the layout [MS-OXMSG] documents: the same document
as an .eml (subject, From/To/Cc/Date, body), attachments and attached mails (the latter handed on as .eml)."""

from __future__ import annotations

import codecs
import struct
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from pathlib import Path

import olefile

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.docx import OLE_MAGIC
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.parsers.html import declared_charset
from chunkbench.documents.parsers.mail import (
    MAX_ATTACHMENTS,
    clean_filename,
    html_blocks,
    mail_result,
    plain_blocks,
    unique_name,
)
from chunkbench.errors import CorruptDocumentError
from chunkbench.models import Attachment, ParseResult

# Property ids ([MS-OXPROPS]) and types ([MS-OXCDATA] §2.11.1).
_SUBJECT, _BODY, _HTML = 0x0037, 0x1000, 0x1013
_SENDER_NAME, _SENDER_ADDRESS, _SENDER_SMTP = 0x0C1A, 0x0C1F, 0x5D01
_DISPLAY_TO, _DISPLAY_CC = 0x0E04, 0x0E03
_SUBMIT_TIME, _DELIVERY_TIME = 0x0039, 0x0E06
_INTERNET_CODEPAGE, _MESSAGE_CODEPAGE = 0x3FDE, 0x3FFD
_ATTACH_DATA, _ATTACH_FILENAME, _ATTACH_LONG_FILENAME, _DISPLAY_NAME = 0x3701, 0x3704, 0x3707, 0x3001
_ATTACH_METHOD, _ATTACH_MIME, _ATTACH_CONTENT_ID, _ATTACHMENT_HIDDEN = 0x3705, 0x370E, 0x3712, 0x7FFE
_PT_LONG, _PT_BOOLEAN, _PT_SYSTIME = 0x0003, 0x000B, 0x0040
_PT_STRING8, _PT_UNICODE, _PT_BINARY = 0x001E, 0x001F, 0x0102
_ATTACH_BY_VALUE, _ATTACH_EMBEDDED_MSG = 1, 5
# The properties stream's header before its 16-byte entries: top-level message, embedded message, other objects.
_TOP_HEADER, _EMBEDDED_HEADER, _OBJECT_HEADER = 32, 24, 8
_PROPERTIES = "__properties_version1.0"
_ATTACHMENT_PREFIX = "__attach_version1.0_#"
_EMBEDDED = "__substg1.0_3701000D"
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)
_MAX_EMBEDDED_DEPTH = 5  # mails attached to attached mails: deeper ones are reported, not read
_RESAVE = "In Outlook, save the mail again (File → Save As → Outlook Message Format - Unicode), or as .eml"


class _Object:
    """One object of the file (the message, an attachment, an embedded message): its properties by id."""

    def __init__(self, ole: olefile.OleFileIO, storage: str, header: int, codepage: str = "cp1252") -> None:
        self.ole = ole
        self.prefix = f"{storage}/" if storage else ""
        self.fixed = self._fixed_properties(header)
        self.codepage = codepage

    def _fixed_properties(self, header: int) -> dict[int, tuple[int, bytes]]:
        """Fixed-size values ([MS-OXMSG] §2.4.2): property id → (type, the 8 value bytes)."""
        name = f"{self.prefix}{_PROPERTIES}"
        data = self.ole.openstream(name).read() if self.ole.exists(name) else b""
        values: dict[int, tuple[int, bytes]] = {}
        for offset in range(header, len(data) - 15, 16):
            tag = struct.unpack_from("<I", data, offset)[0]
            values[tag >> 16] = (tag & 0xFFFF, data[offset + 8 : offset + 16])
        return values

    def _stream(self, property_id: int, property_type: int) -> bytes | None:
        name = f"{self.prefix}__substg1.0_{property_id:04X}{property_type:04X}"
        return self.ole.openstream(name).read() if self.ole.exists(name) else None

    def string(self, property_id: int) -> str:
        unicode = self._stream(property_id, _PT_UNICODE)
        if unicode is not None:
            return unicode.decode("utf-16-le", errors="replace").rstrip("\x00")
        eight_bit = self._stream(property_id, _PT_STRING8)
        return eight_bit.decode(self.codepage, errors="replace").rstrip("\x00") if eight_bit is not None else ""

    def binary(self, property_id: int) -> bytes | None:
        return self._stream(property_id, _PT_BINARY)

    def integer(self, property_id: int) -> int | None:
        found = self.fixed.get(property_id)
        if found is None or found[0] not in (_PT_LONG, _PT_BOOLEAN):
            return None
        return struct.unpack_from("<i", found[1])[0]

    def time(self, property_id: int) -> datetime | None:
        found = self.fixed.get(property_id)
        if found is None or found[0] != _PT_SYSTIME:
            return None
        ticks = struct.unpack_from("<Q", found[1])[0]  # 100 ns since 1601 (FILETIME)
        return _FILETIME_EPOCH + timedelta(microseconds=ticks // 10) if ticks else None


def _codepage(message: _Object) -> str:
    """The codec of the message's 8-bit strings (PidTagInternetCodepage, else PidTagMessageCodepage)."""
    for property_id in (_INTERNET_CODEPAGE, _MESSAGE_CODEPAGE):
        number = message.integer(property_id)
        codec = {65001: "utf-8", 20127: "ascii", 28591: "latin-1"}.get(number or 0, f"cp{number}")
        if number and _known_codec(codec):
            return codec
    return "cp1252"


def _known_codec(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True


def _sender(message: _Object) -> str:
    name = message.string(_SENDER_NAME)
    address = message.string(_SENDER_SMTP) or message.string(_SENDER_ADDRESS)
    if "@" not in address:  # an Exchange (X.500) address says nothing to a reader
        return name
    return formataddr((name, address)) if name and name != address else address


def _headers(message: _Object) -> list[tuple[str, str]]:
    sent = message.time(_SUBMIT_TIME) or message.time(_DELIVERY_TIME)
    return [
        ("From", _sender(message)),
        ("To", message.string(_DISPLAY_TO)),
        ("Cc", message.string(_DISPLAY_CC)),
        ("Date", format_datetime(sent) if sent else ""),
    ]


def _body(message: _Object) -> tuple[str, str]:
    """The body as ("plain" | "html" | "", text): plain preferred, as for an .eml."""
    plain = message.string(_BODY)
    if plain.strip():
        return "plain", plain
    html = message.binary(_HTML)
    if html:
        return "html", decode(html, declared_charset(html) or message.codepage).text
    html_text = message.string(_HTML)
    return ("html", html_text) if html_text.strip() else ("", "")


def _attachment_storages(ole: olefile.OleFileIO, storage: str) -> list[str]:
    """The attachment storages directly under ``storage``, in their numbered order."""
    depth = len(storage.split("/")) if storage else 0
    found = {
        "/".join(entry[: depth + 1])
        for entry in ole.listdir(streams=True, storages=True)
        if len(entry) > depth and "/".join(entry[:depth]) == storage and entry[depth].startswith(_ATTACHMENT_PREFIX)
    }
    return sorted(found)


def _as_eml(ole: olefile.OleFileIO, storage: str, depth: int, warnings: list[str]) -> bytes:
    """An embedded message written as an .eml (the .eml parser then reads it like any attached mail)."""
    inner = _Object(ole, storage, _EMBEDDED_HEADER)
    inner.codepage = _codepage(inner)
    mail = EmailMessage()
    for name, value in [("Subject", inner.string(_SUBJECT)), *_headers(inner)]:
        if value:
            mail[name] = " ".join(value.split())
    kind, text = _body(inner)
    mail.set_content(text or "", subtype="html" if kind == "html" else "plain")
    for attachment in _attachments(ole, storage, depth + 1, warnings):
        mail.add_attachment(
            attachment.data, maintype="application", subtype="octet-stream", filename=attachment.filename
        )
    return mail.as_bytes()


def _attachments(ole: olefile.OleFileIO, storage: str, depth: int, warnings: list[str]) -> list[Attachment]:
    """Files attached by value and attached mails; inline images (pictures in the body) and linked files skipped."""
    found: list[Attachment] = []
    taken: set[str] = set()
    skipped_images = 0
    for number, attachment_storage in enumerate(_attachment_storages(ole, storage), start=1):
        attachment = _Object(ole, attachment_storage, _OBJECT_HEADER)
        method = attachment.integer(_ATTACH_METHOD) or _ATTACH_BY_VALUE
        mime = attachment.string(_ATTACH_MIME).lower()
        inline = attachment.integer(_ATTACHMENT_HIDDEN) or attachment.string(_ATTACH_CONTENT_ID)
        name = clean_filename(
            attachment.string(_ATTACH_LONG_FILENAME)
            or attachment.string(_ATTACH_FILENAME)
            or attachment.string(_DISPLAY_NAME)
        )
        if method == _ATTACH_EMBEDDED_MSG and ole.exists(f"{attachment_storage}/{_EMBEDDED}"):
            if depth >= _MAX_EMBEDDED_DEPTH:
                warnings.append(f"A mail attached {depth} levels deep was not read.")
                continue
            data = _as_eml(ole, f"{attachment_storage}/{_EMBEDDED}", depth, warnings)
            stem = clean_filename(attachment.string(_DISPLAY_NAME)) or f"attachment-{number}"
            for suffix in (".msg", ".eml"):  # a display name that already ends so is not doubled
                stem = stem.removesuffix(suffix)
            found.append(Attachment(unique_name(f"{stem}.eml", taken), data))
            continue
        if mime.startswith("image/") and inline:
            skipped_images += 1
            continue
        content = attachment.binary(_ATTACH_DATA)
        if content is None:  # by reference (a link to a file elsewhere) or an OLE object: no bytes in the mail
            warnings.append(f"Attachment '{name or number}' is a link or an embedded object, not a file; left out.")
            continue
        found.append(Attachment(unique_name(name or f"attachment-{number}.bin", taken), content))
    if skipped_images:
        warnings.append(f"{skipped_images} inline image(s) of the mail were skipped (pictures hold no text).")
    if len(found) > MAX_ATTACHMENTS:
        warnings.append(f"The mail has {len(found)} attachments; only the first {MAX_ATTACHMENTS} are ingested.")
    return found[:MAX_ATTACHMENTS]


@register
class MsgParser(DocumentParser):
    """Outlook .msg (an OLE2 compound file): read like an .eml, attached mails handed on as .eml."""

    suffixes = (".msg",)
    mime_type = "application/vnd.ms-outlook"
    label = "Outlook message (.msg)"

    def sniff(self, head: bytes) -> bool:
        return head.startswith(OLE_MAGIC)

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        try:
            with olefile.OleFileIO(str(path)) as ole:
                if not ole.exists(_PROPERTIES):
                    raise CorruptDocumentError(
                        f"'{path.name}' is an Office container file but not an Outlook message (it has no "
                        f"'{_PROPERTIES}' stream): it may be a Word or Excel file renamed .msg. Upload the original."
                    )
                message = _Object(ole, "", _TOP_HEADER)
                message.codepage = _codepage(message)
                warnings: list[str] = []
                kind, text = _body(message)
                body = html_blocks(text) if kind == "html" else plain_blocks(text)
                attachments = _attachments(ole, "", 1, warnings)
                subject = " ".join(message.string(_SUBJECT).split())
                return mail_result(subject, _headers(message), body, attachments, warnings, language=None)
        except (OSError, struct.error, IndexError, ValueError, KeyError, UnicodeError, RecursionError) as exc:
            raise CorruptDocumentError(f"'{path.name}' is a damaged Outlook message ({exc}). {_RESAVE}.") from exc
