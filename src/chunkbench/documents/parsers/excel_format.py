"""A cell's value as the sheet displays it, from its Excel number format (``0.00``, ``#,##0``, ``0%``, ``$#,##0.00``,
``yyyy-mm-dd``, ``m/d/yyyy``, ``h:mm AM/PM`` …).

Covers the formats people use: sections (positive;negative;zero;text), fixed and optional decimals, thousands
separators, percent, scientific, literal text and currency signs (``"kg"``, ``\\x``, ``[$€-407]``), colours and
conditions dropped, dates and times. What it does not lay out (fractions ``# ?/?``, fill characters ``*``, column
padding ``_)``) falls back to the plain value, never to an error: a wrong-looking number beats a missing one.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache

_BRACKET = re.compile(r"\[([^\]]*)\]")
_CURRENCY = re.compile(r"^\$([^-\]]*)(?:-[0-9A-Fa-f]+)?$")
_ELAPSED = re.compile(r"^(h+|m+|s+)$", re.IGNORECASE)
_DATE_CODES = re.compile(r"(?<!\\)[ymdhs]", re.IGNORECASE)
_PLACEHOLDERS = frozenset("0#?")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_EXCEL_EPOCH = dt.datetime(1899, 12, 30)
# A workbook uses a few dozen formats over thousands of cells: each is parsed once (the results are never mutated).
_CACHED_FORMATS = 1024


def display_value(value: object, number_format: str | None) -> str:
    """The text a cell shows: ``value`` as openpyxl reads it (cached values), laid out by ``number_format``."""
    try:
        return _display(value, number_format)
    except (ValueError, OverflowError, InvalidOperation, IndexError):
        # A format this formatter misreads, or a serial date past year 9999: the plain value, never a failed parse.
        return general(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _display(value: object, number_format: str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return _text_section(value, number_format)
    if isinstance(value, (dt.datetime, dt.date, dt.time, dt.timedelta)):
        return _format_datetime(value, number_format)
    if isinstance(value, (int, float)):
        if number_format in (None, "General"):
            return general(value)
        return _format_number(value, number_format)
    return str(value)


def general(value: float) -> str:
    """Excel's ``General``: integers as they are, other numbers to at most 10 significant digits, no thousands."""
    if isinstance(value, int) or (float(value).is_integer() and abs(value) < 1e15):
        return str(int(value))
    text = f"{value:.10g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}E{exponent[0]}{exponent[1:].zfill(2)}"
    return text


# --------------------------------------------------------------------------------------------- sections


@lru_cache(maxsize=_CACHED_FORMATS)
def _split_sections(number_format: str) -> tuple[str, ...]:
    """The format's ``;``-separated sections (a ``;`` inside quotes or after ``\\`` is literal)."""
    sections, current, quoted, escaped = [], [], False, False
    for char in number_format:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == '"':
            current.append(char)
            quoted = not quoted
        elif char == ";" and not quoted:
            sections.append("".join(current))
            current = []
        else:
            current.append(char)
    sections.append("".join(current))
    return tuple(sections)


def _text_section(value: str, number_format: str | None) -> str:
    sections = _split_sections(number_format or "")
    if len(sections) >= 4 and "@" in sections[3]:
        return _literal(sections[3]).replace("@", value)
    return value


@lru_cache(maxsize=_CACHED_FORMATS)
def _strip_brackets(section: str) -> tuple[str, bool]:
    """Colours and conditions dropped, currency tags made literal; and whether the section is an elapsed time."""
    elapsed = False

    def replace(match: re.Match[str]) -> str:
        nonlocal elapsed
        inner = match.group(1)
        currency = _CURRENCY.match(inner)
        if currency:
            return f'"{currency.group(1)}"' if currency.group(1) else ""
        if _ELAPSED.match(inner):
            elapsed = True
            return inner
        return ""

    return _BRACKET.sub(replace, section), elapsed


def _literal(section: str) -> str:
    """A section's literal parts as displayed: quotes and escapes resolved, padding and fill dropped."""
    out: list[str] = []
    index = 0
    while index < len(section):
        char = section[index]
        if char == '"':
            end = section.find('"', index + 1)
            end = len(section) if end == -1 else end
            out.append(section[index + 1 : end])
            index = end + 1
            continue
        if char == "\\" and index + 1 < len(section):
            out.append(section[index + 1])
            index += 2
            continue
        if char in "_*" and index + 1 < len(section):
            index += 2  # column padding and repeated fill: layout, not text
            continue
        out.append(char)
        index += 1
    return "".join(out)


# --------------------------------------------------------------------------------------------- numbers


def _format_number(value: float, number_format: str) -> str:
    sections = _split_sections(number_format)
    if value < 0 and len(sections) >= 2 and sections[1].strip():
        section, value, signed = sections[1], -value, False
    elif value == 0 and len(sections) >= 3 and sections[2].strip():
        section, signed = sections[2], False
    else:
        section, signed = sections[0], True
    section, elapsed = _strip_brackets(section)
    if elapsed or _is_date_section(section):
        return _format_datetime(_EXCEL_EPOCH + dt.timedelta(days=value), section)
    if section.strip().lower() in ("", "general"):
        return general(value)
    try:
        laid_out = _lay_out_number(abs(value), section)
    except (InvalidOperation, ValueError):
        return general(value)
    if laid_out is None:
        return general(value)
    return f"-{laid_out}" if signed and value < 0 and any(ch.isdigit() and ch != "0" for ch in laid_out) else laid_out


@lru_cache(maxsize=_CACHED_FORMATS)
def _tokens(section: str) -> tuple[tuple[str, str], ...]:
    """``(kind, text)`` pieces: ``code`` for number placeholders and their punctuation, ``lit`` for the rest."""
    tokens: list[tuple[str, str]] = []
    index = 0
    while index < len(section):
        char = section[index]
        if char == '"':
            end = section.find('"', index + 1)
            end = len(section) if end == -1 else end
            tokens.append(("lit", section[index + 1 : end]))
            index = end + 1
        elif char == "\\" and index + 1 < len(section):
            tokens.append(("lit", section[index + 1]))
            index += 2
        elif char in "_*" and index + 1 < len(section):
            index += 2
        elif char in _PLACEHOLDERS or char in ".,":
            tokens.append(("code", char))
            index += 1
        elif char in "eE" and index + 1 < len(section) and section[index + 1] in "+-":
            tokens.append(("exp", section[index : index + 2]))
            index += 2
        else:
            tokens.append(("lit", char))
            index += 1
    return tuple(tokens)


def _lay_out_number(value: float, section: str) -> str | None:
    """The number laid out by one section, or ``None`` for a layout this formatter does not know (fractions)."""
    if "/" in section.replace('"/"', "") and "?" in section:
        return None
    tokens = _tokens(section)
    code_positions = [i for i, (kind, text) in enumerate(tokens) if kind in ("code", "exp") or text in _PLACEHOLDERS]
    placeholders = [i for i, (kind, text) in enumerate(tokens) if kind == "code" and text in _PLACEHOLDERS]
    if not placeholders:
        return "".join(text for _, text in tokens)  # all literal ("-", "n/a")
    first, last = placeholders[0], max(code_positions)
    # A "." or "," at the edge of the number is still its code (".00" has its point before the first placeholder).
    while first > 0 and tokens[first - 1] == ("code", "."):
        first -= 1
    while last + 1 < len(tokens) and tokens[last + 1][0] in ("code", "exp"):
        last += 1
    code = "".join(text for _, text in tokens[first : last + 1])
    prefix = "".join(text for _, text in tokens[:first])
    suffix = "".join(text for _, text in tokens[last + 1 :])
    number = Decimal(repr(value))
    number *= Decimal(100) ** (prefix + suffix).count("%")
    if "e+" in code.lower() or "e-" in code.lower():
        return prefix + _scientific(number, code) + suffix
    # Commas right after the last placeholder scale by a thousand each ("#,##0," shows thousands).
    scaled = code.rstrip(",")
    number /= Decimal(1000) ** (len(code) - len(scaled))
    integer_code, _, decimal_code = scaled.partition(".")
    return prefix + _fixed(number, integer_code, decimal_code, "." in scaled) + suffix


def _fixed(number: Decimal, integer_code: str, decimal_code: str, has_point: bool) -> str:
    decimals = sum(1 for char in decimal_code if char in _PLACEHOLDERS)
    required = len(decimal_code.rstrip("#?").replace(",", ""))
    rounded = number.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    integer_part, _, fraction = f"{rounded:f}".partition(".")
    fraction = fraction.ljust(decimals, "0")
    while len(fraction) > required and fraction.endswith("0"):
        fraction = fraction[:-1]  # "#" decimals show only the digits that are there
    min_integer = integer_code.count("0")
    digits = integer_part.lstrip("0")
    digits = digits.rjust(min_integer, "0") if min_integer else digits
    if "," in integer_code and digits:
        digits = f"{int(digits):,}"
    if not has_point:
        return digits or ("0" if min_integer else "")
    return f"{digits}.{fraction}"  # Excel shows the point even when "#" decimals show no digit ("1.")


def _scientific(number: Decimal, code: str) -> str:
    mantissa_code, exponent_code = re.split(r"[eE][+-]", code, maxsplit=1)
    decimals = mantissa_code.partition(".")[2].count("0") + mantissa_code.partition(".")[2].count("#")
    sign_always = "+" in code[len(mantissa_code) : len(mantissa_code) + 2]
    text = f"{number:.{decimals}E}"
    mantissa, exponent = text.split("E")
    exponent_value = int(exponent)
    sign = "-" if exponent_value < 0 else ("+" if sign_always else "")
    return f"{mantissa}E{sign}{str(abs(exponent_value)).zfill(max(len(exponent_code), 1))}"


# --------------------------------------------------------------------------------------------- dates


@lru_cache(maxsize=_CACHED_FORMATS)
def _is_date_section(section: str) -> bool:
    return _DATE_CODES.search(_literal_free(section)) is not None


def _literal_free(section: str) -> str:
    """The section without quoted text and escaped characters (whose letters are not date codes)."""
    return re.sub(r'"[^"]*"|\\.', "", section)


@lru_cache(maxsize=_CACHED_FORMATS)
def _date_tokens(section: str) -> tuple[tuple[str, str], ...]:
    """``(kind, text)``: ``y`` ``m`` ``d`` ``h`` ``s`` ``ampm`` ``frac`` codes and ``lit`` text."""
    tokens: list[tuple[str, str]] = []
    index = 0
    lower = section.lower()
    while index < len(section):
        char = lower[index]
        if section[index] == '"':
            end = section.find('"', index + 1)
            end = len(section) if end == -1 else end
            tokens.append(("lit", section[index + 1 : end]))
            index = end + 1
        elif section[index] == "\\" and index + 1 < len(section):
            tokens.append(("lit", section[index + 1]))
            index += 2
        elif lower.startswith(("am/pm", "a/p"), index):
            length = 5 if lower.startswith("am/pm", index) else 3
            tokens.append(("ampm", section[index : index + length]))
            index += length
        elif char in "ymdhs":
            end = index
            while end < len(section) and lower[end] == char:
                end += 1
            tokens.append((char, lower[index:end]))
            index = end
        elif char == "." and index + 1 < len(section) and section[index + 1] == "0":
            end = index + 1
            while end < len(section) and section[end] == "0":
                end += 1
            tokens.append(("frac", section[index:end]))
            index = end
        elif char in "_*" and index + 1 < len(section):
            index += 2
        else:
            tokens.append(("lit", section[index]))
            index += 1
    # "m" after an hour or before a second is minutes, not the month.
    codes = [i for i, (kind, _) in enumerate(tokens) if kind != "lit"]
    for position, i in enumerate(codes):
        if tokens[i][0] != "m" or len(tokens[i][1]) > 2:
            continue
        before = tokens[codes[position - 1]][0] if position > 0 else None
        after = tokens[codes[position + 1]][0] if position + 1 < len(codes) else None
        if before == "h" or after == "s":
            tokens[i] = ("min", tokens[i][1])
    return tuple(tokens)


def _format_datetime(value: dt.datetime | dt.date | dt.time | dt.timedelta, number_format: str | None) -> str:
    section, elapsed = _strip_brackets(_split_sections(number_format or "")[0])
    if isinstance(value, dt.timedelta):
        return _format_elapsed(value, section) if elapsed else _format_datetime(_EXCEL_EPOCH + value, section)
    if isinstance(value, dt.time):
        value = dt.datetime.combine(_EXCEL_EPOCH.date(), value)
    elif not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    if not _is_date_section(section):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    tokens = _date_tokens(section)
    twelve_hour = any(kind == "ampm" for kind, _ in tokens)
    out: list[str] = []
    for kind, text in tokens:
        out.append(_date_part(value, kind, text, twelve_hour))
    return "".join(out)


def _date_part(value: dt.datetime, kind: str, text: str, twelve_hour: bool) -> str:
    width = len(text)
    if kind == "lit":
        return text
    if kind == "y":
        return f"{value.year % 100:02d}" if width <= 2 else f"{value.year:04d}"
    if kind == "m":
        if width >= 5:
            return _MONTHS[value.month - 1][0]
        if width == 4:
            return _MONTHS[value.month - 1]
        if width == 3:
            return _MONTHS[value.month - 1][:3]
        return f"{value.month:0{width}d}"
    if kind == "d":
        if width >= 4:
            return _DAYS[value.weekday()]
        if width == 3:
            return _DAYS[value.weekday()][:3]
        return f"{value.day:0{width}d}"
    if kind == "h":
        hour = value.hour % 12 or 12 if twelve_hour else value.hour
        return f"{hour:0{min(width, 2)}d}"
    if kind == "min":
        return f"{value.minute:0{min(width, 2)}d}"
    if kind == "s":
        return f"{value.second:0{min(width, 2)}d}"
    if kind == "frac":
        digits = len(text) - 1
        return "." + f"{value.microsecond:06d}"[:digits]
    if kind == "ampm":
        upper = value.hour >= 12
        if text.lower() == "a/p":
            letter = "p" if upper else "a"
            return letter.upper() if text[0].isupper() else letter
        return "PM" if upper else "AM"
    return text


def _format_elapsed(value: dt.timedelta, section: str) -> str:
    """``[h]:mm:ss``: hours (or minutes, seconds) counted past a day."""
    total = int(value.total_seconds())
    out: list[str] = []
    first = True
    for kind, text in _date_tokens(section):
        if kind == "lit":
            out.append(text)
            continue
        if kind == "h":
            number = total // 3600 if first else (total // 3600) % 24
        elif kind in ("min", "m"):
            number = total // 60 if first else (total // 60) % 60
        elif kind == "s":
            number = total if first else total % 60
        else:
            continue
        out.append(f"{number:0{min(len(text), 2)}d}")
        first = False
    return "".join(out)
