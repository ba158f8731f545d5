"""The report's comparison at equal context budget: each configuration's metric with its context cut to B tokens,
beside the raw figure, and its curve against context tokens (``benchmarking.budget`` does the rescoring)."""

from __future__ import annotations

from collections.abc import Mapping
from statistics import fmean
from typing import Any

from chunkbench.benchmarking import budget as budgets
from chunkbench.benchmarking.model import CellResult
from chunkbench.benchmarking.report.charts import budget_curve
from chunkbench.benchmarking.report.experiment import experiment_config, experiment_configurations, metric_mean


def budget_view(experiment: Mapping[str, Any], *, budget: int | None = None) -> dict[str, Any] | None:
    """The table and curves at ``budget`` tokens (default: the Decision's, else the smallest median tok@k);
    None when the cells carry no retrieved chunks or the questions no evidence."""
    cells = [CellResult.from_dict(c) for c in experiment.get("cells") or []]
    questions = list(experiment.get("questions") or [])
    if not any(c.retrieved for c in cells) or not any(budgets.references_of(q) for q in questions):
        return None
    config, decision = experiment_config(experiment), experiment.get("decision") or {}
    stored = decision.get("budget_matched") or {}
    metric = budgets.budget_metric(decision.get("metric") or config.get("primary_metric"))
    keys = [c["key"] for c in experiment_configurations(experiment)]
    context = budgets.median_context(keys, cells)
    limit = budget or stored.get("budget") or config.get("budget") or budgets.default_budget(context)
    if not limit:
        return None
    at_budget = budgets.rescore(questions, keys, cells, metric=metric, budget=limit)
    rows = []
    for key in keys:
        scored = [v for v in at_budget[key] if v is not None]
        rows.append(
            {
                "key": key,
                "context": context[key],
                "raw": metric_mean(experiment.get("aggregate") or {}, key, metric),
                "at_budget": fmean(scored) if scored else None,
            }
        )
    rows.sort(key=lambda r: (r["at_budget"] is None, -(r["at_budget"] or 0.0)))
    points = budgets.curve_budgets(context, limit)
    return {
        "budget": limit,
        "metric": metric,
        "default": budget is None and not stored.get("budget") and not config.get("budget"),
        "rows": rows,
        # The Decision's rule was computed at its own budget: shown only when the report compares at that one.
        "rule": stored.get("rule") if stored.get("budget") == limit else None,
        "curves": [
            budget_curve(
                budgets.curve(questions, keys, cells, metric=name, budgets=points), points, metric=name, budget=limit
            )
            for name in dict.fromkeys(("recall", metric))
        ],
    }
