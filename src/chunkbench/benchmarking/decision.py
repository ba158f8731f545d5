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
* **cannot_tell** otherwise (``best`` is None): the benchmark cannot separate the contenders, and
  ``cannot_tell["cause"]`` says why, in this order:

  - ``ceiling``: at least 2 contenders' means are the best value the metric can take (``METRIC_CEILINGS``):
    the questions are too easy (fix: harder questions, a smaller k, a larger corpus);
  - ``too_few_questions``: more questions would likely separate the leader from the runner-up (80 % power,
    two-sided ``confidence``): ``n ≈ ((z_(1+c)/2 + z_0.8) · σ / (δ − margin))² − n_now``, σ the SD of their
    per-question differences, δ the observed mean difference;
  - ``noise``: δ is 0 or within the practical margin, or the estimate says the questions should already
    suffice (more questions would not change the decision; fix: harder questions, a smaller k, a larger
    corpus);
  - ``language``: the configuration that would win (or break the tie) is built on a Corpus or Boundary model
    that does not cover a language of the benchmark's documents (``uncovered``), and those documents are
    *material* (the language rule: confident detections holding at least its share of the questions): its scores
    mean nothing, so it is not named; such configurations are listed in the reasons whatever the status. Below
    the rule (a minority of the questions) the Decision stands: a reason states the share of documents and
    questions, and the Decision is made again without those questions to say whether the named configuration's
    lead depends on them (``language["without"]``);
* **insufficient_data**: fewer than 2 configurations or fewer than ``MIN_QUESTIONS`` usable questions.

**Equal context budget.** Given the scores of every configuration with its context cut to B tokens
(``budget.py``) on the same metric, the Decision also ranks the configurations at B (``budget_matched``), and
a **winner keeps its name only if, at B tokens, its mean still beats that of every configuration sending less
context (a median tok@k lower by more than the cost margin, 10 %) by more than the practical margin**.
Otherwise its lead came from sending more text: the status is **cannot_tell** with cause ``context``. (A tie
broken by cost already picks the cheapest.)

**Ties and ceilings.** Of configurations level at the best mean, the cheapest (tok@k, then input order) is the
leader, and level configurations are listed cheapest first. When 2+ contenders reach the ceiling, a tie is broken
(or the cheapest recommended) only among them (``tie_among``), never by a cheaper configuration below it.

**Practical equivalence** (checked first): every contender's whole interval of difference to the leader within
±``equivalence_margin`` (default ``EQUIVALENCE_MARGIN``, 0.01; 0: off), unless 2+ are at the ceiling → status
``tie_broken_by_cost``, ``best`` the one needing the least context, ``equivalence`` says so. An estimate of more
questions above ``MAX_QUESTIONS_FACTOR`` (100) times those scored is no advice: cause ``noise`` with
``questions_needed_beyond``.

**Holm on large grids.** From ``HOLM_MIN_CONFIGURATIONS`` (30) configurations, *ruled out* uses Holm's step-down
(``evaluation.stats.holm_step_down``) over the comparisons to the leader at family-wise error ``1 − confidence``
(``correction``). ``frontier``: the configurations best for some budget (``frontier()``).

``verdict`` is what a reader sees first (``verdicts.verdict``); ``reasons`` are the details, per configuration.
Experiments decided before ``cannot_tell`` existed store ``no_clear_winner`` for "no winner". Every sentence is
written by ``verdicts.py``; this module only computes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any, Literal

from chunkbench.benchmarking import verdicts
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
# From this many configurations, "ruled out" controls the family-wise error (Holm over the comparisons to the leader).
HOLM_MIN_CONFIGURATIONS = 30
TIE_BREAK_COST = "context cost tok@k"
# The best value a metric can take: scores in [0, 1], the judge's 1–10 scores, the hallucination rate (0).
METRIC_CEILINGS: dict[str, float] = {
    **dict.fromkeys(
        ("recall", "precision", "precision_omega", "iou", "recall_at_k", "hit_at_k", "mrr", "ndcg_at_k",
         "exact_match", "token_f1", "answer_similarity"), 1.0,
    ),
    **dict.fromkeys(("judge_context_relevance", "judge_answer_similarity", "judge_faithfulness"), 10.0),
    "judge_hallucination": 0.0,
}  # fmt: skip


@dataclass(frozen=True)
class BudgetScores:
    """Every configuration's scores on ``metric`` with its context cut to ``budget`` tokens, and its median
    context (tok@k) uncut: what the equal-budget rule needs."""

    budget: int
    metric: str
    scores: Mapping[str, Sequence[float | None]]
    context: Mapping[str, float | None]
    source: Literal["request", "default"] = "default"
    higher_is_better: bool = True


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
    # material (the language rule), and the Decision without those questions (``_language_rule``).
    language: dict[str, Any] | None = None
    # The recall–tokens frontier: the configurations best for some context budget, cheapest first (``frontier``).
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


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _cost_of(costs: Mapping[str, float | None], name: str) -> float | None:
    value = costs.get(name)
    return float(value) if value is not None and math.isfinite(value) else None


def frontier(
    means: Mapping[str, float], context: Mapping[str, float | None], *, higher_is_better: bool = True
) -> list[dict[str, Any]]:
    """The configurations best for some context budget, cheapest first: those no other configuration dominates
    (as good a mean at no more context). Each point: ``config``, ``context`` (tokens per question), ``mean``, and
    the budgets it is best for, ``from_budget`` (its own context) up to ``to_budget`` (the next point's; None for
    the last). Without a known context a configuration is left out; equal contexts keep the better mean, then the
    first in input order."""
    sign = 1.0 if higher_is_better else -1.0
    order = {name: i for i, name in enumerate(means)}
    priced = [
        (float(cost), -sign * float(means[name]), order[name], name)
        for name in means
        if (cost := context.get(name)) is not None and math.isfinite(cost) and math.isfinite(means[name])
    ]
    points: list[dict[str, Any]] = []
    for cost, _key, _index, name in sorted(priced):
        # Cheapest first: a configuration is on the frontier when it beats every cheaper point's mean.
        if points and sign * means[name] <= sign * points[-1]["mean"]:
            continue
        points.append({"config": name, "context": cost, "mean": float(means[name])})
    for i, point in enumerate(points):
        point["from_budget"] = point["context"]
        point["to_budget"] = points[i + 1]["context"] if i + 1 < len(points) else None
    return points


def questions_needed(sd: float, difference: float, n_current: int, *, confidence: float = 0.95) -> int | None:
    """More questions likely (80 % power) to separate two configurations whose paired differences have SD
    ``sd`` and mean ``difference``; None when the difference is 0."""
    if difference == 0 or not math.isfinite(difference):
        return None
    z = NormalDist().inv_cdf((1 + confidence) / 2) + NormalDist().inv_cdf(POWER)
    total = (z * sd / abs(difference)) ** 2
    return max(0, math.ceil(total) - n_current)


def _insufficient(
    metric: str, scores: Mapping[str, Sequence[float | None]], costs: Mapping[str, float | None],
    *, higher_is_better: bool, confidence: float, practical_margin: float, cost_margin: float,
) -> Decision:  # fmt: skip
    means: dict[str, float] = {}
    n_questions = dropped = 0
    if scores:
        configs, matrix, dropped = complete_matrix(scores)
        n_questions = matrix.shape[0]
        if n_questions:
            means = {name: float(matrix[:, i].mean()) for i, name in enumerate(configs)}
    if len(scores) < 2:
        reasons = [verdicts.too_few_configurations_sentence(list(scores))]
    else:
        reasons = [verdicts.too_few_questions_sentence(n_questions, MIN_QUESTIONS, dropped, metric_name(metric))]
    if dropped:
        reasons.append(verdicts.dropped_sentence(dropped))
    return _with_verdict(
        Decision(
            metric=metric, status="insufficient_data", best=None, leader=None, prob_best={}, means=means,
            diff_to_leader={}, ruled_out=[], contenders=list(scores), questions_needed=None, tie_break=None,
            reasons=reasons, n_questions=n_questions, dropped_questions=dropped, higher_is_better=higher_is_better,
            confidence=confidence, practical_margin=practical_margin,
            costs={name: _cost_of(costs, name) for name in scores}, cost_margin=cost_margin,
        )
    )  # fmt: skip


def _with_verdict(decision: Decision) -> Decision:
    return replace(decision, verdict=verdicts.verdict(decision.to_dict()))


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
    ceiling: float | None = None,
    budget: BudgetScores | None = None,
    uncovered: Mapping[str, Mapping[str, Any]] | None = None,
    equivalence_margin: float = EQUIVALENCE_MARGIN,
) -> Decision:
    """The Decision on ``metric`` from ``scores[config][question]`` and context costs ``costs[config]`` (tok@k).

    See the module docstring for the rules. ``cost_margin``: how much cheaper (as a share) the cheapest tied
    contender must be than every other one to break a tie. ``ceiling``: the metric's best possible value
    (default ``METRIC_CEILINGS``). ``budget``: the scores at equal context budget, for ``budget_matched`` and
    the equal-budget rule. ``uncovered``: configurations built on a model that does not cover a document's
    language → ``{role, model_id, languages, covering_models}``. A ``ValueError`` when configurations have
    different numbers of questions or the margin is negative.
    """
    options: dict[str, Any] = {
        "metric": metric, "higher_is_better": higher_is_better, "confidence": confidence,
        "min_prob_best": min_prob_best, "practical_margin": practical_margin, "n_resamples": n_resamples,
        "seed": seed, "cost_margin": cost_margin, "ceiling": ceiling, "equivalence_margin": equivalence_margin,
    }  # fmt: skip
    decision = _decide_all(scores, costs, budget=budget, **options)

    def without(positions: set[int]) -> Decision:
        """The Decision on every question but those at ``positions``."""

        def keep(table: Mapping[str, Sequence[float | None]]) -> dict[str, list[float | None]]:
            return {name: [v for i, v in enumerate(column) if i not in positions] for name, column in table.items()}

        fewer = replace(budget, scores=keep(budget.scores)) if budget is not None else None
        return _decide_all(keep(scores), costs, budget=fewer, **options)

    # The verdict is written last, from the Decision as it finally stands: it and the reasons cannot disagree.
    return _with_verdict(_language_rule(decision, uncovered or {}, len(next(iter(scores.values()), [])), without))


def _language_rule(
    decision: Decision,
    uncovered: Mapping[str, Mapping[str, Any]],
    n_total: int,
    without: Callable[[set[int]], Decision],
) -> Decision:
    """Configurations built on a model that cannot read some documents. When those documents are material, none is
    named: the one that would be best makes the Decision cannot_tell (cause ``language``). Below the rule the
    Decision stands, and is made again without their questions to say whether its choice depends on them. Either
    way ``language`` records it and ``verdicts.language_reasons`` says it."""
    flagged = [name for name in decision.means or decision.contenders if name in uncovered]
    if not flagged:
        return decision
    entries = [uncovered[name] for name in flagged]
    positions = sorted({i for entry in entries for i in entry.get("questions", ())})
    documents = {d for entry in entries for d in entry.get("document_ids", ())}
    known = all("material" in entry for entry in entries)
    language: dict[str, Any] = {
        "configurations": flagged,
        "models": list(dict.fromkeys((entry["role"], entry["model_id"]) for entry in entries)),
        "languages": list(dict.fromkeys(code for entry in entries for code in entry["languages"])),
        "covering_models": list(dict.fromkeys(m for entry in entries for m in entry["covering_models"])),
        # Warnings stored before the language rule say nothing of shares: they are material, as they were.
        "material": not known or any(entry["material"] for entry in entries),
        "material_share": entries[0].get("material_share"),
        "min_confidence": entries[0].get("min_confidence"),
        "standing": "unsure" if any(entry.get("standing") == "unsure" for entry in entries) else "minority",
        "documents": len(documents) if known else None,
        "total_documents": entries[0].get("total_documents") if known else None,
        "questions": len(positions) if known else None,
        "total_questions": n_total,
        "without": None,
    }
    if language["material"]:
        if decision.best is not None and decision.best in uncovered:
            model = {k: uncovered[decision.best][k] for k in ("role", "model_id", "languages", "covering_models")}
            why = {"cause": "language", "configurations": [decision.best], "n_questions": decision.n_questions, **model}
            decision = replace(decision, status="cannot_tell", best=None, tie_break=None, cannot_tell=why)
    elif decision.best is not None and 0 < len(positions) < n_total:  # some questions left to decide on
        again = without(set(positions))
        language["without"] = {
            "n_questions": again.n_questions, "status": again.status, "best": again.best, "leader": again.leader,
        }  # fmt: skip
    language = {**language, "models": [list(pair) for pair in language["models"]]}
    reasons = [*decision.reasons, *verdicts.language_reasons(decision.best, language)]
    return replace(decision, language=language, reasons=reasons)


def _decide_all(
    scores: Mapping[str, Sequence[float | None]],
    costs: Mapping[str, float | None],
    *,
    metric: str,
    higher_is_better: bool,
    confidence: float,
    min_prob_best: float,
    practical_margin: float,
    n_resamples: int,
    seed: int,
    cost_margin: float,
    ceiling: float | None,
    budget: BudgetScores | None,
    equivalence_margin: float,
) -> Decision:
    """``decide`` before the language rule and the final verdict."""
    if practical_margin < 0:
        raise ValueError(f"practical_margin must be >= 0, got {practical_margin}")
    if equivalence_margin < 0:
        raise ValueError(f"equivalence_margin must be >= 0, got {equivalence_margin}")
    options: dict[str, Any] = {
        "higher_is_better": higher_is_better, "confidence": confidence, "practical_margin": practical_margin,
        "cost_margin": cost_margin,
    }  # fmt: skip
    if len(scores) < 2 or complete_matrix(scores)[1].shape[0] < MIN_QUESTIONS:
        return _insufficient(metric, scores, costs, **options)

    scores = _cheapest_leads(scores, costs, higher_is_better=higher_is_better)
    result = paired_bootstrap(
        scores, n_resamples=n_resamples, seed=seed, higher_is_better=higher_is_better, confidence=confidence
    )
    holm = (
        _holm_ruled_out(scores, result, n_resamples=n_resamples, seed=seed, **options)
        if len(result.configs) >= HOLM_MIN_CONFIGURATIONS else None
    )  # fmt: skip
    decision = _decide(
        result, costs, metric=metric, min_prob_best=min_prob_best,
        ceiling=METRIC_CEILINGS.get(metric) if ceiling is None else ceiling, equivalence_margin=equivalence_margin,
        holm=holm, **options,
    )  # fmt: skip
    if budget is not None:
        decision = _at_equal_budget(decision, budget, n_resamples=n_resamples, seed=seed, cost_margin=cost_margin)
    # The frontier is drawn on the median context the budget is cut to, when known; else on the mean tok@k.
    context = {name: (budget.context.get(name) if budget is not None else None) for name in decision.means}
    context = {name: value if value is not None else _cost_of(costs, name) for name, value in context.items()}
    decision = replace(decision, frontier=frontier(decision.means, context, higher_is_better=higher_is_better))
    return _with_verdict(decision)


def _cheapest_leads(
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
    cost = _cost_of(costs, name)
    return (cost is None, cost if cost is not None else 0.0, list(order).index(name))


def _holm_ruled_out(
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
    ceiling: float | None,
    equivalence_margin: float = EQUIVALENCE_MARGIN,
    holm: Mapping[str, tuple[tuple[float, float, float], float]] | None = None,
) -> Decision:
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
            verdicts.equivalent_reason(
                label, by_cost, equivalence_margin, level, [_cost_of(costs, name) for name in by_cost]
            )
        )
    elif not others or (prob >= min_prob_best and clear_lead):
        status, best = "winner", leader
        against = (runner_up, result.means[runner_up]) if runner_up else None
        reasons.append(
            verdicts.winner_reason(
                leader, label, result.means[leader], against, prob, result.n_resamples, result.n_questions
            )
        )
    else:
        # At the ceiling the tie is among the configurations that reach it, never a cheaper one below it.
        pool = at_top if len(at_top) >= 2 else contenders
        tie_among = list(pool)
        contender_costs = {name: _cost_of(costs, name) for name in pool}
        priced = sorted((cost, name) for name, cost in contender_costs.items() if cost is not None)
        unpriced = [name for name, cost in contender_costs.items() if cost is None]
        # "Clearly cheaper than every other contender" is computed on the two cheapest: the cheapest is at least
        # cost_margin below all the others exactly when it is below the next cheapest. The sentences name both, so
        # a spread of 564 to 2,541 tokens is not read as "all within 10%" when only the two cheapest are.
        cheapest_clear = not unpriced and len(priced) >= 2 and priced[0][0] <= (1 - cost_margin) * priced[1][0]
        # Configurations level at the ceiling are tied whatever the noise below them.
        if (tied or len(at_top) >= 2) and cheapest_clear:
            status, best, tie_break = "tie_broken_by_cost", priced[0][1], TIE_BREAK_COST
            reasons.append(verdicts.tie_broken_reason(label, pool, leader, prob, best, priced, TIE_BREAK_COST))
        else:
            status = "cannot_tell"
            why = None
            if len(at_top) >= 2:
                why = verdicts.ceiling_clause(at_top)
                if not unpriced and len(priced) >= 2:
                    why += "; " + verdicts.tie_not_broken_clause(priced, cost_margin)
            elif tied and unpriced:
                why = verdicts.unpriced_clause(unpriced)
            elif tied:
                why = verdicts.tie_not_broken_clause(priced, cost_margin)
            # A lead too rarely best is the probability's doubt; one best often enough fails on the margin alone.
            close = [n for n in others if abs(gain(n)[0]) <= practical_margin] if prob >= min_prob_best else []
            reasons.append(
                verdicts.leads_reason(
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
        interval = verdicts.interval_text(level, name, leader, low, high)
        gap = abs(gain(name)[0])
        if status == "winner":
            reasons.append(
                verdicts.kept_contender_reason(name, leader, gap, worse, interval, prob, min_prob_best, level)
            )
        else:
            comparisons = len(result.configs) - 1 if holm is not None else None
            reasons.append(verdicts.contender_reason(name, leader, gap, worse, interval, holm=comparisons))
    correction: dict[str, Any] | None = None
    if holm is not None:
        correction = {"method": "holm", "comparisons": len(result.configs) - 1, "family_confidence": confidence}
        reasons.append(verdicts.holm_reason(len(result.configs), len(ruled_out), level))
    for name in ruled_out:
        observed, low, high = gain(name)
        at, with_holm = level, None
        if holm is not None:  # the interval at the level that ruled it out, not the uncorrected one
            (_d, raw_low, raw_high), corrected = holm[name]
            low, high = sorted((sign * raw_low, sign * raw_high))
            at, with_holm = f"{corrected:.2%}", len(result.configs) - 1
        reasons.append(
            verdicts.ruled_out_reason(name, label, worse, leader, abs(observed), at, -high, -low, holm=with_holm)
        )
    if result.dropped_questions:
        reasons.append(verdicts.dropped_sentence(result.dropped_questions))
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
        cost_margin=cost_margin,
        tied=tied,
        cannot_tell=why_not,
        equivalence_margin=equivalence_margin,
        equivalence=equivalence,
        correction=correction,
        tie_among=tie_among if status == "tie_broken_by_cost" and equivalence is None else None,
        ceiling=ceiling if len(at_top) >= 2 else None,
    )


def _at_equal_budget(
    decision: Decision, budget: BudgetScores, *, n_resamples: int, seed: int, cost_margin: float
) -> Decision:
    """The Decision with its ranking at equal context budget, and the equal-budget rule applied to a winner.

    A rival is *leaner* when its median context is more than ``cost_margin`` below the winner's: contexts within
    that margin already are an equal budget (as for the tie-break by cost), and a winner is not withdrawn for
    sending 1% more text."""
    matched: dict[str, Any] = {
        "budget": budget.budget, "source": budget.source, "metric": budget.metric,
        "context": {name: _finite(value) for name, value in budget.context.items()},
        "means": {}, "prob_best": {}, "ranking": [], "leader": None, "n_questions": 0, "rule": None,
    }  # fmt: skip
    _configs, matrix, _dropped = complete_matrix(budget.scores)
    if matrix.shape[0] == 0:
        return replace(decision, budget_matched=matched)
    result = paired_bootstrap(
        budget.scores, n_resamples=n_resamples, seed=seed, higher_is_better=budget.higher_is_better,
        confidence=decision.confidence,
    )  # fmt: skip
    sign = 1.0 if budget.higher_is_better else -1.0
    matched.update(
        means={name: _finite(value) for name, value in result.means.items()},
        prob_best=dict(result.prob_best),
        ranking=sorted(result.configs, key=lambda name: -sign * result.means[name]),
        leader=result.leader,
        n_questions=result.n_questions,
    )
    winner = decision.best if decision.status == "winner" else None
    # The rule compares like with like: only a Decision on the rescored metric itself, with enough questions.
    if winner is None or budget.metric != decision.metric or result.n_questions < MIN_QUESTIONS:
        return replace(decision, budget_matched=matched)
    mine = budget.context.get(winner)
    leaner = [
        name for name in result.configs
        if name != winner and mine is not None and (theirs := budget.context.get(name)) is not None
        and theirs < mine * (1 - cost_margin)
    ]  # fmt: skip
    rivals = [n for n in leaner if sign * (result.means[winner] - result.means[n]) <= decision.practical_margin]
    rival = max(rivals, key=lambda name: sign * result.means[name]) if rivals else None
    matched["rule"] = verdicts.equal_budget_sentence(
        metric_name(decision.metric), winner, rival, budget=budget.budget, means=result.means,
        context=budget.context,
    )  # fmt: skip
    reasons = [*decision.reasons, matched["rule"]]
    if rival is None:
        return replace(decision, budget_matched=matched, reasons=reasons)
    why = {
        "cause": "context", "configurations": [winner, rival], "n_questions": decision.n_questions,
        "budget": budget.budget, "budget_means": {name: result.means[name] for name in (winner, rival)},
        "context": {name: budget.context.get(name) for name in (winner, rival)},
    }  # fmt: skip
    return replace(decision, status="cannot_tell", best=None, cannot_tell=why, budget_matched=matched, reasons=reasons)


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
        reasons.append(verdicts.same_mean_reason(leader, runner_up))
        return None, None
    if difference <= practical_margin:
        reasons.append(verdicts.within_margin_reason(leader, runner_up, difference, practical_margin))
        return None, None
    needed = questions_needed(
        result.diff_sd[runner_up], difference - practical_margin, result.n_questions, confidence=confidence
    )
    if needed and needed > MAX_QUESTIONS_FACTOR * result.n_questions:
        reasons.append(verdicts.beyond_questions_reason(result.n_questions, leader, runner_up, difference))
        return None, needed
    if needed:
        reasons.append(verdicts.more_questions_reason(needed, result.n_questions, leader, runner_up, difference))
    else:
        reasons.append(verdicts.enough_questions_reason(result.n_questions, leader, runner_up))
    return needed, None
