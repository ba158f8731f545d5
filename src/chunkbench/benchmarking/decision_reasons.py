"""The reasons of a Decision (its details, per configuration): each sentence written by one function, a test pins it.

``decision_ranking.py`` (and ``decision.py`` for dropped questions) calls these as it ranks: the winner's or the
tie's reason, why the leader's lead is not confirmed, each contender and each configuration ruled out, Holm on a
large grid, equivalence, and whether more questions would separate the leader from the runner-up. They are separate
from the verdict (``verdicts.py``), which a reader sees first and which is written from the stored Decision.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkbench.benchmarking.verdict_words import figure, join, plural, some, tokens

# Mirrors decision_ranking.MAX_QUESTIONS_FACTOR (this module is imported by decision_ranking.py, so it cannot import
# it back).
MAX_QUESTIONS_FACTOR = 100


def tie_not_broken_clause(priced: Sequence[tuple[float, str]], margin: float) -> str:
    """Why context cost does not break a tie, as computed: the cheapest contender is not ``margin`` below the next
    cheapest (``priced``: every contender's cost, cheapest first), so not below every other one."""
    (cheapest_cost, cheapest), (next_cost, runner) = priced[0], priced[1]
    less = 1 - cheapest_cost / next_cost if next_cost else 0.0
    named = f"{runner}, the next cheapest" if len(priced) > 2 else runner
    gap = f"only {less:.0%} less than the {tokens(next_cost)} of {named}" if less > 0 else f"as much as {named}"
    return (
        f"the tie is not broken by context cost: {cheapest} needs {tokens(cheapest_cost)} tokens per question, {gap}, "
        f"and a tie is broken only when one contender needs at least {margin:.0%} less than every other"
    )


def dropped_sentence(dropped: int) -> str:
    return (
        f"{dropped} question{'s were' if dropped != 1 else ' was'} left out because at least one configuration "
        "has no score for it."
    )


def winner_reason(leader: str, metric: str, mean: float, runner_up: tuple[str, float] | None, prob: float,
                  n_resamples: int, n_questions: int) -> str:  # fmt: skip
    against = f" vs {figure(runner_up[1])} for {runner_up[0]}" if runner_up else ""
    return (
        f"{leader} is the best configuration on {metric}: mean {figure(mean)}{against}, best in {prob:.0%} of "
        f"{n_resamples:,} bootstrap resamples of the {n_questions} questions."
    )


def tie_broken_reason(metric: str, contenders: Sequence[str], leader: str, prob: float, best: str,
                      priced: Sequence[tuple[float, str]], tie_break: str) -> str:  # fmt: skip
    listed = ", ".join(f"{figure(cost)} for {name}" for cost, name in priced[1:])
    return (
        f"tie on {metric}, broken by {tie_break}: {', '.join(contenders)} cannot be told apart (leader {leader} best "
        f"in only {prob:.0%} of resamples), and {best} needs the least context ({figure(priced[0][0])} tokens vs "
        f"{listed})."
    )


def ceiling_clause(names: Sequence[str]) -> str:
    """Why a tie at the metric's ceiling is not broken: the questions cannot tell those configurations apart."""
    return f"{some(names)} all reach the metric's ceiling, so the questions cannot tell them apart"


def unpriced_clause(unpriced: Sequence[str]) -> str:
    return f"the tie cannot be broken by context cost because it is unknown for {', '.join(unpriced)}"


def leads_reason(leader: str, metric: str, mean: float, prob: float, others: Sequence[str], why: str | None, *,
                 close: Sequence[str] = (), margin: float = 0.0) -> str:  # fmt: skip
    """The leader's lead that the data does not confirm: too rarely best, or (``close``) ahead of some contenders by
    no more than the practical ``margin``; ``why``: why a tie is not broken by cost, when tied."""
    if close:
        lead = (
            f"{leader} leads on {metric} with mean {figure(mean)}, best in {prob:.0%} of resamples, but by no more "
            f"than the practical margin of {figure(margin)} over {', '.join(close)}"
        )
    else:
        lead = (
            f"{leader} leads on {metric} with mean {figure(mean)} but is best in only {prob:.0%} of resamples, and "
            f"{', '.join(others)} cannot be ruled out"
        )
    return f"{lead}{'; ' + why if why else ''}."


def kept_contender_reason(name: str, leader: str, gap: float, worse: str, interval: str, prob: float,
                          min_prob_best: float, level: str) -> str:  # fmt: skip
    return (
        f"{name} is not ruled out at {level} ({figure(gap)} {worse} on average, {interval}), but {leader} is best in "
        f"{prob:.0%} of resamples, above the {min_prob_best:.0%} required."
    )


def contender_reason(name: str, leader: str, gap: float, worse: str, interval: str, *, holm: int | None = None) -> str:
    """A contender; ``holm``: the comparisons of the Holm correction it was not ruled out with (a large grid)."""
    average = f"{figure(gap)} {worse} than {leader} on average" if gap else f"level with {leader} on average"
    corrected = f", not enough to rule it out with Holm's correction over {holm} comparisons" if holm else ""
    return f"{name} is still a contender: {average} ({interval}){corrected}."


def interval_text(level: str, name: str, leader: str, low: float, high: float) -> str:
    return f"{level} interval of {name} − {leader}: {figure(low)} to {figure(high)}"


def ruled_out_reason(name: str, metric: str, worse: str, leader: str, gap: float, level: str, low: float,
                     high: float, *, holm: int | None = None) -> str:  # fmt: skip
    """A configuration ruled out; ``holm``: the number of comparisons Holm's correction was made over."""
    how = f" with Holm's correction over {holm} comparisons" if holm else ""
    return (
        f"{name} is ruled out{how}: its {metric} is {worse} than {leader}'s by {figure(gap)} ({level} interval "
        f"{figure(low)} to {figure(high)})."
    )


def holm_reason(configurations: int, ruled_out: int, level: str) -> str:
    """The family-wise rule a large grid is ruled out with (``decision.HOLM_MIN_CONFIGURATIONS``)."""
    return (
        f"With {configurations} configurations, ruled out means ruled out with Holm's correction over the "
        f"{configurations - 1} comparisons to the leader ({plural(ruled_out, 'configuration')} ruled out): the "
        f"chance that any configuration as good as the leader is ruled out stays within {100 - int(level[:-1])}%."
    )


def equivalent_reason(metric: str, names: Sequence[str], margin: float, level: str,
                      costs: Sequence[float | None]) -> str:  # fmt: skip
    """Practically equivalent contenders (``names``, cheapest first, with their ``costs``): chosen by cost."""
    priced = ", ".join(f"{name} {tokens(cost)}" if cost is not None else f"{name} unknown"
                       for name, cost in zip(names, costs, strict=True))  # fmt: skip
    return (
        f"{join(list(names))} are equivalent on {metric} within ±{figure(margin)}: the {level} interval of each "
        f"difference to the leader lies inside the margin, so the one needing the least context is chosen (context "
        f"tokens per question: {priced})."
    )


def beyond_questions_reason(n_questions: int, leader: str, runner_up: str, difference: float) -> str:
    """An estimate of more questions too large to be advice (over ``MAX_QUESTIONS_FACTOR`` times those scored)."""
    return (
        f"{leader} and {runner_up} differ by {figure(difference)}: more questions would not separate them (over "
        f"{MAX_QUESTIONS_FACTOR} times the {n_questions} scored would be needed)."
    )


def same_mean_reason(leader: str, runner_up: str) -> str:
    return (
        f"{leader} and {runner_up} have the same mean: no detectable difference, so more questions are unlikely to "
        "separate them."
    )


def within_margin_reason(leader: str, runner_up: str, difference: float, margin: float) -> str:
    return (
        f"{leader} and {runner_up} differ by {figure(difference)}, within the practical margin of {figure(margin)}: "
        "more questions would not change the decision."
    )


def more_questions_reason(needed: int, n_questions: int, leader: str, runner_up: str, difference: float) -> str:
    return (
        f"About {needed:,} more questions (beyond the {n_questions} scored) would likely separate {leader} from "
        f"{runner_up} (80% power), if the observed difference of {figure(difference)} is real."
    )


def enough_questions_reason(n_questions: int, leader: str, runner_up: str) -> str:
    return (
        f"The {n_questions} questions should already separate {leader} from {runner_up} at 80% power; the remaining "
        "doubt comes from a few questions with large differences, so more questions like these are unlikely to "
        "separate them."
    )
