"""The report's comparison at equal context budget: each configuration's metric with its context cut to B tokens,
beside the raw figure, its curve against context tokens (``benchmarking.context_budget`` does the rescoring), and the
recall–tokens frontier: the configurations best for some budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from chunkbench.benchmarking import context_budget
from chunkbench.benchmarking.model import CellResult
from chunkbench.benchmarking.report.charts import budget_curve, frontier_chart
from chunkbench.benchmarking.report.experiment import experiment_config, experiment_configurations, metric_mean
from chunkbench.benchmarking.report.formatting import as_number, fmt, fmt_tokens, metric_name
from chunkbench.benchmarking.report.metric_labels import METRIC_BY_KEY, MetricSpec


@dataclass(frozen=True)
class _Comparison:
    """What the equal-budget view compares: the cells, questions and configurations, each one's median context,
    the budget and the metric rescored at it."""

    cells: list[CellResult]
    questions: list[Mapping[str, Any]]
    keys: list[str]
    context: dict[str, float | None]
    budget: int
    metric: str
    default: bool
    rule: str | None

    @property
    def curve_metrics(self) -> list[str]:
        """What the curves show against context tokens: recall, and the rescored metric when it is another."""
        return list(dict.fromkeys(("recall", self.metric)))


def _comparison(experiment: Mapping[str, Any], budget: int | None) -> _Comparison | None:
    cells = [CellResult.model_validate(c) for c in experiment.get("cells") or []]
    questions = list(experiment.get("questions") or [])
    if not any(c.retrieved for c in cells) or not any(context_budget.references_of(q) for q in questions):
        return None
    config, decision = experiment_config(experiment), experiment.get("decision") or {}
    stored = decision.get("budget_matched") or {}
    keys = [c["key"] for c in experiment_configurations(experiment)]
    context = context_budget.median_context(keys, cells)
    limit = budget or stored.get("budget") or config.get("budget") or context_budget.default_budget(context)
    if not limit:
        return None
    return _Comparison(
        cells,
        questions,
        keys,
        context,
        limit,
        context_budget.budget_metric(decision.get("metric") or config.get("primary_metric")),
        default=budget is None and not stored.get("budget") and not config.get("budget"),
        # The Decision's rule was computed at its own budget: shown only when the view compares at that one.
        rule=stored.get("rule") if stored.get("budget") == limit else None,
    )


def curve_metrics(experiment: Mapping[str, Any]) -> list[str]:
    """The metrics ``budget_view`` draws a curve of (against context tokens); none without the data for it."""
    comparison = _comparison(experiment, None)
    return comparison.curve_metrics if comparison else []


def budget_view(experiment: Mapping[str, Any], *, budget: int | None = None) -> dict[str, Any] | None:
    """The table and curves at ``budget`` tokens (default: the Decision's, else the smallest median tok@k);
    None when the cells carry no retrieved chunks or the questions no evidence."""
    comparison = _comparison(experiment, budget)
    if comparison is None:
        return None
    cells, questions, keys, context = comparison.cells, comparison.questions, comparison.keys, comparison.context
    limit, metric = comparison.budget, comparison.metric
    at_budget = context_budget.rescore(questions, keys, cells, metric=metric, budget=limit)
    rows: list[dict[str, Any]] = []
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
    points = context_budget.curve_budgets(context, limit)
    return {
        "budget": limit,
        "metric": metric,
        "default": comparison.default,
        "rows": rows,
        "rule": comparison.rule,
        "curves": [
            budget_curve(
                context_budget.curve(questions, keys, cells, metric=name, budgets=points),
                points,
                metric=name,
                budget=limit,
            )
            for name in comparison.curve_metrics
        ],
    }


def frontier_view(experiment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The configurations best for some budget on the Decision's metric at full context (the Decision's stored
    ``frontier``, else recomputed), their sentence and the chart of every configuration against its context
    tokens; None with fewer than two configurations that have both."""
    config, decision = experiment_config(experiment), experiment.get("decision") or {}
    metric = decision.get("metric") or config.get("primary_metric") or "recall"
    spec = METRIC_BY_KEY.get(metric) or MetricSpec(metric, metric, 2)
    points = _frontier_points(experiment, metric)
    stored = [p for p in decision.get("frontier") or [] if p.get("config") in points]
    # The stored frontier is the one the verdict speaks of: drawn at its own figures.
    points.update({p["config"]: (as_number(p.get("context")), as_number(p.get("mean"))) for p in stored})
    if sum(1 for tokens, value in points.values() if tokens is not None and value is not None) < 2:
        return None
    best = [p["config"] for p in stored] or context_budget.frontier(points, higher_is_better=spec.higher_is_better)
    # The budget the Decision compared at (else the one the equal-budget view defaults to): where the reader stands.
    budget = (decision.get("budget_matched") or {}).get("budget") or config.get("budget")
    if not budget:
        cells = [CellResult.model_validate(c) for c in experiment.get("cells") or []]
        budget = context_budget.default_budget(context_budget.median_context(list(points), cells))
    dominated = [k for k, (t, v) in points.items() if t is not None and v is not None and k not in best]
    return {
        "metric": metric,
        "budget": budget,
        "frontier": [
            {"key": key, "tokens": points[key][0], "value": points[key][1], "until": _next_tokens(best, i, points)}
            for i, key in enumerate(best)
        ],
        "dominated": sorted(dominated),
        "sentence": frontier_sentence(best, points, spec),
        "chart": frontier_chart(points, best, metric=metric, budget=budget),
    }


def _frontier_points(experiment: Mapping[str, Any], metric: str) -> dict[str, tuple[float | None, float | None]]:
    """``config → (context tokens per question, metric mean)``: the Decision's own figures when it has them (its
    means; the median context the budget cuts to, else its mean tok@k), else each configuration's median tok@k over
    its cells and its aggregate mean."""
    decision = experiment.get("decision") or {}
    keys = [c["key"] for c in experiment_configurations(experiment)]
    means = decision.get("means") or {}
    if means:
        medians = (decision.get("budget_matched") or {}).get("context") or {}
        costs = decision.get("costs") or {}
        return {
            key: (as_number(medians.get(key)) if medians.get(key) is not None else as_number(costs.get(key)),
                  as_number(means[key]))
            for key in keys if key in means
        }  # fmt: skip
    context = context_budget.median_context(keys, [CellResult.model_validate(c) for c in experiment.get("cells") or []])
    aggregate = experiment.get("aggregate") or {}
    return {key: (context.get(key), metric_mean(aggregate, key, metric)) for key in keys}


def _next_tokens(best: list[str], i: int, points: Mapping[str, tuple[float | None, float | None]]) -> float | None:
    return points[best[i + 1]][0] if i + 1 < len(best) else None


def frontier_sentence(
    best: list[str], points: Mapping[str, tuple[float | None, float | None]], spec: MetricSpec
) -> str:
    """The frontier in words: which configuration is best up to which budget, cheapest first."""
    if not best:
        return ""
    parts = []
    for i, key in enumerate(best):
        tokens, value = points[key]
        figure = f"{key} ({metric_name(spec.key)} {fmt(value, spec.digits)} at {fmt_tokens(tokens)} tokens)"
        until = _next_tokens(best, i, points)
        parts.append(f"{figure} up to {fmt_tokens(until)} tokens" if until is not None else f"{figure} beyond")
    if len(best) == 1:
        return f"Best at every budget from {fmt_tokens(points[best[0]][0])} tokens: {parts[0].removesuffix(' beyond')}."
    return "Best for some budget: " + ", then ".join(parts) + "."
