"""The report's prose: the decision sentence, the recommendations, the status banner and each verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chunkbench.benchmarking.report.experiment import experiment_config, experiment_configurations, metric_mean
from chunkbench.benchmarking.report.formatting import (
    as_number,
    fmt,
    fmt_counts,
    fmt_tokens,
    join_words,
    metric_name,
    pct,
)
from chunkbench.benchmarking.verdicts import cannot_tell_sentence
from chunkbench.chunking.base import capabilities


def decision_sentence(experiment: Mapping[str, Any]) -> str:
    """The decision in one sentence: the winner and its probability of being best, a tie broken by cost, why the
    benchmark cannot tell (and what would), or why there is no winner and how many questions would settle it."""
    decision = experiment.get("decision") or {}
    status = decision.get("status")
    if not status:
        if experiment.get("status") == "running":
            return "No decision yet: the experiment is still running."
        ended = {"failed": "failed", "cancelled": "was cancelled"}.get(experiment.get("status") or "")
        return f"No decision: the experiment {ended} before one was made." if ended else "No decision has been made."
    metric = metric_name(decision.get("metric") or experiment_config(experiment).get("primary_metric") or "recall")
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
        others = f" as good as {join_words(contenders)}" if contenders else " tied with the other contenders"
        return (
            f"No configuration is clearly best on {metric}; {best} is{others} within the uncertainty of "
            f"{questions}, and the tie is broken by cost: it has the lowest {decision.get('tie_break') or 'cost'}."
        )
    if status == "cannot_tell" and decision.get("cannot_tell"):
        return cannot_tell_sentence(metric, decision["cannot_tell"])
    settle = _settle_clause(decision)
    if status == "no_clear_winner":  # Experiments decided before cannot_tell
        rivals = [c for c in decision.get("contenders") or [] if c != leader]
        lead = f"{leader} leads ({pct(prob_best.get(leader))} probability of being best)" if leader else "nothing leads"
        rest = f", but {join_words(rivals)} cannot be ruled out" if rivals else ""
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
    configurations = experiment_configurations(experiment)
    metric_key = decision.get("metric") or experiment_config(experiment).get("primary_metric") or "recall"
    metric = metric_name(metric_key)
    status, best = decision.get("status"), decision.get("best")
    contenders = list(decision.get("contenders") or [])
    out: list[str] = []

    def tokens(key: str) -> float | None:
        return as_number(((aggregate.get(key) or {}).get("tokens") or {}).get("context_mean"))

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
    elif status in ("cannot_tell", "no_clear_winner", "insufficient_data"):
        needed, n = decision.get("questions_needed"), decision.get("n_questions")
        more = f"about {needed + n} questions in all" if needed is not None and isinstance(n, int) else "more questions"
        failed_cells = sum(int(a.get("failed_cells") or 0) for a in aggregate.values())
        why = decision.get("cannot_tell") or {}
        if status == "cannot_tell" and why.get("cause") == "context":
            lead, lean = why["configurations"][:2]  # the context cause names the leader and the leaner rival
            out.append(
                f"Do not pick {lead} for its raw lead: compare at the equal context budget below, where {lean} does "
                "at least as well with less context."
            )
        elif status == "cannot_tell" and why.get("cause") in ("ceiling", "noise"):
            out.append(
                "Do not pick on these figures: more questions like these will not separate them; write harder "
                "questions (evidence spread over several passages), lower k, or benchmark a larger corpus."
            )
        elif status == "insufficient_data" and failed_cells:
            out.append(
                "Do not pick on these figures: fix the failed cells below and rerun, so every configuration "
                "answers every question."
            )
        else:
            out.append(
                f"Do not pick on these figures: rerun with {more} to separate {join_words(contenders) or 'them'}."
            )
        if cheapest and len(contenders) > 1:
            out.append(
                f"If a choice is needed now, {cheapest} is the cheapest contender "
                f"({fmt_tokens(tokens(cheapest))} context tokens per question)."
            )
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


def verdict(decision: Mapping[str, Any], key: str) -> str:
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


def _cheapest(keys: Sequence[str], tokens: Any) -> str | None:
    priced = [(tokens(k), k) for k in keys if tokens(k) is not None]
    return min(priced)[1] if priced else None
