"""The equal-budget arm of the Decision: the ranking with every context cut to B tokens, and the rule a winner
keeps its name by.

``BudgetScores`` (every configuration's scores at B, and its median context uncut) and ``at_equal_budget``: the
Decision's ``budget_matched`` ranking, and a winner withdrawn (cannot_tell, cause ``context``) when a configuration
sending less context scores as well at B. It is separate from the ranking (``decision_ranking.py``) because it
ranks other scores, the rescored ones (``context_budget.py``), and only amends a Decision already made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from chunkbench.benchmarking import budget_verdicts
from chunkbench.benchmarking.decision_ranking import MIN_QUESTIONS, Decision, finite
from chunkbench.benchmarking.report.formatting import metric_name
from chunkbench.evaluation.stats import complete_matrix, paired_bootstrap


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


def at_equal_budget(
    decision: Decision, budget: BudgetScores, *, n_resamples: int, seed: int, cost_margin: float
) -> Decision:
    """The Decision with its ranking at equal context budget, and the equal-budget rule applied to a winner.

    A rival is *leaner* when its median context is more than ``cost_margin`` below the winner's: contexts within
    that margin already are an equal budget (as for the tie-break by cost), and a winner is not withdrawn for
    sending 1% more text."""
    matched: dict[str, Any] = {
        "budget": budget.budget, "source": budget.source, "metric": budget.metric,
        "context": {name: finite(value) for name, value in budget.context.items()},
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
        means={name: finite(value) for name, value in result.means.items()},
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
    matched["rule"] = budget_verdicts.equal_budget_sentence(
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
