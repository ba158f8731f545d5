"""The chunk-boundary view: a document cut into pieces by which of a strategy's chunks cover them."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

# The chunk-boundary view shows at most this many characters of the document per strategy: five strategies of a
# long document would otherwise make a report of megabytes that a browser lays out slowly.
BOUNDARY_VIEW_MAX_CHARS = 20_000


def boundary_views(
    document_text: str | None,
    boundaries: Mapping[str, Sequence[tuple[int, int]]] | None,
    *,
    max_chars: int = BOUNDARY_VIEW_MAX_CHARS,
) -> list[dict[str, Any]]:
    """Per strategy: the document cut into pieces (text covered by which chunks, start and end markers)."""
    if document_text is None or not boundaries:
        return []
    return [
        boundary_view(document_text, spans, strategy=name, max_chars=max_chars) for name, spans in boundaries.items()
    ]


def boundary_view(
    text: str, spans: Sequence[tuple[int, int]], *, strategy: str, max_chars: int = BOUNDARY_VIEW_MAX_CHARS
) -> dict[str, Any]:
    """The document with one strategy's chunks: alternating backgrounds, overlaps marked, a marker at every start
    and end offset. A long document is cut at a chunk end near ``max_chars``, and the view says so."""
    chunks = sorted((max(int(s), 0), min(int(e), len(text))) for s, e in spans)
    chunks = [(s, e) for s, e in chunks if e > s]
    cut = len(text)
    if len(text) > max_chars:
        ends = [e for _, e in chunks if max_chars // 2 <= e <= max_chars]
        cut = max(ends) if ends else _soft_cut(text, max_chars)
    shown = [(i, s, e) for i, (s, e) in enumerate(chunks) if s < cut]
    points = sorted({0, cut, *(s for _, s, _ in shown), *(e for _, _, e in shown if e <= cut)})
    starts: dict[int, list[int]] = {}
    ends_at: dict[int, list[int]] = {}
    for i, s, e in shown:
        starts.setdefault(s, []).append(i)
        if e <= cut:
            ends_at.setdefault(e, []).append(i)
    # Sweep the points once: a chunk covers the segment [a, b) when it started at or before a and ends after a.
    ordered = sorted(shown, key=lambda c: c[1])
    first_starts = [s for _, s, _ in ordered]
    pieces: list[dict[str, Any]] = []
    for a, b in zip(points, [*points[1:], None], strict=True):
        pieces.extend({"kind": "end", "chunk": i, "offset": a} for i in ends_at.get(a, []))
        pieces.extend({"kind": "start", "chunk": i, "offset": a} for i in starts.get(a, []))
        if b is None or b <= a:
            continue
        upto = bisect.bisect_right(first_starts, a)
        covering = [i for i, s, e in ordered[:upto] if e > a]
        if not covering:
            css = "gap"
        elif len(covering) > 1:
            css = "overlap"
        else:
            css = f"c{covering[-1] % 2}"
        pieces.append({"kind": "text", "text": text[a:b], "css": css, "chunks": covering})
    return {
        "strategy": strategy,
        "pieces": pieces,
        "chunk_count": len(chunks),
        "shown_count": len(shown),
        "truncated": cut < len(text),
        "cut": cut,
        "length": len(text),
        "overlaps": sum(1 for p in pieces if p.get("css") == "overlap"),
        "gaps": sum(1 for p in pieces if p.get("css") == "gap" and p["text"].strip()),
    }


def _soft_cut(text: str, limit: int) -> int:
    # No chunk ends near the limit: cut at the last line break (or space) before it, not inside a word.
    for sep in ("\n", " "):
        at = text.rfind(sep, limit // 2, limit)
        if at > 0:
            return at
    return limit
