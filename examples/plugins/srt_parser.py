"""Example plugin: a parser for SubRip subtitles (``.srt``), one paragraph per cue: its start time, then its text.

After loading, ``.srt`` uploads are accepted (``POST /documents``, ``chunkbench ingest``) like any built-in type.
"""

from __future__ import annotations

import re
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import looks_like_text
from chunkbench.documents.parsers.text import decode_text
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError
from chunkbench.models import ParseResult
from chunkbench.plugins import DocumentParser, register_parser

_CUE_SEPARATOR = re.compile(r"\n[ \t]*\n")
_TIMING = re.compile(r"^(\d{1,2}:\d{2}:\d{2}[,.]\d{3})\s*-->\s*\d{1,2}:\d{2}:\d{2}[,.]\d{3}")


@register_parser
class SrtParser(DocumentParser):
    """A subtitle file: numbered cues of a timing line and one or more lines of text."""

    suffixes = (".srt",)
    mime_type = "application/x-subrip"
    label = "SubRip subtitle file"

    def sniff(self, head: bytes) -> bool:
        return looks_like_text(head)

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        source = decode_text(path.read_bytes()).replace("\r\n", "\n").strip()
        title = Path(path.name).stem
        blocks = [Block("heading", title, level=1)]
        for number, cue in enumerate(_CUE_SEPARATOR.split(source), start=1):
            lines = cue.split("\n")
            timing = next((index for index, line in enumerate(lines) if _TIMING.match(line)), None)
            if timing is None:
                raise CorruptDocumentError(f"'{path.name}': cue {number} has no timing line (00:00:01,000 --> …).")
            start = _TIMING.match(lines[timing]).group(1)  # type: ignore[union-attr]
            words = " ".join(line.strip() for line in lines[timing + 1 :] if line.strip())
            if words:
                blocks.append(Block("paragraph", f"[{start}] {words}"))
        return build_parse_result(blocks, title=title, heading_source="srt")
