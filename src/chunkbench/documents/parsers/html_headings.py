"""HTML heading inference for pages without ``h1``–``h6``: each paragraph's font size and weight, for the font rule.

Many pages mark headings by style alone — SEC filings put ``<p><font size=4><b>PART I</b></font></p>`` or
``<div><span style="font-weight:700">Item 1. Business</span></div>`` where a heading belongs. This module reads
the inline styles a browser would apply to each text (``<b>``/``<strong>``/``<th>``, ``font-weight``, ``<font
size>``, ``<big>``/``<small>``, ``font-size`` in pt/px/em/rem/% or a keyword, the ``font`` shorthand), inherited down
the tree; documents/headings.py's font rule, the one the PDF parser uses, then decides which paragraphs are
headings and ranks their levels by size. Style sheets (``<style>``, classes) are not read.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from bs4 import NavigableString, Tag

from chunkbench.documents.headings import StyledLine, font_heading_levels
from chunkbench.documents.tree import Block

# Sizes in points. A browser's default text is 16 px = 12 pt.
_DEFAULT_PT = 12.0
_PX_TO_PT = 0.75
# CSS absolute-size keywords and HTML's <font size=1..7>, as browsers map them.
_SIZE_KEYWORDS = {
    "xx-small": 6.75, "x-small": 7.5, "small": 9.75, "medium": 12.0,
    "large": 13.5, "x-large": 18.0, "xx-large": 24.0, "xxx-large": 36.0,
}  # fmt: skip
_FONT_TAG_SIZES = (7.5, 10.0, 12.0, 13.5, 18.0, 24.0, 36.0)
_RELATIVE_STEP = 1.2  # "larger", "smaller", <big>, <small>
_SMALLER = 1 / _RELATIVE_STEP
_SCALED_TAGS = {"big": _RELATIVE_STEP, "small": _SMALLER, "sub": _SMALLER, "sup": _SMALLER}
_BOLD_TAGS = frozenset({"b", "strong", "th"})
_BOLD_WEIGHT = 600  # CSS's semibold and up renders bold
_LENGTH = re.compile(r"^([0-9]*\.?[0-9]+)(pt|px|em|rem|%|pc)$")
_FONT_TAG_SIZE = re.compile(r"^\s*([+-]?)([1-7])\s*$")


@dataclass(frozen=True)
class _Style:
    size: float
    bold: bool


_ROOT = _Style(_DEFAULT_PT, False)


class StyleResolver:
    """The size and weight every text of a page is shown in, computed once per element (children inherit)."""

    def __init__(self) -> None:
        self._styles: dict[int, _Style] = {}

    def of(self, tag: Tag) -> _Style:
        # Iterative: walk up to the nearest element already resolved, then resolve back down.
        chain: list[Tag] = []
        node: Tag | None = tag
        while node is not None and id(node) not in self._styles:
            chain.append(node)
            node = node.parent
        style = self._styles[id(node)] if node is not None else _ROOT
        for element in reversed(chain):
            style = _own_style(element, style)
            self._styles[id(element)] = style
        return style

    def styled_line(self, text: str, strings: Iterable[NavigableString]) -> StyledLine | None:
        """A paragraph's style for the font rule: its dominant size (by characters), bold only if all of it is."""
        sizes: Counter[float] = Counter()
        bold = True
        for string in strings:
            characters = len(string.strip())
            if not characters or string.parent is None:
                continue
            style = self.of(string.parent)
            sizes[style.size] += characters
            bold = bold and style.bold
        if not sizes:
            return None
        return StyledLine(text, sizes.most_common(1)[0][0], bold)


def infer_headings(blocks: list[Block], styled: dict[int, StyledLine]) -> int:
    """Turn the paragraphs ``{block index: style}`` that the font rule calls headings into headings, in place.

    Only paragraphs take part (tables, lists, quotes and code neither count for the body font nor become
    headings); returns how many headings were found.
    """
    indices = sorted(styled)
    levels = font_heading_levels([styled[index] for index in indices], share_by_characters=True)
    for position, level in levels.items():
        index = indices[position]
        blocks[index] = Block("heading", blocks[index].text, level=level)
    return len(levels)


def _own_style(tag: Tag, inherited: _Style) -> _Style:
    """The style of ``tag``: the tag's own meaning, then its presentational attribute, then its inline style."""
    size, bold = inherited.size, inherited.bold
    name = tag.name
    if name in _BOLD_TAGS:
        bold = True
    size *= _SCALED_TAGS.get(name, 1.0)
    if name == "font" and tag.has_attr("size"):
        size = _font_tag_size(str(tag["size"]), size)
    style = str(tag.get("style", "") or "")
    if "font" in style.lower():
        for declaration in style.split(";"):
            prop, _, value = declaration.partition(":")
            prop, value = prop.strip().lower(), value.strip().lower().removesuffix("!important").strip()
            if prop == "font-size":
                size = _css_size(value, inherited.size) or size
            elif prop == "font-weight":
                bold = _css_bold(value, bold)
            elif prop == "font":
                size, bold = _font_shorthand(value, size, bold, inherited.size)
    return _Style(size, bold)


def _font_tag_size(value: str, current: float) -> float:
    """``<font size="4">`` and the relative ``size="+1"`` (from the default 3)."""
    match = _FONT_TAG_SIZE.match(value)
    if match is None:
        return current
    sign, number = match.groups()
    step = 3 + int(number) if sign == "+" else 3 - int(number) if sign == "-" else int(number)
    return _FONT_TAG_SIZES[min(max(step, 1), 7) - 1]


def _css_size(value: str, parent: float) -> float | None:
    """A CSS ``font-size`` in points, ``None`` for a value the rule cannot read (``calc()``, ``vw``)."""
    if value in _SIZE_KEYWORDS:
        return _SIZE_KEYWORDS[value]
    if value in ("larger", "smaller"):
        return parent * (_RELATIVE_STEP if value == "larger" else _SMALLER)
    match = _LENGTH.match(value.replace(" ", ""))
    if match is None:
        return None
    number, unit = float(match.group(1)), match.group(2)
    scale = {"pt": 1.0, "px": _PX_TO_PT, "pc": 12.0, "rem": _DEFAULT_PT, "em": parent, "%": parent / 100}
    return number * scale[unit]


def _css_bold(value: str, current: bool) -> bool:
    if value in ("bold", "bolder"):
        return True
    if value in ("normal", "lighter"):
        return False
    return int(value) >= _BOLD_WEIGHT if value.isdigit() else current


def _font_shorthand(value: str, size: float, bold: bool, parent: float) -> tuple[float, bool]:
    """``font: bold 12pt/1.2 Arial``: the weight is normal unless the shorthand names one, as in CSS; a shorthand
    without a size is invalid CSS and changes nothing."""
    weight = False
    for token in value.split():
        if token in ("bold", "bolder", "lighter") or (token.isdigit() and len(token) == 3):
            weight = _css_bold(token, weight)
        elif (found := _css_size(token.split("/")[0], parent)) is not None:
            return found, weight  # the family follows the size: nothing after it is a size or weight
    return size, bold
