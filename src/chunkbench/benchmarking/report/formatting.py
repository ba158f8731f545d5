"""Formatting of numbers, times, shares and metric names for the report (also the templates' filters)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from jinja2 import Undefined

from chunkbench.benchmarking.report.metric_labels import METRIC_BY_KEY

DASH = "—"


def fmt(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals; ``—`` for a value that was not measured (None, NaN, inf)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    number = as_number(value)
    if number is None:
        return DASH
    return f"{number:,.{digits}f}"


def pct(value: Any) -> str:
    """A probability or share as a percentage; never rounds a near-certainty up to 100% or a chance to 0%."""
    number = as_number(value)
    if number is None:
        return DASH
    if 0.99 < number < 1:
        return ">99%"
    if 0 < number < 0.01:
        return "<1%"
    return f"{number:.0%}"


def fmt_ms(value: Any) -> str:
    number = as_number(value)
    if number is None:
        return DASH
    return f"{number / 1000:.2f} s" if number >= 1000 else f"{number:.1f} ms"


def fmt_tokens(value: Any) -> str:
    number = as_number(value)
    return DASH if number is None else f"{number:,.0f}"


def fmt_usd(value: Any) -> str:
    number = as_number(value)
    if number is None:
        return DASH
    return "$0" if number == 0 else f"${number:,.4f}"


def fmt_when(value: Any) -> str:
    """An ISO timestamp as ``2026-11-29 16:02:11 UTC``; ``—`` when absent."""
    if not value:
        return DASH
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return text.replace("T", " ").replace("Z", " UTC").replace("+00:00", " UTC")


def fmt_short(value: float) -> str:
    # Data attributes for the heatmap's JS: compact, locale-free.
    return f"{value:.6g}"


def as_number(value: Any) -> float | None:
    if value is None or isinstance(value, str | Undefined):
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def join_words(items: Sequence[str]) -> str:
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def fmt_counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items())


def metric_label(metric: str) -> str:
    spec = METRIC_BY_KEY.get(metric)
    return spec.label if spec else metric


def metric_name(metric: str) -> str:
    """The label inside a sentence: ``recall``, ``precision Ω``, but ``MRR`` and ``IoU`` as they are."""
    label = metric_label(metric)
    word = label.split(" ")[0]
    return label[0].lower() + label[1:] if word[1:] == word[1:].lower() else label


def metric_digits(metric: str) -> int:
    spec = METRIC_BY_KEY.get(metric)
    return spec.digits if spec else 2
