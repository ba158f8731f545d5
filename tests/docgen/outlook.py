"""Outlook .msg files laid out as [MS-OXMSG] documents them, in an OLE2 compound file written by pycfb (MIT)."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pycfb.cfbutility import CFBWriter

# {00020D0B-0000-0000-C000-000000000046}, Outlook's message CLSID, as the GUID's little-endian bytes on disk.
_MESSAGE_CLSID = uuid.UUID(bytes=uuid.UUID("00020D0B-0000-0000-C000-000000000046").bytes_le)
_PT_LONG, _PT_BOOLEAN, _PT_SYSTIME = 0x0003, 0x000B, 0x0040
_PT_STRING8, _PT_UNICODE, _PT_BINARY, _PT_OBJECT = 0x001E, 0x001F, 0x0102, 0x000D
_READABLE_WRITABLE = 0x0006
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)


@dataclass
class MsgAttachment:
    filename: str
    data: bytes
    mime: str = "application/octet-stream"
    content_id: str = ""  # an inline picture of the HTML body


@dataclass
class MsgMessage:
    subject: str
    sender_name: str = "Ana Silva"
    sender_email: str = "ana@example.com"
    to: str = "Bo Berg"
    cc: str = ""
    sent: datetime | None = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    body: str | None = None
    html: str | None = None
    attachments: list[MsgAttachment] = field(default_factory=list)
    attached_messages: list[MsgMessage] = field(default_factory=list)
    # 8-bit strings in this Windows code page instead of UTF-16 (what Outlook's "ANSI" .msg files hold).
    codepage: int | None = None


class _Streams:
    """The streams and storages of one object, and its properties stream's entries."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.paths: list[str] = []
        self.data: list[bytes | None] = []
        self.entries: list[bytes] = []

    def storage(self, path: str) -> None:
        self.paths.append(path)
        self.data.append(None)

    def variable(self, property_id: int, property_type: int, value: bytes, declared: int | None = None) -> None:
        self.paths.append(f"{self.prefix}__substg1.0_{property_id:04X}{property_type:04X}")
        self.data.append(value)
        size = len(value) if declared is None else declared
        self.entries.append(_entry(property_id, property_type, struct.pack("<II", size, 0)))

    def string(self, property_id: int, text: str, codepage: int | None) -> None:
        if codepage is None:
            self.variable(property_id, _PT_UNICODE, text.encode("utf-16-le"), len(text.encode("utf-16-le")) + 2)
        else:
            self.variable(property_id, _PT_STRING8, text.encode(f"cp{codepage}"), len(text.encode(f"cp{codepage}")) + 1)

    def fixed(self, property_id: int, property_type: int, value: bytes) -> None:
        self.entries.append(_entry(property_id, property_type, value.ljust(8, b"\0")))

    def properties(self, header: bytes) -> None:
        self.paths.append(f"{self.prefix}__properties_version1.0")
        self.data.append(header + b"".join(self.entries))


def _entry(property_id: int, property_type: int, value: bytes) -> bytes:
    return struct.pack("<II", (property_id << 16) | property_type, _READABLE_WRITABLE) + value


def _filetime(moment: datetime) -> bytes:
    return struct.pack("<Q", int((moment - _FILETIME_EPOCH).total_seconds() * 10_000_000))


def _message(streams: _Streams, message: MsgMessage, *, top: bool) -> None:
    cp = message.codepage
    streams.string(0x0037, message.subject, cp)
    streams.string(0x0C1A, message.sender_name, cp)
    streams.string(0x0C1F, message.sender_email, cp)
    streams.string(0x5D01, message.sender_email, cp)
    streams.string(0x0E04, message.to, cp)
    if message.cc:
        streams.string(0x0E03, message.cc, cp)
    if message.body is not None:
        streams.string(0x1000, message.body, cp)
    if message.html is not None:
        streams.variable(0x1013, _PT_BINARY, message.html.encode(f"cp{cp}" if cp else "utf-8"))
    if cp is not None:
        streams.fixed(0x3FFD, _PT_LONG, struct.pack("<i", cp))
    if message.sent is not None:
        streams.fixed(0x0039, _PT_SYSTIME, _filetime(message.sent))
    streams.string(0x001A, "IPM.Note", cp)  # PidTagMessageClass
    number = 0
    for attachment in message.attachments:
        storage = f"{streams.prefix}__attach_version1.0_#{number:08X}"
        streams.storage(storage)
        inner = _Streams(f"{storage}/")
        inner.string(0x3707, attachment.filename, None)
        inner.string(0x3001, attachment.filename, None)
        inner.string(0x370E, attachment.mime, None)
        inner.variable(0x3701, _PT_BINARY, attachment.data)
        inner.fixed(0x3705, _PT_LONG, struct.pack("<i", 1))  # ATTACH_BY_VALUE
        if attachment.content_id:
            inner.string(0x3712, attachment.content_id, None)
            inner.fixed(0x7FFE, _PT_BOOLEAN, struct.pack("<i", 1))
        inner.properties(bytes(8))
        streams.paths += inner.paths
        streams.data += inner.data
        number += 1
    for attached in message.attached_messages:
        storage = f"{streams.prefix}__attach_version1.0_#{number:08X}"
        streams.storage(storage)
        inner = _Streams(f"{storage}/")
        inner.string(0x3001, attached.subject, None)
        inner.fixed(0x3705, _PT_LONG, struct.pack("<i", 5))  # ATTACH_EMBEDDED_MSG
        inner.entries.append(_entry(0x3701, _PT_OBJECT, struct.pack("<II", 0xFFFFFFFF, 0)))
        embedded = _Streams(f"{storage}/__substg1.0_3701000D/")
        inner.storage(f"{storage}/__substg1.0_3701000D")
        _message(embedded, attached, top=False)
        inner.paths += embedded.paths
        inner.data += embedded.data
        inner.properties(bytes(8))
        streams.paths += inner.paths
        streams.data += inner.data
        number += 1
    count = len(message.attachments) + len(message.attached_messages)
    # Top level: 8 reserved, next recipient id, next attachment id, recipient count, attachment count, 8 reserved;
    # an embedded message's header is the same less the last 8 bytes.
    header = bytes(8) + struct.pack("<IIII", 0, count, 0, count) + (bytes(8) if top else b"")
    streams.properties(header)


def write_msg(path: Path, message: MsgMessage) -> Path:
    """Write ``message`` as an .msg: its streams, attachment and embedded-message storages, the named-property
    storage every .msg has, in a compound file whose root CLSID is Outlook's."""
    streams = _Streams("")
    streams.storage("__nameid_version1.0")
    for stream in ("__substg1.0_00020102", "__substg1.0_00030102", "__substg1.0_00040102"):
        streams.paths.append(f"__nameid_version1.0/{stream}")
        streams.data.append(bytes(8))
    _message(streams, message, top=True)
    path.write_bytes(bytes(CFBWriter(streams.paths, streams.data, _MESSAGE_CLSID).data))
    return path
