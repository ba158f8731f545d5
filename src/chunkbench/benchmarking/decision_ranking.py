"""The Decision's data and the ranking behind it: one metric's paired bootstrap turned into a Decision.

``Decision`` (and its JSON, ``to_dict``) with the constants of the rules, and ``rank``: which configurations are
ruled out, which are contenders, whether the leader wins, a tie is broken by context cost (tok@k) or equivalence,
or the benchmark cannot tell (and why), with the estimate of more questions and every reason. It is separate from
``decision.py``, the entry point that prepares the scores, applies the equal-budget arm (``equal_budget.py``) and
the language rule and writes the verdict: this module ranks one bootstrap result and knows nothing of budgets or
languages. Every sentence is written by ``decision_reasons.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

from chunkbench.benchmarking.decision_reasons import (
    beyond_questions_reason,
    ceiling_clause,
    contender_reason,
    dropped_sentence,
    enough_questions_reason,
    equivalent_reason,
    holm_reason,
    interval_text,
    kept_contender_reason,
    leads_reason,
    more_questions_reason,
    ruled_out_reason,
    same_mean_reason,
    tie_broken_reason,
    tie_not_broken_clause,
    unpriced_clause,
    winner_reason,
    within_margin_reason,
)
from chunkbench.benchmarking.report.formatting import metric_name
from chunkbench.evaluation.stats import BootstrapResult, complete_matrix, holm_step_down, paired_bootstrap

# no_clear_winner: stored by Experiments decided before cannot_tell; decide() no longer returns it.
DecisionStatus = Literal["winner", "tie_broken_by_cost", "cannot_tell", "no_clear_winner", "insufficient_data"]
CannotTellCause = Literal["ceiling", "too_few_questions", "noise", "context", "language"]

MIN_QUESTIONS = 5
POWER = 0.8
# Two configurations whose difference's interval lies within ±this are equivalent: the cheaper is chosen.
EQUIVALENCE_MARGIN = 0.01
# An estimate of more questions above this many times the questions scored is no advice: it is not given.
MAX_QUESTIONS_FACTOR = 100
TIE_BREAK_COST = "context cost tok@k"


@dataclass
class Decision:
    """What the data says about which configuration to use, with reasons a manager can read."""

    metric: str
    status: DecisionStatus
    best: str | None
    leader: str | None
    prob_best: dict[str, float]
    means: dict[str, float]
    diff_to_leader: dict[str, tuple[float, float, float]]
    ruled_out: list[str]
    contenders: list[str]
    questions_needed: int | None
    tie_break: str | None
    reasons: list[str]
    n_questions: int
    dropped_questions: int
    runner_up: str | None = None
    higher_is_better: bool = True
    confidence: float = 0.95
    practical_margin: float = 0.0
    costs: dict[str, float | None] = field(default_factory=dict)
    # How much less context (a share) the cheapest tied contender must need than every other one to break a tie.
    cost_margin: float = 0.1
    # Whether the contenders cannot be told apart (every gap to the leader within the noise or the margin).
    tied: bool = False
    # The fewest questions scored by every configuration that a Decision needs.
    min_questions: int = MIN_QUESTIONS
    # What a reader sees first (``verdicts.verdict``); ``reasons`` are the details.
    verdict: str = ""
    # Why the benchmark cannot tell (status cannot_tell): cause, the configurations concerned and the figures.
    cannot_tell: dict[str, Any] | None = None
    # The ranking at equal context budget (``BudgetScores``), beside the raw one.
    budget_matched: dict[str, Any] | None = None
    # Configurations built on a model that does not cover a language of the documents: which, the shares, whether
    # material (the language rule), and the Decision without those questions (``decision._language_rule``).
    language: dict[str, Any] | None = None
    # The recall–tokens frontier: the configurations best for some context budget, cheapest first
    # (``decision.frontier``).
    frontier: list[dict[str, Any]] = field(default_factory=list)
    # Practical equivalence: the margin, and (when it decided) the contenders equivalent to the leader within it.
    equivalence_margin: float = EQUIVALENCE_MARGIN
    equivalence: dict[str, Any] | None = None
    # The correction "ruled out" was made with on a large grid (Holm): its name, comparisons and family-wise error.
    correction: dict[str, Any] | None = None
    # The configurations a tie was broken among (all contenders, or only those at the ceiling), and that ceiling.
    tie_among: list[str] | None = None
    ceiling: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: tuples as lists, non-finite floats as None."""
        return {
            "metric": self.metric,
            "status": self.status,
            "best": self.best,
            "leader": self.leader,
            "runner_up": self.runner_up,
            "prob_best": {name: finite(value) for name, value in self.prob_best.items()},
            "means": {name: finite(value) for name, value in self.means.items()},
            "diff_to_leader": {
                name: [finite(value) for value in values] for name, values in self.diff_to_leader.items()
            },
            "ruled_out": list(self.ruled_out),
            "contenders": list(self.contenders),
            "questions_needed": self.questions_needed,
            "tie_break": self.tie_break,
            "reasons": list(self.reasons),
            "n_questions": self.n_questions,
            "dropped_questions": self.dropped_questions,
            "higher_is_better": self.higher_is_better,
            "confidence": self.confidence,
            "practical_margin": self.practical_margin,
            "costs": {name: finite(value) for name, value in self.costs.items()},
            "cost_margin": self.cost_margin,
            "tied": self.tied,
            "min_questions": self.min_questions,
            "verdict": self.verdict,
            "cannot_tell": self.cannot_tell,
            "budget_matched": self.budget_matched,
            "language": self.language,
            "frontier": [dict(point) for point in self.frontier],
            "equivalence_margin": self.equivalence_margin,
            "equivalence": self.equivalence,
            "correction": self.correction,
            "tie_among": self.tie_among,
            "ceiling": self.ceiling,
        }


def finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def cost_of(costs: Mapping[str, float | None], name: str) -> float | None:
    value = costs.get(name)
    return float(value) if value is not None and math.isfinite(value) else None


def questions_needed(sd: float, difference: float, n_current: int, *, confidence: float = 0.95) -> int | None:
    """More questions likely (80 % power) to separate two configurations whose paired differences have SD
    ``sd`` and mean ``difference``; None when the difference is 0."""
    if difference == 0 or not math.isfinite(difference):
        return None
    z = NormalDist().inv_cdf((1 + confidence) / 2) + NormalDist().inv_cdf(POWER)
    total = (z * sd / abs(difference)) ** 2
    return max(0, math.ceil(total) - n_current)


def cheapest_leads(
    scores: Mapping[str, Sequence[float | None]], costs: Mapping[str, float | None], *, higher_is_better: bool
) -> dict[str, Sequence[float | None]]:
    """``scores`` with the cheapest of the configurations level at the best mean first, so that it is the leader
    (the bootstrap names the first of exact ties): a tie is never led by its costliest member."""
    configs, matrix, _dropped = complete_matrix(scores)
    means = matrix.mean(axis=0)
    best = means.max() if higher_is_better else means.min()
    level = [name for name, mean in zip(configs, means, strict=True) if mean == best]
    if len(level) < 2:
        return dict(scores)
    first = min(level, key=lambda name: _cost_key(costs, name, configs))
    return {first: scores[first], **{name: column for name, column in scores.items() if name != first}}


def _cost_key(costs: Mapping[str, float | None], name: str, order: Sequence[str]) -> tuple[bool, float, int]:
    """Cheapest first, unknown costs last, then input order: how tied configurations are ordered."""
    cost = cost_of(costs, name)
    return (cost is None, cost if cost is not None else 0.0, list(order).index(name))


def holm_ruled_out(
    scores: Mapping[str, Sequence[float | None]],
    result: BootstrapResult,
    *,
    n_resamples: int,
    seed: int,
    higher_is_better: bool,
    confidence: float,
    practical_margin: float,
    cost_margin: float,
) -> dict[str, tuple[tuple[float, float, float], float]]:
    """The configurations ruled out with Holm's correction over the comparisons to the leader, each with its
    (observed, low, high) difference to the leader at the level that ruled it out (a two-sided confidence)."""
    sign = 1.0 if higher_is_better else -1.0
    family = len(result.configs) - 1
    intervals: dict[float, BootstrapResult] = {}

    def test(level: float) -> dict[str, tuple[float, float, float]]:
        if level not in intervals:
            intervals[level] = paired_bootstrap(
                scores, n_resamples=n_resamples, seed=seed, higher_is_better=higher_is_better, confidence=1 - level
            )
        found = intervals[level].diff_to_leader
        return {
            name: found[name] for name in result.configs
            if name != result.leader and max(sign * found[name][1], sign * found[name][2]) < -practical_margin
        }  # fmt: skip

    return {name: (d, 1 - level) for name, (d, level) in holm_step_down(test, family, 1 - confidence).items()}


def rank(
    result: BootstrapResult,
    costs: Mapping[str, float | None],
    *,
    metric: str,
    higher_is_better: bool,
    confidence: float,
    practical_margin: float,
    min_prob_best: float,
    cost_margin: float,
    ceiling: float | None,
    equivalence_margin: float = EQUIVALENCE_MARGIN,
    holm: Mapping[str, tuple[tuple[float, float, float], float]] | None = None,
) -> Decision:
    """The Decision on one bootstrap result (``decision.decide``'s rules, before the equal-budget arm and the
    language rule); ``holm``: the configurations ruled out with Holm's correction, on a large grid."""
    leader = result.leader
    sign = 1.0 if higher_is_better else -1.0
    worse = "lower" if higher_is_better else "higher"
    level = f"{confidence:.0%}"
    label = metric_name(metric)

    def gain(name: str) -> tuple[float, float, float]:
        """(observed, low, high) of config − leader in the "better" direction: ≤ 0 for everyone."""
        observed, low, high = result.diff_to_leader[name]
        bounds = sorted((sign * low, sign * high))
        return sign * observed, bounds[0], bounds[1]

    # Level configurations in cost order, cheapest first: a reader sees a tie in the order it would be broken.
    ranked = sorted(
        result.configs, key=lambda name: (name != leader, -gain(name)[0], _cost_key(costs, name, result.configs))
    )
    if holm is None:
        ruled_out = [name for name in ranked if name != leader and gain(name)[2] < -practical_margin]
    else:
        ruled_out = [name for name in ranked if name in holm]
    contenders = [name for name in ranked if name not in ruled_out]
    others = contenders[1:]
    runner_up = others[0] if others else (ruled_out[0] if ruled_out else None)

    reasons: list[str] = []
    prob = result.prob_best[leader]
    clear_lead = all(abs(gain(name)[0]) > practical_margin for name in others)
    # Tied: no contender's gap to the leader stands out of the noise (half its interval) or the margin.
    tied = bool(others) and all(
        abs(gain(name)[0]) <= max(practical_margin, (gain(name)[2] - gain(name)[1]) / 2) for name in others
    )
    status: DecisionStatus
    best: str | None = None
    tie_break: str | None = None
    needed: int | None = None
    why_not: dict[str, Any] | None = None
    equivalence: dict[str, Any] | None = None
    tie_among: list[str] | None = None
    # Practically equivalent: every contender's whole interval of difference to the leader within ±the margin.
    # At the ceiling, identical scores are equivalent only because the questions are too easy: that cause is told.
    at_top = [name for name in contenders if ceiling is not None and abs(result.means[name] - ceiling) <= 1e-9]
    equivalent = (
        bool(others)
        and equivalence_margin > 0
        and len(at_top) < 2
        and all(gain(name)[1] >= -equivalence_margin and gain(name)[2] <= equivalence_margin for name in others)
    )

    if equivalent:
        by_cost = sorted(contenders, key=lambda name: _cost_key(costs, name, result.configs))
        status, best, tie_break = "tie_broken_by_cost", by_cost[0], TIE_BREAK_COST
        equivalence = {"margin": equivalence_margin, "configurations": by_cost, "confidence": confidence}
        reasons.append(
            equivalent_reason(label, by_cost, equivalence_margin, level, [cost_of(costs, name) for name in by_cost])
        )
    elif not others or (prob >= min_prob_best and clear_lead):
        status, best = "winner", leader
        against = (runner_up, result.means[runner_up]) if runner_up else None
        reasons.append(
            winner_reason(leader, label, result.means[leader], against, prob, result.n_resamples, result.n_questions)
        )
    else:
        # At the ceiling the tie is among the configurations that reach it, never a cheaper one below it.
        pool = at_top if len(at_top) >= 2 else contenders
        tie_among = list(pool)
        contender_costs = {name: cost_of(costs, name) for name in pool}
        priced = sorted((cost, name) for name, cost in contender_costs.items() if cost is not None)
        unpriced = [name for name, cost in contender_costs.items() if cost is None]
        # "Clearly cheaper than every other contender" is computed on the two cheapest: the cheapest is at least
        # cost_margin below all the others exactly when it is below the next cheapest. The sentences name both, so
        # a spread of 564 to 2,541 tokens is not read as "all within 10%" when only the two cheapest are.
        cheapest_clear = not unpriced and len(priced) >= 2 and priced[0][0] <= (1 - cost_margin) * priced[1][0]
        # Configurations level at the ceiling are tied whatever the noise below them.
        if (tied or len(at_top) >= 2) and cheapest_clear:
            status, best, tie_break = "tie_broken_by_cost", priced[0][1], TIE_BREAK_COST
            reasons.append(tie_broken_reason(label, pool, leader, prob, best, priced, TIE_BREAK_COST))
        else:
            status = "cannot_tell"
            why = None
            if len(at_top) >= 2:
                why = ceiling_clause(at_top)
                if not unpriced and len(priced) >= 2:
                    why += "; " + tie_not_broken_clause(priced, cost_margin)
            elif tied and unpriced:
                why = unpriced_clause(unpriced)
            elif tied:
                why = tie_not_broken_clause(priced, cost_margin)
            # A lead too rarely best is the probability's doubt; one best often enough fails on the margin alone.
            close = [n for n in others if abs(gain(n)[0]) <= practical_margin] if prob >= min_prob_best else []
            reasons.append(
                leads_reason(
                    leader, label, result.means[leader], prob, others, why, close=close, margin=practical_margin
                )
            )
        needed, beyond = _questions_needed_reason(
            result, leader, others[0], gain, practical_margin, confidence, reasons
        )
        if status == "cannot_tell":
            at_ceiling = at_top
            difference = abs(gain(others[0])[0])
            why_not = {"n_questions": result.n_questions, "configurations": [leader, others[0]]}
            if len(at_ceiling) >= 2:
                why_not.update(cause="ceiling", configurations=at_ceiling, ceiling=ceiling)
            elif needed:
                why_not.update(cause="too_few_questions", difference=difference, questions_needed=needed)
            else:
                why_not.update(cause="noise", difference=difference, practical_margin=practical_margin)
                if beyond:  # the estimate was no advice: the sentence says more questions would not do
                    why_not.update(questions_needed_beyond=beyond)

    for name in others:
        _observed, low, high = result.diff_to_leader[name]
        interval = interval_text(level, name, leader, low, high)
        gap = abs(gain(name)[0])
        if status == "winner":
            reasons.append(kept_contender_reason(name, leader, gap, worse, interval, prob, min_prob_best, level))
        else:
            comparisons = len(result.configs) - 1 if holm is not None else None
            reasons.append(contender_reason(name, leader, gap, worse, interval, holm=comparisons))
    correction: dict[str, Any] | None = None
    if holm is not None:
        correction = {"method": "holm", "comparisons": len(result.configs) - 1, "family_confidence": confidence}
        reasons.append(holm_reason(len(result.configs), len(ruled_out), level))
    for name in ruled_out:
        observed, low, high = gain(name)
        at, with_holm = level, None
        if holm is not None:  # the interval at the level that ruled it out, not the uncorrected one
            (_d, raw_low, raw_high), corrected = holm[name]
            low, high = sorted((sign * raw_low, sign * raw_high))
            at, with_holm = f"{corrected:.2%}", len(result.configs) - 1
        reasons.append(ruled_out_reason(name, label, worse, leader, abs(observed), at, -high, -low, holm=with_holm))
    if result.dropped_questions:
        reasons.append(dropped_sentence(result.dropped_questions))
    reasons.extend(result.notes)

    return Decision(
        metric=metric,
        status=status,
        best=best,
        leader=leader,
        prob_best=dict(result.prob_best),
        means=dict(result.means),
        diff_to_leader=dict(result.diff_to_leader),
        ruled_out=ruled_out,
        contenders=contenders,
        questions_needed=needed,
        tie_break=tie_break,
        reasons=reasons,
        n_questions=result.n_questions,
        dropped_questions=result.dropped_questions,
        runner_up=runner_up,
        higher_is_better=higher_is_better,
        confidence=confidence,
        practical_margin=practical_margin,
        costs={name: cost_of(costs, name) for name in result.configs},
        cost_margin=cost_margin,
        tied=tied,
        cannot_tell=why_not,
        equivalence_margin=equivalence_margin,
        equivalence=equivalence,
        correction=correction,
        tie_among=tie_among if status == "tie_broken_by_cost" and equivalence is None else None,
        ceiling=ceiling if len(at_top) >= 2 else None,
    )


def _questions_needed_reason(
    result: BootstrapResult,
    leader: str,
    runner_up: str,
    gain: Callable[[str], tuple[float, float, float]],
    practical_margin: float,
    confidence: float,
    reasons: list[str],
) -> tuple[int | None, int | None]:
    """The questions_needed estimate for leader vs runner-up, with the reason that explains it, and (second) an
    estimate over ``MAX_QUESTIONS_FACTOR`` times the questions scored, which is not given as advice."""
    difference = abs(gain(runner_up)[0])
    if difference == 0:
        reasons.append(same_mean_reason(leader, runner_up))
        return None, None
    if difference <= practical_margin:
        reasons.append(within_margin_reason(leader, runner_up, difference, practical_margin))
        return None, None
    needed = questions_needed(
        result.diff_sd[runner_up], difference - practical_margin, result.n_questions, confidence=confidence
    )
    if needed and needed > MAX_QUESTIONS_FACTOR * result.n_questions:
        reasons.append(beyond_questions_reason(result.n_questions, leader, runner_up, difference))
        return None, needed
    if needed:
        reasons.append(more_questions_reason(needed, result.n_questions, leader, runner_up, difference))
    else:
        reasons.append(enough_questions_reason(result.n_questions, leader, runner_up))
    return needed, None
