"""Self-contained HTML reports of a benchmark Experiment (seed 000 §10.4): a managerial and a technical view.

The renderer reads the Experiment dict the runner produces and nothing else: no database, no network. Every
figure, chart and sentence is computed here into plain values; the Jinja2 templates only lay them out. The HTML
carries its CSS, SVG charts and a little vanilla JS inline, so one file opens from ``file://`` with the network off.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import Enum
from functools import lru_cache
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from jinja2 import ChainableUndefined, Environment, PackageLoader, Undefined

from chunkbench.errors import InvalidRequestError

ReportView = Literal["managerial", "technical"]
REPORT_VIEWS: tuple[ReportView, ...] = ("managerial", "technical")

# The chunk-boundary view shows at most this many characters of the document per strategy: five strategies of a
# long document would otherwise make a report of megabytes that a browser lays out slowly.
BOUNDARY_VIEW_MAX_CHARS = 20_000
# Questions whose Expansion Trees the technical report shows.
EXPANSION_SAMPLE_QUESTIONS = 3
# Latency stages of a cell, in pipeline order.
LATENCY_STAGES = ("embed", "search", "expand", "rerank", "generate", "judge")
# The heatmap's colour scale, worst → best; report.js holds the same stops.
COLOUR_STOPS = ((0x1E, 0x1B, 0x4B), (0xB4, 0x53, 0x09), (0xFD, 0xE0, 0x47))
DASH = "—"


@dataclass(frozen=True)
class MetricSpec:
    """How a metric is labelled, formatted and charted."""

    key: str
    label: str
    digits: int
    # Chart domain; ``high=None`` means from the data (token counts).
    low: float = 0.0
    high: float | None = 1.0
    higher_is_better: bool = True


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("recall", "Recall", 2),
    MetricSpec("precision", "Precision", 3),
    MetricSpec("precision_omega", "Precision Ω", 2),
    MetricSpec("iou", "IoU", 3),
    MetricSpec("recall_at_k", "Recall@k", 2),
    MetricSpec("hit_at_k", "Hit@k", 2),
    MetricSpec("mrr", "MRR", 2),
    MetricSpec("ndcg_at_k", "nDCG@k", 2),
    MetricSpec("tok_at_k", "Context tokens", 0, high=None, higher_is_better=False),
    MetricSpec("exact_match", "Exact match", 2),
    MetricSpec("token_f1", "Token F1", 2),
    MetricSpec("answer_similarity", "Answer similarity", 2),
    # The judge scores 1–10; charts start at 0 so bars stay comparable.
    MetricSpec("judge_context_relevance", "Judge: context relevance", 1, high=10.0),
    MetricSpec("judge_answer_similarity", "Judge: answer similarity", 1, high=10.0),
    MetricSpec("judge_faithfulness", "Judge: faithfulness", 1, high=10.0),
    MetricSpec("judge_hallucination", "Judge: hallucination", 2, higher_is_better=False),
)
METRIC_BY_KEY = {m.key: m for m in METRICS}


def render_report(
    experiment: Mapping[str, Any],
    *,
    view: ReportView,
    document_text: str | None = None,
    boundaries: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> str:
    """One self-contained HTML page: the managerial or the technical report of an Experiment.

    ``document_text`` (the document's markdown) and ``boundaries`` (``strategy → [(start, end), …]`` character
    offsets into it) feed the technical report's chunk-boundary view; without them that section says so.
    """
    if view not in REPORT_VIEWS:
        raise InvalidRequestError(
            f"Unknown report view {view!r}: use one of {', '.join(REPORT_VIEWS)}.", view=view, allowed=REPORT_VIEWS
        )
    context = build_context(experiment, view=view, document_text=document_text, boundaries=boundaries)
    return _environment().get_template(f"{view}.html").render(**context)


def experiment_json(experiment: Mapping[str, Any]) -> str:
    """The Experiment as JSON: keys sorted, indent 2, NaN/inf as null, so two exports of one run are identical."""
    return json.dumps(_jsonable(experiment), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Sentences


def decision_sentence(experiment: Mapping[str, Any]) -> str:
    """The decision in one sentence: the winner and its probability of being best, a tie broken by cost, or why
    there is no winner and how many questions would settle it."""
    decision = experiment.get("decision") or {}
    status = decision.get("status")
    if not status:
        if experiment.get("status") == "running":
            return "No decision yet: the experiment is still running."
        ended = {"failed": "failed", "cancelled": "was cancelled"}.get(experiment.get("status") or "")
        return f"No decision: the experiment {ended} before one was made." if ended else "No decision has been made."
    metric = _metric_name(decision.get("metric") or _config(experiment).get("primary_metric") or "recall")
    n = decision.get("n_questions")
    questions = f"{n} questions" if n is not None else "the questions answered"
    best, leader = decision.get("best"), decision.get("leader")
    prob_best = decision.get("prob_best") or {}
    means = decision.get("means") or {}

    if status == "winner" and best:
        return (
            f"{best} is the best configuration on {metric}: mean {fmt(means.get(best))}, "
            f"with a {pct(prob_best.get(best))} probability of being best over {questions}."
        )
    if status == "tie_broken_by_cost" and best:
        contenders = [c for c in decision.get("contenders") or [] if c != best]
        others = f" as good as {_join(contenders)}" if contenders else " tied with the other contenders"
        return (
            f"No configuration is clearly best on {metric}; {best} is{others} within the uncertainty of "
            f"{questions}, and the tie is broken by cost: it has the lowest {decision.get('tie_break') or 'cost'}."
        )
    settle = _settle_clause(decision)
    if status == "no_clear_winner":
        rivals = [c for c in decision.get("contenders") or [] if c != leader]
        lead = f"{leader} leads ({pct(prob_best.get(leader))} probability of being best)" if leader else "nothing leads"
        rest = f", but {_join(rivals)} cannot be ruled out" if rivals else ""
        return f"No clear winner on {metric}: {lead}{rest} with {questions}; {settle}"
    # insufficient_data, or a status this renderer does not know: say what is known, never invent a winner.
    return f"Not enough data to name a winner on {metric} ({questions} with results for every configuration); {settle}"


def _settle_clause(decision: Mapping[str, Any]) -> str:
    needed, n = decision.get("questions_needed"), decision.get("n_questions")
    if needed is None:
        return "more questions are needed, and the data cannot yet say how many."
    # questions_needed is how many questions beyond this run's the Decision estimates it would take.
    total = f" ({needed + n} in all)" if isinstance(n, int) else ""
    return f"about {needed} more questions{total} would settle it."


def recommendations(experiment: Mapping[str, Any]) -> list[str]:
    """Concrete next steps derived from the data: what to use, what to drop, what is worth testing next."""
    decision = experiment.get("decision") or {}
    aggregate = experiment.get("aggregate") or {}
    configurations = _configurations(experiment)
    metric_key = decision.get("metric") or _config(experiment).get("primary_metric") or "recall"
    metric = _metric_name(metric_key)
    status, best = decision.get("status"), decision.get("best")
    contenders = list(decision.get("contenders") or [])
    out: list[str] = []

    def tokens(key: str) -> float | None:
        return _num(((aggregate.get(key) or {}).get("tokens") or {}).get("context_mean"))

    cheapest = _cheapest(contenders or ([best] if best else []), tokens)
    if status == "winner" and best:
        out.append(
            f"Use {best}: it leads on {metric} with a {pct((decision.get('prob_best') or {}).get(best))} "
            f"probability of being best."
        )
    elif status == "tie_broken_by_cost" and best:
        dearest = max(contenders, key=lambda k: tokens(k) or 0.0, default=None)
        if dearest and dearest != best and tokens(dearest) is not None:
            out.append(
                f"Use {best}: it answers as well as the other contenders on {metric} with "
                f"{fmt_tokens(tokens(best))} context tokens per question, against {fmt_tokens(tokens(dearest))} "
                f"for {dearest}."
            )
        else:
            out.append(f"Use {best}: it answers as well as the other contenders on {metric} at the lowest cost.")
    elif status in ("no_clear_winner", "insufficient_data"):
        needed, n = decision.get("questions_needed"), decision.get("n_questions")
        more = f"about {needed + n} questions in all" if needed is not None and isinstance(n, int) else "more questions"
        failed_cells = sum(int(a.get("failed_cells") or 0) for a in aggregate.values())
        if status == "insufficient_data" and failed_cells:
            out.append(
                "Do not pick on these figures: fix the failed cells below and rerun, so every configuration "
                "answers every question."
            )
        else:
            out.append(f"Do not pick on these figures: rerun with {more} to separate {_join(contenders) or 'them'}.")
        if cheapest and len(contenders) > 1:
            out.append(
                f"If a choice is needed now, {cheapest} is the cheapest contender "
                f"({fmt_tokens(tokens(cheapest))} context tokens per question)."
            )
    ruled_out = list(decision.get("ruled_out") or [])
    if ruled_out:
        out.append(f"Drop {_join(ruled_out)}: below the leader on {metric} with 95% confidence.")

    out.extend(_neighbour_advice(configurations, aggregate))
    focus = best or decision.get("leader")
    out.extend(_rerank_advice(configurations, aggregate, focus))

    failed = {k: int(a.get("failed_cells") or 0) for k, a in aggregate.items() if a.get("failed_cells")}
    if failed:
        out.append(
            f"{sum(failed.values())} question × configuration cells failed ({_counts(failed)}); their errors are "
            f"listed in the technical report. Fix the cause and rerun: failed cells count as missing data."
        )
    judge_failed = {k: int(a.get("judge_failures") or 0) for k, a in aggregate.items() if a.get("judge_failures")}
    if judge_failed:
        out.append(
            f"{sum(judge_failed.values())} judge calls failed ({_counts(judge_failed)}): read the judge section of "
            f"the technical report before trusting the judge scores."
        )
    for key, agg in aggregate.items():
        rate = _num(agg.get("hallucination_rate"))
        if rate is not None and rate >= 0.1:
            out.append(
                f"{key} hallucinated in {pct(rate)} of judged answers: check its answers before using it with an LLM."
            )
    dropped = decision.get("dropped_questions") or 0
    if dropped:
        out.append(
            f"{dropped} questions were left out of the decision because some configuration has no result for them."
        )
    config = _config(experiment)
    if config.get("answer_mode") == "extractive" and not config.get("judge"):
        out.append(
            "Answers were extractive and not judged: configure an LLM (CHUNKBENCH_LLM_BASE_URL, "
            "CHUNKBENCH_LLM_MODEL) and run with the judge to compare answer quality, not only retrieval."
        )
    return out


def _neighbour_advice(configurations: list[dict[str, Any]], aggregate: Mapping[str, Any]) -> list[str]:
    fixed = [c for c in configurations if c.get("strategy") == "fixed_size"]
    if not fixed or any((c.get("neighbor_prev") or 0) + (c.get("neighbor_next") or 0) for c in fixed):
        return []
    recalls = {c["key"]: _metric_mean(aggregate, c["key"], "recall") for c in fixed}
    scored = {k: v for k, v in recalls.items() if v is not None}
    if not scored:
        return []
    key = max(scored, key=scored.__getitem__)
    if scored[key] >= 0.9:
        return []
    return [
        f"Neighbor Expansion was not tested: {key} reaches a recall of {fmt(scored[key])}; a run with "
        f"--prev 1 --next 1 adds the chunks around each hit and may recover evidence cut at chunk edges."
    ]


def _rerank_advice(configurations: list[dict[str, Any]], aggregate: Mapping[str, Any], focus: str | None) -> list[str]:
    if not focus or any((c.get("rerank") or "none") != "none" for c in configurations):
        return []
    hit, mrr = _metric_mean(aggregate, focus, "hit_at_k"), _metric_mean(aggregate, focus, "mrr")
    if hit is None or mrr is None:
        return []
    if hit - mrr >= 0.15:
        return [
            f"Reranking was not tested: with {focus} the evidence is in the top k for {pct(hit)} of questions but "
            f"the MRR is {fmt(mrr)}, so it is often not first; a run with --rerank cross_encoder may move it up."
        ]
    if hit < 0.7:
        return [
            f"With {focus} the evidence is missing from the top k for {pct(1 - hit)} of questions: reranking cannot "
            f"bring it back; a larger top_k or a hybrid retriever is the next thing to test."
        ]
    return []


# ---------------------------------------------------------------------------------------------------------------
# Context for the templates


def build_context(
    experiment: Mapping[str, Any],
    *,
    view: ReportView,
    document_text: str | None = None,
    boundaries: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> dict[str, Any]:
    """Everything the templates show, computed: sentences, tables and chart geometry."""
    config = _config(experiment)
    decision = experiment.get("decision") or {}
    primary = decision.get("metric") or config.get("primary_metric") or "recall"
    judged = bool(config.get("judge")) or any(c.get("judge") for c in experiment.get("cells") or [])
    answer_metric = "judge_answer_similarity" if judged else "answer_similarity"
    chart_metrics = [m for m in dict.fromkeys([primary, answer_metric, "tok_at_k"]) if _has_metric(experiment, m)]
    context: dict[str, Any] = {
        "view": view,
        "exp": experiment,
        "config": config,
        "document": experiment.get("document") or {},
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
        "charts": [metric_bars(experiment, m) for m in chart_metrics],
        "ruled_out": ruled_out(experiment),
        "recommendations": recommendations(experiment),
        "configurations": _configurations(experiment),
        "n_questions": len(experiment.get("questions") or []),
    }
    if view == "technical":
        metrics_present = [m for m in METRICS if _has_metric(experiment, m.key)]
        context.update(
            all_charts=[metric_bars(experiment, m.key) for m in metrics_present],
            cell_rows=cell_rows(experiment, answer_metric=answer_metric),
            heatmap=heatmap(experiment, primary=primary),
            usage=usage(experiment),
            judge=judge_details(experiment),
            expansion_samples=expansion_samples(experiment),
            boundary_views=boundary_views(document_text, boundaries),
            document_text_given=document_text is not None,
            failed_cells=[c for c in experiment.get("cells") or [] if c.get("status") == "failed"],
            question_by_id={q.get("id"): q for q in experiment.get("questions") or []},
        )
    return context


def status_banner(experiment: Mapping[str, Any]) -> dict[str, str] | None:
    """A banner for an Experiment that is not completed: what state it is in and how much of it exists."""
    status = experiment.get("status") or "unknown"
    if status == "completed":
        return None
    cells = experiment.get("cells") or []
    expected = len(experiment.get("questions") or []) * len(_configurations(experiment))
    done = sum(1 for c in cells if c.get("status") == "ok")
    progress = f"{done} of {expected} question × configuration cells have results" if expected else "nothing has run"
    partial = "; the figures cover those only." if expected else "."
    error = experiment.get("error")
    texts = {
        "running": f"This experiment is still running: {progress}. The figures are partial and may change.",
        "failed": f"This experiment failed{': ' + str(error) if error else ''}. {progress.capitalize()}{partial}",
        "cancelled": f"This experiment was cancelled. {progress.capitalize()}{partial}",
    }
    return {
        "status": status,
        "text": texts.get(status, f"This experiment is {status}. {progress.capitalize()}."),
    }


def kpis(experiment: Mapping[str, Any], *, primary: str, answer_metric: str) -> list[dict[str, str]]:
    """The managerial KPI cards: best primary metric, answer quality, context tokens, latency, cost."""
    aggregate = experiment.get("aggregate") or {}
    decision = experiment.get("decision") or {}
    chosen = decision.get("best") or decision.get("leader")
    keys = [c["key"] for c in _configurations(experiment) if c["key"] in aggregate]
    cards: list[dict[str, str]] = []

    def best_of(metric: str) -> tuple[str | None, float | None]:
        scored = {k: v for k in keys if (v := _metric_mean(aggregate, k, metric)) is not None}
        if not scored:
            return None, None
        pick = max if METRIC_BY_KEY.get(metric, METRICS[0]).higher_is_better else min
        key = pick(scored, key=scored.__getitem__)
        return key, scored[key]

    key, value = best_of(primary)
    cards.append(_card(f"Best {_metric_name(primary)}", fmt(value, _digits(primary)), key))
    focus = chosen or key
    answer = _metric_mean(aggregate, focus, answer_metric) if focus else None
    unit = " / 10" if answer_metric.startswith("judge_") and answer is not None else ""
    cards.append(_card("Answer quality", fmt(answer, _digits(answer_metric)) + unit, _label_for(focus, answer_metric)))
    agg = aggregate.get(focus) or {} if focus else {}
    context_mean = _num((agg.get("tokens") or {}).get("context_mean"))
    low_key, low = min(
        ((k, t) for k in keys if (t := _num(((aggregate[k].get("tokens")) or {}).get("context_mean"))) is not None),
        key=lambda kt: kt[1],
        default=(None, None),
    )
    cheapest_note = f"lowest: {fmt_tokens(low)} ({low_key})" if low_key and low_key != focus else focus
    cards.append(_card("Context tokens / question", fmt_tokens(context_mean), cheapest_note))
    p50, p95 = _num(agg.get("latency_ms_p50")), _num(agg.get("latency_ms_p95"))
    cards.append(_card("Latency p50", fmt_ms(p50), f"p95 {fmt_ms(p95)} · {focus}" if focus else None))
    cost = experiment.get("cost") or {}
    estimated = _num(cost.get("estimated_usd"))
    cards.append(_card("Cost of this run", fmt_usd(cost.get("actual_usd")), f"estimated {fmt_usd(estimated)}"))
    return cards


def _card(label: str, value: str, note: str | None) -> dict[str, str]:
    return {"label": label, "value": value, "note": note or ""}


def _label_for(key: str | None, metric: str) -> str:
    return f"{_metric_name(metric)} · {key}" if key else _metric_name(metric)


def ranking(experiment: Mapping[str, Any], *, primary: str, answer_metric: str) -> list[dict[str, Any]]:
    """Configurations ranked by the primary metric's mean, with intervals, P(best), gap to the leader, verdict."""
    aggregate = experiment.get("aggregate") or {}
    decision = experiment.get("decision") or {}
    prob_best = decision.get("prob_best") or {}
    diff = decision.get("diff_to_leader") or {}
    rows = []
    for config in _configurations(experiment):
        key = config["key"]
        agg = aggregate.get(key) or {}
        stat = (agg.get("metrics") or {}).get(primary) or {}
        gap = diff.get(key)
        rows.append(
            {
                "key": key,
                "config": config,
                "mean": _num(stat.get("mean")),
                "ci_low": _num(stat.get("ci_low")),
                "ci_high": _num(stat.get("ci_high")),
                "n": stat.get("n"),
                "prob_best": _num(prob_best.get(key)),
                "diff": [_num(v) for v in gap] if gap else None,
                "answer": _metric_mean(aggregate, key, answer_metric),
                "tokens": _num((agg.get("tokens") or {}).get("context_mean")),
                "p50": _num(agg.get("latency_ms_p50")),
                "cost": _num(agg.get("cost_usd")),
                "failed": agg.get("failed_cells") or 0,
                "verdict": _verdict(decision, key),
            }
        )
    rows.sort(key=lambda r: (r["mean"] is None, -(r["mean"] or 0.0)))
    return rows


def _verdict(decision: Mapping[str, Any], key: str) -> str:
    status = decision.get("status")
    if key == decision.get("best") and status == "winner":
        return "winner"
    if key == decision.get("best") and status == "tie_broken_by_cost":
        return "chosen: cheapest of the tie"
    if key in (decision.get("ruled_out") or []):
        return "ruled out"
    if key == decision.get("leader"):
        return "leader"
    if key in (decision.get("contenders") or []):
        return "contender"
    return ""


def ruled_out(experiment: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Ruled-out configurations with how far below the leader they are (mean and 95% interval of the gap)."""
    decision = experiment.get("decision") or {}
    diff = decision.get("diff_to_leader") or {}
    rows = []
    for key in decision.get("ruled_out") or []:
        gap = diff.get(key) or [None, None, None]
        mean = _num(gap[0])
        rows.append({"key": key, "below": -mean if mean is not None else None, "lo": _num(gap[1]), "hi": _num(gap[2])})
    return rows


def metric_bars(experiment: Mapping[str, Any], metric: str) -> dict[str, Any]:
    """A horizontal bar per configuration (the mean) with a whisker for its 95% interval, as SVG geometry."""
    spec = METRIC_BY_KEY.get(metric) or MetricSpec(metric, metric, 2)
    aggregate = experiment.get("aggregate") or {}
    label_w, bar_w, row_h, pad = 230, 360, 26, 8
    stats = []
    for config in _configurations(experiment):
        stat = ((aggregate.get(config["key"]) or {}).get("metrics") or {}).get(metric) or {}
        stats.append((config["key"], _num(stat.get("mean")), _num(stat.get("ci_low")), _num(stat.get("ci_high"))))
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


def cell_rows(experiment: Mapping[str, Any], *, answer_metric: str) -> list[dict[str, Any]]:
    """The per-question × configuration table: one row per cell, in question then configuration order."""
    questions = {q.get("id"): q for q in experiment.get("questions") or []}
    order = {q: i for i, q in enumerate(questions)}
    config_order = {c["key"]: i for i, c in enumerate(_configurations(experiment))}
    rows = []
    for cell in experiment.get("cells") or []:
        metrics = cell.get("metrics") or {}
        question = questions.get(cell.get("question_id")) or {}
        rows.append(
            {
                "cell": cell,
                "question": question,
                "values": {m: _num(metrics.get(m)) for m in ("recall", "precision_omega", "mrr", "tok_at_k")},
                "answer": _num(metrics.get(answer_metric)),
                "latency": _num((cell.get("latency_ms") or {}).get("total")),
                "order": (order.get(cell.get("question_id"), 1 << 30), config_order.get(cell.get("config_key"), 0)),
            }
        )
    rows.sort(key=lambda r: r["order"])
    return rows


def heatmap(experiment: Mapping[str, Any], *, primary: str) -> dict[str, Any]:
    """Questions × configurations, coloured by a metric the reader picks; every metric's values ride along as
    data attributes so the inline JS recolours without a round trip."""
    configurations = [c["key"] for c in _configurations(experiment)]
    questions = [q.get("id") for q in experiment.get("questions") or []]
    cells = {(c.get("question_id"), c.get("config_key")): c for c in experiment.get("cells") or []}
    metrics = [m for m in METRICS if _has_metric(experiment, m.key, per_cell=True)]
    domains = {}
    for spec in metrics:
        values = [v for c in cells.values() if (v := _num((c.get("metrics") or {}).get(spec.key))) is not None]
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
            values = {m.key: _num(((cell or {}).get("metrics") or {}).get(m.key)) for m in metrics}
            value = values.get(selected) if selected else None
            state = "missing" if cell is None else ("failed" if cell.get("status") == "failed" else "ok")
            grid.append(
                {
                    "x": left + ci * cell_w,
                    "y": top + qi * cell_h,
                    "question": qid,
                    "config": key,
                    "state": state,
                    "values": {k: ("" if v is None else _short(v)) for k, v in values.items()},
                    "fill": _fill(value, METRIC_BY_KEY[selected], domains[selected]) if selected else "#2a2a30",
                    "tip": _heat_tip(qid, key, state, selected, value),
                }
            )
    return {
        "selected": selected,
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
        return "#2a2a30"
    low, high = domain
    t = min(max((value - low) / (high - low), 0.0), 1.0)
    return scale_colour(t if spec.higher_is_better else 1 - t)


def scale_colour(t: float) -> str:
    """``#rrggbb`` at ``t`` ∈ [0, 1] on the report's sequential scale (report.js computes the same)."""
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
    for config in _configurations(experiment):
        key = config["key"]
        agg = aggregate.get(key) or {}
        ok = [c for c in cells if c.get("config_key") == key and c.get("status") == "ok"]
        stages = {}
        for stage in LATENCY_STAGES:
            values = [v for c in ok if (v := _num((c.get("latency_ms") or {}).get(stage))) is not None]
            stages[stage] = fmean(values) if values else None
        tokens = agg.get("tokens") or {}
        rows.append(
            {
                "key": key,
                "prompt": tokens.get("prompt"),
                "completion": tokens.get("completion"),
                "context_mean": _num(tokens.get("context_mean")),
                "cost": _num(agg.get("cost_usd")),
                "p50": _num(agg.get("latency_ms_p50")),
                "p95": _num(agg.get("latency_ms_p95")),
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


def judge_details(experiment: Mapping[str, Any]) -> dict[str, Any] | None:
    """Judge calls per configuration (attempts, failures, hallucination rate) and each judged cell's reasoning."""
    cells = [c for c in experiment.get("cells") or [] if c.get("judge")]
    if not cells and not _config(experiment).get("judge"):
        return None
    aggregate = experiment.get("aggregate") or {}
    per_config = []
    for config in _configurations(experiment):
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
                "hallucination_rate": _num((aggregate.get(key) or {}).get("hallucination_rate")),
            }
        )
    # Cells whose judge failed first: those are the ones to read.
    cells.sort(key=lambda c: not (c["judge"].get("failures") or c["judge"].get("error")))
    return {"per_config": per_config, "cells": cells, "repeats": _config(experiment).get("judge_repeats")}


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
    # The query pipeline stores the tree as its list of hit nodes; accept a {"nodes": [...]} wrapper as well.
    if isinstance(tree, Mapping):
        tree = tree.get("nodes") or tree.get("tree") or []
    return [n for n in tree or [] if isinstance(n, Mapping)]


# ---------------------------------------------------------------------------------------------------------------
# Chunk-boundary view


def boundary_views(
    document_text: str | None,
    boundaries: Mapping[str, Sequence[tuple[int, int]]] | None,
    *,
    max_chars: int = BOUNDARY_VIEW_MAX_CHARS,
) -> list[dict[str, Any]]:
    """Per strategy: the document cut into pieces (text covered by which chunks, start and end markers)."""
    if document_text is None or not boundaries:
        return []
    return [
        boundary_view(document_text, spans, strategy=name, max_chars=max_chars) for name, spans in boundaries.items()
    ]


def boundary_view(
    text: str, spans: Sequence[tuple[int, int]], *, strategy: str, max_chars: int = BOUNDARY_VIEW_MAX_CHARS
) -> dict[str, Any]:
    """The document with one strategy's chunks: alternating backgrounds, overlaps marked, a marker at every start
    and end offset. A long document is cut at a chunk end near ``max_chars``, and the view says so."""
    chunks = sorted((max(int(s), 0), min(int(e), len(text))) for s, e in spans)
    chunks = [(s, e) for s, e in chunks if e > s]
    cut = len(text)
    if len(text) > max_chars:
        ends = [e for _, e in chunks if max_chars // 2 <= e <= max_chars]
        cut = max(ends) if ends else _soft_cut(text, max_chars)
    shown = [(i, s, e) for i, (s, e) in enumerate(chunks) if s < cut]
    points = sorted({0, cut, *(s for _, s, _ in shown), *(e for _, _, e in shown if e <= cut)})
    starts: dict[int, list[int]] = {}
    ends_at: dict[int, list[int]] = {}
    for i, s, e in shown:
        starts.setdefault(s, []).append(i)
        if e <= cut:
            ends_at.setdefault(e, []).append(i)
    # Sweep the points once: a chunk covers the segment [a, b) when it started at or before a and ends after a.
    ordered = sorted(shown, key=lambda c: c[1])
    first_starts = [s for _, s, _ in ordered]
    pieces: list[dict[str, Any]] = []
    for a, b in zip(points, [*points[1:], None], strict=True):
        pieces.extend({"kind": "end", "chunk": i, "offset": a} for i in ends_at.get(a, []))
        pieces.extend({"kind": "start", "chunk": i, "offset": a} for i in starts.get(a, []))
        if b is None or b <= a:
            continue
        upto = bisect.bisect_right(first_starts, a)
        covering = [i for i, s, e in ordered[:upto] if e > a]
        if not covering:
            css = "gap"
        elif len(covering) > 1:
            css = "overlap"
        else:
            css = f"c{covering[-1] % 2}"
        pieces.append({"kind": "text", "text": text[a:b], "css": css, "chunks": covering})
    return {
        "strategy": strategy,
        "pieces": pieces,
        "chunk_count": len(chunks),
        "shown_count": len(shown),
        "truncated": cut < len(text),
        "cut": cut,
        "length": len(text),
        "overlaps": sum(1 for p in pieces if p.get("css") == "overlap"),
        "gaps": sum(1 for p in pieces if p.get("css") == "gap" and p["text"].strip()),
    }


def _soft_cut(text: str, limit: int) -> int:
    # No chunk ends near the limit: cut at the last line break (or space) before it, not inside a word.
    for sep in ("\n", " "):
        at = text.rfind(sep, limit // 2, limit)
        if at > 0:
            return at
    return limit


# ---------------------------------------------------------------------------------------------------------------
# Formatting (also the templates' filters)


def fmt(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals; ``—`` for a value that was not measured (None, NaN, inf)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    number = _num(value)
    if number is None:
        return DASH
    return f"{number:,.{digits}f}"


def pct(value: Any) -> str:
    """A probability or share as a percentage; never rounds a near-certainty up to 100% or a chance to 0%."""
    number = _num(value)
    if number is None:
        return DASH
    if 0.99 < number < 1:
        return ">99%"
    if 0 < number < 0.01:
        return "<1%"
    return f"{number:.0%}"


def fmt_ms(value: Any) -> str:
    number = _num(value)
    if number is None:
        return DASH
    return f"{number / 1000:.2f} s" if number >= 1000 else f"{number:.1f} ms"


def fmt_tokens(value: Any) -> str:
    number = _num(value)
    return DASH if number is None else f"{number:,.0f}"


def fmt_usd(value: Any) -> str:
    number = _num(value)
    if number is None:
        return DASH
    return "$0" if number == 0 else f"${number:,.4f}"


def fmt_when(value: Any) -> str:
    """An ISO timestamp as ``2026-11-29 16:02:11 UTC``; ``—`` when absent."""
    if not value:
        return DASH
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return text.replace("T", " ").replace("Z", " UTC").replace("+00:00", " UTC")


def _short(value: float) -> str:
    # Data attributes for the heatmap's JS: compact, locale-free.
    return f"{value:.6g}"


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, str | Undefined):
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _join(items: Sequence[str]) -> str:
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items())


def _metric_label(metric: str) -> str:
    spec = METRIC_BY_KEY.get(metric)
    return spec.label if spec else metric


def _metric_name(metric: str) -> str:
    """The label inside a sentence: ``recall``, ``precision Ω``, but ``MRR`` and ``IoU`` as they are."""
    label = _metric_label(metric)
    word = label.split(" ")[0]
    return label[0].lower() + label[1:] if word[1:] == word[1:].lower() else label


def _digits(metric: str) -> int:
    spec = METRIC_BY_KEY.get(metric)
    return spec.digits if spec else 2


def _config(experiment: Mapping[str, Any]) -> Mapping[str, Any]:
    return experiment.get("config") or {}


def _configurations(experiment: Mapping[str, Any]) -> list[dict[str, Any]]:
    configurations = [dict(c) for c in experiment.get("configurations") or [] if c.get("key")]
    known = {c["key"] for c in configurations}
    # A runner that failed before planning may only have aggregates; show those configurations too.
    configurations += [{"key": k} for k in (experiment.get("aggregate") or {}) if k not in known]
    return configurations


def _metric_mean(aggregate: Mapping[str, Any], key: str, metric: str) -> float | None:
    return _num((((aggregate.get(key) or {}).get("metrics") or {}).get(metric) or {}).get("mean"))


def _has_metric(experiment: Mapping[str, Any], metric: str, *, per_cell: bool = False) -> bool:
    if per_cell:
        return any(_num((c.get("metrics") or {}).get(metric)) is not None for c in experiment.get("cells") or [])
    return any(
        _metric_mean(experiment.get("aggregate") or {}, k, metric) is not None
        for k in experiment.get("aggregate") or {}
    )


def _cheapest(keys: Sequence[str], tokens: Any) -> str | None:
    priced = [(tokens(k), k) for k in keys if tokens(k) is not None]
    return min(priced)[1] if priced else None


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
        fmt=fmt, pct=pct, ms=fmt_ms, tokens=fmt_tokens, usd=fmt_usd, when=fmt_when, metric_name=_metric_name
    )
    env.globals.update(colour_stops=COLOUR_STOPS, ramp=[scale_colour(i / 29) for i in range(30)])
    return env
