"""PDF parser on pypdfium2: Text-layer Gate, Heading Reconstruction, tables, headers/footers, Farsi.

How a page becomes blocks: pdfium's text page gives the text (one call) with ``\\r\\n`` between the lines
it finds; per line we read a few values through ``pypdfium2.raw`` (rectangles, font size/weight of
three sample characters, one loose char box) instead of looping over every character, which keeps the
parser within 2× of raw text extraction. Only right-to-left lines and lines split into several
x-segments (table rows) are read character by character.

Right-to-left text (measured on pdfium 5.x / pypdfium2 5.15):

* fpdf2 (HarfBuzz shaping, Noto Naskh Arabic) and LibreOffice 7.4 (DOCX with ``w:bidi`` paragraphs)
  both write glyphs in visual order. pdfium reorders the Arabic letters itself, so its text is in
  logical order for runs of letters, but digits, punctuation and Latin runs inside RTL lines come out
  wrong (``فصل :۱`` for ``فصل ۱:``, ``Reader PDF`` for ``PDF Reader``). So no line is trusted: every line
  with RTL letters is rebuilt from geometry: characters sorted by x give the visual order, and the
  Unicode bidi algorithm (python-bidi) turns that back into logical order, with the line's base
  direction taken from its majority of strong characters. The same code handles a producer whose
  text pdfium returns in visual order.
* ZWNJ (U+200C), fpdf2: the glyph is mapped to U+200C in ToUnicode. When HarfBuzz gives it an
  advance, pdfium returns it with a box and sorting by x keeps it between its letters; when the
  advance is zero (seen in an 18 pt heading), pdfium drops it, and it is recovered from the zero-width
  text object pdfium left with no text, kept only between two RTL letters. Recovered in both cases.
* ZWNJ, LibreOffice: written as a zero-advance space glyph wrapped in ``/Span <</ActualText (U+200C)>>``.
  pdfium drops the glyph and ignores ActualText in the text page, so the marked-content API
  (``FPDFPageObjMark_*``) is read for pages with RTL text, and a ZWNJ is inserted at the x of each such
  span. pdfium decodes the UTF-16 ActualText string byte by byte (``"\\x20\\x0c"``); both readings are
  accepted. Recovered. Spans inside form XObjects are not visited (LibreOffice does not use them).
* Arabic presentation forms (U+FB50–U+FEFF) become base letters by NFKC in ``normalize_text``.

Limits: multi-column pages come out in pdfium's content-stream order (right for producers that write
column after column, as LibreOffice and most typesetters do); two side-by-side text columns written
line by line are detected as a two-column "table" of long cells and emitted column after column. Tables
are found from geometry only (rows of aligned x-segments); ruling lines are not read, so a table whose
cells touch (no gap wider than ~0.8 em) reads as ordinary lines.
"""

from __future__ import annotations

import ctypes
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from operator import attrgetter
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from bidi import get_display

from chunkbench.config import Settings
from chunkbench.documents.headings import (
    StyledLine,
    font_heading_levels,
    heuristic_levels,
    match_heading_pattern,
    match_key,
)
from chunkbench.documents.parsers.base import DocumentParser, register
from chunkbench.documents.tree import Block, build_parse_result
from chunkbench.errors import CorruptDocumentError, EncryptedDocumentError, ScannedPdfError
from chunkbench.models import ParseResult

ZWNJ = "\u200c"
_LINE = re.compile(r"[^\r\n]+")
_RTL_CHAR = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_RTL_STRONG = re.compile(r"[\u0590-\u05ff\u0600-\u064a\u066e-\u06ef\u06fa-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_LTR_STRONG = re.compile(r"[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]")
_DIGIT = re.compile(r"[0-9۰-۹٠-٩]+")
_TERMINAL = re.compile(r"[.!?؟:;۔\"”»)]\s*$")
# pdfium reports a hyphen that ends a line as U+FFFE (sometimes U+0002).
_HYPHENS = frozenset("-\u00ad\u2010\x02\ufffe")
_SOFT_BREAK = re.compile(r"([^\W\d_]+)[-\u00ad\u2010\x02]?\ufffe\s*([^\W\d_]*)")
# First halves of compounds whose hyphen is real: "well-known" stays, "exam-ple" becomes "example".
_COMPOUND_PREFIXES = frozenset(
    {"well", "self", "non", "cross", "multi", "long", "short", "high", "low", "all", "half", "ill"}
    | {"semi", "anti", "ex", "co", "post", "pre"}
)
_BOLD_NAME = re.compile(rb"bold|black|heavy|semibold|demi", re.IGNORECASE)
# A bare page number or "Page 3 of 10" style line (digits are normalised to '#' before matching).
_PAGE_NUMBER = re.compile(r"^(?:page|p\.|صفحه)?\s*[-–(]?\s*#+\s*(?:(?:of|/|از)\s*#+)?\s*[-–)]?$")
_FONT_WEIGHT_BOLD = 600
_FORCE_BOLD_FLAG = 1 << 18

# Geometry thresholds, in multiples of the line's font size (em) unless noted.
_SEGMENT_GAP_EM = 0.8  # a wider horizontal gap splits a line into segments (table cells)
_SAME_BASELINE_EM = 0.3
_PARAGRAPH_PITCH_RATIO = 1.3  # line pitch over the typical pitch that starts a new paragraph
_INDENT_EM = 1.0
_SHORT_LINE_EM = 3.0
_HEADER_FOOTER_SHARE = 0.5  # a top/bottom line repeated on this share of pages is a running header
_HEADER_FOOTER_MIN_PAGES = 3
_TWO_COLUMN_MIN_CELL = 30  # average cell length above which a 2-"column table" is really text columns


@dataclass(slots=True)
class _Line:
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

    def lines(self, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, page_index: int) -> list[_Line]:
        tp = textpage.raw
        text = textpage.get_text_range()
        lines: list[_Line] = []
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

    def _line(self, tp, text: str, start: int, end: int, page_index: int, page_rtl: bool) -> _Line:
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
            return _Line(text, page_index, x0, x1, bottom, top, size, bold, rtl)
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
        return _Line(
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

    def _rebuild(self, tp, line: _Line, start: int, end: int, marks: list[tuple[float, float, bool]]) -> None:
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


def _merge_same_baseline(lines: list[_Line]) -> list[_Line]:
    """Join consecutive pdfium lines on one baseline (a table row split by the producer) as segments."""
    merged: list[_Line] = []
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


def _drop_running_lines(pages: list[list[_Line]]) -> int:
    """Remove headers/footers/page numbers repeated at the top or bottom of most pages; return how many.

    First pass: the top-most and bottom-most line of each page, digits masked so ``Page 3`` matches
    ``Page 4``. Second pass (a two-line header or footer): the next line, compared verbatim, so that
    numbered headings that happen to open many pages are not taken for running text.
    """
    if len(pages) < _HEADER_FOOTER_MIN_PAGES:
        return 0
    threshold = max(_HEADER_FOOTER_MIN_PAGES, _HEADER_FOOTER_SHARE * len(pages))
    sizes = Counter(round(ln.size) for lines in pages for ln in lines)
    body = sizes.most_common(1)[0][0] if sizes else 0
    removed = 0
    for masked in (True, False):

        def key(line: _Line, masked: bool = masked) -> str:
            text = " ".join(line.text.lower().split())
            return _DIGIT.sub("#", text) if masked else text

        def edges(lines: list[_Line]) -> list[_Line]:
            if not lines:
                return []
            top = max(lines, key=attrgetter("top"))
            bottom = min(lines, key=attrgetter("top"))
            return [top] if top is bottom else [top, bottom]

        counts: Counter[str] = Counter()
        for lines in pages:
            # Second pass: only lines smaller than body text, or wrapped paragraphs ending alike would go.
            counts.update({key(ln) for ln in edges(lines) if masked or round(ln.size) < body})
        running = {k for k, count in counts.items() if count >= threshold}
        if not running:
            break
        for lines in pages:
            drop = {id(ln) for ln in edges(lines) if key(ln) in running and (masked or round(ln.size) < body)}
            if drop:
                removed += len(drop)
                lines[:] = [ln for ln in lines if id(ln) not in drop]
    return removed


def _typical_pitch(lines: list[_Line]) -> float:
    """Median baseline-to-baseline distance of consecutive lines on one page: the line spacing."""
    pitches = [
        prev.bottom - line.bottom
        for prev, line in pairwise(lines)
        if prev.page == line.page and 0 < prev.bottom - line.bottom < 3 * line.size
    ]
    return statistics.median(pitches) if pitches else 0.0


def _starts_paragraph(prev: _Line | None, line: _Line, pitch: float, right_edge: float, left_edge: float) -> bool:
    """Whether ``line`` begins a new paragraph after ``prev`` (gap, indent, or a short finished line)."""
    if prev is None or prev.page != line.page:
        # Across a page break a paragraph goes on only if the last line did not end a sentence and
        # the next one starts in lower case.
        return prev is None or bool(_TERMINAL.search(prev.text)) or not line.text[:1].islower()
    distance = prev.bottom - line.bottom
    if distance <= 0 or distance > (pitch * _PARAGRAPH_PITCH_RATIO if pitch else 2 * line.size):
        return True
    if abs(prev.size - line.size) >= 1 or prev.bold != line.bold:
        return True
    if line.rtl:
        indented = line.x1 < prev.x1 - _INDENT_EM * line.size
        short_prev = prev.x0 > left_edge + _SHORT_LINE_EM * prev.size
    else:
        indented = line.x0 > prev.x0 + _INDENT_EM * line.size
        short_prev = prev.x1 < right_edge - _SHORT_LINE_EM * prev.size
    return indented or (short_prev and bool(_TERMINAL.search(prev.text)))


def _unhyphenate(match: re.Match[str]) -> str:
    word, rest = match.group(1), match.group(2)
    if word[-1:].islower() and rest[:1].islower() and word.lower() not in _COMPOUND_PREFIXES:
        return word + rest
    return f"{word}-{rest}"


def _join_lines(texts: list[str], rtl: bool) -> str:
    """Join a paragraph's lines; undo end-of-line hyphenation of a lower-case word (``exam-`` + ``ple``).

    pdfium itself joins some hyphenated lines and leaves U+FFFE where the hyphen was; those are
    resolved by the same rule. A hyphen after a compound prefix (``well-known``) is kept.
    """
    out = ""
    for text in texts:
        if not out:
            out = text
        elif not rtl and out[-1] in _HYPHENS and out[-2:-1].isalpha():
            out = f"{out}\ufffe{text}"
        else:
            out = f"{out} {text}"
    if "\ufffe" in out:
        out = _SOFT_BREAK.sub(_unhyphenate, out)
    return out.replace("\x02", "-").replace("\ufffe", "-") if "\x02" in out or "\ufffe" in out else out


def _find_tables(lines: list[_Line]) -> dict[int, tuple[int, list[list[str]], bool]]:
    """``{first line index: (end index, rows of cells, is_text_columns)}`` for runs of aligned segments.

    A table starts at a line of ≥ 2 segments. Following lines on the same page belong to it when each
    of their segments overlaps a distinct column of the first row; a single segment close below the
    previous line that overlaps one column continues that cell (a wrapped cell). Two rows at least.
    """
    tables: dict[int, tuple[int, list[list[str]], bool]] = {}
    index = 0
    while index < len(lines):
        first = lines[index]
        if len(first.segments) < 2:
            index += 1
            continue
        columns = [(x0, x1) for x0, x1, _ in first.segments]
        rows = [[text for _, _, text in first.segments]]
        end = index + 1
        while end < len(lines):
            line, prev = lines[end], lines[end - 1]
            if line.page != first.page or prev.bottom - line.bottom > 4 * line.size:
                break
            segments = line.segments or [(line.x0, line.x1, line.text)]
            hits = [_column_of(columns, x0, x1) for x0, x1, _ in segments]
            if any(hit is None for hit in hits) or len(set(hits)) != len(hits):
                break
            if len(segments) == 1:
                if prev.bottom - line.bottom > 1.6 * line.size or (hits[0] == 0 and len(rows) < 2):
                    break
                cell = hits[0]
                rows[-1][cell] = f"{rows[-1][cell]} {segments[0][2]}".strip()
            else:
                row = [""] * len(columns)
                for hit, (_, _, text) in zip(hits, segments, strict=True):
                    row[hit] = text
                rows.append(row)
            end += 1
        if len(rows) >= 2:
            cells = [cell for row in rows for cell in row if cell]
            text_columns = len(columns) == 2 and sum(map(len, cells)) / len(cells) > _TWO_COLUMN_MIN_CELL
            if first.rtl:
                rows = [list(reversed(row)) for row in rows]
            tables[index] = (end, rows, text_columns)
            index = end
        else:
            index += 1
    return tables


def _column_of(columns: list[tuple[float, float]], x0: float, x1: float) -> int | None:
    """Index of the one column the span [x0, x1] overlaps, or None (none, or several)."""
    found = [i for i, (c0, c1) in enumerate(columns) if x0 < c1 + 1 and x1 > c0 - 1]
    return found[0] if len(found) == 1 else None


def _outline_headings(
    toc: list[tuple[int, str, int | None]], lines: list[_Line], excluded: set[int]
) -> dict[int, tuple[int, int]]:
    """``{first line: (last line, level)}`` matched from the outline; titles may wrap over lines."""
    found: dict[int, tuple[int, int]] = {}
    cursor = 0
    for level, title, page_index in toc:
        target = match_key(title)
        if not target:
            continue
        for index in range(cursor, len(lines)):
            line = lines[index]
            # Some producers record the page before a heading was pushed to the next one.
            if index in excluded or (page_index is not None and line.page not in (page_index, page_index + 1)):
                continue
            key = match_key(line.text)
            if not key:
                continue
            if key.startswith(target) and len(key) <= len(target) * 1.5 + 10:
                found[index] = (index, level)
                cursor = index + 1
                break
            if target.startswith(key):
                last, joined = index, key
                while joined != target and last + 1 < len(lines) and lines[last + 1].page == line.page:
                    nxt = match_key(lines[last + 1].text)
                    if not target.startswith(joined + nxt):
                        break
                    last, joined = last + 1, joined + nxt
                if joined == target or len(joined) >= 0.6 * len(target):
                    found[index] = (last, level)
                    cursor = last + 1
                    break
    return found


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


def _headings(
    pdf_toc: list[tuple[int, str, int | None]],
    lines: list[_Line],
    excluded: set[int],
    paragraph_start: list[bool],
) -> tuple[dict[int, tuple[int, int]], str, list[str]]:
    """Heading spans ``{first line: (last line, level)}`` and where they came from."""
    warnings: list[str] = []
    if pdf_toc:
        found = _outline_headings(pdf_toc, lines, excluded)
        if found and len(found) >= 0.5 * len(pdf_toc):
            if len(found) < len(pdf_toc):
                warnings.append(f"{len(pdf_toc) - len(found)} of {len(pdf_toc)} outline entries not found in the text")
            return found, "outline", warnings
        warnings.append("The PDF outline does not match the text; headings were inferred from fonts.")

    candidates = [i for i in range(len(lines)) if i not in excluded]
    styled = [StyledLine(lines[i].text, lines[i].size, lines[i].bold) for i in candidates]
    levels = font_heading_levels(styled)
    if levels:
        by_line = {candidates[position]: level for position, level in levels.items()}
        spans: dict[int, tuple[int, int]] = {}
        previous: int | None = None
        for index in sorted(by_line):
            # A heading wrapped over two lines: same style, directly below, no paragraph gap.
            if (
                previous is not None
                and spans[previous][0] == index - 1
                and spans[previous][1] == by_line[index]
                and not paragraph_start[index]
            ):
                spans[previous] = (index, by_line[index])
                continue
            spans[index] = (index, by_line[index])
            previous = index
        _numbering_levels(spans, lines)
        return spans, "font", warnings

    matches = {}
    for index in candidates:
        single = paragraph_start[index] and (index + 1 >= len(lines) or paragraph_start[index + 1])
        if single:
            match = match_heading_pattern(lines[index].text)
            if match:
                matches[index] = match
    if matches:
        order = sorted(matches)
        assigned = heuristic_levels([matches[i] for i in order])
        return {i: (i, level) for i, level in zip(order, assigned, strict=True)}, "heuristic", warnings
    return {}, "none", warnings


def _numbering_levels(spans: dict[int, tuple[int, int]], lines: list[_Line]) -> None:
    """When every font heading has one style, numbering (``1.2``) can still tell the levels apart."""
    if len({level for _, level in spans.values()}) != 1:
        return
    matches = {i: match_heading_pattern(lines[i].text) for i in spans}
    if len(matches) < 2 or any(m is None for m in matches.values()):
        return
    order = sorted(matches)
    levels = heuristic_levels([matches[i] for i in order])  # type: ignore[misc]
    if len(set(levels)) > 1:
        for index, level in zip(order, levels, strict=True):
            spans[index] = (spans[index][0], level)


def _blocks(lines: list[_Line], toc: list[tuple[int, str, int | None]]) -> tuple[list[Block], str, list[str]]:
    """Lines of the whole document → heading/paragraph/table blocks in reading order."""
    tables = _find_tables(lines)
    in_table: set[int] = set()
    for start, (end, _, _) in tables.items():
        in_table.update(range(start, end))
    pitch = _typical_pitch([ln for i, ln in enumerate(lines) if i not in in_table])
    right_edges: dict[int, float] = {}
    left_edges: dict[int, float] = {}
    for line in lines:
        right_edges[line.page] = max(right_edges.get(line.page, line.x1), line.x1)
        left_edges[line.page] = min(left_edges.get(line.page, line.x0), line.x0)
    paragraph_start = [
        _starts_paragraph(lines[i - 1] if i else None, line, pitch, right_edges[line.page], left_edges[line.page])
        or (i - 1) in in_table
        for i, line in enumerate(lines)
    ]
    headings, source, warnings = _headings(toc, lines, in_table, paragraph_start)

    blocks: list[Block] = []
    current: list[str] = []
    current_rtl = False

    def flush() -> None:
        nonlocal current
        if current:
            blocks.append(Block("paragraph", _join_lines(current, current_rtl)))
            current = []

    index = 0
    while index < len(lines):
        if index in tables:
            flush()
            end, rows, text_columns = tables[index]
            if text_columns:
                for column in range(2):
                    column_text = [row[column] for row in rows if row[column]]
                    blocks.append(Block("paragraph", _join_lines(column_text, lines[index].rtl)))
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


def _open(path: Path) -> pdfium.PdfDocument:
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


@register
class PdfParser(DocumentParser):
    """PDF via pypdfium2 (Apache-2.0/BSD; PyMuPDF is AGPL and not used)."""

    suffixes = (".pdf",)
    mime_type = "application/pdf"
    label = "PDF"

    def sniff(self, head: bytes) -> bool:
        return b"%PDF-" in head[:1024]

    def parse(self, path: Path, settings: Settings) -> ParseResult:
        pdf = _open(path)
        try:
            page_count = len(pdf)
            title = (pdf.get_metadata_dict().get("Title") or "").strip() or None
            reader = _PageReader()
            pages: list[list[_Line]] = []
            chars_per_page: list[int] = []
            for page_index in range(page_count):
                page = pdf[page_index]
                try:
                    textpage = page.get_textpage()
                    try:
                        count = pdfium_c.FPDFText_CountChars(textpage.raw)
                        lines = reader.lines(page, textpage, page_index) if count > 0 else []
                    finally:
                        textpage.close()
                finally:
                    page.close()
                chars_per_page.append(sum(len(ln.text.replace(" ", "")) for ln in lines))
                pages.append(lines)
            toc = _read_toc(pdf)
        except pdfium.PdfiumError as exc:
            raise CorruptDocumentError(
                f"'{path.name}' is damaged: a page could not be read ({exc}). Re-export it and upload again.",
                pdfium_error=str(exc),
            ) from exc
        finally:
            pdf.close()

        _gate(path, chars_per_page, settings)
        removed = _drop_running_lines(pages)
        lines = [line for page_lines in pages for line in page_lines]
        blocks, source, warnings = _blocks(lines, toc)
        if removed:
            warnings.append(f"Removed {removed} repeated header/footer/page-number lines.")
        return build_parse_result(blocks, title=title, page_count=page_count, heading_source=source, warnings=warnings)


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
