"""OCR of scanned PDF pages: each page rendered with pypdfium2, read by Tesseract, returned as visual lines."""

# A page becomes a greyscale PGM (no image library needed: Leptonica reads PNM from stdin) at CHUNKBENCH_OCR_DPI.
# Its OCR lines become PdfLines in PDF points, so running headers, paragraphs, tables and font headings are found
# by the same rules as on a text layer.

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium

from chunkbench.config import Settings
from chunkbench.documents.ocr import OcrLine, recognize, tesseract
from chunkbench.documents.parsers.pdf_reader import PdfLine, has_rtl, open_pdf
from chunkbench.errors import OcrFailedError

# A4 at 300 dpi is 8.7 Mpx; a poster-sized page is rendered at a lower resolution rather than into gigabytes.
_MAX_PIXELS = 40_000_000
# Tesseract's font-size estimate wavers by a few percent between lines of one font.
_SAME_SIZE_SHARE = 0.15


def ocr_pages(path: Path, page_indexes: list[int], settings: Settings) -> dict[int, list[PdfLine]]:
    """``{page index: its lines}`` read by OCR, for the given pages of a PDF."""
    binary = tesseract(settings)  # a missing binary or language pack fails before any page is rendered
    found: dict[int, list[PdfLine]] = {}
    pdf = open_pdf(path)
    try:
        for index in page_indexes:
            what = f"page {index + 1} of '{path.name}'"
            image, dpi, height = _render(pdf, index, settings.ocr_dpi, what)
            lines = recognize(image, dpi=dpi, binary=binary, settings=settings, what=what)
            found[index] = _pdf_lines(lines, index, dpi, height)
    finally:
        pdf.close()
    return found


def _render(pdf: pdfium.PdfDocument, index: int, dpi: int, what: str) -> tuple[bytes, int, int]:
    """(PGM image, the resolution it was rendered at, its height in pixels) of one page."""
    page = pdf[index]
    try:
        width, height = page.get_size()
        scale = min(dpi / 72, math.sqrt(_MAX_PIXELS / max(width * height, 1.0)))
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            pixels = np.ascontiguousarray(bitmap.to_numpy())
            header = b"P5\n%d %d\n255\n" % (bitmap.width, bitmap.height)
            return header + pixels.tobytes(), round(scale * 72), bitmap.height
        finally:
            bitmap.close()
    except pdfium.PdfiumError as exc:
        raise OcrFailedError(
            f"{what} could not be rendered for OCR ({exc}). Re-export the PDF and upload it again."
        ) from exc
    finally:
        page.close()


def _pdf_lines(lines: list[OcrLine], page_index: int, dpi: int, height: int) -> list[PdfLine]:
    """OCR lines (pixels, y down) as the reader's lines (points, y up)."""
    points = 72 / dpi
    body = statistics.median(line.size for line in lines) if lines else 0.0
    result: list[PdfLine] = []
    for line in lines:
        # Snapped to the page's median, body lines look alike to the paragraph rule (a size change starts a
        # paragraph) and to the font heading rule; clearly larger lines (headings) keep their size.
        size = body if abs(line.size - body) <= _SAME_SIZE_SHARE * body else line.size
        result.append(
            PdfLine(
                text=line.text,
                page=page_index,
                x0=line.x0 * points,
                x1=line.x1 * points,
                bottom=(height - line.baseline) * points,
                top=(height - line.top) * points,
                size=size * points,
                bold=False,
                rtl=has_rtl(line.text),
            )
        )
    return result
