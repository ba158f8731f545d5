"""A source file's outline: its top-level definitions (classes, functions, …), each with the ones nested in it.

With a tree-sitter grammar (``code_languages.py``), a definition is a syntax node whose type names one (a
``function_definition``, ``class_declaration``, ``impl_item``, …) found among the file's top-level statements, and
inside a class-like definition (class, struct, impl, trait, interface, module, namespace) among its body's: a
class's methods are its children, up to ``MAX_DEPTH`` levels. Function bodies are not looked into (a nested helper
is part of its function). tree-sitter is error-tolerant: a file with a syntax error still yields the definitions
around the error. Without a grammar, the fallback rule: a definition starts at a line at column 0 that opens with
a definition keyword (``def``, ``fn``, ``func``, ``function``, ``sub``, ``class``, ``CREATE FUNCTION``, …) and runs
to the last non-blank line before the next definition start, or before the next line at column 0 after a blank
line that is not a closer (``}``, ``end``); comments above it are not taken in.

With a grammar, a definition's range takes in the comments and attributes right above it (doc comments,
``#[derive]``), and its decorators; it covers two lines or more (a one-line definition is just code). Its heading
is its signature: the text up to its body, on one line, decorators, annotations and comments left out
(``def load(path, *, strict=False)``, ``impl Display for Point``, ``public static void main(String[] args)``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING

from chunkbench.documents.parsers.code_languages import grammar

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_DEPTH = 3  # namespace > class > method
_MAX_HEADING_CHARS = 120
_DEFINITION = re.compile(
    r"(?:function|generator_function|method|class|abstract_class|struct|union|interface|trait|impl|enum|module|mod"
    r"|namespace|file_scoped_namespace|object|protocol|record|constructor|init|type|singleton_method|macro"
    r"|annotation_type)_(?:definition|declaration|item|specifier)"
    r"|class|module|method|singleton_method|internal_module"
)
# Function-like definitions: their bodies are code, not more outline.
FUNCTION_LIKE = re.compile(r"function|method|constructor|init_declaration|macro")
# Statements that hold a definition (the range is theirs, the heading the definition's): Python decorators, JS/TS
# exports, C++ templates, C typedefs, and JS/TS ``const f = () => {…}``.
_WRAPPERS = frozenset({"decorated_definition", "export_statement", "template_declaration", "type_definition"})
# Nodes whose statements are read as if in their place: what the grammar could not place (ERROR), and C/C++
# conditional compilation (a header's include guard holds all of it).
TRANSPARENT = frozenset({"ERROR", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"})
_VARIABLE_STATEMENTS = frozenset({"lexical_declaration", "variable_declaration"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})
_BODY_TYPES = frozenset(
    {
        "block", "declaration_list", "field_declaration_list", "compound_statement", "statement_block",
        "body_statement", "enumerator_list", "statements",
    }
)  # fmt: skip
LEADING = re.compile(r"comment|attribute|decorator|annotation")
_HEADING_ENDS = re.compile(r"(?:\s|\{|\(|:|=>|=)+$")
_MODIFIER_LINE = re.compile(r"^\s*(?:@|#\[)")
_COMMENT_LINE = re.compile(r"^\s*(?:#|//|/\*|\*|--)")

_FALLBACK_START = re.compile(
    r"(?:(?:export|public|private|protected|internal|static|async|pub|local|abstract|final|inline)\s+)*"
    r"(?:def|defp|defmodule|class|function|fn|func|fun|sub|proc|module|interface|struct|impl|trait|object|enum|macro"
    r"|CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE|TABLE|VIEW|TRIGGER|INDEX|TYPE))\b"
    r"|[A-Za-z_][\w.]*\s*(?:<-|=)\s*function\b",  # R: name <- function(…)
    re.IGNORECASE,
)
_FALLBACK_CLOSER = re.compile(r"(?:[}\])]+[;,]?|end\b.*|END\b.*|\);?)\s*$")


@dataclass
class Definition:
    """One definition: its heading, exact character range in the source, and the definitions nested in it."""

    heading: str
    start: int
    end: int
    children: list[Definition] = field(default_factory=list)


def outline(source: str, language: str) -> tuple[list[Definition], str]:
    """The file's top-level definitions and how they were found: ``tree-sitter``, or ``fallback`` where the language
    has no grammar here."""
    lang = grammar(language)
    if lang is None:
        return _fallback_outline(source), "fallback"
    from tree_sitter import Parser

    data = source.encode("utf-8")
    root = Parser(lang).parse(data).root_node
    reader = _Reader(source, data)
    return reader.definitions(root.children, depth=1), "tree-sitter"


def error_share(source: str, language: str) -> float | None:
    """The share of the source's bytes that the language's grammar cannot place (the tokens an ERROR node holds
    outside any subtree it did parse, and MISSING tokens), or ``None`` without a grammar: near 0 for code in that
    language, high for prose or another language."""
    lang = grammar(language)
    if lang is None:
        return None
    from tree_sitter import Parser

    data = source.encode("utf-8")
    if not data.strip():
        return 0.0
    root = Parser(lang).parse(data).root_node
    bad = 0
    stack = [root] if root.has_error else []
    while stack:
        node = stack.pop()
        if node.is_missing:
            bad += 1
        for child in node.children:
            if node.is_error and child.child_count == 0:
                bad += child.end_byte - child.start_byte
            elif child.has_error or child.is_error or child.is_missing:
                stack.append(child)
    return min(bad / len(data), 1.0)


class _Reader:
    """Turns syntax nodes into definitions, with byte offsets (tree-sitter's) mapped to character offsets."""

    def __init__(self, source: str, data: bytes) -> None:
        self.source = source
        self.data = data
        # Where each character starts, in bytes; only needed when some character is more than one byte.
        self._char_bytes = None if len(data) == len(source) else list(accumulate(len(c.encode()) for c in source))

    def char(self, byte: int) -> int:
        if self._char_bytes is None:
            return byte
        return bisect_right(self._char_bytes, byte)

    def definitions(self, nodes: list[Node], depth: int) -> list[Definition]:
        found: list[Definition] = []
        for index, node in enumerate(nodes):
            if node.type in TRANSPARENT:
                found += self.definitions(node.children, depth)
                continue
            inner = definition_in(node)
            if inner is None or node.start_point.row == node.end_point.row:
                continue
            start = self._leading_start(nodes, index)
            definition = Definition(self._heading(node, inner), self.char(start), self.char(node.end_byte))
            body = definition_body(inner)
            if depth < MAX_DEPTH and body is not None and not FUNCTION_LIKE.search(inner.type):
                definition.children = self.definitions(body.children, depth + 1)
            found.append(definition)
        return found

    def _leading_start(self, nodes: list[Node], index: int) -> int:
        """Where a definition starts once the comments and attributes right above it (no blank line between)
        are taken in."""
        start = nodes[index].start_byte
        for position in range(index - 1, -1, -1):
            previous = nodes[position]
            gap = self.data[previous.end_byte : start]
            if not LEADING.search(previous.type) or gap.strip() or gap.count(b"\n") > 1:
                break
            start = previous.start_byte
        return start

    def _heading(self, node: Node, inner: Node) -> str:
        """The definition's signature: from its start (the inner definition's, past decorators and templates) to
        its body, on one line."""
        first = inner if node.type in ("decorated_definition", "template_declaration") else node
        body = definition_body(inner)
        end = body.start_byte if body is not None and body.start_byte > first.start_byte else None
        text = self.data[first.start_byte : end if end is not None else first.end_byte].decode("utf-8", "replace")
        lines = text.split("\n")
        if end is None:
            lines = lines[:1]
        while len(lines) > 1 and _MODIFIER_LINE.match(lines[0]):
            lines = lines[1:]
        lines = lines[:1] + [line for line in lines[1:] if not _COMMENT_LINE.match(line)]
        heading = _HEADING_ENDS.sub("", " ".join(" ".join(lines).split()))
        if len(heading) > _MAX_HEADING_CHARS:
            heading = heading[: _MAX_HEADING_CHARS - 1].rstrip() + "…"
        return heading or inner.type


def definition_in(node: Node) -> Node | None:
    """The definition a top-level statement is or holds, or ``None``."""
    if node.type in _WRAPPERS:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            inner = next((child for child in node.named_children if definition_in(child) is not None), None)
        if inner is None:
            return None
        return definition_in(inner)
    if node.type in _VARIABLE_STATEMENTS:
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                return value
        return None
    if _DEFINITION.fullmatch(node.type) is None:
        return None
    if node.type.endswith("_specifier") and definition_body(node) is None:
        return None  # a C/C++ ``struct foo`` used as a type, not defined here
    return node


def definition_body(node: Node) -> Node | None:
    """The node holding a definition's body (its block, class body, declaration list), or ``None``."""
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in _BODY_TYPES or child.type.endswith("_body"):
            return child
    return None


def _fallback_outline(source: str) -> list[Definition]:
    """Definitions by the fallback rule (module docstring): keyword lines at column 0, each to the last non-blank
    line before the next top-level line that is not a closer."""
    lines = source.split("\n")
    offsets = [0, *accumulate(len(line) + 1 for line in lines)]
    definitions: list[Definition | None] = []  # None: a one-line definition, dropped at the end
    current: tuple[int, int] | None = None  # (first line, last non-blank line)
    after_blank = False
    for number, line in enumerate(lines):
        if not line.strip():
            after_blank = True
            continue
        top_level = not line[0].isspace()
        starts = top_level and _FALLBACK_START.match(line) is not None
        # A line at column 0 right under the definition continues it (SQL's RETURNS, a wrapped signature).
        ends = top_level and (starts or after_blank) and not _FALLBACK_CLOSER.match(line)
        if current is not None and ends:
            definitions.append(_fallback_definition(lines, offsets, *current))
            current = None
        if current is None and starts:
            current = (number, number)
        elif current is not None:
            current = (current[0], number)
        after_blank = False
    if current is not None:
        definitions.append(_fallback_definition(lines, offsets, *current))
    return [definition for definition in definitions if definition is not None]


def _fallback_definition(lines: list[str], offsets: list[int], first: int, last: int) -> Definition | None:
    if last == first:
        return None  # one line: just code
    heading = _HEADING_ENDS.sub("", " ".join(lines[first].split()))[:_MAX_HEADING_CHARS]
    return Definition(heading, offsets[first], offsets[last] + len(lines[last]))
