"""PDF parser (registered for ``.pdf``): read the lines, gate scans, drop running lines, assemble the blocks."""

# The stages are modules of their own: pdf_reader (pypdfium2: lines, fonts, right-to-left text), pdf_layout
# (paragraphs, tables, running headers, hyphenation), pdf_headings (outline or font statistics). This one applies
# the Text-layer Gate and puts headings, paragraphs and tables together in reading order.

from __future__ import annotations

import statistics
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.pdf_headings import heading_spans
from chunkbench.documents.parsers.pdf_layout import (
    drop_running_lines,
    find_tables,
    join_lines,
    starts_paragraph,
    typical_pitch,
)
from chunkbench.documents.parsers.pdf_reader import PdfLine, read_pdf
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import ScannedPdfError
from chunkbench.models import ParseResult


@register
class PdfParser(DocumentParser):
    """PDF via pypdfium2 (Apache-2.0/BSD; PyMuPDF is AGPL and not used)."""

    suffixes = (".pdf",)
    mime_type = "application/pdf"
    label = "PDF"

    def sniff(self, head: bytes) -> bool:
        return b"%PDF-" in head[:1024]

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        pdf = read_pdf(path)
        _gate(path, pdf.chars_per_page, settings)
        removed = drop_running_lines(pdf.pages)
        lines = [line for page_lines in pdf.pages for line in page_lines]
        blocks, source, warnings = _blocks(lines, pdf.toc)
        if removed:
            warnings.append(f"Removed {removed} repeated header/footer/page-number lines.")
        return build_parse_result(
            blocks, title=pdf.title, page_count=pdf.page_count, heading_source=source, warnings=warnings
        )


def _gate(path: Path, chars_per_page: list[int], settings: Settings) -> None:
    """Text-layer Gate: refuse PDFs with (almost) no extractable text, i.e. scans without OCR."""
    total = sum(chars_per_page)
    median = statistics.median(chars_per_page) if chars_per_page else 0
    if total < settings.pdf_min_total_chars or median < settings.pdf_min_median_chars_per_page:
        raise ScannedPdfError(
            f"'{path.name}' looks scanned or image-only: {total} characters of text were found on "
            f"{len(chars_per_page)} page(s) (median {median:g} per page; needed at least "
            f"{settings.pdf_min_total_chars} in total and "
            f"{settings.pdf_min_median_chars_per_page} per page). "
            "Run OCR on it first (for example `ocrmypdf input.pdf output.pdf`) and upload the result.",
            chars_found=total,
            pages=len(chars_per_page),
            median_chars_per_page=median,
            min_total_chars=settings.pdf_min_total_chars,
            min_median_chars_per_page=settings.pdf_min_median_chars_per_page,
        )


def _blocks(lines: list[PdfLine], toc: list[tuple[int, str, int | None]]) -> tuple[list[Block], str, list[str]]:
    """Lines of the whole document → heading/paragraph/table blocks in reading order."""
    tables = find_tables(lines)
    in_table: set[int] = set()
    for start, (end, _, _) in tables.items():
        in_table.update(range(start, end))
    pitch = typical_pitch([ln for i, ln in enumerate(lines) if i not in in_table])
    right_edges: dict[int, float] = {}
    left_edges: dict[int, float] = {}
    for line in lines:
        right_edges[line.page] = max(right_edges.get(line.page, line.x1), line.x1)
        left_edges[line.page] = min(left_edges.get(line.page, line.x0), line.x0)
    paragraph_start = [
        starts_paragraph(lines[i - 1] if i else None, line, pitch, right_edges[line.page], left_edges[line.page])
        or (i - 1) in in_table
        for i, line in enumerate(lines)
    ]
    headings, source, warnings = heading_spans(toc, lines, in_table, paragraph_start)

    blocks: list[Block] = []
    current: list[str] = []
    current_rtl = False

    def flush() -> None:
        nonlocal current
        if current:
            blocks.append(Block("paragraph", join_lines(current, current_rtl)))
            current = []

    index = 0
    while index < len(lines):
        if index in tables:
            flush()
            end, rows, text_columns = tables[index]
            if text_columns:
                for column in range(2):
                    column_text = [row[column] for row in rows if row[column]]
                    blocks.append(Block("paragraph", join_lines(column_text, lines[index].rtl)))
            else:
                blocks.append(Block("paragraph", "\n".join(" | ".join(row) for row in rows)))
            index = end
            continue
        if index in headings:
            flush()
            last, level = headings[index]
            text = " ".join(ln.text for ln in lines[index : last + 1])
            blocks.append(Block("heading", text, level=level))
            index = last + 1
            continue
        line = lines[index]
        if paragraph_start[index] or line.rtl != current_rtl:
            flush()
        current_rtl = line.rtl
        current.append(line.text)
        index += 1
    flush()
    return blocks, source, warnings
