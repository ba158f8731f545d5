"""Core domain types shared by every package: the Document Tree, parse results, lifecycle states, corpus names."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from chunkbench.errors import InvalidCorpusNameError


class _OpenNameType(type):
    """Metaclass of :class:`OpenName`: the class behaves like an enum whose members can be added at run time."""

    _members: dict[str, OpenName]

    def __call__(cls, value: object) -> Any:
        if isinstance(value, cls):
            return value
        member = cls._members.get(value) if isinstance(value, str) else None
        if member is None:
            raise ValueError(f"'{value}' is not a valid {cls.__name__}")
        return member

    def __iter__(cls) -> Iterator[Any]:
        return iter(list(cls._members.values()))

    def __len__(cls) -> int:
        return len(cls._members)

    def __contains__(cls, value: object) -> bool:
        return isinstance(value, str) and value in cls._members


class OpenName(str, metaclass=_OpenNameType):
    """A registry-backed name: compares and hashes as its string, one instance per value (``is`` works),
    iterates like an enum, and validates in pydantic against the names registered *now*.

    Built-ins are declared with :meth:`add` at import; plugins add theirs through ``chunkbench.plugins``.
    An unknown name fails validation with the same error type and message a closed enum/Literal gave.
    """

    _members: ClassVar[dict[str, OpenName]]
    _error_type: ClassVar[str] = "enum"
    _rule: ClassVar[str] = "lowercase letters and digits in words joined by single underscores, starting with a letter"
    _pattern: ClassVar[re.Pattern[str]] = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._members = {}

    @classmethod
    def add(cls, value: str) -> Any:
        """Register ``value`` (idempotent) and return its instance; a malformed name is a ``ValueError``."""
        existing = cls._members.get(value)
        if existing is not None:
            return existing
        if not isinstance(value, str) or len(value) > 48 or not cls._pattern.match(value):
            raise ValueError(f"{cls.__name__} {value!r} is not valid: {cls._rule}, at most 48 characters.")
        member = str.__new__(cls, value)
        cls._members[value] = member
        return member

    @classmethod
    def stored(cls, value: str) -> Any:
        """A name read back from storage: the registered instance, or a detached one when its plugin is gone.

        History stays readable after a plugin is removed; anything that needs the plugin itself (chunking,
        a retriever) still fails with its "unknown" error.
        """
        return cls._members.get(value) or str.__new__(cls, value)

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def name(self) -> str:
        return self.value.upper()

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Copies and pickles resolve to the registered instance, so ``is`` keeps working.
        return type(self).stored, (self.value,)

    @classmethod
    def expected(cls) -> str:
        """The registered names as pydantic words them: ``'a', 'b' or 'c'``."""
        quoted = [repr(str(member)) for member in cls._members.values()]
        return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"

    @classmethod
    def _validate(cls, value: Any) -> Any:
        if isinstance(value, cls):
            return value  # built in code (or read back with ``stored``); requests only ever bring plain strings
        if isinstance(value, str) and value in cls._members:
            return cls._members[value]
        expected = cls.expected()
        raise PydanticCustomError(cls._error_type, "Input should be {expected}", {"expected": expected})

    @classmethod
    def __get_pydantic_core_schema__(cls, _source: Any, _handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls._validate, serialization=core_schema.to_string_ser_schema(when_used="json")
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, _schema: core_schema.CoreSchema, _handler: GetJsonSchemaHandler) -> Any:
        # Computed when the schema is generated (after plugins loaded), so OpenAPI lists every registered name.
        return {"type": "string", "enum": [str(member) for member in cls._members.values()], "title": cls.__name__}


class StrategyName(OpenName):
    """The chunking strategies: the five built-ins of docs/strategies.md, code_aware and table_aware (cluster_semantic
    registers on import), plus any a plugin registers."""

    # The name starts a Qdrant collection name, parsed back as ``{strategy}__{model}_collection``: words joined
    # by single underscores never hold the ``__`` separator. Digits make variants' names (``fixed_size_250_125``).

    FIXED_SIZE: ClassVar[StrategyName]
    RECURSIVE: ClassVar[StrategyName]
    SEMANTIC: ClassVar[StrategyName]
    CONTEXTUAL_RETRIEVAL: ClassVar[StrategyName]
    SEMANTIC_PARENT_CHILD: ClassVar[StrategyName]
    CODE_AWARE: ClassVar[StrategyName]
    TABLE_AWARE: ClassVar[StrategyName]


StrategyName.FIXED_SIZE = StrategyName.add("fixed_size")
StrategyName.RECURSIVE = StrategyName.add("recursive")
StrategyName.SEMANTIC = StrategyName.add("semantic")
StrategyName.CONTEXTUAL_RETRIEVAL = StrategyName.add("contextual_retrieval")
StrategyName.SEMANTIC_PARENT_CHILD = StrategyName.add("semantic_parent_child")
StrategyName.CODE_AWARE = StrategyName.add("code_aware")
StrategyName.TABLE_AWARE = StrategyName.add("table_aware")


class RetrieverName(OpenName):
    """The retrievers: dense, bm25, hybrid, plus any a plugin registers (see ``retrieval/search.py``)."""

    _error_type = "literal_error"  # the request schemas declared retrievers as a Literal

    DENSE: ClassVar[RetrieverName]
    BM25: ClassVar[RetrieverName]
    HYBRID: ClassVar[RetrieverName]


RetrieverName.DENSE = RetrieverName.add("dense")
RetrieverName.BM25 = RetrieverName.add("bm25")
RetrieverName.HYBRID = RetrieverName.add("hybrid")


class NodeType(StrEnum):
    DOCUMENT = "document"
    SECTION = "section"
    ARTICLE = "article"  # a numbered legal/regulatory unit ("Article 5", "ماده ۵")
    PARAGRAPH = "paragraph"


class DocumentState(StrEnum):
    """Document lifecycle (docs/ingestion.md), plus ``parsed``: ingested and waiting to be processed.

    An upload that fails to parse leaves no row at all, so ``failed`` is reached only from the
    processing stages (chunking, embedding), with the error message and the attempt count kept.
    """

    DISCOVERED = "discovered"
    PARSING = "parsing"
    PARSED = "parsed"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    INDEXED = "indexed"
    FAILED = "failed"


# Which lifecycle moves are legal. ``failed → discovered`` is a retry; ``indexed → discovered``
# means the source changed; ``indexed → chunking`` is a re-process with other strategies; ``chunking/embedding →
# parsed/indexed/failed`` also ends a cancelled run that wrote nothing, back in the state it started from.
ALLOWED_TRANSITIONS: dict[DocumentState, frozenset[DocumentState]] = {
    DocumentState.DISCOVERED: frozenset({DocumentState.PARSING}),
    DocumentState.PARSING: frozenset({DocumentState.PARSED, DocumentState.FAILED}),
    DocumentState.PARSED: frozenset({DocumentState.CHUNKING, DocumentState.DISCOVERED}),
    # Back to parsed or indexed: a cancelled run gives the document back as it was (nothing of it was written).
    DocumentState.CHUNKING: frozenset(
        {DocumentState.EMBEDDING, DocumentState.FAILED, DocumentState.PARSED, DocumentState.INDEXED}
    ),
    DocumentState.EMBEDDING: frozenset({DocumentState.INDEXED, DocumentState.FAILED, DocumentState.PARSED}),
    DocumentState.INDEXED: frozenset({DocumentState.DISCOVERED, DocumentState.CHUNKING}),
    DocumentState.FAILED: frozenset({DocumentState.DISCOVERED, DocumentState.CHUNKING}),
}


@dataclass
class TreeNode:
    """One node of the Document Tree (docs/ingestion.md).

    ``start_index``/``end_index`` are character offsets into the document's markdown, covering the
    node and everything under it, so later stages (chunk heading paths, previews) need no text search.
    """

    node_type: NodeType
    text: str = ""
    heading: str | None = None
    heading_level: int | None = None
    start_index: int = 0
    end_index: int = 0
    children: list[TreeNode] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_type": self.node_type.value,
            "text": self.text,
            "heading": self.heading,
            "heading_level": self.heading_level,
            "start_index": self.start_index,
            "end_index": self.end_index,
            "children": [child.to_dict() for child in self.children],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TreeNode:
        return cls(
            node_type=NodeType(data["node_type"]),
            text=data.get("text", ""),
            heading=data.get("heading"),
            heading_level=data.get("heading_level"),
            start_index=data.get("start_index", 0),
            end_index=data.get("end_index", 0),
            children=[cls.from_dict(child) for child in data.get("children", [])],
        )

    def iter_nodes(self):
        """Depth-first, document order."""
        yield self
        for child in self.children:
            yield from child.iter_nodes()


@dataclass
class DocumentTree:
    root: TreeNode

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocumentTree:
        return cls(root=TreeNode.from_dict(data["root"]))

    def headings(self) -> list[tuple[int, str]]:
        """``(level, heading)`` of every section/article node, in document order."""
        return [
            (node.heading_level or 0, node.heading or "")
            for node in self.root.iter_nodes()
            if node.node_type in (NodeType.SECTION, NodeType.ARTICLE)
        ]


@dataclass
class ParseResult:
    """What every parser returns (docs/ingestion.md)."""

    tree: DocumentTree
    markdown: str
    plain_text: str
    paragraph_count: int
    page_count: int | None = None
    # How headings were found (PDF: "outline" | "font" | "heuristic" | "none"); informative only.
    heading_source: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Pages (1-based) whose text was read by OCR; None when none was.
    ocr_pages: list[int] | None = None
    # What the document is: "text" (written language: its language is detected) or "code" (source code: its
    # programming language is ``code_language``, and no rule about written languages ever applies to it).
    kind: str = "text"
    code_language: str | None = None
    # The language the file itself declares (an HTML ``lang``, a DOCX/PPTX core property), as written (BCP 47).
    declared_language: str | None = None
    # Files the document carries (a mail's attachments): each is ingested as a document of its own, whose
    # ``parent_id`` is this document.
    attachments: list[Attachment] = field(default_factory=list)


@dataclass(frozen=True)
class Attachment:
    """A file inside a document (a mail's attachment): its name and bytes, parsed by the parser of its suffix."""

    filename: str
    data: bytes


CORPUS_NAME_MAX_CHARS = 200
CORPUS_NAME_RULE = (
    f"1–{CORPUS_NAME_MAX_CHARS} characters (spaces around it are dropped): letters of any script, digits, spaces, "
    "'.', '_' and '-', starting with a letter or digit, and not 32 hexadecimal characters (the shape of a corpus id)"
)
# ZWNJ (U+200C) is part of Farsi words; '/' never appears, so a name is always one URL path segment.
_CORPUS_NAME = re.compile(r"[^\W_][\w .\-\u200c]*")
_CORPUS_ID = re.compile(r"[0-9a-fA-F]{32}")


def corpus_name(raw: str) -> str:
    """The corpus name ``raw`` stands for (trimmed), or :class:`InvalidCorpusNameError` stating the rule.

    Corpora are looked up by name or by id, so a name shaped like an id could shadow another corpus.
    """
    name = raw.strip()
    if len(name) > CORPUS_NAME_MAX_CHARS or not _CORPUS_NAME.fullmatch(name) or _CORPUS_ID.fullmatch(name):
        raise InvalidCorpusNameError(f"{raw!r} is not a valid corpus name: a name is {CORPUS_NAME_RULE}.", name=raw)
    return name
