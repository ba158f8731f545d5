"""The rich renderings of ``chunkbench bench|check``: an Experiment (its configurations, verdict, pruning and
Decision), a dry run's estimate and the CI gate's verdict. Apart from ``commands.py`` so that file holds the Typer
commands (options, service calls, exit codes) and this one what they print. The consoles are passed in: only the
command modules import ``console``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

# The metrics an Experiment's table (and ``bench compare``) shows beside the primary one.
SHOWN_METRICS = ("recall", "iou", "mrr", "ndcg_at_k", "token_f1", "answer_similarity", "judge_answer_similarity")


def show_estimate(estimate: Any, *, out: Console) -> None:
    """A dry run's cost estimate: what each item would call, and the total."""
    table = Table("item", "model", "calls", "input tokens", "output tokens", "USD", title="dry run")
    for item in estimate.items:
        usd = item["usd"]
        table.add_row(
            item["item"], item["model"] or "—", "—" if item["calls"] is None else str(item["calls"]),
            str(item["input_tokens"]), str(item["output_tokens"]), "unknown" if usd is None else f"{usd:.4f}",
        )  # fmt: skip
    out.print(table)
    total = "unknown" if estimate.total_usd is None else f"${estimate.total_usd:.4f}"
    out.print(f"{estimate.cells} cells, {estimate.llm_calls} LLM calls, total {total}", highlight=False)
    for note in [*estimate.notes, *estimate.warnings]:
        out.print(f"- {note}", highlight=False)


def fmt(value: Any, digits: int = 3) -> str:
    """A figure of a table cell: ``digits`` decimals, a dash when there is none."""
    return "—" if value is None else f"{value:.{digits}f}"


def show_experiment(experiment: dict[str, Any], *, out: Console) -> None:
    """An Experiment's table of configurations, its verdict in words, what pruning stopped, the Decision's details."""
    config, decision = experiment["config"], experiment.get("decision") or {}
    primary = config.get("primary_metric")
    table = Table("configuration", f"{primary} [95% CI]", *SHOWN_METRICS, "tok@k", "p50 ms", "P(best)",
                  title=f"experiment {experiment['id']} ({experiment['status']})")  # fmt: skip
    prob_best = decision.get("prob_best", {})
    for key, aggregate in (experiment.get("aggregate") or {}).items():
        metrics = aggregate["metrics"]
        main = metrics.get(primary, {})
        table.add_row(
            key,
            f"{fmt(main.get('mean'))} [{fmt(main.get('ci_low'))}, {fmt(main.get('ci_high'))}]",
            *(fmt(metrics[name]["mean"]) for name in SHOWN_METRICS),
            fmt(metrics["tok_at_k"]["mean"], 0),
            fmt(aggregate["latency_ms_p50"], 1),
            fmt(prob_best.get(key), 2),
        )
    out.print(table)
    from chunkbench.benchmarking.report.prose import decision_sentence

    # The verdict in the words of the dashboard and the reports (verdicts.py), then its details; markup off: the
    # sentences name configurations and question text, never rich markup.
    status = decision.get("status") or experiment["status"]
    out.print(f"verdict ({status}): {decision_sentence(experiment)}", highlight=False, markup=False)
    _show_pruned(experiment.get("pruning"), out)
    if decision:
        _show_budget(decision.get("budget_matched"), out)
        out.print("details:", highlight=False)
        for reason in decision.get("reasons", []):
            out.print(f"- {reason}", highlight=False, markup=False)


def _show_pruned(pruning: dict[str, Any] | None, out: Console) -> None:
    """The configurations pruning stopped: at which rung, on how many questions, their mean and interval."""
    if not pruning or not pruning.get("pruned"):
        return
    table = Table("configuration", "rung", "questions", f"{pruning['metric']} mean", "Δ to leader [interval]",
                  title=f"pruned ({len(pruning['pruned'])})")  # fmt: skip
    for entry in pruning["pruned"]:
        observed, low, high = entry["difference"]
        table.add_row(
            entry["config_key"], str(entry["rung"]), str(entry["questions"]), fmt(entry["mean"]),
            f"{observed:+.3f} [{low:+.3f}, {high:+.3f}] at {entry['confidence']:.4%}",
        )  # fmt: skip
    out.print(table)
    out.print(pruning["rule"], highlight=False, markup=False)


def _show_budget(matched: dict[str, Any] | None, out: Console) -> None:
    """The ranking at equal context budget, one line, beside the raw table."""
    if not matched or not matched.get("ranking"):
        return
    means, context = matched.get("means") or {}, matched.get("context") or {}
    ranked = ", ".join(f"{key} {fmt(means.get(key))} ({fmt(context.get(key), 0)} tok)" for key in matched["ranking"])
    out.print(f"at an equal budget of {matched['budget']:,} tokens, {matched['metric']}: {ranked}", highlight=False)


def show_check(result: Any, *, out: Console, err: Console) -> None:
    """The CI gate's verdict: each metric against the baseline, or why the two cannot be compared (on ``err``)."""
    title = f"{result.experiment_id} vs baseline {result.baseline_id} · {result.config_key}"
    if result.differences:
        err.print(f"[red]not comparable:[/red] {title}", highlight=False)
        for difference in result.differences:
            err.print(f"- {difference}", highlight=False)
        return
    table = Table("metric", "baseline", "current", "change", "tolerance", "verdict", title=title)
    colours = {"ok": "green", "dropped": "red", "warn": "yellow", "not measured": "dim"}
    for m in result.metrics:
        change = "—" if m.change is None else f"{m.change:+.4f}"
        table.add_row(
            m.metric, fmt(m.baseline, 4), fmt(m.current, 4), change, f"{m.tolerance:g}",
            f"[{colours[m.verdict]}]{m.verdict}[/{colours[m.verdict]}]",
        )  # fmt: skip
    out.print(table)
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    out.print(f"check: {result.verdict}", highlight=False)
