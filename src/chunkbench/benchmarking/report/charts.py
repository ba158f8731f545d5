"""SVG chart geometry for the reports and the dashboard: metric bars, the questions × configurations heatmap,
curves against context tokens, latency bars (``render.py`` draws them, the templates hold the SVG)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import fmean
from typing import Any

from chunkbench.benchmarking.report.experiment import experiment_configurations, has_metric
from chunkbench.benchmarking.report.formatting import as_number, fmt, fmt_ms, fmt_short, fmt_tokens
from chunkbench.benchmarking.report.metric_labels import METRIC_BY_KEY, METRICS, MetricSpec

# Latency stages of a cell, in pipeline order.
LATENCY_STAGES = ("embed", "search", "expand", "rerank", "generate", "judge")

# The heatmap's colour scale, worst → best, and the fill of a cell with no value. The one definition: the templates
# get both as data (render.py), and report.js interpolates the same stops when the reader picks another metric.
COLOUR_STOPS = ((0x1E, 0x1B, 0x4B), (0xB4, 0x53, 0x09), (0xFD, 0xE0, 0x47))
NOT_MEASURED = "#2a2a30"
# The fill of a heatmap cell that failed or has no result yet.
FAILED_FILL = "#5b1f24"


def metric_bars(experiment: Mapping[str, Any], metric: str) -> dict[str, Any]:
    """A horizontal bar per configuration (the mean) with a whisker for its 95% interval, as SVG geometry."""
    spec = METRIC_BY_KEY.get(metric) or MetricSpec(metric, metric, 2)
    aggregate = experiment.get("aggregate") or {}
    label_w, bar_w, row_h, pad = 230, 360, 26, 8
    stats = []
    for config in experiment_configurations(experiment):
        stat = ((aggregate.get(config["key"]) or {}).get("metrics") or {}).get(metric) or {}
        stats.append(
            (config["key"], as_number(stat.get("mean")), as_number(stat.get("ci_low")), as_number(stat.get("ci_high")))
        )
    high = spec.high
    if high is None:
        high = _nice_ceiling(max([v for _, *vals in stats for v in vals if v is not None] or [1.0]))

    def x(value: float) -> float:
        return round(label_w + bar_w * min(max((value - spec.low) / (high - spec.low), 0.0), 1.0), 1)

    rows = []
    for i, (key, mean, lo, hi) in enumerate(stats):
        y = pad + i * row_h
        rows.append(
            {
                "key": key,
                "y": y,
                "mid": y + row_h / 2 - 2,
                "bar_w": round(x(mean) - label_w, 1) if mean is not None else None,
                "whisker": (x(lo), x(hi)) if lo is not None and hi is not None else None,
                "text": fmt(mean, spec.digits),
                "tip": f"{key}: {spec.label} {fmt(mean, spec.digits)} (95% CI {fmt(lo, spec.digits)}–"
                f"{fmt(hi, spec.digits)})",
            }
        )
    return {
        "metric": metric,
        "label": spec.label,
        "note": "mean per configuration; whiskers: 95% interval",
        "width": label_w + bar_w + 70,
        "height": pad * 2 + row_h * len(rows) + 14,
        "label_w": label_w,
        "bar_w": bar_w,
        "row_h": row_h,
        "axis_y": pad + row_h * len(rows),
        "ticks": [
            {
                "x": x(spec.low + (high - spec.low) * t),
                "text": fmt(spec.low + (high - spec.low) * t, max(spec.digits - 1, 0)),
            }
            for t in (0, 0.5, 1)
        ],
        "rows": rows,
    }


def _nice_ceiling(value: float) -> float:
    # An axis end of 1, 2 or 5 × 10^n above the data: token axes read 0 – 1,500 – 3,000, not 0 – 1,371.9 – 2,743.8.
    if value <= 0:
        return 1.0
    scale = 10 ** math.floor(math.log10(value))
    return next(m * scale for m in (1, 2, 3, 5, 10) if m * scale >= value)


def heatmap(experiment: Mapping[str, Any], *, primary: str) -> dict[str, Any]:
    """Questions × configurations, coloured by a metric the reader picks; every metric's values ride along as
    data attributes so the inline JS recolours without a round trip."""
    configurations = [c["key"] for c in experiment_configurations(experiment)]
    questions = [q.get("id") for q in experiment.get("questions") or []]
    cells = {(c.get("question_id"), c.get("config_key")): c for c in experiment.get("cells") or []}
    metrics = [m for m in METRICS if has_metric(experiment, m.key, per_cell=True)]
    domains = {}
    for spec in metrics:
        values = [v for c in cells.values() if (v := as_number((c.get("metrics") or {}).get(spec.key))) is not None]
        high = spec.high if spec.high is not None else max(values or [1.0])
        low = spec.low if spec.high is not None else min(values or [0.0])
        domains[spec.key] = (low, high if high > low else low + 1)
    selected = primary if primary in domains else (metrics[0].key if metrics else None)
    cell_w, cell_h, left = 64, 18, 70
    longest = max((len(k) for k in configurations), default=4)
    top = min(int(longest * 5.2) + 16, 190)
    grid = []
    for qi, qid in enumerate(questions):
        for ci, key in enumerate(configurations):
            cell = cells.get((qid, key))
            cell_values = {m.key: as_number(((cell or {}).get("metrics") or {}).get(m.key)) for m in metrics}
            value = cell_values.get(selected) if selected else None
            state = "missing" if cell is None else ("failed" if cell.get("status") == "failed" else "ok")
            grid.append(
                {
                    "x": left + ci * cell_w,
                    "y": top + qi * cell_h,
                    "question": qid,
                    "config": key,
                    "state": state,
                    "values": {k: ("" if v is None else fmt_short(v)) for k, v in cell_values.items()},
                    "fill": _fill(value, METRIC_BY_KEY[selected], domains[selected]) if selected else NOT_MEASURED,
                    "tip": _heat_tip(qid, key, state, selected, value),
                }
            )
    return {
        "selected": selected,
        "label": METRIC_BY_KEY[selected].label if selected else None,
        "note": "per question (rows) and configuration (columns), worst to best; outlined: failed or no result",
        "metrics": [
            {
                "key": m.key,
                "label": m.label,
                "low": domains[m.key][0],
                "high": domains[m.key][1],
                "better": "high" if m.higher_is_better else "low",
                "digits": m.digits,
            }
            for m in metrics
        ],
        "configurations": [
            {"key": k, "x": left + i * cell_w + cell_w / 2, "y": top - 6} for i, k in enumerate(configurations)
        ],
        "questions": [{"id": q, "y": top + i * cell_h + cell_h / 2 + 4} for i, q in enumerate(questions)],
        "cells": grid,
        "cell_w": cell_w,
        "cell_h": cell_h,
        "left": left,
        # Column labels slant up to the right, past the last column.
        "width": left + cell_w * len(configurations) + min(int(longest * 5.2), 190),
        "height": top + cell_h * len(questions) + 10,
        "legend": _legend(METRIC_BY_KEY[selected], domains[selected]) if selected else None,
    }


def _heat_tip(question: str | None, key: str, state: str, metric: str | None, value: float | None) -> str:
    if state == "missing":
        return f"{question} · {key}: no result yet"
    if state == "failed":
        return f"{question} · {key}: failed"
    spec = METRIC_BY_KEY.get(metric or "")
    return f"{question} · {key}: {spec.label if spec else metric} {fmt(value, spec.digits if spec else 2)}"


def _legend(spec: MetricSpec, domain: tuple[float, float]) -> dict[str, str]:
    low, high = domain
    worst, best = (low, high) if spec.higher_is_better else (high, low)
    return {"worst": fmt(worst, spec.digits), "best": fmt(best, spec.digits)}


def _fill(value: float | None, spec: MetricSpec, domain: tuple[float, float]) -> str:
    """Heatmap colour: the share of the way from worst to best on ``COLOUR_STOPS``; grey when not measured."""
    if value is None:
        return NOT_MEASURED
    low, high = domain
    t = min(max((value - low) / (high - low), 0.0), 1.0)
    return scale_colour(t if spec.higher_is_better else 1 - t)


def scale_colour(t: float) -> str:
    """``#rrggbb`` at ``t`` ∈ [0, 1] on the report's sequential scale (report.js interpolates alike)."""
    t = min(max(t, 0.0), 1.0)
    segment = min(int(t * (len(COLOUR_STOPS) - 1)), len(COLOUR_STOPS) - 2)
    local = t * (len(COLOUR_STOPS) - 1) - segment
    a, b = COLOUR_STOPS[segment], COLOUR_STOPS[segment + 1]
    return "#" + "".join(f"{round(a[i] + (b[i] - a[i]) * local):02x}" for i in range(3))


def usage(experiment: Mapping[str, Any]) -> dict[str, Any]:
    """Token usage, cost and latency per configuration, with the mean time of each pipeline stage as SVG bars."""
    aggregate = experiment.get("aggregate") or {}
    cells = experiment.get("cells") or []
    rows = []
    for config in experiment_configurations(experiment):
        key = config["key"]
        agg = aggregate.get(key) or {}
        ok = [c for c in cells if c.get("config_key") == key and c.get("status") == "ok"]
        stages = {}
        for stage in LATENCY_STAGES:
            values = [v for c in ok if (v := as_number((c.get("latency_ms") or {}).get(stage))) is not None]
            stages[stage] = fmean(values) if values else None
        tokens = agg.get("tokens") or {}
        rows.append(
            {
                "key": key,
                "prompt": tokens.get("prompt"),
                "completion": tokens.get("completion"),
                "context_mean": as_number(tokens.get("context_mean")),
                "cost": as_number(agg.get("cost_usd")),
                "p50": as_number(agg.get("latency_ms_p50")),
                "p95": as_number(agg.get("latency_ms_p95")),
                "stages": stages,
            }
        )
    label_w, bar_w, row_h = 230, 380, 24
    longest = max((sum(v or 0.0 for v in r["stages"].values()) for r in rows), default=0.0) or 1.0
    bars = []
    for i, row in enumerate(rows):
        x = float(label_w)
        segments = []
        for s, stage in enumerate(LATENCY_STAGES):
            value = row["stages"][stage]
            if not value:
                continue
            width = bar_w * value / longest
            segments.append(
                {
                    "stage": stage,
                    "x": round(x, 1),
                    "w": round(width, 1),
                    "n": s,
                    "tip": f"{row['key']}: {stage} {fmt_ms(value)} (mean)",
                }
            )
            x += width
        bars.append(
            {
                "key": row["key"],
                "y": 6 + i * row_h,
                "segments": segments,
                "total": fmt_ms(sum(v or 0.0 for v in row["stages"].values()) if segments else None),
            }
        )
    return {
        "rows": rows,
        "bars": bars,
        "stages": LATENCY_STAGES,
        "label_w": label_w,
        "width": label_w + bar_w + 80,
        "height": 12 + row_h * len(rows),
        "row_h": row_h,
        "totals": (experiment.get("cost") or {}).get("tokens") or {},
    }


# The curve chart's series colours: one per configuration, cycled (the same hues as the latency stages).
SERIES_COLOURS = ("#60a5fa", "#f59e0b", "#a78bfa", "#34d399", "#f472b6", "#94a3b8", "#fde047", "#fb7185")


def budget_curve(
    series: Mapping[str, list[float | None]], budgets: list[int], *, metric: str, budget: int | None
) -> dict[str, Any]:
    """A line per configuration: ``metric`` (y, its chart domain) against context tokens (x, the ``budgets``),
    with a vertical mark at the compared budget, as SVG geometry."""
    spec = METRIC_BY_KEY.get(metric) or MetricSpec(metric, metric, 2)
    left, top, plot_w, plot_h, legend_w = 48, 10, 420, 200, 250
    right_x = _nice_ceiling(float(max(budgets, default=1)))
    high = spec.high if spec.high is not None else 1.0

    def x(tokens: float) -> float:
        return round(left + plot_w * min(tokens / right_x, 1.0), 1)

    def y(value: float) -> float:
        return round(top + plot_h * (1 - min(max((value - spec.low) / (high - spec.low), 0.0), 1.0)), 1)

    lines = []
    for i, (key, values) in enumerate(series.items()):
        points = [(x(b), y(v), b, v) for b, v in zip(budgets, values, strict=True) if v is not None]
        lines.append(
            {
                "key": key,
                "colour": SERIES_COLOURS[i % len(SERIES_COLOURS)],
                "path": " ".join(f"{px},{py}" for px, py, _, _ in points),
                "points": [
                    {"x": px, "y": py, "tip": f"{key}: {spec.label} {fmt(v, spec.digits)} at {b:,} tokens"}
                    for px, py, b, v in points
                ],
                "legend_y": top + 14 + i * 18,
            }
        )
    dashed = f"; dashed: {fmt_tokens(budget)} tokens" if budget else ""
    return {
        "metric": metric,
        "label": spec.label,
        "note": f"against context tokens per question, each configuration's context cut to the budget{dashed}",
        "left": left,
        "top": top,
        "plot_w": plot_w,
        "plot_h": plot_h,
        "legend_x": left + plot_w + 24,
        "width": left + plot_w + 24 + legend_w,
        "height": max(top + plot_h + 34, top + 18 * len(lines) + 20),
        "x_ticks": [{"x": x(right_x * t), "text": f"{right_x * t:,.0f}"} for t in (0, 0.25, 0.5, 0.75, 1)],
        "y_ticks": [
            {"y": y(spec.low + (high - spec.low) * t), "text": fmt(spec.low + (high - spec.low) * t, 1)}
            for t in (0, 0.5, 1)
        ],
        "budget_x": x(budget) if budget else None,
        "budget": budget,
        "lines": lines,
    }


# The width of a character of an 11px label, to keep a label from crossing the axis.
LABEL_CHAR_W = 6.2
LABEL_LINE_H = 13


def frontier_chart(
    points: Mapping[str, tuple[float | None, float | None]], frontier: list[str], *, metric: str, budget: int | None
) -> dict[str, Any]:
    """Every configuration as a point, its context tokens per question (x) against its ``metric`` (y), the frontier
    (``context_budget.frontier``) as a step line through its labelled points and the Decision's budget as a vertical
    mark, as SVG geometry."""
    spec = METRIC_BY_KEY.get(metric) or MetricSpec(metric, metric, 2)
    # Room above the plot: the label of a point at the metric's ceiling sits over it.
    left, top, plot_w, plot_h, label_room = 48, 24, 520, 220, 190
    placed = {k: (float(t), float(v)) for k, (t, v) in points.items() if t is not None and v is not None}
    right_x = _nice_ceiling(max([t for t, _ in placed.values()] + [float(budget or 0)], default=1.0))
    values = [v for _, v in placed.values()]
    high = spec.high if spec.high is not None else _nice_ceiling(max(values, default=1.0))
    low = spec.low if spec.high is not None else 0.0

    def x(tokens: float) -> float:
        return round(left + plot_w * min(max(tokens / right_x, 0.0), 1.0), 1)

    def y(value: float) -> float:
        return round(top + plot_h * (1 - min(max((value - low) / (high - low), 0.0), 1.0)), 1)

    on = set(frontier)
    labels = _frontier_labels([(k, x(placed[k][0]), y(placed[k][1])) for k in frontier], left=left)
    dots = []
    # Dominated points first, so the frontier's are drawn over them; each group in a fixed order.
    for key in sorted(placed, key=lambda k: (k in on, frontier.index(k) if k in on else 0, k)):
        tokens, value = placed[key]
        dots.append(
            {
                "key": key,
                "x": x(tokens),
                "y": y(value),
                "frontier": key in on,
                "label": labels.get(key),
                "tip": f"{key}: {spec.label} {fmt(value, spec.digits)} at {fmt_tokens(tokens)} context tokens"
                + ("" if key in on else " (dominated: another reaches as much with no more tokens)"),
            }
        )
    # The step line: the best metric reachable within each budget, flat until the next frontier point's tokens.
    steps = [placed[k] for k in frontier]
    path = ""
    if steps:
        path = f"M{x(steps[0][0])},{y(steps[0][1])}"
        for tokens, value in steps[1:]:
            path += f" H{x(tokens)} V{y(value)}"
        path += f" H{left + plot_w}"
    return {
        "metric": metric,
        "label": f"Best for some budget: {spec.label} against context tokens",
        "note": "context tokens per question (x) against the mean at full context (y)"
        + (f"; dashed: the Decision's budget, {fmt_tokens(budget)} tokens" if budget else ""),
        "left": left,
        "top": top,
        "plot_w": plot_w,
        "plot_h": plot_h,
        "width": left + plot_w + label_room,
        "height": top + plot_h + 36,
        "x_ticks": [{"x": x(right_x * t), "text": f"{right_x * t:,.0f}"} for t in (0, 0.25, 0.5, 0.75, 1)],
        "y_ticks": [{"y": y(low + (high - low) * t), "text": fmt(low + (high - low) * t, 1)} for t in (0, 0.5, 1)],
        "budget_x": x(budget) if budget else None,
        "budget": budget,
        "path": path,
        "points": dots,
        "frontier": frontier,
    }


def _frontier_labels(points: list[tuple[str, float, float]], *, left: float) -> dict[str, dict[str, Any]]:
    """Where each frontier point's label goes: above the step line, where no point can be (every dominated point
    lies under it), up and to the left of the rise to its point (to the right for the first, or where the left
    would cross the axis), lifted a line at a time off any label placed before it."""
    placed: list[tuple[float, float, float]] = []
    out: dict[str, dict[str, Any]] = {}
    for i, (key, px, py) in enumerate(points):
        width = LABEL_CHAR_W * len(key)
        left_of = i > 0 and px - 7 - width > left
        x0 = px - 7 - width if left_of else px + 7
        ly = py - 8
        step = -LABEL_LINE_H
        while any(x0 < b1 and b0 < x0 + width and abs(ly - by) < LABEL_LINE_H for b0, b1, by in placed):
            ly += step
            if ly < LABEL_LINE_H and step < 0:  # out of room above the plot: below the point instead
                ly, step = py + 16, LABEL_LINE_H
        placed.append((x0, x0 + width, ly))
        out[key] = {
            "x": round(px + (-7 if left_of else 7), 1),
            "y": round(ly, 1),
            "anchor": "end" if left_of else "start",
        }
    return out
