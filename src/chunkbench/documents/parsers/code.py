"""Source code as a document: the file exactly as decoded, its definitions as the Document Tree's sections.

The markdown and the plain text are the source itself (line ends made ``\\n``, nothing else changed), so every
offset is an offset into the file. Sections are the definitions of ``code_outline.outline`` (a class's methods one
level under it), each over its exact character range; paragraphs are the runs of non-blank lines in between, each
inside the innermost definition holding it. The document's ``kind`` is ``code`` and ``code_language`` names its
language: no rule about written languages applies to it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import TextFormatParser, register
from chunkbench.documents.parsers.code_languages import BY_SUFFIX, LANGUAGES, CodeLanguage
from chunkbench.documents.parsers.code_outline import Definition, outline
from chunkbench.documents.parsers.encoding import decode
from chunkbench.models import DocumentTree, NodeType, ParseResult, TreeNode

CODE = "code"
VERBATIM = "verbatim"  # the heading source of a document read verbatim (``text.VERBATIM``)
# A ``.h`` file is C unless it uses what only C++ has.
_CPP_MARKERS = re.compile(
    r"^\s*(?:class|namespace|template\s*<|public:|private:|using\s+namespace)\b|std::", re.MULTILINE
)
_NON_BLANK_RUN = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")


def read_source(path: Path) -> tuple[str, list[str]]:
    """A source file's text with ``\\n`` line ends, and the parse notes on its encoding (none for UTF-8)."""
    decoded = decode(path.read_bytes())
    return decoded.text.replace("\r\n", "\n").replace("\r", "\n"), decoded.notes


def code_result(
    source: str, language: str, *, warnings: list[str] | None = None, structure: bool = True
) -> ParseResult:
    """The parse result of source code in ``language``; ``structure=False``: one tree root, no sections (a file
    ingested verbatim)."""
    root = TreeNode(node_type=NodeType.DOCUMENT, heading_level=0, start_index=0, end_index=len(source))
    if structure:
        definitions, heading_source = outline(source, language)
    else:
        definitions, heading_source = [], VERBATIM
    paragraphs = _fill(root, source, 0, len(source), definitions, level=1)
    return ParseResult(
        tree=DocumentTree(root=root),
        markdown=source,
        plain_text=source,
        paragraph_count=paragraphs,
        heading_source=heading_source,
        warnings=list(warnings or []),
        kind=CODE,
        code_language=language,
    )


def _fill(node: TreeNode, source: str, start: int, end: int, definitions: list[Definition], level: int) -> int:
    """Add ``source[start:end]``'s definitions (as sections) and the code between them (as paragraphs) to
    ``node``; returns the paragraphs added, at every depth."""
    count = 0
    position = start
    for definition in definitions:
        count += _paragraphs(node, source, position, definition.start)
        section = TreeNode(
            NodeType.SECTION,
            heading=definition.heading,
            heading_level=level,
            start_index=definition.start,
            end_index=definition.end,
        )
        count += _fill(section, source, definition.start, definition.end, definition.children, level + 1)
        node.children.append(section)
        position = definition.end
    return count + _paragraphs(node, source, position, end)


def _paragraphs(node: TreeNode, source: str, start: int, end: int) -> int:
    """Each run of non-blank lines of ``source[start:end]`` as a paragraph of ``node``, trimmed of whitespace."""
    count = 0
    for match in _NON_BLANK_RUN.finditer(source, start, end):
        text = match.group()
        first = match.start() + len(text) - len(text.lstrip())
        last = match.end() - (len(text) - len(text.rstrip()))
        node.children.append(TreeNode(NodeType.PARAGRAPH, text=source[first:last], start_index=first, end_index=last))
        count += 1
    return count


def suffix_language(filename: str, source: str) -> str | None:
    """The programming language a file's suffix names (``.h``: C, or C++ where it uses C++), else ``None``."""
    language = BY_SUFFIX.get(Path(filename).suffix.lower())
    if language is None:
        return None
    if language.name == "c" and Path(filename).suffix.lower() == ".h" and _CPP_MARKERS.search(source):
        return "cpp"
    return language.name


class CodeParser(TextFormatParser):
    """Source code in one programming language (subclassed per language below)."""

    language: ClassVar[CodeLanguage]
    kind = "code"
    verbatim = True  # the source is kept as it is anyway; verbatim only drops the outline

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        source, notes = read_source(path)
        return code_result(source, suffix_language(path.name, source) or self.language.name, warnings=notes)


def _register_languages() -> None:
    for language in LANGUAGES:
        register(
            type(
                f"{language.name.title()}CodeParser",
                (CodeParser,),
                {
                    "language": language,
                    "suffixes": language.suffixes,
                    "mime_type": language.mime_type,
                    "label": f"{language.label} source file",
                    "__doc__": f"{language.label} source code.",
                },
            )
        )


_register_languages()
