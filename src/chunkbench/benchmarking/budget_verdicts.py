"""The sentences about the context budget: the budgeted answer beside the full-context one, and the equal-budget rule.

Each is written by one function and a test pins it: ``budget_sentence`` leads the verdict when the configuration
leading at the budget is not the one named at full context (``verdicts.verdict``); ``equal_budget_sentence`` is the
reason ``equal_budget.py`` gives for whether a winner keeps its name at equal context. Separate from the verdict at
full context (``verdicts.py``): both speak of the ranking with every context cut to B tokens, the rest of the verdict
of the ranking at full context (the cannot-tell sentence of cause ``context`` is one branch of
``verdicts.cannot_tell_sentence``, which writes every cannot-tell sentence).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkbench.benchmarking.report.formatting import metric_name
from chunkbench.benchmarking.verdict_words import cost_in, figure, tokens, unnamable_in


def budget_sentence(decision: Mapping[str, Any]) -> str | None:
    """The budgeted answer beside the full-context one, when they name different configurations: who leads with
    every context cut to the budget, and who leads with the full context (``Decision.budget_matched``)."""
    matched = decision.get("budget_matched") or {}
    at_budget, means = matched.get("leader"), matched.get("means") or {}
    full = decision.get("best") or decision.get("leader")
    if decision.get("status") == "insufficient_data" or not at_budget or not full or at_budget == full:
        return None
    if int(matched.get("n_questions") or 0) < int(decision.get("min_questions") or 5) or at_budget not in means:
        return None
    # The configuration named by the Decision is the one that may not be named (language rule): say nothing.
    if at_budget in unnamable_in(decision) or full in unnamable_in(decision):
        return None
    budget_metric = metric_name(str(matched.get("metric") or decision.get("metric") or "the metric"))
    metric = metric_name(str(decision.get("metric") or "the metric"))
    full_mean = (decision.get("means") or {}).get(full)
    cost = cost_in(decision, full)
    if cost is None and isinstance((matched.get("context") or {}).get(full), int | float):
        cost = float(matched["context"][full])
    sends = f" at {tokens(cost)} tokens" if cost is not None else ""
    same = budget_metric == metric
    on = "" if same else f" on {metric}"
    score = f"{figure(full_mean)}{'' if same else ' ' + metric}{sends}" if full_mean is not None else sends.strip()
    return (
        f"At {int(matched['budget']):,} context tokens per question, {at_budget} leads on {budget_metric} "
        f"({figure(float(means[at_budget]))}); with the full context, {full} leads{on} ({score})."
    ).replace(" ()", "")


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
