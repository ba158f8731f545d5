"""PDF reader on pypdfium2: the visual lines of each page (text in logical order, geometry, font), the outline."""

# How a page becomes lines: pdfium's text page gives the text (one call) with ``\r\n`` between the lines it finds;
# per line we read a few values through ``pypdfium2.raw`` (rectangles, font size/weight of three sample characters,
# one loose char box) instead of looping over every character, which keeps the parser within 2× of raw text
# extraction. Only right-to-left lines and lines split into several x-segments (table rows) are read character by
# character.
#
# Right-to-left text (measured on pdfium 5.x / pypdfium2 5.15):
#
# * fpdf2 (HarfBuzz shaping, Noto Naskh Arabic) and LibreOffice 7.4 (DOCX with ``w:bidi`` paragraphs) both write
#   glyphs in visual order. pdfium reorders the Arabic letters itself, so its text is in logical order for runs of
#   letters, but digits, punctuation and Latin runs inside RTL lines come out wrong (``فصل :۱`` for ``فصل ۱:``,
#   ``Reader PDF`` for ``PDF Reader``). So no line is trusted: every line with RTL letters is rebuilt from
#   geometry: characters sorted by x give the visual order, and the Unicode bidi algorithm (python-bidi) turns that
#   back into logical order, with the line's base direction taken from its majority of strong characters. The same
#   code handles a producer whose text pdfium returns in visual order.
# * ZWNJ (U+200C), fpdf2: the glyph is mapped to U+200C in ToUnicode. When HarfBuzz gives it an advance, pdfium
#   returns it with a box and sorting by x keeps it between its letters; when the advance is zero (seen in an 18 pt
#   heading), pdfium drops it, and it is recovered from the zero-width text object pdfium left with no text, kept
#   only between two RTL letters. Recovered in both cases.
# * ZWNJ, LibreOffice: written as a zero-advance space glyph wrapped in ``/Span <</ActualText (U+200C)>>``. pdfium
#   drops the glyph and ignores ActualText in the text page, so the marked-content API (``FPDFPageObjMark_*``) is
#   read for pages with RTL text, and a ZWNJ is inserted at the x of each such span. pdfium decodes the UTF-16
#   ActualText string byte by byte (``"\x20\x0c"``); both readings are accepted. Recovered. Spans inside form
#   XObjects are not visited (LibreOffice does not use them).
# * Arabic presentation forms (U+FB50–U+FEFF) become base letters by NFKC in ``normalize_text``.

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from bidi import get_display

from chunkbench.errors import CorruptDocumentError, EncryptedDocumentError

ZWNJ = "\u200c"
_LINE = re.compile(r"[^\r\n]+")
_RTL_CHAR = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_RTL_STRONG = re.compile(r"[\u0590-\u05ff\u0600-\u064a\u066e-\u06ef\u06fa-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_NOT_REAL = re.compile(r"[\W_]+")  # what str.isalnum() refuses, removed at C speed
_LTR_STRONG = re.compile(r"[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]")
_BOLD_NAME = re.compile(rb"bold|black|heavy|semibold|demi", re.IGNORECASE)
_FONT_WEIGHT_BOLD = 600
_FORCE_BOLD_FLAG = 1 << 18

# Geometry thresholds, in multiples of the line's font size (em).
_SEGMENT_GAP_EM = 0.8  # a wider horizontal gap splits a line into segments (table cells)
_SAME_BASELINE_EM = 0.3


@dataclass(slots=True)
class PdfLine:
    """One visual line: text in logical order, geometry in PDF points (y grows upwards)."""

    text: str
    page: int
    x0: float
    x1: float
    bottom: float
    top: float
    size: float
    bold: bool
    rtl: bool
    # (x0, x1, text) for lines made of several horizontally separated segments (table rows).
    segments: list[tuple[float, float, str]] = field(default_factory=list)


@dataclass(slots=True)
class _Char:
    text: str
    cx: float
    left: float
    right: float


class _PageReader:
    """Reads the lines of one text page through pypdfium2.raw with reusable ctypes buffers."""

    def __init__(self) -> None:
        self.left = ctypes.c_double()
        self.right = ctypes.c_double()
        self.bottom = ctypes.c_double()
        self.top = ctypes.c_double()
        self.rect = pdfium_c.FS_RECTF()
        self.font_name = ctypes.create_string_buffer(128)
        self.font_flags = ctypes.c_int()
        self.bold_fonts: dict[bytes, bool] = {}

    def lines(self, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, page_index: int) -> list[PdfLine]:
        tp = textpage.raw
        text = textpage.get_text_range()
        lines: list[PdfLine] = []
        marks: list[tuple[float, float, bool]] | None = None
        page_rtl = bool(_RTL_CHAR.search(text))
        for match in _LINE.finditer(text):
            raw = match.group()
            stripped = raw.strip()
            if not stripped:
                continue
            start = match.start() + (len(raw) - len(raw.lstrip()))
            end = match.start() + len(raw.rstrip())
            line = self._line(tp, stripped, start, end, page_index, page_rtl)
            if line.rtl or len(line.segments) > 1:
                if marks is None:
                    marks = _zwnj_marks(page, textpage) if page_rtl else []
                self._rebuild(tp, line, start, end, marks)
            lines.append(line)
        return _merge_same_baseline(lines)

    def _line(self, tp, text: str, start: int, end: int, page_index: int, page_rtl: bool) -> PdfLine:
        last = end - 1
        middle = (start + last) // 2
        size = pdfium_c.FPDFText_GetFontSize(tp, start)
        middle_size = pdfium_c.FPDFText_GetFontSize(tp, middle)
        if middle_size != size:
            # Median of three = their mode when two agree; a third read only when the first two differ.
            size = sorted((size, middle_size, pdfium_c.FPDFText_GetFontSize(tp, last)))[1]
        bold = self._is_bold(tp, start) and self._is_bold(tp, middle)
        pdfium_c.FPDFText_GetLooseCharBox(tp, start, self.rect)
        bottom, top = self.rect.bottom, self.rect.top
        x0, x1 = float("inf"), float("-inf")
        gap = _SEGMENT_GAP_EM * size
        spans: list[tuple[float, float]] = []
        for index in range(pdfium_c.FPDFText_CountRects(tp, start, end - start)):
            pdfium_c.FPDFText_GetRect(tp, index, self.left, self.top, self.right, self.bottom)
            spans.append((self.left.value, self.right.value))
        rtl = page_rtl and bool(_RTL_CHAR.search(text))
        if len(spans) == 1:  # the common case: one rectangle, one segment
            x0, x1 = spans[0]
            return PdfLine(text, page_index, x0, x1, bottom, top, size, bold, rtl)
        spans.sort()
        segments: list[tuple[float, float, str]] = []
        for left, right in spans:
            x0, x1 = min(x0, left), max(x1, right)
            if segments and left - segments[-1][1] <= gap:
                segments[-1] = (segments[-1][0], max(segments[-1][1], right), "")
            else:
                segments.append((left, right, ""))
        if not spans:
            x0 = x1 = self.rect.left
        return PdfLine(
            text=text,
            page=page_index,
            x0=x0,
            x1=x1,
            bottom=bottom,
            top=top,
            size=size,
            bold=bold,
            rtl=rtl,
            segments=segments if len(segments) > 1 else [],
        )

    def _is_bold(self, tp, index: int) -> bool:
        if pdfium_c.FPDFText_GetFontWeight(tp, index) >= _FONT_WEIGHT_BOLD:
            return True
        # Many producers (LibreOffice among them) leave the weight at 400 for a bold font: the name
        # or the ForceBold flag tells.
        length = pdfium_c.FPDFText_GetFontInfo(tp, index, self.font_name, 128, self.font_flags)
        name = self.font_name.raw[: max(length - 1, 0)]
        bold = self.bold_fonts.get(name)
        if bold is None:
            bold = bool(_BOLD_NAME.search(name.split(b"+")[-1])) or bool(self.font_flags.value & _FORCE_BOLD_FLAG)
            self.bold_fonts[name] = bold
        return bold

    def _rebuild(self, tp, line: PdfLine, start: int, end: int, marks: list[tuple[float, float, bool]]) -> None:
        """Re-read a RTL or multi-segment line char by char: logical order, ZWNJ, per-segment text."""
        chars: list[_Char] = []
        for index in range(start, end):
            code = pdfium_c.FPDFText_GetUnicode(tp, index)
            pdfium_c.FPDFText_GetCharBox(tp, index, self.left, self.right, self.bottom, self.top)
            left, right = self.left.value, self.right.value
            chars.append(_Char(chr(code), (left + right) / 2, left, right))
        if line.rtl:
            for x, y, actual_text in marks:
                if line.bottom - line.size * 0.5 <= y <= line.top and line.x0 - 1 <= x <= line.x1 + 1:
                    # LibreOffice's carrier glyph is a space; if pdfium kept it, the ZWNJ replaces it.
                    if any(c.text == ZWNJ and abs(c.cx - x) < 3 for c in chars):
                        continue
                    if actual_text:
                        chars = [c for c in chars if not (c.text == " " and c.left - 0.5 <= x <= c.right + 0.5)]
                    chars.append(_Char(ZWNJ, x, x, x))
            chars.sort(key=lambda c: c.cx)
            # A joiner only means something between two letters; drop strays (at edges, next to spaces).
            chars = [
                c
                for i, c in enumerate(chars)
                if c.text != ZWNJ
                or (
                    0 < i < len(chars) - 1
                    and bool(_RTL_STRONG.match(chars[i - 1].text))
                    and bool(_RTL_STRONG.match(chars[i + 1].text))
                )
            ]
        groups = line.segments or [(line.x0, line.x1, "")]
        texts: list[str] = []
        for seg_x0, seg_x1, _ in groups:
            members = [c for c in chars if seg_x0 - 1 <= c.cx <= seg_x1 + 1]
            texts.append(_logical_text(members) if line.rtl else "".join(c.text for c in members).strip())
        if line.segments:
            line.segments = [(x0, x1, text) for (x0, x1, _), text in zip(groups, texts, strict=True)]
            ordered = reversed(texts) if line.rtl else texts
            line.text = " ".join(text for text in ordered if text)
        else:
            line.text = texts[0]


def _logical_text(chars: list[_Char]) -> str:
    """Characters of one line → logical order, via their visual (x) order and the bidi algorithm."""
    visual = "".join(c.text for c in sorted(chars, key=lambda c: c.cx))
    rtl = len(_RTL_STRONG.findall(visual)) >= len(_LTR_STRONG.findall(visual))
    return get_display(visual, base_dir="R" if rtl else "L").strip()


def _read_wide(getter, *args) -> str:
    """Call a pdfium ``FPDF_WCHAR`` getter twice (size, then value) and decode its UTF-16LE result."""
    length = ctypes.c_ulong()
    getter(*args, None, 0, ctypes.byref(length))
    if length.value <= 2:
        return ""
    buffer = ctypes.create_string_buffer(length.value)
    getter(*args, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort)), length, ctypes.byref(length))
    return buffer.raw[: length.value].decode("utf-16-le", errors="replace").rstrip("\0")


def _actual_text_is_joiner(value: str) -> bool:
    """Whether an ActualText value is ZWNJ, read either as pdfium decodes it or as the UTF-16 it is."""
    if value == ZWNJ:
        return True
    if len(value) == 2 and all(ord(ch) < 0x100 for ch in value):
        return chr(ord(value[0]) << 8 | ord(value[1])) == ZWNJ
    return False


def _zwnj_marks(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> list[tuple[float, float, bool]]:
    """(x, y, from ActualText) of page objects that stand for a ZWNJ pdfium left out of the text page.

    Two kinds: objects in a marked-content span whose ActualText is ZWNJ (LibreOffice), and zero-width
    text objects whose text pdfium dropped (fpdf2 writes a lone zero-advance ZWNJ glyph when HarfBuzz
    gives it no width). The second kind is only kept between two RTL letters (see ``_rebuild``).
    """
    positions: list[tuple[float, float, bool]] = []
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    for index in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
        obj = pdfium_c.FPDFPage_GetObject(page.raw, index)
        joiner = False
        for mark_index in range(pdfium_c.FPDFPageObj_CountMarks(obj)):
            mark = pdfium_c.FPDFPageObj_GetMark(obj, mark_index)
            value = _read_wide(pdfium_c.FPDFPageObjMark_GetParamStringValue, mark, b"ActualText")
            joiner = joiner or (bool(value) and _actual_text_is_joiner(value))
        pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top)
        if joiner:
            positions.append((left.value, bottom.value, True))
        elif pdfium_c.FPDFPageObj_GetType(obj) == pdfium_c.FPDF_PAGEOBJ_TEXT:
            empty = pdfium_c.FPDFTextObj_GetText(obj, textpage.raw, None, 0) <= 2
            if empty and right.value - left.value < 0.5:
                positions.append((left.value, bottom.value, False))
    return positions


def _merge_same_baseline(lines: list[PdfLine]) -> list[PdfLine]:
    """Join consecutive pdfium lines on one baseline (a table row split by the producer) as segments."""
    merged: list[PdfLine] = []
    for line in lines:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and abs(prev.bottom - line.bottom) <= _SAME_BASELINE_EM * max(prev.size, line.size)
            and (line.x0 >= prev.x1 if not prev.rtl else line.x1 <= prev.x0)
        ):
            segments = prev.segments or [(prev.x0, prev.x1, prev.text)]
            segments += line.segments or [(line.x0, line.x1, line.text)]
            segments.sort(key=lambda seg: seg[0])
            prev.segments = segments
            prev.x0, prev.x1 = min(prev.x0, line.x0), max(prev.x1, line.x1)
            ordered = reversed(segments) if prev.rtl else segments
            prev.text = " ".join(seg[2] for seg in ordered if seg[2])
            continue
        merged.append(line)
    return merged


def open_pdf(path: Path) -> pdfium.PdfDocument:
    """Open a PDF, mapping pdfium's load errors to what the user must do."""
    try:
        return pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
            raise EncryptedDocumentError(
                f"'{path.name}' is password-protected; remove the password and upload again.",
                pdfium_error=str(exc),
            ) from exc
        raise CorruptDocumentError(
            f"'{path.name}' is not a readable PDF: it is damaged or truncated. "
            "Re-export or re-download it and upload again.",
            pdfium_error=str(exc),
        ) from exc


def _read_toc(pdf: pdfium.PdfDocument) -> list[tuple[int, str, int | None]]:
    """(level 1-based, title, page index) of every outline item; empty when there is none."""
    items: list[tuple[int, str, int | None]] = []
    for bookmark in pdf.get_toc(max_depth=6):
        title = (bookmark.get_title() or "").strip()
        dest = bookmark.get_dest()
        page_index = dest.get_index() if dest is not None else None
        if title:
            items.append((bookmark.level + 1, title, page_index))
    return items


def real_chars(lines: list[PdfLine]) -> int:
    """Letters and digits on a page: what the Text-layer Gate counts (spaces, punctuation, rules are no text)."""
    return sum(len(_NOT_REAL.sub("", line.text)) for line in lines)


def has_rtl(text: str) -> bool:
    """Whether a line holds right-to-left letters (Arabic script, Hebrew)."""
    return bool(_RTL_CHAR.search(text))


@dataclass(slots=True)
class PageFacts:
    """What the Text-layer Gate knows of a page: its real characters and the images on it."""

    chars: int
    # Counted only on pages with little text (see read_pdf); 0 elsewhere.
    images: int = 0
    # Share of the page (0–1) that images cover: their page-space boxes clipped to the page, summed, capped at 1.
    image_coverage: float = 0.0


@dataclass(slots=True)
class PdfText:
    """What the reader takes from a PDF: the visual lines of each page, the metadata title, the outline."""

    title: str | None
    page_count: int
    pages: list[list[PdfLine]]
    facts: list[PageFacts]
    # (level 1-based, title, page index) of every outline item.
    toc: list[tuple[int, str, int | None]]


_MAX_FORM_DEPTH = 8  # form XObjects nest; a hostile file must not recurse without end


def _images_in(obj, depth: int = 0) -> int:
    """Image objects in a page object: itself, or inside a form XObject (some scanners wrap the page image)."""
    kind = pdfium_c.FPDFPageObj_GetType(obj)
    if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
        return 1
    if kind != pdfium_c.FPDF_PAGEOBJ_FORM or depth >= _MAX_FORM_DEPTH:
        return 0
    return sum(
        _images_in(pdfium_c.FPDFFormObj_GetObject(obj, index), depth + 1)
        for index in range(pdfium_c.FPDFFormObj_CountObjects(obj))
    )


def _image_facts(page: pdfium.PdfPage) -> tuple[int, float]:
    """(images, share of the page they cover); a form holding images counts with its own (page-space) box."""
    page_left, page_bottom, page_right, page_top = page.get_bbox()
    area = (page_right - page_left) * (page_top - page_bottom)
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    images, covered = 0, 0.0
    for index in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
        obj = pdfium_c.FPDFPage_GetObject(page.raw, index)
        found = _images_in(obj)
        if not found:
            continue
        images += found
        if pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
            width = min(right.value, page_right) - max(left.value, page_left)
            height = min(top.value, page_top) - max(bottom.value, page_bottom)
            covered += max(width, 0.0) * max(height, 0.0)
    return images, min(covered / area, 1.0) if area > 0 else 0.0


def read_pdf(path: Path, *, images_below_chars: int) -> PdfText:
    """Every page's visual lines and facts, the title and the outline of a PDF; pdfium's errors become what the
    user must do.

    Images are looked for only on pages with fewer than ``images_below_chars`` real characters: a page full of
    text is no scan, and walking its thousands of objects would cost as much as reading its text.
    """
    pdf = open_pdf(path)
    try:
        page_count = len(pdf)
        title = (pdf.get_metadata_dict().get("Title") or "").strip() or None
        reader = _PageReader()
        pages: list[list[PdfLine]] = []
        facts: list[PageFacts] = []
        for page_index in range(page_count):
            page = pdf[page_index]
            try:
                textpage = page.get_textpage()
                try:
                    count = pdfium_c.FPDFText_CountChars(textpage.raw)
                    lines = reader.lines(page, textpage, page_index) if count > 0 else []
                finally:
                    textpage.close()
                fact = PageFacts(real_chars(lines))
                if fact.chars < images_below_chars:
                    fact.images, fact.image_coverage = _image_facts(page)
            finally:
                page.close()
            facts.append(fact)
            pages.append(lines)
        toc = _read_toc(pdf)
    except pdfium.PdfiumError as exc:
        raise CorruptDocumentError(
            f"'{path.name}' is damaged: a page could not be read ({exc}). Re-export it and upload again.",
            pdfium_error=str(exc),
        ) from exc
    finally:
        pdf.close()
    return PdfText(title, page_count, pages, facts, toc)
