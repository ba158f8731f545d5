"""Org mode (Emacs) files, read directly: ``*`` headlines by depth, ``#+TITLE:``, source blocks kept as code."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import TextFormatParser, register
from chunkbench.documents.parsers.encoding import decode
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.models import ParseResult

# Deeper headlines are kept at this level (siblings): real outlines stop far above it, and a tree a thousand
# levels deep would exhaust the recursion of everything that walks it.
MAX_HEADLINE_LEVEL = 16
_HEADLINE = re.compile(r"^(\*+)[ \t]+(.*?)[ \t]*$")
# A headline's furniture: TODO keyword, priority cookie, trailing tags (Org manual §2.2, §5, §6).
_DEFAULT_TODO = ("TODO", "DONE", "NEXT", "WAITING", "CANCELLED", "CANCELED")
# A file's own keywords: ``#+TODO:``, ``#+SEQ_TODO:``, ``#+TYP_TODO:`` (``|`` separates done states, ``(t)`` keys).
_TODO_KEYWORDS = ("TODO", "SEQ_TODO", "TYP_TODO")
_KEY_SHORTCUT = re.compile(r"\(.*\)$")
_PRIORITY = re.compile(r"^\[#[A-Za-z0-9]\][ \t]*")
_TAGS = re.compile(r"[ \t]+:(?:[\w@#%]+:)+$")
_KEYWORD = re.compile(r"^[ \t]*#\+(\w+):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_BLOCK_BEGIN = re.compile(r"^[ \t]*#\+BEGIN_(\w+)(?:[ \t]+(\S+))?", re.IGNORECASE)
_DRAWER = re.compile(r"^[ \t]*:[\w-]+:[ \t]*$")
_DRAWER_END = re.compile(r"^[ \t]*:END:[ \t]*$", re.IGNORECASE)
# Planning lines and clock entries (Org manual §8.3, §8.4): when work was due or done, not text.
_PLANNING = re.compile(r"^[ \t]*(?:SCHEDULED|DEADLINE|CLOSED|CLOCK):")
_COMMENT = re.compile(r"^[ \t]*#(?:[ \t]|$)")
_TABLE_RULE = re.compile(r"^[ \t]*\|[-+]+\|?[ \t]*$")
_LINK = re.compile(r"\[\[([^\]]+)\](?:\[([^\]]+)\])?\]")


def _links(text: str) -> tuple[str, str]:
    """``[[target][description]]`` links: the description (else the target) as text, a markdown link."""
    plain = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    markdown = _LINK.sub(lambda m: f"[{m.group(2)}]({m.group(1)})" if m.group(2) else m.group(1), text)
    return plain, markdown


def _todo_pattern(source: str) -> re.Pattern[str]:
    """The TODO keywords a headline may start with: the usual ones and those the file declares."""
    words = set(_DEFAULT_TODO)
    for keyword in _KEYWORD.finditer(source):
        if keyword.group(1).upper() in _TODO_KEYWORDS:
            words.update(_KEY_SHORTCUT.sub("", word) for word in keyword.group(2).split() if word != "|")
    alternatives = "|".join(re.escape(word) for word in sorted(words, key=lambda w: (-len(w), w)) if word)
    return re.compile(rf"^(?:{alternatives})[ \t]+")


def _headline(text: str, todo: re.Pattern[str]) -> str:
    return _TAGS.sub("", _PRIORITY.sub("", todo.sub("", text)))


def _paragraph(lines: list[str]) -> Block:
    """Body lines up to a blank line: list items and table rows kept one per line, table rules dropped."""
    # Body text is often indented under its headline: the indentation is layout, not text.
    kept = textwrap.dedent("\n".join(line.rstrip() for line in lines if not _TABLE_RULE.match(line))).split("\n")
    rows = [line.strip().strip("|").split("|") for line in kept]
    if kept and all(line.lstrip().startswith("|") for line in kept):  # a table: cells joined like other formats'
        text = "\n".join(" | ".join(cell.strip() for cell in row if cell.strip()) for row in rows)
        return Block("paragraph", text)
    plain, markdown = _links("\n".join(kept))
    return Block("paragraph", plain, markdown=markdown)


def _drawer_end(lines: list[str], start: int) -> int | None:
    """The line of the ``:END:`` closing a drawer opened just before ``start``; ``None``: not a drawer (text)."""
    for number in range(start, len(lines)):
        if _DRAWER_END.match(lines[number]):
            return number
        if _HEADLINE.match(lines[number]):
            return None
    return None


def org_blocks(source: str) -> tuple[list[Block], str | None]:
    """The blocks of an Org document in reading order, and its ``#+TITLE``."""
    lines = source.split("\n")
    todo = _todo_pattern(source)
    blocks: list[Block] = []
    title: str | None = None
    pending: list[str] = []

    def flush() -> None:
        if any(line.strip() for line in pending):
            blocks.append(_paragraph(pending))
        pending.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        headline = _HEADLINE.match(line)
        begin = _BLOCK_BEGIN.match(line)
        keyword = _KEYWORD.match(line)
        if headline:
            flush()
            level = min(len(headline.group(1)), MAX_HEADLINE_LEVEL)
            blocks.append(Block("heading", _links(_headline(headline.group(2), todo))[0], level=level))
        elif begin:
            flush()
            kind, language = begin.group(1).upper(), begin.group(2) or ""
            end = re.compile(rf"^[ \t]*#\+END_{re.escape(kind)}\b", re.IGNORECASE)
            body: list[str] = []
            while index < len(lines) and not end.match(lines[index]):
                body.append(lines[index])
                index += 1
            index += 1  # the #+END_ line (or past the end: an unclosed block runs to the end of the file)
            content = "\n".join(body).strip("\n")
            if not content.strip() or kind == "COMMENT":
                continue
            if kind in ("SRC", "EXAMPLE"):
                blocks.append(
                    Block("paragraph", content, markdown=f"```{language if kind == 'SRC' else ''}\n{content}\n```")
                )
            elif kind == "QUOTE":
                blocks.append(
                    Block("paragraph", content, markdown="\n".join(f"> {row}" for row in content.split("\n")))
                )
            else:  # CENTER, VERSE, EXPORT…: their text
                blocks.append(Block("paragraph", content))
        elif keyword:
            flush()
            if keyword.group(1).upper() == "TITLE" and keyword.group(2):
                title = keyword.group(2)
        elif _DRAWER.match(line) and (end_at := _drawer_end(lines, index)) is not None:
            flush()  # :PROPERTIES:, :LOGBOOK:… up to :END: hold metadata, not text
            index = end_at + 1
        elif _PLANNING.match(line) or _COMMENT.match(line):
            continue
        elif not line.strip():
            flush()
        else:
            pending.append(line)
    flush()
    return blocks, title


@register
class OrgParser(TextFormatParser):
    """Org mode: headlines (``*``, ``**``…) become headings by depth; drawers and planning lines are left out."""

    suffixes = (".org",)
    mime_type = "text/x-org"
    label = "Org mode file"

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        decoded = decode(path.read_bytes())
        source = decoded.text.replace("\r\n", "\n").replace("\r", "\n")
        blocks, title = org_blocks(source)
        if title is None:
            title = next((block.text for block in blocks if block.kind == "heading" and block.level == 1), None)
        return build_parse_result(blocks, title=title, heading_source="org", warnings=decoded.notes)
