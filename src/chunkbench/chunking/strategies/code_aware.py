"""Code-aware chunking: source code cut at its definitions, each chunk knowing its symbol path."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from chunkbench.chunking.base import (
    Chunk,
    ChunkFactory,
    ChunkingInput,
    ChunkingStrategy,
    StrategyParams,
    register_strategy,
)
from chunkbench.chunking.strategies.fixed_size import token_windows
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.documents.parsers.code_languages import BY_NAME, BY_SUFFIX, grammar
from chunkbench.documents.parsers.code_outline import (
    FUNCTION_LIKE,
    LEADING,
    TRANSPARENT,
    definition_body,
    definition_in,
)
from chunkbench.models import StrategyName
from chunkbench.text.tokens import Tokenizer, get_tokenizer

if TYPE_CHECKING:
    from tree_sitter import Node

# The cl100k tokens a ``# path: module.Class.method`` line takes before the chunk (see ``size_params``).
SYMBOL_PREFIX_TOKENS = 24
# Line comments by language; a language not listed here comments with ``//``.
_HASH_COMMENTS = frozenset({"python", "ruby", "bash", "perl", "r", "elixir", "julia", "powershell"})
_DASH_COMMENTS = frozenset({"lua", "sql", "haskell"})
# Fields that name a definition, tried in order: ``impl Display for Point`` is named by its type.
_NAME_FIELDS = ("name", "type", "declarator")


class CodeAwareParams(StrategyParams):
    """Chunk length, the size under which adjacent definitions merge, and whether the symbol path is embedded."""

    chunk_size: int = Field(512, ge=16, le=8192, description="Maximum tokens per chunk (cl100k_base)")
    min_chunk_tokens: int = Field(
        64,
        ge=0,
        le=8192,
        description="A definition or statement shorter than this joins its neighbours while they fit in one chunk",
    )
    prefix_symbol: bool = Field(
        False, description="Embed each chunk behind a comment naming its symbol path (# path: module.Class.method)"
    )


@dataclass
class _Item:
    """A span of the source that is cut whole when it fits: a definition, a statement, a line.

    Siblings tile their parent: ``end`` is where the next sibling starts, so the code between them (blank lines,
    a closing brace) belongs to the item before it and no character falls between two items.
    """

    start: int
    end: int
    path: tuple[str, ...]
    node: Node | None = None  # its syntax node; None for a line
    is_definition: bool = False
    # A definition's header (signature, class doc comment, opening brace) above its first member or statement.
    is_header: bool = False


def comment_prefix(language: str) -> str:
    """The line-comment marker of ``language``."""
    if language in _HASH_COMMENTS:
        return "#"
    return "--" if language in _DASH_COMMENTS else "//"


def code_language(document: ChunkingInput) -> str | None:
    """The programming language of the document: as ingested (``code_language``), else as its suffix names."""
    if document.code_language is not None:
        return document.code_language if document.code_language in BY_NAME else None
    language = BY_SUFFIX.get(PurePath(document.document_name).suffix.lower())
    return language.name if language is not None else None


class _Source:
    """One source file: its syntax tree, byte → character offsets, and exact token counts of its slices."""

    def __init__(self, text: str, root: Node, data: bytes, tokenizer: Tokenizer) -> None:
        self.text = text
        self.root = root
        self.data = data
        self.tokenizer = tokenizer
        # tree-sitter reports bytes; where every character is one byte they are the character offsets.
        self._char_bytes = None if len(data) == len(text) else list(accumulate(len(c.encode()) for c in text))

    def char(self, byte: int) -> int:
        return byte if self._char_bytes is None else bisect_right(self._char_bytes, byte)

    def count(self, start: int, end: int) -> int:
        return self.tokenizer.count(self.text[start:end].strip())

    def leading_start(self, nodes: list[Node], index: int) -> int:
        """The byte where ``nodes[index]`` starts once the comments and attributes right above it are taken in."""
        start = nodes[index].start_byte
        for position in range(index - 1, -1, -1):
            previous = nodes[position]
            gap = self.data[previous.end_byte : start]
            if not LEADING.search(previous.type) or gap.strip() or gap.count(b"\n") > 1:
                break
            start = previous.start_byte
        return start

    def name(self, inner: Node) -> tuple[str, ...]:
        """The path parts a definition adds: its identifier (``Point`` for ``impl Display for Point``), a Go method's
        receiver type before its own name."""
        if inner.type == "method_declaration" and (receiver := inner.child_by_field_name("receiver")) is not None:
            # A Go method belongs to its receiver's type: ``Store.Touch``.
            kind = next((self._text(n) for n in _walk(receiver) if n.type == "type_identifier"), None)
            method = inner.child_by_field_name("name")
            if kind is not None and method is not None:
                return (kind, self._text(method))
        return (self._identifier(inner),)

    def _identifier(self, inner: Node) -> str:
        if inner.type in ("arrow_function", "function_expression", "function", "generator_function", "class"):
            # ``const load = () => …``: the name is the declarator's.
            holder = inner.parent
            if holder is not None and (named := holder.child_by_field_name("name")) is not None:
                return self._text(named)
        if inner.type == "type_declaration":
            spec = next((c for c in inner.named_children if c.type in ("type_spec", "type_alias")), None)
            if spec is not None and (named := spec.child_by_field_name("name")) is not None:
                return self._text(named)
        for field_name in _NAME_FIELDS:
            named = inner.child_by_field_name(field_name)
            if named is not None:
                # A C declarator holds the parameters: keep the identifier only.
                identifier = next((n for n in _walk(named) if n.type.endswith("identifier")), named)
                return self._text(identifier)
        return inner.type

    def _text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace").strip()

    def items(self, nodes: list[Node], start: int, end: int, path: tuple[str, ...]) -> list[_Item]:
        """The statements among ``nodes`` as items tiling ``[start, end)``; a definition's path extends ``path``."""
        flat = [node for wrapper in nodes for node in _unwrapped(wrapper)]
        # Each statement starts at the comments and attributes right above it; those are then not items of their own.
        begins: dict[int, int] = {}
        taken: set[int] = set()
        for index, node in enumerate(flat):
            if node.is_named and not LEADING.search(node.type):
                begins[index] = self.leading_start(flat, index)
                above = index - 1
                while above >= 0 and flat[above].start_byte >= begins[index]:
                    taken.add(above)
                    above -= 1
        found: list[tuple[int, Node, bool, tuple[str, ...]]] = []
        for index, node in enumerate(flat):
            # Punctuation (a closing brace) is not an item: it ends the item before it.
            if not node.is_named or index in taken:
                continue
            inner = definition_in(node) if index in begins else None
            item_path = (*path, *self.name(inner)) if inner is not None else path
            found.append((begins.get(index, node.start_byte), node, inner is not None, item_path))
        if not found:
            return []
        starts = [self.char(byte) for byte, *_ in found]
        ends = [*starts[1:], end]
        items = [
            _Item(s, e, item_path, node, is_definition)
            for s, e, (_byte, node, is_definition, item_path) in zip(starts, ends, found, strict=True)
        ]
        if self.text[start : items[0].start].strip():
            items.insert(0, _Item(start, items[0].start, path, is_header=True))
        else:
            items[0].start = start
        return [item for item in items if item.start < item.end]

    def children(self, item: _Item) -> list[_Item]:
        """The smaller items an item too long for one chunk is cut into: a definition's members or statements, else
        its lines."""
        if item.node is not None and item.is_definition:
            inner = definition_in(item.node)
            body = definition_body(inner) if inner is not None else None
            if body is not None:
                members = self.items(body.children, item.start, item.end, item.path)
                if len(members) > 1:
                    return members
        elif item.node is not None:
            # A compound statement (if, loop, try, match): cut between the statements of its blocks, each block
            # taking the header above it, before falling back to lines.
            node = item.node
            while node.named_child_count == 1 and not _is_block(node):
                node = node.named_children[0]
            nodes = node.children if _is_block(node) else [c for c in node.children if _is_block(c)]
            members = self.items(nodes, item.start, item.end, item.path)
            if len(members) > 1:
                return members
        return self.lines(item)

    def lines(self, item: _Item) -> list[_Item]:
        """The item's lines as items (the first from the item's start)."""
        starts = [item.start]
        position = self.text.find("\n", item.start, item.end)
        while position >= 0 and position + 1 < item.end:
            starts.append(position + 1)
            position = self.text.find("\n", position + 1, item.end)
        ends = [*starts[1:], item.end]
        return [_Item(s, e, item.path) for s, e in zip(starts, ends, strict=True)]


def _is_block(node: Node) -> bool:
    """Whether a node holds statements (a block, a clause such as ``else`` or ``except``, a switch body)."""
    return node.type.endswith(("block", "_clause", "body", "statement_list")) or node.type == "compound_statement"


def _walk(node: Node) -> list[Node]:
    """``node`` and its descendants, depth first, in source order."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack += reversed(current.children)
    return found


def _unwrapped(node: Node) -> list[Node]:
    """A statement, or the statements of a node whose statements are read as if in its place (ERROR, ``#ifdef``)."""
    if node.type not in TRANSPARENT:
        return [node]
    found: list[Node] = []
    for child in node.children:
        found += _unwrapped(child)
    return found


class _Packer:
    """Turns items into chunk spans within ``chunk_size``: a definition that fits stays whole, a long one is cut at
    its members' or statements' boundaries, and small neighbours merge."""

    def __init__(self, source: _Source, params: CodeAwareParams) -> None:
        self.source = source
        self.size = params.chunk_size
        self.small = params.min_chunk_tokens

    def spans(self, items: list[_Item], *, greedy: bool) -> list[tuple[int, int, tuple[str, ...]]]:
        """Chunk spans of the sibling ``items``; ``greedy`` (the statements of one definition, the lines of one
        statement) packs whatever fits, otherwise only small items merge with a neighbour."""
        out: list[tuple[int, int, tuple[str, ...]]] = []
        run: list[_Item] = []
        run_tokens = 0
        for item in items:
            tokens = self.source.count(item.start, item.end)
            if tokens > self.size:
                out += self._flush(run)
                run, run_tokens = [], 0
                out += self._split(item)
                continue
            if run:
                joined = self.source.count(run[0].start, item.end)
                # A header always takes what follows it when both fit; otherwise only a small run takes in more,
                # so a definition of its own size is never diluted by its small neighbours.
                mergeable = greedy or run[-1].is_header or run_tokens < self.small
                if joined <= self.size and mergeable:
                    run.append(item)
                    run_tokens = joined
                    continue
                out += self._flush(run)
            run, run_tokens = [item], tokens
        return out + self._flush(run)

    def _split(self, item: _Item) -> list[tuple[int, int, tuple[str, ...]]]:
        if item.node is None:
            lines = self.source.lines(item)
            return self.spans(lines, greedy=True) if len(lines) > 1 else self._windows(item)
        members = self.source.children(item)
        # A function's statements pack greedily; a class's members stand alone unless small.
        return self.spans(members, greedy=not item.is_definition or _is_function(item))

    def _windows(self, item: _Item) -> list[tuple[int, int, tuple[str, ...]]]:
        """A line longer than a chunk: windows of whole tokens, the only cut inside a line."""
        text = self.source.text[item.start : item.end]
        _ids, offsets = self.source.tokenizer.boundaries(text)
        windows = token_windows(text, offsets, self.size, 0, self.source.tokenizer)
        return [(item.start + int(offsets[a]), item.start + int(offsets[b]), item.path) for a, b, _ in windows]

    @staticmethod
    def _flush(run: list[_Item]) -> list[tuple[int, int, tuple[str, ...]]]:
        if not run:
            return []
        return [(run[0].start, run[-1].end, _common_path(run))]


def _is_function(item: _Item) -> bool:
    inner = definition_in(item.node) if item.node is not None else None
    return inner is not None and FUNCTION_LIKE.search(inner.type) is not None


def _common_path(run: list[_Item]) -> tuple[str, ...]:
    """The symbol path of a chunk: the innermost symbol holding all of its text."""
    paths = [item.path for item in run]
    shared: list[str] = []
    for parts in zip(*paths, strict=False):
        if len(set(parts)) != 1:
            break
        shared.append(parts[0])
    return tuple(shared)


@register_strategy
class CodeAwareStrategy(ChunkingStrategy):
    """Source code cut at definitions (functions, classes, methods, impl blocks…) by its tree-sitter syntax tree.

    A definition keeps its leading comments, docstring, decorators and attributes. One that fits in ``chunk_size``
    tokens is never cut; a longer one is cut between its members (a class's methods) or its statements, packed
    greedily, and a statement longer than a chunk between its lines (a line longer than a chunk: token windows).
    Adjacent definitions and top-level statements (imports) shorter than ``min_chunk_tokens`` merge with their
    neighbours while the chunk fits. Each chunk's ``heading_path`` is its symbol path, the document's stem as the
    module (``inventory.Inventory.ship``); ``prefix_symbol`` embeds the chunk behind ``# path: …`` in the language's
    comment syntax, the chunk's text still the exact slice. A document that is not code, or in a language without
    a grammar here, is chunked as ``recursive`` chunks it, and ``run_details`` says so.
    """

    name = StrategyName.CODE_AWARE
    # Named explicitly (a code corpus), not in "all strategies": on prose it is recursive again, at twice the cost.
    in_default_set: ClassVar[bool] = False
    settings_defaults: ClassVar[dict[str, str]] = {"chunk_size": "chunk_size"}
    # With prefix_symbol the path comment is embedded with the chunk: leave room for it.
    size_params: ClassVar[dict[str, int]] = {"chunk_size": SYMBOL_PREFIX_TOKENS}
    description = (
        "Cuts source code at functions, classes and methods (with their comments and decorators), splits long ones "
        "at statements, and labels each chunk with its symbol path; prose falls back to recursive."
    )
    params_model = CodeAwareParams

    _details: dict[str, Any]

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        params: CodeAwareParams = self.params  # type: ignore[assignment]
        language = code_language(document)
        lang = grammar(language) if language is not None else None
        if language is None or lang is None:
            reason = "not source code" if language is None else f"no tree-sitter grammar for {language}"
            self._details = {"mode": "recursive", "fallback_reason": reason}
            return RecursiveStrategy(RecursiveParams(chunk_size=params.chunk_size)).make_chunks(document, self.name)
        from tree_sitter import Parser

        data = document.markdown.encode("utf-8")
        source = _Source(document.markdown, Parser(lang).parse(data).root_node, data, get_tokenizer())
        module = PurePath(document.document_name).stem or document.document_name
        items = source.items(source.root.children, 0, len(document.markdown), (module,))
        spans = _Packer(source, params).spans(items, greedy=False)
        factory = ChunkFactory(self.name, document)
        chunks: list[Chunk] = []
        comment = comment_prefix(language)
        for start, end, path in _trimmed(document.markdown, spans):
            chunk = factory.make(len(chunks), start, end)
            chunk.heading_path = list(path)
            if params.prefix_symbol:
                chunk.enriched_content = f"{comment} path: {'.'.join(path)}\n{chunk.text}"
            chunks.append(chunk)
        self._details = {"mode": "tree-sitter", "code_language": language}
        return chunks

    def run_details(self) -> dict[str, Any]:
        return dict(getattr(self, "_details", {}))


def _trimmed(text: str, spans: list[tuple[int, int, tuple[str, ...]]]) -> list[tuple[int, int, tuple[str, ...]]]:
    """Each span without its surrounding whitespace; whitespace-only spans dropped."""
    kept = []
    for start, end, path in spans:
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            head = start + len(piece) - len(piece.lstrip())
            kept.append((head, head + len(stripped), path))
    return kept
