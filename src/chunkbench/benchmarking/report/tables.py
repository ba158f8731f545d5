"""The report's tables: KPI cards, ranking, ruled-out configurations, cells, judge calls, Expansion Trees."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkbench.benchmarking.report.experiment import experiment_config, experiment_configurations, metric_mean
from chunkbench.benchmarking.report.formatting import (
    as_number,
    fmt,
    fmt_ms,
    fmt_tokens,
    fmt_usd,
    metric_digits,
    metric_name,
)
from chunkbench.benchmarking.report.metric_labels import METRIC_BY_KEY, METRICS
from chunkbench.benchmarking.report.prose import standing

# Questions whose Expansion Trees the technical report shows.
EXPANSION_SAMPLE_QUESTIONS = 3


def kpis(experiment: Mapping[str, Any], *, primary: str, answer_metric: str) -> list[dict[str, str]]:
    """The managerial KPI cards: best primary metric, answer quality, context tokens, latency, cost."""
    aggregate = experiment.get("aggregate") or {}
    decision = experiment.get("decision") or {}
    chosen = decision.get("best") or decision.get("leader")
    keys = [c["key"] for c in experiment_configurations(experiment) if c["key"] in aggregate]
    cards: list[dict[str, str]] = []

    def best_of(metric: str) -> tuple[str | None, float | None]:
        scored = {k: v for k in keys if (v := metric_mean(aggregate, k, metric)) is not None}
        if not scored:
            return None, None
        pick = max if METRIC_BY_KEY.get(metric, METRICS[0]).higher_is_better else min
        key = pick(scored, key=scored.__getitem__)
        return key, scored[key]

    key, value = best_of(primary)
    cards.append(_card(f"Best {metric_name(primary)}", fmt(value, metric_digits(primary)), key))
    focus = chosen or key
    answer = metric_mean(aggregate, focus, answer_metric) if focus else None
    unit = " / 10" if answer_metric.startswith("judge_") and answer is not None else ""
    cards.append(
        _card("Answer quality", fmt(answer, metric_digits(answer_metric)) + unit, _label_for(focus, answer_metric))
    )
    agg = aggregate.get(focus) or {} if focus else {}
    context_mean = as_number((agg.get("tokens") or {}).get("context_mean"))
    low_key, low = min(
        (
            (k, t)
            for k in keys
            if (t := as_number(((aggregate[k].get("tokens")) or {}).get("context_mean"))) is not None
        ),
        key=lambda kt: kt[1],
        default=(None, None),
    )
    cheapest_note = f"lowest: {fmt_tokens(low)} ({low_key})" if low_key and low_key != focus else focus
    cards.append(_card("Context tokens / question", fmt_tokens(context_mean), cheapest_note))
    p50, p95 = as_number(agg.get("latency_ms_p50")), as_number(agg.get("latency_ms_p95"))
    cards.append(_card("Latency p50", fmt_ms(p50), f"p95 {fmt_ms(p95)} · {focus}" if focus else None))
    cost = experiment.get("cost") or {}
    estimated = as_number(cost.get("estimated_usd"))
    cards.append(_card("Cost of this run", fmt_usd(cost.get("actual_usd")), f"estimated {fmt_usd(estimated)}"))
    return cards


def _card(label: str, value: str, note: str | None) -> dict[str, str]:
    return {"label": label, "value": value, "note": note or ""}


def _label_for(key: str | None, metric: str) -> str:
    return f"{metric_name(metric)} · {key}" if key else metric_name(metric)


def ranking(experiment: Mapping[str, Any], *, primary: str, answer_metric: str) -> list[dict[str, Any]]:
    """Configurations ranked by the primary metric's mean, with intervals, P(best), gap to the leader, verdict."""
    aggregate = experiment.get("aggregate") or {}
    decision = experiment.get("decision") or {}
    prob_best = decision.get("prob_best") or {}
    diff = decision.get("diff_to_leader") or {}
    rows = []
    stopped = {p["config_key"] for p in pruned(experiment)}
    for config in experiment_configurations(experiment):
        key = config["key"]
        if key in stopped:  # scored on fewer questions: the Pruned table shows it, not the ranking
            continue
        agg = aggregate.get(key) or {}
        stat = (agg.get("metrics") or {}).get(primary) or {}
        gap = diff.get(key)
        rows.append(
            {
                "key": key,
                "config": config,
                "mean": as_number(stat.get("mean")),
                "ci_low": as_number(stat.get("ci_low")),
                "ci_high": as_number(stat.get("ci_high")),
                "n": stat.get("n"),
                "prob_best": as_number(prob_best.get(key)),
                "diff": [as_number(v) for v in gap] if gap else None,
                "answer": metric_mean(aggregate, key, answer_metric),
                "tokens": as_number((agg.get("tokens") or {}).get("context_mean")),
                "p50": as_number(agg.get("latency_ms_p50")),
                "cost": as_number(agg.get("cost_usd")),
                "failed": agg.get("failed_cells") or 0,
                "verdict": standing(decision, key),
            }
        )
    rows.sort(key=lambda r: (r["mean"] is None, -(r["mean"] or 0.0)))
    return rows


def pruned(experiment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The configurations pruning stopped (configuration, rung, questions, mean, interval), in the order stopped."""
    return list((experiment.get("pruning") or {}).get("pruned") or [])


def ruled_out(experiment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Ruled-out configurations with how far below the leader they are (mean and 95% interval of the gap)."""
    decision = experiment.get("decision") or {}
    diff = decision.get("diff_to_leader") or {}
    rows = []
    for key in decision.get("ruled_out") or []:
        gap = diff.get(key) or [None, None, None]
        mean = as_number(gap[0])
        rows.append(
            {"key": key, "below": -mean if mean is not None else None, "lo": as_number(gap[1]), "hi": as_number(gap[2])}
        )
    return rows


def cell_rows(experiment: Mapping[str, Any], *, answer_metric: str) -> list[dict[str, Any]]:
    """The per-question × configuration table: one row per cell, in question then configuration order."""
    questions = {q.get("id"): q for q in experiment.get("questions") or []}
    order = {q: i for i, q in enumerate(questions)}
    config_order = {c["key"]: i for i, c in enumerate(experiment_configurations(experiment))}
    rows = []
    for cell in experiment.get("cells") or []:
        metrics = cell.get("metrics") or {}
        question = questions.get(cell.get("question_id")) or {}
        rows.append(
            {
                "cell": cell,
                "question": question,
                "values": {m: as_number(metrics.get(m)) for m in ("recall", "precision_omega", "mrr", "tok_at_k")},
                "answer": as_number(metrics.get(answer_metric)),
                "latency": as_number((cell.get("latency_ms") or {}).get("total")),
                "order": (order.get(cell.get("question_id"), 1 << 30), config_order.get(cell.get("config_key"), 0)),
            }
        )
    rows.sort(key=lambda r: r["order"])
    return rows


def judge_details(experiment: Mapping[str, Any]) -> dict[str, Any] | None:
    """Judge calls per configuration (attempts, failures, hallucination rate) and each judged cell's reasoning."""
    cells = [c for c in experiment.get("cells") or [] if c.get("judge")]
    if not cells and not experiment_config(experiment).get("judge"):
        return None
    aggregate = experiment.get("aggregate") or {}
    per_config = []
    for config in experiment_configurations(experiment):
        key = config["key"]
        mine = [c for c in cells if c.get("config_key") == key]
        per_config.append(
            {
                "key": key,
                "judged": len(mine),
                "attempts": sum(int(c["judge"].get("attempts") or 0) for c in mine),
                "failures": (aggregate.get(key) or {}).get(
                    "judge_failures", sum(int(c["judge"].get("failures") or 0) for c in mine)
                ),
                "hallucination_rate": as_number((aggregate.get(key) or {}).get("hallucination_rate")),
            }
        )
    # Cells whose judge failed first: those are the ones to read.
    cells.sort(key=lambda c: not (c["judge"].get("failures") or c["judge"].get("error")))
    return {"per_config": per_config, "cells": cells, "repeats": experiment_config(experiment).get("judge_repeats")}


def expansion_samples(experiment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A few questions with each configuration's Expansion Tree; questions whose trees have neighbours first."""
    by_question: dict[str, list[tuple[str, list[Mapping[str, Any]]]]] = {}
    for cell in experiment.get("cells") or []:
        nodes = _tree_nodes(cell.get("expansion_tree"))
        if nodes:
            by_question.setdefault(cell.get("question_id"), []).append((cell.get("config_key"), nodes))
    questions = {q.get("id"): q for q in experiment.get("questions") or []}
    order = list(questions)

    def has_neighbours(qid: str) -> bool:
        return any(n.get("neighbors_prev") or n.get("neighbors_next") for _, nodes in by_question[qid] for n in nodes)

    picked = sorted(by_question, key=lambda q: (not has_neighbours(q), order.index(q) if q in order else 1 << 30))
    return [
        {"question": questions.get(qid) or {"id": qid, "question": ""}, "trees": by_question[qid]}
        for qid in picked[:EXPANSION_SAMPLE_QUESTIONS]
    ]


def _tree_nodes(tree: Any) -> list[Mapping[str, Any]]:
    """A cell's tree nodes, each with its rank, and every hit listed under another hit with that hit's rank."""
    # The query pipeline stores the tree as its list of hit nodes; accept a {"nodes": [...]} wrapper as well.
    if isinstance(tree, Mapping):
        tree = tree.get("nodes") or tree.get("tree") or []
    nodes = [n for n in tree or [] if isinstance(n, Mapping)]
    # Cells stored before nodes carried ranks: a node's rank is its position, a listed hit's that of its node.
    ranks = {_tree_key(n): n.get("rank") or position for position, n in enumerate(nodes, start=1)}

    def ranked(entry: Mapping[str, Any]) -> dict[str, Any]:
        if entry.get("role") != "hit":
            return dict(entry)
        return {**entry, "rank": entry.get("rank") or ranks.get(_tree_key(entry))}

    return [
        {**ranked(n), "neighbors_prev": [ranked(m) for m in n.get("neighbors_prev") or []],
         "neighbors_next": [ranked(m) for m in n.get("neighbors_next") or []]}
        for n in nodes
    ]  # fmt: skip


def _tree_key(node: Mapping[str, Any]) -> tuple[Any, Any]:
    return (node.get("document_id"), node.get("chunk_index"))


# Groups a breakdown table shows: the worst ones; the report says how many more there are.
BREAKDOWN_ROWS = 20


def breakdown_tables(experiment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The technical report's breakdown tables (per document, per language, per category): worst first, at most
    ``BREAKDOWN_ROWS`` rows each, every configuration's mean and failures per row."""
    split = experiment.get("breakdowns") or {}
    metric = split.get("metric")
    keys = [c["key"] for c in experiment_configurations(experiment)]
    tables = []
    labels = {
        "documents": lambda g: g.get("source_key") or g.get("id"),
        "languages": lambda g: f"{g.get('label')} · {g.get('documents')} documents",
        "categories": lambda g: g.get("category"),
    }
    titles = {"documents": "Per document", "languages": "Per language", "categories": "Per question category"}
    for kind, title in titles.items():
        groups = split.get(kind) or []
        if not groups:
            continue
        rows = [
            {
                "label": labels[kind](g),
                "id": g.get("id") if kind == "documents" else None,
                "questions": g.get("questions"),
                "cells": [
                    {
                        "mean": fmt((g["configurations"].get(k) or {}).get("mean"), metric_digits(metric or "")),
                        "failures": (g["configurations"].get(k) or {}).get("failures", 0),
                    }
                    for k in keys
                ],
            }
            for g in groups[:BREAKDOWN_ROWS]
        ]
        tables.append({"kind": kind, "title": title, "rows": rows, "hidden": max(0, len(groups) - BREAKDOWN_ROWS)})
    return tables
