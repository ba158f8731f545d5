"""How every sentence of a Decision shows its figures and names: a figure, context tokens, a list of names, a count.

Shared by the modules that write the sentences (``verdicts.py``, ``decision_reasons.py``, ``budget_verdicts.py``,
``language_verdicts.py``), with what they read of a stored Decision (a configuration's context cost, the ones it may
not name). It writes no sentence; it is separate so that each of those modules can use it without importing the
others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# How many configurations a sentence names before it counts the rest.
NAMED_AT_CEILING = 4


def figure(value: float) -> str:
    """A figure as a sentence shows it: thousands grouped above 100, three decimals below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}"


def tokens(value: float) -> str:
    """Context tokens as a sentence shows them: a whole number, thousands grouped."""
    return f"{value:,.0f}"


def join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def some(names: Sequence[str]) -> str:
    """At most ``NAMED_AT_CEILING`` names, then how many more."""
    named = list(names[:NAMED_AT_CEILING])
    rest = len(names) - len(named)
    return join([*named, f"{rest} more"]) if rest else join(named)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def cost_in(decision: Mapping[str, Any], name: str) -> float | None:
    value = (decision.get("costs") or {}).get(name)
    return float(value) if isinstance(value, int | float) else None


def unnamable_in(decision: Mapping[str, Any]) -> list[str]:
    """The configurations the Decision may not name: built on a model that does not cover a material share of it."""
    language = decision.get("language") or {}
    return list(language.get("configurations") or []) if language.get("material", True) else []
