"""A .docx's body walked in document order: paragraphs (visible run text), headings from styles and outline
levels, lists numbered like Word's, tables as one line per row.

Separate from the DOCX parser (``docx.py``: the registered entry, the package checks, python-docx opening the
file) because this is the part that reads WordprocessingML itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

from docx.document import Document as DocxDocument
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import qn
from docx.styles.style import BaseStyle, CharacterStyle
from lxml import etree

from chunkbench.documents.tree import Block

_MAX_STYLE_DEPTH = 16  # base-style chains are short; this only stops malicious cycles
_W_P, _W_TBL, _W_TR, _W_TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_W_SDT, _W_SDT_CONTENT, _W_CUSTOM_XML = qn("w:sdt"), qn("w:sdtContent"), qn("w:customXml")
_W_VAL = qn("w:val")
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# Run content → text. Anything else (field codes, deleted text, properties) contributes nothing.
_RUN_TEXT = {
    qn("w:tab"): "\t",
    qn("w:ptab"): "\t",
    qn("w:br"): "\n",
    qn("w:cr"): "\n",
    qn("w:noBreakHyphen"): "-",
}
# Subtrees that hold no visible text of this paragraph. mc:Fallback repeats its mc:Choice (text
# boxes are stored twice); w:del/w:moveFrom are tracked deletions.
_SKIPPED = frozenset({qn("w:pPr"), qn("w:rPr"), qn("w:del"), qn("w:moveFrom"), _MC_FALLBACK})
_HEADING_STYLE = re.compile(r"heading\s*([1-9])")
_LIST_STYLE = re.compile(r"list\s*(bullet|number)(?:\s*([1-9]))?")
_SOFT_HYPHEN = "\u00ad"
_LIST_INDENT = "    "  # enough for a nested item under both "- " and "10. " markers


def _run_text(element: etree._Element, parts: list[str]) -> None:
    for child in element:
        tag = child.tag
        if tag == qn("w:t"):
            parts.append((child.text or "").replace(_SOFT_HYPHEN, ""))
        elif tag in _RUN_TEXT:
            parts.append(_RUN_TEXT[tag])
        elif tag not in _SKIPPED and isinstance(tag, str):
            _run_text(child, parts)


def paragraph_text(paragraph: etree._Element) -> str:
    """Visible text of a ``w:p``: runs, hyperlinks, fields' results, content controls, insertions."""
    parts: list[str] = []
    _run_text(paragraph, parts)
    return "".join(parts)


def _int_attr(element: etree._Element | None, default: int | None = None) -> int | None:
    value = element.get(_W_VAL) if element is not None else None
    return int(value) if value is not None and value.lstrip("-").isdigit() else default


def _iter_block_elements(container: etree._Element) -> Iterator[etree._Element]:
    """Paragraphs and tables in document order, looking through content controls and custom XML."""
    for child in container:
        if child.tag in (_W_P, _W_TBL):
            yield child
        elif child.tag == _W_SDT:
            content = child.find(_W_SDT_CONTENT)
            if content is not None:
                yield from _iter_block_elements(content)
        elif child.tag == _W_CUSTOM_XML:
            yield from _iter_block_elements(child)


def _cell_text(cell: etree._Element) -> str:
    parts: list[str] = []
    for element in _iter_block_elements(cell):
        if element.tag == _W_P:
            parts.append(paragraph_text(element))
        else:  # a nested table, flattened into its cell
            parts.extend(table_rows(element))
    return " ".join(" ".join(part.split()) for part in parts if part.strip())


def _iter_cells(row: etree._Element) -> Iterator[etree._Element]:
    for child in row:
        if child.tag == _W_TC:
            yield child
        elif child.tag in (_W_SDT, _W_CUSTOM_XML):
            content = child.find(_W_SDT_CONTENT) if child.tag == _W_SDT else child
            if content is not None:
                yield from _iter_cells(content)


def table_rows(table: etree._Element) -> list[str]:
    """One line per row, cells left to right joined by " | "; merged cells appear once."""
    rows: list[str] = []
    for row in table.iter(_W_TR):
        if next(row.iterancestors(_W_TBL)) is not table:
            continue  # a nested table's row: already part of its cell's text
        cells: list[str] = []
        for cell in _iter_cells(row):
            v_merge = cell.find(f"{qn('w:tcPr')}/{qn('w:vMerge')}")
            if v_merge is not None and v_merge.get(_W_VAL) != "restart":
                continue  # continuation of a vertically merged cell (a horizontal merge is one w:tc)
            text = _cell_text(cell)
            if text:
                cells.append(text)
        if cells:
            rows.append(" | ".join(cells))
    return rows


class _Styles:
    """Heading levels and list numbering from the document's styles and numbering definitions."""

    def __init__(self, document: DocxDocument) -> None:
        self._part = document.part
        self._levels: dict[str | None, int | None] = {}
        self._chains: dict[str | None, tuple[BaseStyle, ...]] = {}
        try:
            self._numbering: etree._Element | None = document.part.numbering_part.element
        except (KeyError, NotImplementedError):  # python-docx cannot create a missing numbering part
            self._numbering = None

    def chain(self, style_id: str | None) -> tuple[BaseStyle, ...]:
        """The paragraph style and its ``basedOn`` ancestors, nearest first (cached per style).

        python-docx looks styles up by scanning the whole styles part; uncached, that lookup was
        97% of the time on a 5,000-paragraph document.
        """
        if style_id not in self._chains:
            self._chains[style_id] = tuple(self._walk(style_id))
        return self._chains[style_id]

    def _walk(self, style_id: str | None) -> Iterator[BaseStyle]:
        style: BaseStyle | None = self._part.get_style(style_id, WD_STYLE_TYPE.PARAGRAPH)
        seen: set[str | None] = set()
        while style is not None and style.style_id not in seen and len(seen) < _MAX_STYLE_DEPTH:
            seen.add(style.style_id)
            yield style
            style = cast(CharacterStyle, style).base_style  # a paragraph style (asked for above): it has a base

    def heading_level(self, style_id: str | None) -> int | None:
        """Level of a heading style, also when localised or custom but based on a heading style.

        ``Title`` is level 1, like ``Heading 1``, rather than shifting every ``Heading N`` down
        one: levels then match the author's heading numbers, a .doc converted by LibreOffice and
        the same document's PDF outline, and a Title used as a cover line cannot push the whole
        document one level deeper. The Title also names the document when core properties don't.
        """
        if style_id not in self._levels:
            self._levels[style_id] = self._resolve_level(style_id)
        return self._levels[style_id]

    def _resolve_level(self, style_id: str | None) -> int | None:
        for style in self.chain(style_id):
            name = (style.name or "").strip().lower()
            if name == "title":
                return 1
            match = _HEADING_STYLE.fullmatch(name)
            if match:
                return int(match.group(1))
            outline = _outline_level(style.element.find(qn("w:pPr")))
            if outline is not None:
                return outline or None
        return None

    def list_level(self, paragraph: etree._Element, style_id: str | None) -> tuple[int, int | None, bool] | None:
        """``(ilvl, numId, ordered)`` of a list paragraph, or ``None`` when it is not one."""
        num_pr = paragraph.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
        if num_pr is None:
            for style in self.chain(style_id):
                num_pr = style.element.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
                if num_pr is not None:
                    break
        if num_pr is not None:
            num_id = _int_attr(num_pr.find(qn("w:numId")))
            if num_id == 0:  # numbering explicitly switched off
                return None
            ilvl = _int_attr(num_pr.find(qn("w:ilvl")), 0) or 0
            if num_id is not None:
                return ilvl, num_id, self._is_ordered(num_id, ilvl, style_id)
        for style in self.chain(style_id):
            match = _LIST_STYLE.fullmatch((style.name or "").strip().lower())
            if match:
                return int(match.group(2) or 1) - 1, None, match.group(1) == "number"
        return None

    def _is_ordered(self, num_id: int, ilvl: int, style_id: str | None) -> bool:
        fmt = self._level_format(num_id, ilvl)
        if fmt is None:  # no definition: go by the style's name
            return any("number" in (style.name or "").lower() for style in self.chain(style_id))
        return fmt not in ("bullet", "none")

    def _level_format(self, num_id: int, ilvl: int) -> str | None:
        if self._numbering is None:
            return None
        formats = self._numbering.xpath(
            f'./w:num[@w:numId="{num_id}"]/w:lvlOverride[@w:ilvl="{ilvl}"]/w:lvl/w:numFmt/@w:val'
        )
        if not formats:
            abstract = self._numbering.xpath(f'./w:num[@w:numId="{num_id}"]/w:abstractNumId/@w:val')
            if abstract:
                formats = self._numbering.xpath(
                    f'./w:abstractNum[@w:abstractNumId="{abstract[0]}"]/w:lvl[@w:ilvl="{ilvl}"]/w:numFmt/@w:val'
                )
        return str(formats[0]) if formats else None

    def start(self, num_id: int, ilvl: int) -> int:
        """First number of a numbered level (``w:start``, 1 when absent)."""
        if self._numbering is None:
            return 1
        abstract = self._numbering.xpath(f'./w:num[@w:numId="{num_id}"]/w:abstractNumId/@w:val')
        if not abstract:
            return 1
        starts = self._numbering.xpath(
            f'./w:abstractNum[@w:abstractNumId="{abstract[0]}"]/w:lvl[@w:ilvl="{ilvl}"]/w:start/@w:val'
        )
        return int(starts[0]) if starts and str(starts[0]).isdigit() else 1


def _outline_level(p_pr: etree._Element | None) -> int | None:
    """Heading level from ``w:outlineLvl`` (0-based; 9 = body text → 0), ``None`` when not set."""
    if p_pr is None:
        return None
    level = _int_attr(p_pr.find(qn("w:outlineLvl")))
    if level is None:
        return None
    return level + 1 if 0 <= level <= 8 else 0


class _ListRun:
    """Consecutive list paragraphs, emitted as one block; numbering continues per list like Word's."""

    def __init__(self, styles: _Styles) -> None:
        self._styles = styles
        self._counters: dict[tuple[int | None, int], int] = {}
        self.texts: list[str] = []
        self.markdown: list[str] = []

    def add(self, text: str, ilvl: int, num_id: int | None, ordered: bool) -> None:
        for key in [key for key in self._counters if key[0] == num_id and key[1] > ilvl]:
            del self._counters[key]  # a shallower item restarts the deeper levels below it
        if ordered:
            first = self._styles.start(num_id, ilvl) if num_id is not None else 1
            number = self._counters.get((num_id, ilvl), first - 1) + 1
            self._counters[(num_id, ilvl)] = number
            marker = f"{number}."
        else:
            marker = "-"
        line = " ".join(text.split())
        self.texts.append(line)
        self.markdown.append(f"{_LIST_INDENT * ilvl}{marker} {line}")

    def flush(self, blocks: list[Block]) -> None:
        if self.texts:
            blocks.append(Block("paragraph", "\n".join(self.texts), markdown="\n".join(self.markdown)))
            self.texts, self.markdown = [], []


def docx_blocks(document: DocxDocument) -> tuple[list[Block], str | None]:
    """The body as Blocks in document order, and the text of the first ``Title`` paragraph."""
    styles = _Styles(document)
    blocks: list[Block] = []
    lists = _ListRun(styles)
    title: str | None = None
    for element in _iter_block_elements(document.element.body):
        if element.tag == _W_TBL:
            lists.flush(blocks)
            rows = "\n".join(table_rows(element))
            blocks.append(Block("paragraph", rows, markdown=rows))
            continue
        text = paragraph_text(element)
        if not text.strip():
            continue  # empty paragraphs are spacing, even between list items
        style_id = element.style  # type: ignore[attr-defined]
        own_outline = _outline_level(element.find(qn("w:pPr")))
        level = own_outline if own_outline is not None else styles.heading_level(style_id)
        if level:
            lists.flush(blocks)
            blocks.append(Block("heading", text, level=level))
            if title is None and _is_title_style(styles, style_id):
                title = " ".join(text.split())
            continue
        listed = styles.list_level(element, style_id)
        if listed is not None:
            lists.add(text, *listed)
            continue
        lists.flush(blocks)
        blocks.append(Block("paragraph", text))
    lists.flush(blocks)
    return blocks, title


def _is_title_style(styles: _Styles, style_id: str | None) -> bool:
    return any((style.name or "").strip().lower() == "title" for style in styles.chain(style_id))
