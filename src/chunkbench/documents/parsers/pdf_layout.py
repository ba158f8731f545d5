"""PDF layout: visual lines into paragraphs and tables; running headers, footers and hyphenation removed."""

# Limits: multi-column pages come out in pdfium's content-stream order (right for producers that write column after
# column, as LibreOffice and most typesetters do); two side-by-side text columns written line by line are detected
# as a two-column "table" of long cells and emitted column after column. Tables are found from geometry only (rows
# of aligned x-segments); ruling lines are not read, so a table whose cells touch (no gap wider than ~0.8 em) reads
# as ordinary lines.

from __future__ import annotations

import re
import statistics
from collections import Counter
from itertools import pairwise
from operator import attrgetter

from chunkbench.documents.parsers.pdf_reader import PdfLine

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

# Geometry thresholds, in multiples of the line's font size (em) unless noted.
_PARAGRAPH_PITCH_RATIO = 1.3  # line pitch over the typical pitch that starts a new paragraph
_INDENT_EM = 1.0
_SHORT_LINE_EM = 3.0
_HEADER_FOOTER_SHARE = 0.5  # a top/bottom line repeated on this share of pages is a running header
_HEADER_FOOTER_MIN_PAGES = 3
_TWO_COLUMN_MIN_CELL = 30  # average cell length above which a 2-"column table" is really text columns


def drop_running_lines(pages: list[list[PdfLine]]) -> int:
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

        def key(line: PdfLine, masked: bool = masked) -> str:
            text = " ".join(line.text.lower().split())
            return _DIGIT.sub("#", text) if masked else text

        def edges(lines: list[PdfLine]) -> list[PdfLine]:
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


def typical_pitch(lines: list[PdfLine]) -> float:
    """Median baseline-to-baseline distance of consecutive lines on one page: the line spacing."""
    pitches = [
        prev.bottom - line.bottom
        for prev, line in pairwise(lines)
        if prev.page == line.page and 0 < prev.bottom - line.bottom < 3 * line.size
    ]
    return statistics.median(pitches) if pitches else 0.0


def starts_paragraph(prev: PdfLine | None, line: PdfLine, pitch: float, right_edge: float, left_edge: float) -> bool:
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


def join_lines(texts: list[str], rtl: bool) -> str:
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


def find_tables(lines: list[PdfLine]) -> dict[int, tuple[int, list[list[str]], bool]]:
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
            found = [_column_of(columns, x0, x1) for x0, x1, _ in segments]
            if any(hit is None for hit in found) or len(set(found)) != len(found):
                break
            hits = [hit for hit in found if hit is not None]  # every one of them (typed int now)
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
