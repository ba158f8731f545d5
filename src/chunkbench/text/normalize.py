"""Text normalisation applied to every parser's output, Farsi/Arabic-aware."""

from __future__ import annotations

import re
import unicodedata

ZWNJ = "\u200c"

# Bidi embedding/override/isolate marks and LRM/RLM/ALM: layout hints, not text. They break search
# and token counts, so they go. ZWNJ (U+200C) and ZWJ (U+200D) change Farsi spelling and stay.
_BIDI_CONTROLS = dict.fromkeys(
    map(ord, "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), None
)
# Arabic code points that Farsi writes with its own letters.
_FARSI_LETTERS = str.maketrans({"ي": "ی", "ى": "ی", "ك": "ک"})
# Several ZWNJs in a row, or one next to a space, carry no meaning.
_ZWNJ_RUNS = re.compile(f"{ZWNJ}{{2,}}")
_ZWNJ_SPACE = re.compile(f" {ZWNJ}|{ZWNJ} ")


def normalize_text(text: str, *, keep_layout: bool = False) -> str:
    """NFKC, Farsi letters (``ي→ی``, ``ك→ک``), bidi controls removed, ZWNJ kept, spaces collapsed.

    ``keep_layout`` keeps each line's spacing (markdown list nesting, code indentation) and only drops
    trailing spaces.
    """
    # Every parser calls this on every block: the guards skip work most texts don't need.
    text = unicodedata.normalize("NFKC", text)
    text = text.translate(_BIDI_CONTROLS).translate(_FARSI_LETTERS)
    has_zwnj = ZWNJ in text
    if has_zwnj:
        text = _ZWNJ_RUNS.sub(ZWNJ, text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if keep_layout:
        return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")
    if has_zwnj:
        text = _ZWNJ_SPACE.sub(" ", text)
    # str.split() with no argument splits on runs of any whitespace, and no line holds a newline.
    return "\n".join(" ".join(line.split()) for line in text.split("\n")).strip()
