"""PDF parser (registered for ``.pdf``): read the lines, gate scans (or OCR them), drop running lines, assemble the
blocks."""

# The stages are modules of their own: pdf_reader (pypdfium2: lines, fonts, right-to-left text, images per page),
# pdf_gate (the Text-layer Gate: scanned, mixed, short), pdf_ocr (scanned pages through Tesseract, CHUNKBENCH_OCR=on),
# pdf_layout (paragraphs, tables, running headers, hyphenation), pdf_headings (outline or font statistics). This
# one runs them and puts headings, paragraphs and tables together in reading order.

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from chunkbench.config import Settings
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.parsers.pdf_gate import check_text, ocr_note, refuse_scanned, scanned_pages
from chunkbench.documents.parsers.pdf_headings import heading_spans
from chunkbench.documents.parsers.pdf_layout import (
    drop_running_lines,
    find_tables,
    join_lines,
    starts_paragraph,
    typical_pitch,
)
from chunkbench.documents.parsers.pdf_ocr import ocr_pages
from chunkbench.documents.parsers.pdf_reader import PdfLine, read_pdf, real_chars
from chunkbench.documents.tree import Block, build_parse_result
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
        pdf = read_pdf(path, images_below_chars=settings.pdf_min_median_chars_per_page)
        warnings: list[str] = []
        scans = scanned_pages(pdf.facts, settings)
        ocr_indexes: list[int] = []
        if scans and settings.ocr:
            for index, page_lines in ocr_pages(path, scans, settings).items():
                pdf.pages[index] = page_lines
                pdf.facts[index].chars = real_chars(page_lines)
            ocr_indexes = scans
            warnings.append(ocr_note(path.name, scans, settings))
        elif scans:
            warnings.append(refuse_scanned(path.name, pdf.facts, scans, settings))
        warnings += check_text(path.name, pdf.facts, settings, ocr_indexes=ocr_indexes)
        removed = drop_running_lines(pdf.pages)
        lines = [line for page_lines in pdf.pages for line in page_lines]
        blocks, source, heading_warnings = _blocks(lines, pdf.toc)
        warnings += heading_warnings
        if removed:
            warnings.append(f"Removed {removed} repeated header/footer/page-number lines.")
        result = build_parse_result(
            blocks, title=pdf.title, page_count=pdf.page_count, heading_source=source, warnings=warnings
        )
        return replace(result, ocr_pages=[index + 1 for index in ocr_indexes] or None)


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
