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
(``context_budget.py``) on the same metric, the Decision also ranks the configurations at B (``budget_matched``), and
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
written by ``verdicts.py`` and the modules beside it (``decision_reasons.py``, ``budget_verdicts.py``,
``language_verdicts.py``); this module only computes. It is the entry point: the Decision's data and the ranking
of one bootstrap result are in ``decision_ranking.py``, the equal-budget arm in ``equal_budget.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from chunkbench.benchmarking import decision_reasons, language_verdicts, verdicts
from chunkbench.benchmarking.decision_ranking import (
    EQUIVALENCE_MARGIN,
    MIN_QUESTIONS,
    Decision,
    cheapest_leads,
    cost_of,
    holm_ruled_out,
    rank,
)
from chunkbench.benchmarking.equal_budget import BudgetScores, at_equal_budget
from chunkbench.benchmarking.report.formatting import metric_name
from chunkbench.evaluation.stats import complete_matrix, paired_bootstrap

# From this many configurations, "ruled out" controls the family-wise error (Holm over the comparisons to the leader).
HOLM_MIN_CONFIGURATIONS = 30
# The best value a metric can take: scores in [0, 1], the judge's 1–10 scores, the hallucination rate (0).
METRIC_CEILINGS: dict[str, float] = {
    **dict.fromkeys(
        ("recall", "precision", "precision_omega", "iou", "recall_at_k", "hit_at_k", "mrr", "ndcg_at_k",
         "exact_match", "token_f1", "answer_similarity"), 1.0,
    ),
    **dict.fromkeys(("judge_context_relevance", "judge_answer_similarity", "judge_faithfulness"), 10.0),
    "judge_hallucination": 0.0,
}  # fmt: skip


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
        reasons.append(decision_reasons.dropped_sentence(dropped))
    return _with_verdict(
        Decision(
            metric=metric, status="insufficient_data", best=None, leader=None, prob_best={}, means=means,
            diff_to_leader={}, ruled_out=[], contenders=list(scores), questions_needed=None, tie_break=None,
            reasons=reasons, n_questions=n_questions, dropped_questions=dropped, higher_is_better=higher_is_better,
            confidence=confidence, practical_margin=practical_margin,
            costs={name: cost_of(costs, name) for name in scores}, cost_margin=cost_margin,
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
    way ``language`` records it and ``language_verdicts.language_reasons`` says it."""
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
    reasons = [*decision.reasons, *language_verdicts.language_reasons(decision.best, language)]
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

    scores = cheapest_leads(scores, costs, higher_is_better=higher_is_better)
    result = paired_bootstrap(
        scores, n_resamples=n_resamples, seed=seed, higher_is_better=higher_is_better, confidence=confidence
    )
    holm = (
        holm_ruled_out(scores, result, n_resamples=n_resamples, seed=seed, **options)
        if len(result.configs) >= HOLM_MIN_CONFIGURATIONS else None
    )  # fmt: skip
    decision = rank(
        result, costs, metric=metric, min_prob_best=min_prob_best,
        ceiling=METRIC_CEILINGS.get(metric) if ceiling is None else ceiling, equivalence_margin=equivalence_margin,
        holm=holm, **options,
    )  # fmt: skip
    if budget is not None:
        decision = at_equal_budget(decision, budget, n_resamples=n_resamples, seed=seed, cost_margin=cost_margin)
    # The frontier is drawn on the median context the budget is cut to, when known; else on the mean tok@k.
    context = {name: (budget.context.get(name) if budget is not None else None) for name in decision.means}
    context = {name: value if value is not None else cost_of(costs, name) for name, value in context.items()}
    decision = replace(decision, frontier=frontier(decision.means, context, higher_is_better=higher_is_better))
    return _with_verdict(decision)
