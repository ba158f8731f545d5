"""The report's prose: the verdict (``verdicts.py`` writes it), the recommendations, the status banner and each
configuration's standing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkbench.benchmarking.report.experiment import experiment_config, experiment_configurations, metric_mean
from chunkbench.benchmarking.report.formatting import as_number, fmt, fmt_counts, join_words, metric_name, pct
from chunkbench.benchmarking.verdicts import no_decision_sentence, verdict
from chunkbench.chunking.base import capabilities


def decision_sentence(experiment: Mapping[str, Any]) -> str:
    """The verdict the report shows first: the Decision's own (``verdicts.verdict``, the words of every face), or
    why there is no Decision yet."""
    decision = experiment.get("decision") or {}
    if not decision.get("status"):
        return no_decision_sentence(experiment.get("status"))
    return verdict(decision)


def recommendations(experiment: Mapping[str, Any]) -> list[str]:
    """Concrete next steps derived from the data, beside the verdict: what to drop, what is worth testing next, what
    to fix before trusting the figures."""
    decision = experiment.get("decision") or {}
    aggregate = experiment.get("aggregate") or {}
    configurations = experiment_configurations(experiment)
    metric_key = decision.get("metric") or experiment_config(experiment).get("primary_metric") or "recall"
    metric = metric_name(metric_key)
    best = decision.get("best")
    out: list[str] = []

    # What to use, or why not to pick yet and what to pick if a choice is needed now, is the verdict above the
    # recommendations (``decision_sentence``); these are the next steps beside it.
    ruled_out = list(decision.get("ruled_out") or [])
    if ruled_out:
        out.append(f"Drop {join_words(ruled_out)}: below the leader on {metric} with 95% confidence.")

    out.extend(_neighbour_advice(configurations, aggregate))
    focus = best or decision.get("leader")
    out.extend(_rerank_advice(configurations, aggregate, focus))

    failed = {k: int(a.get("failed_cells") or 0) for k, a in aggregate.items() if a.get("failed_cells")}
    if failed:
        out.append(
            f"{sum(failed.values())} question × configuration cells failed ({fmt_counts(failed)}); their errors are "
            f"listed in the technical report. Fix the cause and rerun: failed cells count as missing data."
        )
    judge_failed = {k: int(a.get("judge_failures") or 0) for k, a in aggregate.items() if a.get("judge_failures")}
    if judge_failed:
        out.append(
            f"{sum(judge_failed.values())} judge calls failed ({fmt_counts(judge_failed)}): read the judge section of "
            f"the technical report before trusting the judge scores."
        )
    for key, agg in aggregate.items():
        rate = as_number(agg.get("hallucination_rate"))
        if rate is not None and rate >= 0.1:
            out.append(
                f"{key} hallucinated in {pct(rate)} of judged answers: check its answers before using it with an LLM."
            )
    dropped = decision.get("dropped_questions") or 0
    if dropped:
        out.append(
            f"{dropped} questions were left out of the decision because some configuration has no result for them."
        )
    config = experiment_config(experiment)
    if config.get("answer_mode") == "extractive" and not config.get("judge"):
        out.append(
            "Answers were extractive and not judged: configure an LLM (CHUNKBENCH_LLM_BASE_URL, "
            "CHUNKBENCH_LLM_MODEL) and run with the judge to compare answer quality, not only retrieval."
        )
    return out


def _neighbour_advice(configurations: list[dict[str, Any]], aggregate: Mapping[str, Any]) -> list[str]:
    # Only strategies of contiguous windows can expand to their neighbours (chunking.base capabilities).
    windowed = [c for c in configurations if capabilities(c.get("strategy") or "").expands_neighbours]
    if not windowed or any((c.get("neighbor_prev") or 0) + (c.get("neighbor_next") or 0) for c in windowed):
        return []
    recalls = {c["key"]: metric_mean(aggregate, c["key"], "recall") for c in windowed}
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
    hit, mrr = metric_mean(aggregate, focus, "hit_at_k"), metric_mean(aggregate, focus, "mrr")
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


def status_banner(experiment: Mapping[str, Any]) -> dict[str, str] | None:
    """A banner for an Experiment that is not completed: what state it is in and how much of it exists."""
    status = experiment.get("status") or "unknown"
    if status == "completed":
        return None
    cells = experiment.get("cells") or []
    expected = len(experiment.get("questions") or []) * len(experiment_configurations(experiment))
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


def standing(decision: Mapping[str, Any], key: str) -> str:
    """A configuration's standing in the Decision, as the ranking table's verdict column shows it."""
    status = decision.get("status")
    if key == decision.get("best") and status == "winner":
        return "winner"
    if key == decision.get("best") and status == "tie_broken_by_cost":
        return "chosen: cheapest of the equivalent" if decision.get("equivalence") else "chosen: cheapest of the tie"
    if key in (decision.get("ruled_out") or []):
        return "ruled out"
    if key == decision.get("leader"):
        return "leader"
    if key in (decision.get("contenders") or []):
        return "contender"
    return ""
