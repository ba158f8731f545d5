"""Parsers for every supported format behind one interface (see ``base.py``): PDF, DOCX, DOC, HTML, MD, TXT,
source code, PPTX, XLSX, ODS, CSV, TSV, JSON, JSONL, XML, EML, MSG, EPUB, ODT, RTF, RST and Org."""

from __future__ import annotations

from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers import (  # noqa: F401  (registration)
    code,
    delimited,
    doc,
    docx,
    epub,
    html,
    json_records,
    mail,
    msg,
    ods,
    opendocument,
    org,
    pdf,
    pptx,
    rst,
    text,
    xlsx,
    xml_elements,
)
from chunkbench.documents.parsers.base import (
    DocumentParser,
    parser_for,
    registered_formats,
    supported_suffixes,
    with_article,
)
from chunkbench.errors import EmptyDocumentError, UnsupportedFileTypeError
from chunkbench.models import ParseResult

_SNIFF_BYTES = 8192


def parse_document(
    path: Path, settings: Settings, filename: str | None = None, *, verbatim: bool = False
) -> ParseResult:
    """Parse a file by its name's suffix, after checking its bytes really are that format; ``verbatim``: its
    decoded text as it is (text and markdown files only, see ``text.verbatim_result``)."""
    filename = filename or path.name
    parser = parser_for(filename)
    if verbatim and not parser.verbatim:
        raise UnsupportedFileTypeError(
            f"'{filename}' is {with_article(parser.label)}: only text and markdown files can be ingested verbatim "
            "(as they are).",
            filename=filename,
        )
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    if not head:
        raise EmptyDocumentError(f"'{filename}' is empty (0 bytes). Upload a file with content.")
    if not parser.sniff(head):
        raise UnsupportedFileTypeError(
            f"'{filename}' is named like {with_article(parser.label)} but its content is not one. "
            "Check the file, or rename it with the extension of its real format.",
            filename=filename,
        )
    result = text.verbatim_result(path) if verbatim else parser.parse(path, settings)
    if not result.plain_text.strip():
        raise EmptyDocumentError(f"'{filename}' contains no text to index.")
    return result


__all__ = ["DocumentParser", "ParseResult", "parse_document", "parser_for", "registered_formats", "supported_suffixes"]
