"""The text encoding of a TXT, MD or HTML file, and its text.

In this order: a byte-order mark; UTF-16 without one (recognised by where its zero bytes fall); 7-bit ISO-2022
(recognised by its escape sequences); strict UTF-8; a charset the file declares (HTML ``<meta>``, XML
declaration); else a guess among the common legacy encodings, scored by how plausible each decoded text is
(charset-normalizer alone reads a few sentences of windows-1252 or ISO-8859-15 as windows-1257, and nothing in a
statistical detector keeps windows-1256 Farsi from reading as windows-1252 mojibake).
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice, pairwise
from typing import Literal

from charset_normalizer import from_bytes

from chunkbench.errors import CorruptDocumentError

# Longest BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels that browsers decode as windows-1252 (WHATWG Encoding), which also maps 0x80–0x9F to
# the curly quotes and dashes such pages really contain instead of C1 control characters.
_WINDOWS_1252_ALIASES = frozenset({"ascii", "us-ascii", "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1"})
# The legacy encodings a file that is neither UTF-8 nor labelled is tried in, most common first: where two decode
# a text equally plausibly the earlier wins (windows-1252 is what browsers assume for unlabelled Western pages).
_LEGACY = (
    "cp1252", "iso8859_15", "cp1250", "iso8859_2", "cp1251", "koi8_r", "cp1256", "iso8859_6",
    "cp1253", "iso8859_7", "cp1254", "cp1255", "iso8859_8", "cp1257", "iso8859_4",
)  # fmt: skip
# ISO-2022 text is 7-bit, so it would pass as UTF-8 with its escape sequences left in the words; the escape that
# designates a double-byte character set names the encoding (Korean's comes once, in the header). Japanese mail
# and text (ISO-2022-JP) is the common case; ISO-2022-JP-2 covers the other sets it can switch to.
_ISO2022 = (
    (re.compile(rb"\x1b\$\)C"), ("iso2022_kr",)),
    (re.compile(rb"\x1b(?:\$[@AB]|\$\([CD]|\(J|\.[AF])"), ("iso2022_jp", "iso2022_jp_2")),
)
_UTF16_SAMPLE = 8192  # bytes looked at for UTF-16's zero bytes (the block parse_document sniffs)
# UTF-16 of text puts the zero high byte of ASCII characters on one side of each code unit; a few on the other
# side come from characters such as U+0100 or U+4E00, many mean binary data.
_UTF16_STRAY_ZEROS = 0.05
_MAX_CONTROL_SHARE = 0.01  # text has (almost) no control characters besides tabs, line and page breaks
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_CONTROL_PENALTY = 3  # a control character is near-certain proof of the wrong encoding; an odd word is less
_SCORED_TOKENS = 5000  # words with non-ASCII characters scored per encoding: plenty, and bounded
_SAMPLE_BYTES = 65536  # of lines with non-ASCII bytes, which each legacy encoding is scored on
_HIGH_BYTE = re.compile(rb"[\x80-\xff]")
_LINE_LEAD = 256  # bytes of a sampled line kept before its first non-ASCII byte
_WORD = re.compile(r"[^\W\d_]+")
_IN_WORD_MARKS = frozenset("\u2019\u02bc\u00b7\u2010\u2011")  # ’ ʼ · ‐ ‑ really occur inside words
_SUPERSCRIPTS = frozenset("¹²³ⁿ")
# Latin-1 signs that appear almost only as another encoding's letters read as Latin-1 (ISO-8859-15's € Š š Ž ž).
_MOJIBAKE_SIGNS = frozenset("¤¦¨´¸")
# The accented letters of the languages written in the Latin legacy code pages. A wrong Latin code page reads the
# same bytes as letters no one language uses together (Czech "přijde" in windows-1252 is "pøijde").
_LANGUAGE_LETTERS = {
    "French": "àâæçéèêëîïôœùûüÿ",
    "German": "äöüß",
    "Spanish": "áéíñóúü",
    "Portuguese": "áâãàçéêíóôõú",
    "Italian": "àèéìíîòóùú",
    "Catalan": "àçèéíïòóúü",
    "Hungarian": "áéíóöőúüű",
    "Czech": "áčďéěíňóřšťúůýž",
    "Slovak": "áäčďéíĺľňóôŕšťúýž",
    "Polish": "ąćęłńóśźż",
    "Croatian, Slovenian": "čćđšž",
    "Romanian": "ăâîșțşţ",
    "Danish, Norwegian": "æøåé",
    "Swedish, Finnish": "åäöé",
    "Icelandic": "áðéíóúýþæö",
    "Dutch": "áéíóúàèëïöü",
    "Turkish": "çğıöşüâî",
    "Estonian": "äöõüšž",
    "Latvian": "āčēģīķļņšūž",
    "Lithuanian": "ąčęėįšųūž",
    "Albanian": "çë",
}
_ALPHABETS = tuple(frozenset(letters) for letters in _LANGUAGE_LETTERS.values())
_NEUTRAL_LETTERS = frozenset({"MICRO", "FEMININE", "MASCULINE", "MODIFIER", "COMBINING"})
_HAN = frozenset({"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HALFWIDTH", "FULLWIDTH", "IDEOGRAPHIC"})

Source = Literal["bom", "utf-16 pattern", "iso-2022 escapes", "utf-8", "declared", "detected"]
_HOW: dict[Source, str] = {
    "bom": "from its byte-order mark",
    "utf-16 pattern": "it has no byte-order mark; recognised by its zero bytes",
    "iso-2022 escapes": "recognised by its ISO-2022 escape sequences",
    "declared": "the charset the file declares",
    "detected": "detected: the file is not UTF-8 and declares no usable charset; if the text reads wrong, "
    "save the file as UTF-8",
}


@dataclass(frozen=True)
class DecodedText:
    """A file's text, the codec it was decoded with and how that codec was found."""

    text: str
    codec: str  # a Python codec name
    source: Source

    @property
    def encoding(self) -> str:
        """The codec as people name it: ``windows-1256``, ``ISO-8859-15``, ``UTF-16-LE``."""
        name = codecs.lookup(self.codec).name
        if name.startswith("cp125"):
            return f"windows-{name[2:]}"
        return name.upper().replace("ISO8859", "ISO-8859").replace("ISO2022_", "ISO-2022-").replace("_", "-")

    @property
    def notes(self) -> list[str]:
        """What the parse result records about the decoding: nothing for UTF-8, else the encoding and why."""
        if codecs.lookup(self.codec).name == "utf-8":
            return []
        return [f"Decoded as {self.encoding} ({_HOW[self.source]})."]


def looks_like_text(head: bytes) -> bool:
    """Whether a file's first block can be text: a byte-order mark, no zero bytes, or those of UTF-16."""
    return head.startswith(tuple(bom for bom, _ in _BOMS)) or b"\x00" not in head or _utf16_codec(head) is not None


def decode_text(data: bytes, declared_encoding: str | None = None) -> str:
    """A text file's text (for parsers that need nothing else, such as plugins)."""
    return decode(data, declared_encoding).text


def decode(data: bytes, declared_encoding: str | None = None) -> DecodedText:
    """Decode a text file's bytes (see the module docstring for the order); undecodable bytes are a
    :class:`CorruptDocumentError`."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return DecodedText(_strict(data[len(bom) :], codec, "starts with a {} byte-order mark"), codec, "bom")
    utf16 = _utf16_codec(data[:_UTF16_SAMPLE])
    if utf16 is not None:
        return DecodedText(_strict(data, utf16, "looks like {} without a byte-order mark"), utf16, "utf-16 pattern")
    iso2022 = _iso2022(data)
    if iso2022 is not None:
        return iso2022
    try:
        return DecodedText(data.decode("utf-8"), "utf-8", "utf-8")
    except UnicodeDecodeError:
        pass
    declared = _declared_codec(declared_encoding)
    if declared is not None:
        try:
            return DecodedText(data.decode(declared), declared, "declared")
        except UnicodeDecodeError:
            pass  # a wrong declaration: guess as if there were none
    return _guess(data)


def _strict(data: bytes, codec: str, what: str) -> str:
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        name = codec.upper()
        raise CorruptDocumentError(
            f"The file {what.format(name)} but is not valid {name} ({exc.reason} at byte {exc.start}). "
            "Re-save it as UTF-8."
        ) from exc


def _utf16_codec(sample: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` when the sample's zero bytes fall on one side of the code units and it
    decodes to text; ``None`` otherwise (no zero bytes, or binary data)."""
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if not even + odd or min(even, odd) > max(even, odd) * _UTF16_STRAY_ZEROS:
        return None
    codec = "utf-16-le" if odd > even else "utf-16-be"  # "A" is 41 00 in little-endian
    try:  # incremental: the sample may end inside a character
        text = codecs.getincrementaldecoder(codec)().decode(sample, final=False)
    except UnicodeDecodeError:
        return None
    is_text = text and "\x00" not in text and _control_count(text) <= len(text) * _MAX_CONTROL_SHARE
    return codec if is_text else None


def _iso2022(data: bytes) -> DecodedText | None:
    """The text of a 7-bit file whose escape sequences designate an ISO-2022 character set, if it decodes so."""
    if not data.isascii():
        return None
    for pattern, codecs_to_try in _ISO2022:
        if pattern.search(data):
            for codec in codecs_to_try:
                try:
                    return DecodedText(data.decode(codec), codec, "iso-2022 escapes")
                except UnicodeDecodeError:
                    continue
    return None


def _declared_codec(label: str | None) -> str | None:
    """The codec a charset label names, or ``None`` for an unknown label or one that cannot describe a file whose
    label was read as ASCII (UTF-16 and UTF-32 files were recognised before; browsers ignore such labels too)."""
    if not label:
        return None
    label = label.strip().lower()
    label = "cp1252" if label in _WINDOWS_1252_ALIASES else label
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return None if name.startswith(("utf-16", "utf-32")) else name


@dataclass(frozen=True)
class _Reading:
    """The file read in one codec: how implausible its text is, and the script most of its letters are in."""

    codec: str
    penalty: int
    script: str | None


def _guess(data: bytes) -> DecodedText:
    """The most plausible reading among the legacy encodings; binary-looking text is a :class:`CorruptDocumentError`.

    Each encoding is scored on the lines with non-ASCII bytes only (where they differ). charset-normalizer's letter
    statistics help twice: when no legacy reading is clean (it knows the multi-byte East Asian encodings), and
    when clean readings are in different scripts (Hebrew, Greek and Cyrillic letters share byte values, and each
    reads as lowercase words of one script).
    """
    sample = _lines_with_high_bytes(data)
    readings: list[_Reading] = []
    best: _Reading | None = None  # the first of equals: the most common encoding
    for codec in _LEGACY:
        reading = _read_as(data, sample, codec, bound=best.penalty if best is not None else None)
        if reading is not None:
            readings.append(reading)
            best = reading if best is None or reading.penalty < best.penalty else best
    if best is None or best.penalty > 0:
        match = from_bytes(data).best()
        detected = _read_as(data, sample, match.encoding) if match is not None else None
        if detected is not None and (best is None or detected.penalty < best.penalty):
            best = detected
    else:
        clean = [reading for reading in readings if reading.penalty == 0]
        if len({reading.script for reading in clean}) > 1:
            match = from_bytes(data, cp_isolation=[reading.codec for reading in clean]).best()
            if match is not None:
                chosen = codecs.lookup(match.encoding).name
                best = next((reading for reading in clean if codecs.lookup(reading.codec).name == chosen), best)
    text = data.decode(best.codec) if best is not None else ""
    if best is None or _control_count(text) > len(text) * _MAX_CONTROL_SHARE:
        raise CorruptDocumentError(
            "The file's text encoding could not be recognised (it may be binary, not text). Re-save it as UTF-8 text."
        )
    return DecodedText(text, best.codec, "detected")


def _lines_with_high_bytes(data: bytes) -> bytes:
    """The lines holding bytes above 0x7F, up to ``_SAMPLE_BYTES`` of them, each from a little before its first
    such byte (a file may be one long line)."""
    lines: list[bytes] = []
    size = end = 0
    for match in _HIGH_BYTE.finditer(data):
        if match.start() < end:
            continue  # on the line just taken
        start = max(data.rfind(b"\n", 0, match.start()) + 1, match.start() - _LINE_LEAD)
        end = min(data.find(b"\n", match.start()) + 1 or len(data), start + _SAMPLE_BYTES - size)
        lines.append(data[start:end])
        size += end - start
        if size >= _SAMPLE_BYTES:
            break
    return b"".join(lines)


def _read_as(data: bytes, sample: bytes, codec: str, bound: int | None = None) -> _Reading | None:
    """The reading of ``data`` in ``codec`` scored on ``sample``, or ``None`` where the bytes are not valid there."""
    try:
        data.decode(codec)  # every byte must be valid, not only the sample's
    except UnicodeDecodeError:
        return None
    # A cut through a multi-byte character at the sample's edges is one replacement character, in every reading.
    return _reading(codec, sample.decode(codec, errors="replace"), bound)


def _control_count(text: str) -> int:
    return len(_CONTROLS.findall(text))


def _reading(codec: str, text: str, bound: int | None) -> _Reading:
    """Score a decoded text: control characters; in the words with non-ASCII letters mixed scripts, case flipping
    inside a word, Latin words of accented letters only, misplaced signs; accented letters no one language has
    together. Real text in its right encoding scores (nearly) 0. Scoring stops once the penalty exceeds ``bound``
    (a better reading is known)."""
    penalty = _control_count(text) * _CONTROL_PENALTY
    scripts: Counter[str] = Counter()
    accented: set[str] = set()  # the non-ASCII Latin letters used, lowercase
    for token in islice((token for token in text.split() if not token.isascii()), _SCORED_TOKENS):
        if bound is not None and penalty > bound:
            break
        penalty += _token_penalty(token)
        for char in token:
            if not char.isascii() and (script := _script(char)) is not None:
                scripts[script] += 1
                if script == "LATIN":
                    accented.add(char.lower())
    penalty += min(len(accented - alphabet) for alphabet in _ALPHABETS)
    return _Reading(codec, penalty, scripts.most_common(1)[0][0] if scripts else None)


def _token_penalty(token: str) -> int:
    misplaced_signs = sum(1 for index, char in enumerate(token) if not char.isascii() and _misplaced(token, index))
    mojibake_signs = sum(1 for char in token if char in _MOJIBAKE_SIGNS)
    return misplaced_signs + mojibake_signs + sum(_word_penalty(word) for word in _WORD.findall(token))


def _misplaced(token: str, index: int) -> bool:
    """Punctuation between two letters (``Za¿ó³æ``), or a symbol or number sign touching one (``¾e`` for ``že``);
    apostrophes and hyphens sit in words, and superscripts follow them (``m²``)."""
    char = token[index]
    category = unicodedata.category(char)[0]
    if category not in "PSN" or char in _IN_WORD_MARKS:
        return False  # a letter, a combining mark, ZWNJ
    letter_before = index > 0 and token[index - 1].isalpha()
    letter_after = index + 1 < len(token) and token[index + 1].isalpha()
    if category == "P":
        return letter_before and letter_after
    return letter_after or (letter_before and char not in _SUPERSCRIPTS)


def _word_penalty(word: str) -> int:
    scripts = {script for char in word if (script := _script(char)) is not None}
    mixed = len(scripts) > 1
    case_flip = any(first.islower() and second.isupper() for first, second in pairwise(word))
    accents_only = scripts == {"LATIN"} and len(word) >= 3 and not any(char.isascii() for char in word)
    return mixed + case_flip + accents_only


@lru_cache(maxsize=4096)
def _script(char: str) -> str | None:
    """The script of a letter, from its Unicode name (``ARABIC LETTER BEH`` → ``ARABIC``); ``None`` for other
    characters and letters of no particular script (µ, ª, modifier letters)."""
    if not char.isalpha():
        return None
    prefix = unicodedata.name(char, "").split(" ", 1)[0]
    if prefix in _HAN:
        return "CJK"
    return None if not prefix or prefix in _NEUTRAL_LETTERS else prefix
