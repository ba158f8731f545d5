"""PDF heading detection: which of a PDF's lines are headings (outline, else font statistics, else numbering)."""

# This module works on the PDF's lines: it matches outline titles to the text, gathers each line's font size and
# weight as heading candidates and joins headings wrapped over two lines. The rules that decide (font-statistics
# levels, numbering/keyword heuristics, title keys) are format-free pure functions in documents/headings.py.

from __future__ import annotations

from chunkbench.documents.headings import (
    StyledLine,
    font_heading_levels,
    heuristic_levels,
    match_heading_pattern,
    match_key,
)
from chunkbench.documents.parsers.pdf_reader import PdfLine


def heading_spans(
    pdf_toc: list[tuple[int, str, int | None]],
    lines: list[PdfLine],
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


def _outline_headings(
    toc: list[tuple[int, str, int | None]], lines: list[PdfLine], excluded: set[int]
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


def _numbering_levels(spans: dict[int, tuple[int, int]], lines: list[PdfLine]) -> None:
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
