"""The Decision: which configuration to use, named only when the data supports it.

From per-question scores of every configuration on the same questions, a paired bootstrap
(``evaluation.stats.paired_bootstrap``) gives each configuration's probability of being best and the
interval of its difference to the leader. Then:

* **ruled out**: configurations whose whole interval of (config − leader) lies below ``−practical_margin``
  (worse by more than the margin, with ``confidence``); the rest, leader included, are **contenders**;
* **winner**: only the leader is left, or the leader is best in at least ``min_prob_best`` of the resamples
  *and* leads every other contender by more than ``practical_margin`` (with a margin of 0 this is the plain
  probability rule; a margin stops a consistent but negligible lead from counting as a win);
* **tie_broken_by_cost**: several contenders, each within ``max(practical_margin, half its interval)`` of
  the leader — the data cannot tell them apart — and one is clearly cheaper in context tokens (``tok@k``,
  at least ``cost_margin`` below every other contender): that one is ``best``, and the reasons say so;
* **no_clear_winner** otherwise (``best`` is None), with an estimate of how many more questions would
  likely separate the leader from the runner-up (80 % power, two-sided ``confidence``):
  ``n ≈ ((z_(1+c)/2 + z_0.8) · σ / (δ − margin))² − n_now``, σ the SD of their per-question differences, δ
  the observed mean difference; ``None`` when δ is 0 or within the margin (more questions would not change
  the decision);
* **insufficient_data**: fewer than 2 configurations or fewer than ``MIN_QUESTIONS`` usable questions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

from chunkbench.evaluation.stats import BootstrapResult, complete_matrix, paired_bootstrap

DecisionStatus = Literal["winner", "tie_broken_by_cost", "no_clear_winner", "insufficient_data"]

MIN_QUESTIONS = 5
POWER = 0.8
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: tuples as lists, non-finite floats as None."""
        return {
            "metric": self.metric,
            "status": self.status,
            "best": self.best,
            "leader": self.leader,
            "runner_up": self.runner_up,
            "prob_best": {name: _finite(value) for name, value in self.prob_best.items()},
            "means": {name: _finite(value) for name, value in self.means.items()},
            "diff_to_leader": {
                name: [_finite(value) for value in values] for name, values in self.diff_to_leader.items()
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
            "costs": {name: _finite(value) for name, value in self.costs.items()},
        }


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}"


def _cost_of(costs: Mapping[str, float | None], name: str) -> float | None:
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


def _insufficient(
    metric: str, reasons: list[str], scores: Mapping[str, Sequence[float | None]], costs: Mapping[str, float | None],
    *, higher_is_better: bool, confidence: float, practical_margin: float,
) -> Decision:  # fmt: skip
    means: dict[str, float] = {}
    n_questions = dropped = 0
    if scores:
        configs, matrix, dropped = complete_matrix(scores)
        n_questions = matrix.shape[0]
        if n_questions:
            means = {name: float(matrix[:, i].mean()) for i, name in enumerate(configs)}
    if dropped:
        reasons.append(_dropped_sentence(dropped))
    return Decision(
        metric=metric, status="insufficient_data", best=None, leader=None, prob_best={}, means=means,
        diff_to_leader={}, ruled_out=[], contenders=list(scores), questions_needed=None, tie_break=None,
        reasons=reasons, n_questions=n_questions, dropped_questions=dropped, higher_is_better=higher_is_better,
        confidence=confidence, practical_margin=practical_margin,
        costs={name: _cost_of(costs, name) for name in scores},
    )  # fmt: skip


def _dropped_sentence(dropped: int) -> str:
    return (
        f"{dropped} question{'s were' if dropped != 1 else ' was'} left out because at least one configuration "
        "has no score for it."
    )


def decide(
    scores: Mapping[str, Sequence[float | None]],
    costs: Mapping[str, float | None],
    *,
    metric: str,
    higher_is_better: bool = True,
    confidence: float = 0.95,
    min_prob_best: float = 0.9,
    practical_margin: float = 0.0,
    n_resamples: int = 2000,
    seed: int = 0,
    cost_margin: float = 0.1,
) -> Decision:
    """The Decision on ``metric`` from ``scores[config][question]`` and context costs ``costs[config]`` (tok@k).

    See the module docstring for the rules. ``cost_margin``: how much cheaper (as a share) the cheapest tied
    contender must be than every other one to break a tie. A ``ValueError`` when configurations have different
    numbers of questions or the margin is negative.
    """
    if practical_margin < 0:
        raise ValueError(f"practical_margin must be >= 0, got {practical_margin}")
    options = {"higher_is_better": higher_is_better, "confidence": confidence, "practical_margin": practical_margin}
    if len(scores) < 2:
        only = f"only '{next(iter(scores))}'" if scores else "none"
        return _insufficient(
            metric, [f"Nothing to compare: a decision needs at least 2 configurations ({only} given)."],
            scores, costs, **options,
        )  # fmt: skip
    _configs, matrix, _dropped = complete_matrix(scores)
    if matrix.shape[0] < MIN_QUESTIONS:
        return _insufficient(
            metric,
            [
                f"Only {matrix.shape[0]} question{'s' if matrix.shape[0] != 1 else ''} scored for every "
                f"configuration; a decision needs at least {MIN_QUESTIONS}. Add questions and run again."
            ],
            scores, costs, **options,
        )  # fmt: skip

    result = paired_bootstrap(
        scores, n_resamples=n_resamples, seed=seed, higher_is_better=higher_is_better, confidence=confidence
    )
    return _decide(result, costs, metric=metric, min_prob_best=min_prob_best, cost_margin=cost_margin, **options)


def _decide(
    result: BootstrapResult,
    costs: Mapping[str, float | None],
    *,
    metric: str,
    higher_is_better: bool,
    confidence: float,
    practical_margin: float,
    min_prob_best: float,
    cost_margin: float,
) -> Decision:
    leader = result.leader
    sign = 1.0 if higher_is_better else -1.0
    worse = "lower" if higher_is_better else "higher"
    level = f"{confidence:.0%}"

    def gain(name: str) -> tuple[float, float, float]:
        """(observed, low, high) of config − leader in the "better" direction: ≤ 0 for everyone."""
        observed, low, high = result.diff_to_leader[name]
        bounds = sorted((sign * low, sign * high))
        return sign * observed, bounds[0], bounds[1]

    ranked = sorted(result.configs, key=lambda name: (name != leader, -gain(name)[0]))
    ruled_out = [name for name in ranked if name != leader and gain(name)[2] < -practical_margin]
    contenders = [name for name in ranked if name not in ruled_out]
    others = contenders[1:]
    runner_up = others[0] if others else (ruled_out[0] if ruled_out else None)

    reasons: list[str] = []
    prob = result.prob_best[leader]
    clear_lead = all(abs(gain(name)[0]) > practical_margin for name in others)
    status: DecisionStatus
    best: str | None = None
    tie_break: str | None = None
    needed: int | None = None

    if not others or (prob >= min_prob_best and clear_lead):
        status, best = "winner", leader
        against = f" vs {_fmt(result.means[runner_up])} for {runner_up}" if runner_up else ""
        reasons.append(
            f"{leader} is the best configuration on {metric}: mean {_fmt(result.means[leader])}{against}, best in "
            f"{prob:.0%} of {result.n_resamples:,} bootstrap resamples of the {result.n_questions} questions."
        )
    else:
        tied = all(abs(gain(name)[0]) <= max(practical_margin, (gain(name)[2] - gain(name)[1]) / 2) for name in others)
        contender_costs = {name: _cost_of(costs, name) for name in contenders}
        priced = sorted((cost, name) for name, cost in contender_costs.items() if cost is not None)
        unpriced = [name for name, cost in contender_costs.items() if cost is None]
        cheapest_clear = not unpriced and len(priced) >= 2 and priced[0][0] <= (1 - cost_margin) * priced[1][0]
        if tied and cheapest_clear:
            status, best, tie_break = "tie_broken_by_cost", priced[0][1], TIE_BREAK_COST
            listed = ", ".join(f"{_fmt(cost)} for {name}" for cost, name in priced[1:])
            reasons.append(
                f"tie on {metric}, broken by {TIE_BREAK_COST}: {', '.join(contenders)} cannot be told apart "
                f"(leader {leader} best in only {prob:.0%} of resamples), and {best} needs the least context "
                f"({_fmt(priced[0][0])} tokens vs {listed})."
            )
        else:
            status = "no_clear_winner"
            if tied and unpriced:
                why = f"; the tie cannot be broken by context cost because it is unknown for {', '.join(unpriced)}"
            elif tied:
                why = f"; their context costs are too close to break the tie (within {cost_margin:.0%})"
            else:
                why = ""
            reasons.append(
                f"No clear winner on {metric}: {leader} leads with mean {_fmt(result.means[leader])} but is best in "
                f"only {prob:.0%} of resamples, and {', '.join(others)} cannot be ruled out{why}."
            )
        needed = _questions_needed_sentence(result, leader, others[0], gain, practical_margin, confidence, reasons)

    for name in others:
        _observed, low, high = result.diff_to_leader[name]
        interval = f"{level} interval of {name} − {leader}: {_fmt(low)} to {_fmt(high)}"
        if status == "winner":
            reasons.append(
                f"{name} is not ruled out at {level} ({_fmt(abs(gain(name)[0]))} {worse} on average, {interval}), "
                f"but {leader} is best in {prob:.0%} of resamples, above the {min_prob_best:.0%} required."
            )
        else:
            gap = abs(gain(name)[0])
            average = f"{_fmt(gap)} {worse} than {leader} on average" if gap else f"level with {leader} on average"
            reasons.append(f"{name} is still a contender: {average} ({interval}).")
    for name in ruled_out:
        observed, low, high = gain(name)
        reasons.append(
            f"{name} is ruled out: its {metric} is {worse} than {leader}'s by {_fmt(abs(observed))} "
            f"({level} interval {_fmt(-high)} to {_fmt(-low)})."
        )
    if result.dropped_questions:
        reasons.append(_dropped_sentence(result.dropped_questions))
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
        costs={name: _cost_of(costs, name) for name in result.configs},
    )


def _questions_needed_sentence(
    result: BootstrapResult,
    leader: str,
    runner_up: str,
    gain: Callable[[str], tuple[float, float, float]],
    practical_margin: float,
    confidence: float,
    reasons: list[str],
) -> int | None:
    """The questions_needed estimate for leader vs runner-up, with the sentence that explains it."""
    difference = abs(gain(runner_up)[0])
    if difference == 0:
        reasons.append(
            f"{leader} and {runner_up} have the same mean: no detectable difference, so more questions are "
            "unlikely to separate them."
        )
        return None
    if difference <= practical_margin:
        reasons.append(
            f"{leader} and {runner_up} differ by {_fmt(difference)}, within the practical margin of "
            f"{_fmt(practical_margin)}: more questions would not change the decision."
        )
        return None
    needed = questions_needed(
        result.diff_sd[runner_up], difference - practical_margin, result.n_questions, confidence=confidence
    )
    if needed:
        reasons.append(
            f"About {needed:,} more questions (beyond the {result.n_questions} scored) would likely separate "
            f"{leader} from {runner_up} (80% power), if the observed difference of {_fmt(difference)} is real."
        )
    else:
        reasons.append(
            f"The {result.n_questions} questions should already separate {leader} from {runner_up} at 80% power; "
            "the remaining doubt comes from a few questions with large differences."
        )
    return needed
