"""PowerPoint decks (.pptx) through python-pptx: a section per slide, its text in reading order, tables as markdown
tables, speaker notes under a "Notes" heading."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.exc import PackageNotFoundError
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.slide import Slide
from pptx.text.text import TextFrame

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import register
from chunkbench.documents.parsers.office_package import OfficePackageParser
from chunkbench.documents.parsers.tables import markdown_table, trim_rows
from chunkbench.documents.parsers.zip_container import READ_ERRORS, damaged
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EmptyDocumentError
from chunkbench.models import ParseResult

_LABEL = "PowerPoint deck (.pptx)"
NOTES_HEADING = "Notes"
# Placeholders that repeat on every slide and say nothing about it.
_FURNITURE = frozenset({PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE})
_TITLES = frozenset({PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE})
_LINE_BREAK = "\v"  # how python-pptx reads a:br inside a paragraph


def _placeholder_type(shape: BaseShape) -> PP_PLACEHOLDER | None:
    return shape.placeholder_format.type if shape.is_placeholder else None


def _reading_order(shapes: Iterable[BaseShape]) -> list[BaseShape]:
    """Top to bottom, then left to right by position; shapes at the same place keep their order in the file."""
    indexed = list(enumerate(shapes))
    return [shape for _, shape in sorted(indexed, key=lambda item: (item[1].top or 0, item[1].left or 0, item[0]))]


# python-pptx types a slide's shapes as BaseShape; what each kind has (text_frame, table, shapes) is behind its
# has_text_frame / has_table / shape_type, so each is cast to its kind after that check.
def _text_frame_text(frame: TextFrame) -> str:
    lines = (paragraph.text.replace(_LINE_BREAK, "\n") for paragraph in frame.paragraphs)
    return "\n".join(line for line in lines if line.strip())


def _table(shape: BaseShape) -> str:
    """A slide table as a markdown table, its first row the header; a merged cell's text appears once."""
    cells = [
        [cell.text.replace(_LINE_BREAK, " ") if not cell.is_spanned else "" for cell in row.cells]
        for row in cast(GraphicFrame, shape).table.rows
    ]
    rows = trim_rows(cells)
    return markdown_table(rows[0], rows[1:]) if rows else ""


def _shape_blocks(shapes: Iterable[BaseShape], title_id: int | None) -> Iterator[Block]:
    for shape in _reading_order(shapes):
        if shape.shape_id == title_id or _placeholder_type(shape) in _FURNITURE:
            continue
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            # A group's children, in their own reading order.
            yield from _shape_blocks(cast(GroupShape, shape).shapes, title_id)
        elif shape.has_table:
            table = _table(shape)
            if table:
                yield Block("paragraph", table, markdown=table)
        elif shape.has_text_frame:
            text = _text_frame_text(cast(Shape, shape).text_frame)
            if text:
                yield Block("paragraph", text, markdown=text)


def _title_shape(slide: Slide) -> BaseShape | None:
    return next((shape for shape in slide.shapes if _placeholder_type(shape) in _TITLES), None)


def slide_title(slide: Slide) -> str:
    """The text of the slide's title placeholder, on one line; "" when it has none or it is empty."""
    title_shape = _title_shape(slide)
    return " ".join(cast(Shape, title_shape).text_frame.text.split()) if title_shape is not None else ""


def slide_blocks(slide: Slide, number: int) -> list[Block]:
    """One slide: its heading (the title placeholder's text, else "Slide N"), body, tables and notes."""
    title_shape = _title_shape(slide)
    blocks = [Block("heading", slide_title(slide) or f"Slide {number}", level=1)]
    blocks.extend(_shape_blocks(slide.shapes, title_shape.shape_id if title_shape is not None else None))
    # has_notes_slide first: reading notes_slide adds a notes slide to a slide that has none.
    notes_frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
    if notes_frame is not None:
        notes = _text_frame_text(notes_frame)  # the notes placeholder's text frame
        if notes:
            blocks.extend([Block("heading", NOTES_HEADING, level=2), Block("paragraph", notes, markdown=notes)])
    return blocks


def _is_hidden(slide: Slide) -> bool:
    return slide._element.get("show") in ("0", "false")


@register
class PptxParser(OfficePackageParser):
    """PowerPoint decks (.pptx) through python-pptx, after a zip-bomb check."""

    suffixes = (".pptx",)
    mime_type = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    label = _LABEL
    application = "PowerPoint"
    main_part = "ppt/presentation.xml"

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        self.check_package(path, settings)
        try:
            deck = pptx.Presentation(str(path))
            blocks: list[Block] = []
            notes: list[str] = []
            first_title: str | None = None
            for number, slide in enumerate(deck.slides, start=1):
                if _is_hidden(slide):
                    notes.append(f"Slide {number} is hidden and was not ingested.")
                    continue
                blocks.extend(slide_blocks(slide, number))
                first_title = first_title or slide_title(slide) or None
            properties = deck.core_properties
            title = (properties.title or "").strip() or first_title
            language = (properties.language or "").strip() or None
        except zipfile.BadZipFile as exc:
            raise damaged(path, exc) from exc
        # python-pptx on a damaged part (found by fuzzing real decks' parts): its own errors, and attribute and
        # index lookups into elements or parts that are not what the relationships promised.
        except (PackageNotFoundError, KeyError, IndexError, AttributeError, ValueError, TypeError, *READ_ERRORS) as exc:
            raise CorruptDocumentError(
                f"'{path.name}' could not be read as a PowerPoint deck ({exc}). "
                "Open it in PowerPoint or LibreOffice Impress, save it as .pptx again, and re-upload."
            ) from exc
        if not any(block.kind == "paragraph" for block in blocks) and not first_title:
            raise EmptyDocumentError(f"'{path.name}' has no text on its slides.")
        result = build_parse_result(blocks, title=title, heading_source="slides", warnings=notes)
        result.declared_language = language
        return result
