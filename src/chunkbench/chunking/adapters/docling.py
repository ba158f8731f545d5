"""docling-core's HybridChunker as a strategy, on a DoclingDocument built from chunkbench's Document Tree.

HybridChunker chunks a ``DoclingDocument``: chunkbench builds one from the document's tree, one docling item per
tree node, each holding the markdown's own text at that node's offsets: a section's heading becomes a section
header, a paragraph a text item, a paragraph whose lines are ``cell | cell`` rows a table, a list's lines list
items, a fenced block a code item. A chunk's span is its items' span in the markdown: from its first item's start
to its last item's end, and where docling cut one item into several chunks (a long paragraph, a long table), the
chunk's own text located inside that item. Headings are docling's context, not chunk text (``contextualize()``
puts them in front): a heading line is in no chunk's span, and each chunk is embedded behind its headings.

Tokens are cl100k_base (chunkbench's own count, the one every strategy's size is in), so ``max_tokens`` means what
it means everywhere else; docling's default, a MiniLM tokenizer fetched from the Hugging Face hub, is never built.
Tables are serialised as the markdown's own rows (not docling's ``row, column = value`` triplets, which are not in
the document), so a table that outgrows ``max_tokens`` is cut between rows, each chunk holding whole rows and the
header row repeated in front (docling's ``repeat_table_header``), which the span leaves out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from chunkbench.chunking.base import Chunk, ChunkingInput, StrategyParams, with_context
from chunkbench.chunking.library_strategies import LibraryStrategy, Piece, count_tokens, locate
from chunkbench.errors import ChunkingError
from chunkbench.models import NodeType, StrategyName, TreeNode

_SECTIONS = (NodeType.SECTION, NodeType.ARTICLE)
_BLOCK = re.compile(r"(?:[^\n]*\S[^\n]*(?:\n|$))+")
_LIST_LINE = re.compile(r"^(?P<indent>\s*)(?P<marker>[-*+]|\d+[.)])\s+(?P<text>\S.*)$")
_FENCE = re.compile(r"^```[^\n]*\n(?P<code>.*)\n```$", re.DOTALL)
_CELL_SEPARATOR = " | "


class DoclingHybridParams(StrategyParams):
    """HybridChunker's parameters, named as docling names them (sizes in cl100k_base tokens)."""

    max_tokens: int = Field(
        512,
        ge=16,
        le=8192,
        description="Most cl100k_base tokens per chunk, counted on contextualize()'s text: its headings included",
    )
    merge_peers: bool = Field(True, description="Merge neighbouring undersized chunks that share their headings")


@dataclass
class _Built:
    """The DoclingDocument made of a Document Tree, and where each of its items is in the markdown."""

    document: Any
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    # A table's rows as the markdown writes them: what the table serialiser gives docling.
    rows: dict[str, list[str]] = field(default_factory=dict)


def docling_document(document: ChunkingInput) -> _Built:
    """A DoclingDocument of ``document``'s tree: one item per node, its text the markdown's at the node's offsets."""
    from docling_core.types.doc import DoclingDocument

    built = _Built(DoclingDocument(name=document.document_name or document.document_id))
    _add_children(built, document.markdown, document.tree.root)
    if not built.spans:
        # A tree of one bare root (a document read verbatim, as span-annotated datasets are): its paragraphs are the
        # markdown's blocks of non-blank lines.
        for block in _BLOCK.finditer(document.markdown):
            _add_paragraph(built, document.markdown, block.start(), block.start() + len(block.group().rstrip()))
    return built


def _add_children(built: _Built, markdown: str, node: TreeNode) -> None:
    for child in node.children:
        if child.node_type in _SECTIONS:
            line_end = markdown.find("\n", child.start_index, child.end_index)
            line_end = child.end_index if line_end < 0 else line_end
            heading = built.document.add_heading(
                text=child.heading or markdown[child.start_index : line_end], level=max(child.heading_level or 1, 1)
            )
            built.spans[heading.self_ref] = (child.start_index, line_end)
            _add_children(built, markdown, child)
        elif child.node_type == NodeType.PARAGRAPH:
            _add_paragraph(built, markdown, child.start_index, child.end_index)


def _add_paragraph(built: _Built, markdown: str, start: int, end: int) -> None:
    from docling_core.types.doc import DocItemLabel

    text = markdown[start:end]
    lines = text.split("\n")
    document = built.document
    if (fenced := _FENCE.match(text)) is not None:
        item = document.add_code(text=fenced.group("code"))
        built.spans[item.self_ref] = (start, end)
    elif len(lines) > 1 and all(_CELL_SEPARATOR in line for line in lines):
        item = document.add_table(data=_table_data(lines))
        built.spans[item.self_ref] = (start, end)
        built.rows[item.self_ref] = lines
    elif all(_LIST_LINE.match(line) for line in lines):
        group = document.add_list_group()
        offset = start
        for line in lines:
            match = _LIST_LINE.match(line)
            assert match is not None
            marker = match.group("marker")
            item = document.add_list_item(
                text=match.group("text"), enumerated=marker[0].isdigit(), marker=marker, parent=group
            )
            # The item is its text after the marker; its span is its whole line, marker and indent included.
            built.spans[item.self_ref] = (offset, offset + len(line))
            offset += len(line) + 1
    else:
        item = document.add_text(label=DocItemLabel.TEXT, text=text)
        built.spans[item.self_ref] = (start, end)


def _table_data(lines: list[str]) -> Any:
    from docling_core.types.doc import TableCell, TableData

    rows = [line.split(_CELL_SEPARATOR) for line in lines]
    columns = max(len(row) for row in rows)
    cells = [
        TableCell(
            text=value.strip(),
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=c,
            end_col_offset_idx=c + 1,
            column_header=r == 0,
        )
        for r, row in enumerate(rows)
        for c, value in enumerate(row)
    ]
    return TableData(num_rows=len(rows), num_cols=columns, table_cells=cells)


def _chunker(params: DoclingHybridParams, built: _Built) -> Any:
    """HybridChunker counting cl100k tokens and serialising tables as the markdown's rows."""
    from docling_core.transforms.chunker.hierarchical_chunker import ChunkingDocSerializer, ChunkingSerializerProvider
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.base import BaseTokenizer
    from docling_core.transforms.serializer.base import BaseTableSerializer
    from docling_core.transforms.serializer.common import create_ser_result

    class Cl100kTokenizer(BaseTokenizer):
        """cl100k_base, chunkbench's count, as docling's tokenizer (semchunk gets the counting function)."""

        max_tokens: int

        def count_tokens(self, text: str) -> int:
            return count_tokens(text)

        def get_max_tokens(self) -> int:
            return self.max_tokens

        def get_tokenizer(self) -> Any:
            return count_tokens

    class RowsTableSerializer(BaseTableSerializer):
        """A table as the markdown holds it: its rows, one a line, the first one its header."""

        def serialize(self, *, item: Any, doc_serializer: Any, doc: Any, **kwargs: Any) -> Any:
            return create_ser_result(text="\n".join(built.rows.get(item.self_ref, [])), span_source=item)

        def get_header_and_body_lines(self, *, table_text: str, **kwargs: Any) -> tuple[list[str], list[str]]:
            lines = table_text.splitlines(True)
            return lines[:1], lines[1:]

    class RowsSerializerProvider(ChunkingSerializerProvider):
        def get_serializer(self, doc: Any) -> Any:
            return ChunkingDocSerializer(doc=doc, table_serializer=RowsTableSerializer())

    return HybridChunker(
        tokenizer=Cl100kTokenizer(max_tokens=params.max_tokens),
        merge_peers=params.merge_peers,
        serializer_provider=RowsSerializerProvider(),
        # A row too wide for max_tokens beside the header: cut the row (text of the document) rather than split the
        # table by columns into sub-tables of docling's making, which are nowhere in the document.
        omit_header_on_overflow=True,
    )


def _find(markdown: str, text: str, begin: int, end: int, *, strategy: str) -> tuple[int, int]:
    """Where ``text`` (a part of an item docling cut) is in ``markdown[begin:end]``; the whole region when docling
    rewrote it past recognition (a code fence's language line): still an exact span, and one that holds the part."""
    try:
        ((start, stop),), _ = locate(markdown[begin:end], [Piece(text)], strategy=strategy)
    except ChunkingError:
        return begin, end
    return begin + start, begin + stop


class DoclingHybrid(LibraryStrategy):
    name: ClassVar[StrategyName] = "docling_hybrid"  # type: ignore[assignment]
    description: ClassVar[str] = (
        "docling HybridChunker: the document's structure (sections, paragraphs, lists, tables, code) cut to at most "
        "max_tokens cl100k tokens with its headings, undersized neighbours under the same headings merged."
    )
    params_model: ClassVar[type[StrategyParams]] = DoclingHybridParams
    library: ClassVar[str] = "docling-core"
    extra: ClassVar[str] = "docling"
    # semchunk cuts the items that outgrow max_tokens (docling-core's chunking extra brings it).
    modules: ClassVar[tuple[str, ...]] = ("docling_core", "semchunk")
    # max_tokens counts the headings docling puts in front of the text, which is what the chunk is embedded as.
    size_params: ClassVar[dict[str, int]] = {"max_tokens": 0}
    _written: list[tuple[str, list[str]]]

    def split(self, document: ChunkingInput) -> list[Piece]:
        params: DoclingHybridParams = self.params  # type: ignore[assignment]
        built = docling_document(document)
        chunks = [
            chunk
            for chunk in _chunker(params, built).chunk(dl_doc=built.document)
            if any(item.self_ref in built.spans for item in chunk.meta.doc_items)
        ]
        refs = [[item.self_ref for item in chunk.meta.doc_items if item.self_ref in built.spans] for chunk in chunks]
        markdown = document.markdown
        pieces: list[Piece] = []
        # Docling's own text and headings of each piece, for chunk().
        self._written = []
        cursor = 0  # where the previous chunk's span ends: docling's chunks never overlap
        for number, chunk in enumerate(chunks):
            first, last = refs[number][0], refs[number][-1]
            shares_first = number > 0 and first in refs[number - 1]
            shares_last = number + 1 < len(chunks) and last in refs[number + 1]
            if not shares_first and not shares_last:
                # Whole items: the span runs from the first item's start to the last one's end.
                start, end = built.spans[first][0], built.spans[last][1]
            else:
                # Part of an item docling cut: its text (a repeated table header left out), found between the
                # previous chunk's end and its last item's end, so a repeated sentence is found in its own place.
                text = chunk.text
                header = built.rows.get(first, [None])[0]
                if shares_first and header is not None and text.startswith(header + "\n"):
                    text = text[len(header) + 1 :]
                if not text.strip():
                    continue  # a table's header alone, repeated before a row too wide to join it
                begin = cursor if shares_first else built.spans[first][0]
                start, end = _find(markdown, text.strip(), begin, built.spans[last][1], strategy=str(self.name))
                if not markdown[start:end].strip():
                    continue  # nothing of the item left after the part before: that part's span holds it
            pieces.append(Piece(markdown[start:end], start))
            self._written.append((chunk.text, list(chunk.meta.headings or [])))
            cursor = end
        return pieces

    def chunk(self, document: ChunkingInput) -> list[Chunk]:
        chunks = super().chunk(document)
        differed = 0
        for chunk, (written, headings) in zip(chunks, self._written, strict=True):
            # What docling's contextualize() embeds: the headings, then the text (here: the exact span).
            chunk.enriched_content = with_context("\n".join(headings), chunk.text) if headings else None
            differed += "".join(written.split()) != "".join(chunk.text.split())
        # Chunks whose text docling wrote otherwise than the span they map to, whitespace aside (a table's repeated
        # header, a code block's fence line): the span is exact all the same.
        self._details["text_differed"] = differed
        return chunks
