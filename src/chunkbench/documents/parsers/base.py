"""The parser interface and its registry: one file per format, registered by suffix."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from chunkbench.config import Settings
from chunkbench.documents.parsers.encoding import looks_like_text
from chunkbench.errors import UnsupportedFileTypeError
from chunkbench.models import ParseResult

_REGISTRY: dict[str, DocumentParser] = {}


class DocumentParser(ABC):
    """Reads one file format into a :class:`ParseResult`."""

    suffixes: ClassVar[tuple[str, ...]]
    mime_type: ClassVar[str]
    label: ClassVar[str]  # how the format is named in messages ("PDF", "Word document")
    # Whether the file's decoded text can be the document as it is (``parse_document(verbatim=True)``): plain
    # text and markdown, not formats whose bytes are markup or binary.
    verbatim: ClassVar[bool] = False
    # What its documents are: "text" (written language) or "code" (source code); what GET /documents/formats says.
    kind: ClassVar[str] = "text"

    @abstractmethod
    def sniff(self, head: bytes) -> bool:
        """Whether the first bytes of a file look like this format (the suffix alone is not trusted)."""

    @abstractmethod
    def parse(self, path: Path, settings: Settings) -> ParseResult:
        """Parse the file; bad input raises a :class:`~chunkbench.errors.DocumentProcessingError`."""


# Letters whose English name starts with a vowel sound: "an HTML page", "an RTF document", "an XML file".
_VOWEL_SOUND_LETTERS = frozenset("AEFHILMNORSX")


def with_article(label: str) -> str:
    """``a PDF``, ``an e-mail (.eml)``, ``an HTML page``: a format's label as a message names it."""
    letters = label.split(" ", 1)[0].rstrip("#+")  # F# and C++ are read as their letter
    spelt = len(letters) == 1 or (letters.isupper() and letters.isalpha() and letters != "JSON")  # PDF, not JSON
    vowel = letters[:1] in _VOWEL_SOUND_LETTERS if spelt else letters[:1].lower() in "aeiou"
    return f"{'an' if vowel else 'a'} {label}"


def register(cls: type[DocumentParser]) -> type[DocumentParser]:
    """Class decorator: make a parser available for its suffixes."""
    instance = cls()
    for suffix in cls.suffixes:
        _REGISTRY[suffix] = instance
    return cls


def supported_suffixes() -> list[str]:
    return sorted(_REGISTRY)


def registered_formats() -> list[tuple[str, DocumentParser]]:
    """Every supported suffix with the parser that reads it, by suffix (plugins' included)."""
    return sorted(_REGISTRY.items())


def parser_for(filename: str) -> DocumentParser:
    """The parser registered for a filename's suffix, or a 415 that lists what is supported."""
    suffix = Path(filename).suffix.lower()
    parser = _REGISTRY.get(suffix)
    if parser is None:
        raise UnsupportedFileTypeError(
            f"'{filename}' has an unsupported type '{suffix or '(no extension)'}'. "
            f"Supported: {', '.join(supported_suffixes())}.",
            filename=filename,
        )
    return parser


class TextFormatParser(DocumentParser):
    """A parser for a text format (HTML, Markdown, plain text): its bytes only need to look like text."""

    def sniff(self, head: bytes) -> bool:
        return looks_like_text(head)


def text_starts_with(head: bytes, starts: tuple[str, ...]) -> bool:
    """Whether a file's first block is text whose first non-blank character is one of ``starts`` (``{`` for JSON,
    ``<`` for XML), in UTF-8, UTF-16 or UTF-32, with or without a byte-order mark."""
    if not looks_like_text(head):
        return False
    for bom in (b"\xef\xbb\xbf", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff", b"\xff\xfe", b"\xfe\xff"):
        if head.startswith(bom):
            head = head[len(bom) :]
            break
    # UTF-16/32 ASCII characters are one byte and zero bytes: without the zeros the first character reads the same.
    stripped = head.replace(b"\x00", b"").lstrip()
    return stripped[:1].decode("latin-1") in starts if stripped else False
