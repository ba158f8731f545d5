"""E-mail (.eml, RFC 5322/MIME) through the stdlib ``email`` package: headers, body, attachments."""

from __future__ import annotations

import mimetypes
import re
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path, PurePosixPath

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.encoding import decode, looks_like_text
from chunkbench.documents.parsers.html import page_blocks
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError
from chunkbench.models import Attachment, ParseResult

# The headers a reader of a mail looks at, in the order a mail client shows them.
SHOWN_HEADERS = ("From", "To", "Cc", "Date")
# A header line ("Name: value"), optionally after an mbox "From " separator line: what every mail starts with.
_FIRST_HEADER = re.compile(rb"\A(?:From [^\r\n]*\r?\n)?[!-9;-~]+:")
# A mail with more is a mailing of files, not a mail with attachments: the rest are reported, not ingested.
MAX_ATTACHMENTS = 50
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_UNSAFE_NAME = re.compile(r"[\x00-\x1f/\\]")


def _header(message: Message, name: str) -> str:
    """A header's decoded value ("" when absent or unreadable: one bad header must not lose the mail)."""
    try:
        value = message.get(name)
    except (ValueError, TypeError, IndexError):  # the header registry's parsers on malformed input
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _text_content(part: Message, warnings: list[str]) -> str:
    """A text part decoded: transfer encoding and charset by the ``email`` package, an unknown charset guessed."""
    try:
        return part.get_content()  # type: ignore[attr-defined]
    except (LookupError, UnicodeError, ValueError, AssertionError):
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            return ""
        decoded = decode(payload)
        warnings.append(
            f"The mail's body declares the charset {part.get_content_charset()!r}, which cannot be decoded; "
            "its encoding was guessed."
        )
        warnings.extend(decoded.notes)
        return decoded.text


def plain_blocks(text: str) -> list[Block]:
    """A text/plain body: paragraphs split at blank lines; line breaks, and quoted replies' ``>`` marks, kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [Block("paragraph", part.strip("\n")) for part in _PARAGRAPH_BREAK.split(text) if part.strip()]


def html_blocks(markup: str) -> list[Block]:
    """A text/html body through the HTML parser; its headings one level below the subject."""
    blocks = page_blocks(markup).blocks
    for block in blocks:
        if block.kind == "heading":
            block.level += 1
    return blocks


def _body_blocks(message: EmailMessage, warnings: list[str]) -> list[Block]:
    """text/plain preferred (the author's words as written), else text/html (multipart/alternative chosen here)."""
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        return []
    text = _text_content(body, warnings)
    return html_blocks(text) if body.get_content_subtype() == "html" else plain_blocks(text)


def clean_filename(raw: str | None) -> str:
    """An attachment's name as sent, without directory parts or control characters ("" when nothing is left)."""
    name = _UNSAFE_NAME.sub("_", PurePosixPath((raw or "").replace("\\", "/")).name).strip()
    return name if name not in (".", "..") else ""


def _safe_name(raw: str | None, part: Message, number: int) -> str:
    """An attachment's base name without directory parts or control characters; a name made up when it has
    none, with the extension of its content type (so the right parser reads it)."""
    name = clean_filename(raw)
    if name:
        return name
    if part.get_content_type() == "message/rfc822":
        return f"attachment-{number}.eml"
    extension = mimetypes.guess_extension(part.get_content_type()) or ".bin"
    return f"attachment-{number}{extension}"


def unique_name(name: str, taken: set[str]) -> str:
    """``name``, or ``stem-2.ext``, ``stem-3.ext``…: two attachments of one mail never share a source key."""
    candidate, number = name, 1
    while candidate.lower() in taken:
        number += 1
        path = PurePosixPath(name)
        candidate = f"{path.stem}-{number}{path.suffix}"
    taken.add(candidate.lower())
    return candidate


def _attachment_bytes(part: Message) -> bytes:
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload(0) if part.is_multipart() else None
        return inner.as_bytes(policy=policy.default) if isinstance(inner, Message) else b""
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _is_inline_image(part: Message) -> bool:
    return part.get_content_maintype() == "image" and part.get_content_disposition() != "attachment"


def _attachments(message: EmailMessage, warnings: list[str]) -> list[Attachment]:
    """Attached files and attached mails (``message/rfc822``); inline images (pictures in the HTML body) skipped."""
    found: list[Attachment] = []
    taken: set[str] = set()
    for number, part in enumerate(message.iter_attachments(), start=1):
        if _is_inline_image(part):
            continue
        try:
            data = _attachment_bytes(part)
        except (ValueError, TypeError, LookupError) as exc:
            warnings.append(f"Attachment {number} of the mail cannot be decoded ({exc}); it was left out.")
            continue
        found.append(Attachment(unique_name(_safe_name(part.get_filename(), part, number), taken), data))
    # Pictures shown in the body (multipart/related, or inline parts): no text to index.
    skipped_images = sum(1 for part in message.walk() if _is_inline_image(part))
    if skipped_images:
        warnings.append(f"{skipped_images} inline image(s) of the mail were skipped (pictures hold no text).")
    if len(found) > MAX_ATTACHMENTS:
        left_out = ", ".join(attachment.filename for attachment in found[MAX_ATTACHMENTS:])
        warnings.append(
            f"The mail has {len(found)} attachments; only the first {MAX_ATTACHMENTS} are ingested "
            f"({left_out} left out)."
        )
        found = found[:MAX_ATTACHMENTS]
    return found


@register
class EmailParser(DocumentParser):
    """RFC 5322 mail: the subject as title and heading, From/To/Cc/Date, the body, the attachments."""

    suffixes = (".eml",)
    mime_type = "message/rfc822"
    label = "e-mail (.eml)"

    def sniff(self, head: bytes) -> bool:
        return looks_like_text(head) and _FIRST_HEADER.match(head.lstrip()) is not None

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        try:
            return self._parse(path)
        except RecursionError as exc:  # the email package recurses once per level of nested parts
            raise CorruptDocumentError(
                f"'{path.name}' nests mails inside mails too deeply to read (hundreds of levels): it is not a mail a "
                "person wrote. Forward the innermost mail on its own and upload that."
            ) from exc

    def _parse(self, path: Path) -> ParseResult:
        with path.open("rb") as handle:
            message = BytesParser(policy=policy.default).parse(handle)
        if not message.keys():
            raise CorruptDocumentError(
                f"'{path.name}' has no mail headers (From, To, Subject…): it is not an e-mail. "
                "Save the mail from your mail client as .eml and upload that."
            )
        warnings: list[str] = []
        body = _body_blocks(message, warnings)
        attachments = _attachments(message, warnings)
        return mail_result(
            _header(message, "Subject"),
            [(name, _header(message, name)) for name in SHOWN_HEADERS],
            body,
            attachments,
            warnings,
            language=_header(message, "Content-Language").split(",")[0].strip() or None,
        )


def mail_result(
    subject: str,
    headers: list[tuple[str, str]],
    body: list[Block],
    attachments: list[Attachment],
    warnings: list[str],
    *,
    language: str | None,
) -> ParseResult:
    """A mail as a document (.eml and .msg alike): the subject as title and level-1 heading, the headers that have
    a value as one paragraph, then the body; the attachments to ingest as documents of their own."""
    blocks = [Block("heading", subject, level=1)] if subject else []
    header_lines = [f"{name}: {value}" for name, value in headers if value]
    if header_lines:
        blocks.append(Block("paragraph", "\n".join(header_lines)))
    blocks.extend(body)
    result = build_parse_result(blocks, title=subject or None, heading_source="email", warnings=warnings)
    result.attachments = attachments
    result.declared_language = language
    return result
