"""Rendering an Experiment as a managerial or technical HTML report, and exporting it as JSON."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from jinja2 import ChainableUndefined, Environment, PackageLoader

from chunkbench.benchmarking.report.boundaries import boundary_views
from chunkbench.benchmarking.report.budget_section import budget_view, curve_metrics, frontier_view
from chunkbench.benchmarking.report.charts import (
    COLOUR_STOPS,
    FAILED_FILL,
    NOT_MEASURED,
    heatmap,
    metric_bars,
    scale_colour,
    usage,
)
from chunkbench.benchmarking.report.experiment import (
    experiment_config,
    experiment_configurations,
    has_metric,
    metric_mean,
)
from chunkbench.benchmarking.report.formatting import fmt, fmt_ms, fmt_tokens, fmt_usd, fmt_when, metric_name, pct
from chunkbench.benchmarking.report.metric_labels import METRIC_BY_KEY, METRICS
from chunkbench.benchmarking.report.prose import decision_sentence, recommendations, status_banner
from chunkbench.benchmarking.report.tables import (
    breakdown_tables,
    cell_rows,
    expansion_samples,
    judge_details,
    kpis,
    pruned,
    ranking,
    ruled_out,
)
from chunkbench.errors import InvalidRequestError, NotFoundError

# The renderer reads the Experiment dict the runner produces and nothing else: no database, no network. Every
# figure, chart and sentence is computed in this package into plain values; the Jinja2 templates only lay them out.
# The HTML carries its CSS, SVG charts and a little vanilla JS inline, so one file opens from ``file://`` with the
# network off.

ReportView = Literal["managerial", "technical"]
ChartKind = Literal["bars", "curve", "frontier", "heatmap"]
REPORT_VIEWS: tuple[ReportView, ...] = ("managerial", "technical")
# The most questions the technical report's heatmap and per-question table show (``questions_shown``).
REPORT_QUESTION_LIMIT = 150
# A chart served alone: its caption and note take this much room above the chart.
CHART_CAPTION_H = 44
# The heatmap's colour scale and its labels below it.
CHART_LEGEND_W, CHART_LEGEND_H = 470, 26
# The frontier chart served alone carries its sentence below it: this many characters, and pixels, a line.
FRONTIER_WRAP, CHART_LINE_H = 110, 16


def render_report(
    experiment: Mapping[str, Any],
    *,
    view: ReportView,
    document_text: str | None = None,
    boundaries: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    budget: int | None = None,
) -> str:
    """One self-contained HTML page: the managerial or the technical report of an Experiment.

    ``document_text`` (the document's markdown) and ``boundaries`` (``strategy → [(start, end), …]`` character
    offsets into it) feed the technical report's chunk-boundary view; without them that section says so.
    ``budget``: the context tokens of the equal-budget comparison (default: the Decision's).
    """
    if view not in REPORT_VIEWS:
        raise InvalidRequestError(
            f"Unknown report view {view!r}: use one of {', '.join(REPORT_VIEWS)}.", view=view, allowed=REPORT_VIEWS
        )
    context = build_context(experiment, view=view, document_text=document_text, boundaries=boundaries, budget=budget)
    return _environment().get_template(f"{view}.html").render(**context)


def experiment_json(experiment: Mapping[str, Any]) -> str:
    """The Experiment as JSON: keys sorted, indent 2, NaN/inf as null, so two exports of one run are identical."""
    return json.dumps(_jsonable(experiment), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def chart_index(experiment: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every chart of the Experiment the dashboard can show, each ``{name, kind, metric, label}``: the bars of every
    metric with a mean (95% intervals), the curves against context tokens, the frontier of the configurations best
    for some budget (on the primary metric) and the per-question heatmap of every metric measured per cell; the
    primary metric first within each kind."""
    primary = _primary(experiment)

    def first(metrics: list[str]) -> list[str]:
        return sorted(metrics, key=lambda m: m != primary)

    kinds: list[tuple[ChartKind, list[str]]] = [
        ("bars", first([m.key for m in METRICS if has_metric(experiment, m.key)])),
        ("curve", curve_metrics(experiment)),
        ("frontier", [primary] if _frontier_count(experiment, primary) >= 2 else []),
        ("heatmap", first([m.key for m in METRICS if has_metric(experiment, m.key, per_cell=True)])),
    ]
    return [
        {"name": f"{kind}-{metric}", "kind": kind, "metric": metric, "label": METRIC_BY_KEY[metric].label}
        for kind, metrics in kinds
        for metric in metrics
    ]


def _frontier_count(experiment: Mapping[str, Any], metric: str) -> int:
    """How many configurations have both a ``metric`` mean and context tokens: the frontier needs two."""
    aggregate = experiment.get("aggregate") or {}
    return sum(
        1 for key in aggregate if metric_mean(aggregate, key, metric) is not None
        and metric_mean(aggregate, key, "tok_at_k") is not None
    )  # fmt: skip


def render_chart(experiment: Mapping[str, Any], name: str) -> str:
    """One chart of ``chart_index`` as a standalone SVG document: the reports' chart with its caption and style."""
    known = {entry["name"]: entry for entry in chart_index(experiment)}
    entry = known.get(name)
    if entry is None:
        listed = ", ".join(known) or "none yet (the Experiment has no results)"
        raise NotFoundError(
            f"Experiment {experiment.get('id')} has no chart {name!r}; its charts: {listed} "
            f"(GET /benchmarks/{experiment.get('id')}/charts lists them).",
            chart=name, charts=list(known),
        )  # fmt: skip
    kind, metric = entry["kind"], entry["metric"]
    decision = experiment.get("decision") or {}
    if kind == "bars":
        chart = metric_bars(experiment, metric)
    elif kind == "curve":
        view = budget_view(experiment) or {}
        chart = next(c for c in view.get("curves") or [] if c["metric"] == metric)
    elif kind == "frontier":
        frontier = frontier_view(experiment)
        if frontier is None:
            raise NotFoundError(
                f"Experiment {experiment.get('id')} has no frontier yet: it needs two configurations with both "
                f"context tokens and {metric_name(metric)}; run the benchmark to the end first.",
                chart=name, charts=list(known),
            )  # fmt: skip
        chart = {**frontier["chart"], "sentence_lines": textwrap.wrap(frontier["sentence"], FRONTIER_WRAP)}
    else:
        chart = heatmap(questions_shown(experiment, primary=metric), primary=metric)
    legend_h = CHART_LEGEND_H if kind == "heatmap" else 0
    # The frontier's sentence is drawn under the chart, one line per FRONTIER_WRAP characters.
    legend_h += CHART_LINE_H * len(chart.get("sentence_lines") or []) + (6 if kind == "frontier" else 0)
    width = max(chart["width"], 12 + 7 * max(len(chart["label"]), len(chart["note"])))
    return _environment().get_template("chart.svg").render(
        name=name, kind=kind, chart=chart, chosen=decision.get("best") or decision.get("leader"),
        top=CHART_CAPTION_H, width=max(width, CHART_LEGEND_W) if legend_h else width,
        height=CHART_CAPTION_H + chart["height"] + legend_h,
    )  # fmt: skip


def _primary(experiment: Mapping[str, Any]) -> str:
    decision = experiment.get("decision") or {}
    return decision.get("metric") or experiment_config(experiment).get("primary_metric") or "recall"


def build_context(
    experiment: Mapping[str, Any],
    *,
    view: ReportView,
    document_text: str | None = None,
    boundaries: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    budget: int | None = None,
) -> dict[str, Any]:
    """Everything the templates show, computed: sentences, tables and chart geometry."""
    config = experiment_config(experiment)
    decision = experiment.get("decision") or {}
    primary = _primary(experiment)
    judged = bool(config.get("judge")) or any(c.get("judge") for c in experiment.get("cells") or [])
    answer_metric = "judge_answer_similarity" if judged else "answer_similarity"
    chart_metrics = [m for m in dict.fromkeys([primary, answer_metric, "tok_at_k"]) if has_metric(experiment, m)]
    context: dict[str, Any] = {
        "view": view,
        "exp": experiment,
        "config": config,
        "document": _searched(experiment),
        "provenance": experiment.get("provenance") or {},
        "cost": experiment.get("cost") or {},
        "decision": decision,
        "primary": primary,
        "answer_metric": answer_metric,
        "banner": status_banner(experiment),
        "sentence": decision_sentence(experiment),
        "reasons": list(decision.get("reasons") or []),
        "kpis": kpis(experiment, primary=primary, answer_metric=answer_metric),
        "ranking": ranking(experiment, primary=primary, answer_metric=answer_metric),
        "budget_view": budget_view(experiment, budget=budget),
        "frontier": frontier_view(experiment),
        "charts": [metric_bars(experiment, m) for m in chart_metrics],
        "ruled_out": ruled_out(experiment),
        "pruned": pruned(experiment),
        "pruning_rule": (experiment.get("pruning") or {}).get("rule"),
        "recommendations": recommendations(experiment),
        "configurations": experiment_configurations(experiment),
        "n_questions": len(experiment.get("questions") or []),
    }
    if view == "technical":
        metrics_present = [m for m in METRICS if has_metric(experiment, m.key)]
        per_question = questions_shown(experiment, primary=primary, limit=REPORT_QUESTION_LIMIT)
        context.update(
            all_charts=[metric_bars(experiment, m.key) for m in metrics_present],
            cell_rows=cell_rows(per_question, answer_metric=answer_metric),
            heatmap=heatmap(per_question, primary=primary),
            questions_hidden=len(experiment.get("questions") or []) - len(per_question.get("questions") or []),
            usage=usage(experiment),
            judge=judge_details(experiment),
            expansion_samples=expansion_samples(experiment),
            breakdowns=breakdown_tables(experiment),
            boundary_views=boundary_views(document_text, boundaries),
            document_text_given=document_text is not None,
            failed_cells=[c for c in experiment.get("cells") or [] if c.get("status") == "failed"],
            question_by_id={q.get("id"): q for q in experiment.get("questions") or []},
        )
    return context


def questions_shown(
    experiment: Mapping[str, Any], *, primary: str, limit: int = REPORT_QUESTION_LIMIT
) -> Mapping[str, Any]:
    """The Experiment as the per-question views show it: every question up to ``limit``; beyond that the
    ``limit`` questions on which the configurations differ most on ``primary`` (failed cells count as the widest
    difference), in question order. A corpus benchmark of 1,852 questions × 15 configurations drew 28,000 heatmap
    cells and table rows (a 37 MB page no browser opens quickly); the JSON export keeps every cell."""
    questions = list(experiment.get("questions") or [])
    if len(questions) <= limit:
        return experiment
    values: dict[str, list[float | None]] = {}
    for cell in experiment.get("cells") or []:
        value = (cell.get("metrics") or {}).get(primary) if cell.get("status") == "ok" else None
        values.setdefault(str(cell.get("question_id")), []).append(
            float(value) if isinstance(value, int | float) else None
        )

    def spread(question_id: str) -> float:
        scores = values.get(question_id) or []
        present = [score for score in scores if score is not None]
        if len(present) < len(scores):  # a configuration without a score
            return math.inf
        return max(present) - min(present) if present else 0.0

    ranked = sorted((str(q.get("id")) for q in questions), key=lambda qid: -spread(qid))
    kept = set(ranked[:limit])
    return {
        **experiment,
        "questions": [q for q in questions if str(q.get("id")) in kept],
        "cells": [c for c in experiment.get("cells") or [] if str(c.get("question_id")) in kept],
    }


def _searched(experiment: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the header and provenance name: the document, or for a corpus Experiment its corpus."""
    corpus = experiment.get("corpus")
    if not corpus:
        return experiment.get("document") or {}
    count = len(corpus.get("documents") or [])
    return {"id": corpus.get("id"), "filename": f"corpus {corpus.get('name') or '(deleted)'} ({count} documents)"}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars from the statistics
        return _jsonable(value.item())
    raise TypeError(f"experiment_json cannot export a {type(value).__name__}")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("chunkbench.benchmarking", "templates"),
        autoescape=True,
        # A running or failed Experiment lacks parts: a missing field renders empty instead of failing the page.
        undefined=ChainableUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        fmt=fmt, pct=pct, ms=fmt_ms, tokens=fmt_tokens, usd=fmt_usd, when=fmt_when, metric_name=metric_name
    )
    # report.js recolours the heatmap in the browser from these values: the scale is defined once, in charts.py.
    env.globals.update(
        colour_stops=COLOUR_STOPS, not_measured=NOT_MEASURED, failed_fill=FAILED_FILL,
        ramp=[scale_colour(i / 29) for i in range(30)],
    )  # fmt: skip
    return env
