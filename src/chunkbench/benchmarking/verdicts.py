"""The sentences that say a Decision: each verdict sentence is written by one function here, and a test pins it.

``decision.py`` computes the Decision and calls these; the reports, the CLI and the dashboard show the sentences
the Decision stored, so every face says the same words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

FIX_HARDER = "harder questions, a smaller k or a larger corpus would separate them"
# How many configurations the ceiling sentence names before it counts the rest.
NAMED_AT_CEILING = 4


def figure(value: float) -> str:
    """A figure as a sentence shows it: thousands grouped above 100, three decimals below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}"


def dropped_sentence(dropped: int) -> str:
    return (
        f"{dropped} question{'s were' if dropped != 1 else ' was'} left out because at least one configuration "
        "has no score for it."
    )


def _join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def cannot_tell_sentence(metric: str, why: Mapping[str, Any]) -> str:
    """The cannot-tell Decision in one sentence: why the benchmark cannot separate the configurations (``why`` is
    ``Decision.cannot_tell``) and what would; ``metric`` as the reader should see it."""
    cause, names, n = why.get("cause"), list(why.get("configurations") or []), why.get("n_questions")
    if cause == "ceiling":
        named = names[:NAMED_AT_CEILING]
        rest = len(names) - len(named)
        listed = _join([*named, f"{rest} more"]) if rest else _join(named)
        return (
            f"The benchmark cannot tell {len(names)} configurations apart on {metric}: {listed} all reach its ceiling "
            f"of {figure(float(why.get('ceiling') or 0.0))} on the {n} questions; {FIX_HARDER}."
        )
    first, second = names[0], names[1]  # every other cause names the two it could not separate
    if cause == "context":
        context, means = why.get("context") or {}, why.get("budget_means") or {}
        return (
            f"The benchmark cannot tell whether {first} is better on {metric}: it leads only by sending more context "
            f"({figure(context.get(first) or 0.0)} tokens per question against "
            f"{figure(context.get(second) or 0.0)} for {second}), and with both cut to {why.get('budget'):,} tokens "
            f"{second} scores "
            f"{figure(means.get(second) or 0.0)} against {figure(means.get(first) or 0.0)}; compare them at equal "
            f"budget, or rerun {first} with a smaller k."
        )
    difference = float(why.get("difference") or 0.0)
    if cause == "too_few_questions":
        needed = int(why.get("questions_needed") or 0)
        total = f" ({needed + n:,} in all)" if isinstance(n, int) else ""
        return (
            f"The benchmark cannot tell {first} from {second} on {metric} with {n} questions ({figure(difference)} "
            f"apart on average): about {needed:,} more questions{total} would likely separate them."
        )
    margin = float(why.get("practical_margin") or 0.0)
    if difference == 0:
        gap = "they have the same mean"
    elif difference <= margin:
        gap = f"they differ by {figure(difference)} on average, within the practical margin of {figure(margin)}"
    else:
        gap = f"they differ by {figure(difference)} on average, less than the noise between the {n} questions"
    return f"The benchmark cannot tell {first} from {second} on {metric}: {gap}; {FIX_HARDER}."


def equal_budget_sentence(
    metric: str,
    winner: str,
    rival: str | None,
    *,
    budget: int,
    means: Mapping[str, float],
    context: Mapping[str, float | None],
) -> str:
    """The equal-budget rule as computed: the winner's lead holds with every context cut to ``budget`` tokens,
    or ``rival`` (sending less context) scores at least as well there."""
    at = f"cut to {budget:,} tokens"
    if rival is None:
        return (
            f"{winner} keeps the win at equal context: {at}, it scores {figure(means[winner])} on {metric}, above "
            "every configuration that sends less context."
        )
    return (
        f"{winner}'s lead does not hold at equal context: {at}, {rival} (median {figure(context.get(rival) or 0.0)} "
        f"context tokens against {figure(context.get(winner) or 0.0)}) scores {figure(means[rival])} on {metric} "
        f"against {figure(means[winner])}."
    )
