"""The Decision on synthetic per-question scores: a clear winner, ties (open, or broken by context cost),
insufficient data, the practical margin, lower-is-better metrics, the questions-needed estimate, the cannot-tell
Decision (ceiling, too few questions, noise) and the rule at equal context budget."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from chunkbench.benchmarking import context_budget
from chunkbench.benchmarking.decision import decide
from chunkbench.benchmarking.decision_ranking import MIN_QUESTIONS, Decision, questions_needed
from chunkbench.benchmarking.equal_budget import BudgetScores
from chunkbench.benchmarking.model import CellChunk, CellResult


def clear_winner_scores() -> dict[str, list[float]]:
    rng = np.random.default_rng(7)
    base = rng.uniform(0.2, 0.8, 40)
    return {
        "recursive-512": list(base + 0.15 + rng.normal(0, 0.05, 40)),
        "fixed-256": list(base + rng.normal(0, 0.05, 40)),
        "semantic": list(base - 0.15 + rng.normal(0, 0.05, 40)),
    }


def tie_scores() -> dict[str, list[float]]:
    # Equal means by construction: the two configurations swap 0.6 and 0.4 on alternate questions.
    return {"A": [0.6 if i % 2 else 0.4 for i in range(30)], "B": [0.4 if i % 2 else 0.6 for i in range(30)]}


def test_clear_winner_is_named_and_the_others_ruled_out() -> None:
    decision = decide(
        clear_winner_scores(), {"recursive-512": 2400, "fixed-256": 1200, "semantic": 900}, metric="recall"
    )
    assert decision.status == "winner"
    assert decision.best == decision.leader == "recursive-512"
    assert decision.ruled_out == ["fixed-256", "semantic"]
    assert decision.contenders == ["recursive-512"]
    assert decision.prob_best["recursive-512"] == 1.0
    assert decision.questions_needed is None and decision.tie_break is None
    assert decision.runner_up == "fixed-256"
    observed, low, high = decision.diff_to_leader["fixed-256"]
    assert low <= observed <= high < 0
    assert decision.reasons[0].startswith("recursive-512 is the best configuration on recall")
    assert any(reason.startswith("semantic is ruled out: its recall is lower") for reason in decision.reasons)
    assert (decision.n_questions, decision.dropped_questions) == (40, 0)


def test_tie_with_equal_costs_has_no_winner() -> None:
    decision = decide(tie_scores(), {"A": 1000, "B": 1000}, metric="recall")
    assert decision.status == "cannot_tell" and decision.cannot_tell["cause"] == "noise"
    assert decision.best is None and decision.tie_break is None
    assert decision.contenders == ["A", "B"] and decision.ruled_out == []
    assert 0.4 < decision.prob_best["A"] < 0.6
    # The means are equal: no number of questions is expected to separate them.
    assert decision.questions_needed is None
    assert any("no detectable difference" in reason for reason in decision.reasons)
    assert any("the tie is not broken by context cost: A needs 1,000 tokens per question, as much as B" in reason
               for reason in decision.reasons)  # fmt: skip


def test_tie_is_broken_by_context_cost_and_the_reasons_say_so() -> None:
    # A and B are level; B needs 60 % less context, so it leads the tie (never its costliest member) and is chosen.
    decision = decide(tie_scores(), {"A": 1000, "B": 400}, metric="recall")
    assert decision.status == "tie_broken_by_cost"
    assert decision.leader == "B" and decision.best == "B" and decision.contenders == ["B", "A"]
    assert decision.tie_break == "context cost tok@k"
    assert decision.reasons[0].startswith("tie on recall, broken by context cost tok@k")
    assert "B needs the least context (400 tokens vs 1,000 for A)" in decision.reasons[0]


def test_tie_is_not_broken_by_an_unknown_or_nearly_equal_cost() -> None:
    unknown = decide(tie_scores(), {"A": 1000}, metric="recall")
    assert unknown.status == "cannot_tell" and unknown.best is None
    assert any("unknown for B" in reason for reason in unknown.reasons)
    close = decide(tie_scores(), {"A": 1000, "B": 950}, metric="recall")
    assert close.status == "cannot_tell"


def test_insufficient_data() -> None:
    one = decide({"A": [0.5] * 10}, {"A": 10}, metric="recall")
    assert one.status == "insufficient_data" and one.best is None
    assert "at least 2 configurations" in one.reasons[0]
    assert one.means == {"A": 0.5}

    few = decide({"A": [1, 1, 1, 1], "B": [0, 0, 0, 0]}, {}, metric="recall")
    assert few.status == "insufficient_data" and few.best is None
    assert few.reasons[0] == few.verdict == (
        f"Only 4 questions scored for every configuration; a decision on recall needs at least {MIN_QUESTIONS}. "
        "Add questions and run again."
    )  # fmt: skip

    # Six questions, two unusable: four left.
    dropped = decide({"A": [1, 1, 1, 1, None, 1], "B": [0, 0, 0, 0, 0, None]}, {}, metric="recall")
    assert dropped.status == "insufficient_data"
    assert (dropped.n_questions, dropped.dropped_questions) == (4, 2)
    assert any("2 questions were left out" in reason for reason in dropped.reasons)
    assert decide({}, {}, metric="recall").status == "insufficient_data"


def test_dropped_questions_are_reported_in_a_decision() -> None:
    scores = {"A": [0.9] * 8 + [None], "B": [0.1] * 8 + [0.5]}
    decision = decide(scores, {}, metric="mrr")
    assert decision.status == "winner" and decision.best == "A"
    assert decision.dropped_questions == 1
    assert "1 question was left out because at least one configuration has no score for it." in decision.reasons


def test_questions_needed_formula_by_hand() -> None:
    # z_0.975 + z_0.8 = 1.959964 + 0.841621 = 2.801585; (2.801585 · 0.2 / 0.05)² = 125.58 → 126 − 20 = 106.
    assert questions_needed(0.2, 0.05, 20) == 106
    assert questions_needed(0.2, -0.05, 20) == 106
    assert questions_needed(0.2, 0.0, 20) is None
    assert questions_needed(0.01, 0.5, 20) == 0


def test_questions_needed_for_a_small_true_difference() -> None:
    # Per-question differences alternate 0.05 ± 0.3: mean δ = 0.05, sample SD σ = 0.3·sqrt(20/19) = 0.30779.
    # (2.801585 · 0.30779 / 0.05)² = 297.43 → 298 in total, 278 more than the 20 we have.
    differences = [0.05 + (0.3 if i % 2 == 0 else -0.3) for i in range(20)]
    scores = {"A": [0.5 + d for d in differences], "B": [0.5] * 20}
    decision = decide(scores, {"A": 100, "B": 100}, metric="f1")
    assert decision.status == "cannot_tell" and decision.best is None
    assert decision.leader == "A" and decision.runner_up == "B"
    assert decision.questions_needed == 278
    assert decision.cannot_tell["cause"] == "too_few_questions"
    assert decision.verdict == (
        "The benchmark cannot tell A from B on f1 with 20 questions (0.050 apart on average): about 278 more "
        "questions (298 in all) would likely separate them. If a choice is needed now, context cost does not settle "
        "it: A and B need the same context (100 tokens per question)."
    )
    assert any(reason.startswith("About 278 more questions") for reason in decision.reasons)


def test_practical_margin_turns_a_negligible_consistent_lead_into_a_tie() -> None:
    rng = np.random.default_rng(0)
    base = list(rng.uniform(0.2, 0.8, 20))
    scores = {"A": [b + 0.01 for b in base], "B": base}
    strict = decide(scores, {"A": 3000, "B": 1000}, metric="recall")
    assert strict.status == "winner" and strict.best == "A" and strict.ruled_out == ["B"]
    lenient = decide(scores, {"A": 3000, "B": 1000}, metric="recall", practical_margin=0.05)
    assert lenient.status == "tie_broken_by_cost" and lenient.best == "B"
    assert lenient.contenders == ["A", "B"]
    assert lenient.questions_needed is None
    assert any("within the practical margin" in reason for reason in lenient.reasons)


def test_lower_is_better_metric() -> None:
    rng = np.random.default_rng(5)
    base = rng.uniform(100, 200, 15)
    scores = {"slow": list(base + 80), "fast": list(base + rng.normal(0, 2, 15))}
    decision = decide(scores, {"slow": 1, "fast": 1}, metric="latency_ms", higher_is_better=False)
    assert decision.status == "winner" and decision.best == "fast"
    assert decision.ruled_out == ["slow"]
    assert any("slow is ruled out: its latency_ms is higher than fast's by" in reason for reason in decision.reasons)


def test_probability_rule_names_a_winner_the_interval_cannot_yet_separate() -> None:
    # A leads on most questions but the 95 % interval still reaches 0: best in ≥ 90 % of resamples suffices.
    differences = [0.1, 0.1, 0.1, 0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.1, 0.1, -0.1]
    scores = {"A": [0.5 + d for d in differences], "B": [0.5] * len(differences)}
    decision = decide(scores, {}, metric="recall")
    _observed, low, high = decision.diff_to_leader["B"]
    assert high >= 0 > low  # not ruled out at 95 %
    assert decision.prob_best["A"] >= 0.9
    assert decision.status == "winner" and decision.best == "A" and decision.contenders == ["A", "B"]
    assert any("above the 90% required" in reason for reason in decision.reasons)
    stricter = decide(scores, {}, metric="recall", min_prob_best=0.999)
    assert stricter.status == "cannot_tell"


def test_decision_to_dict_is_json_safe_and_deterministic() -> None:
    scores = clear_winner_scores()
    first = decide(scores, {"recursive-512": 2400, "fixed-256": float("nan")}, metric="recall", seed=3)
    text = json.dumps(first.to_dict(), allow_nan=False)
    again = json.dumps(decide(scores, {"recursive-512": 2400, "fixed-256": float("nan")}, metric="recall", seed=3)
                       .to_dict(), allow_nan=False)  # fmt: skip
    assert text == again
    body = json.loads(text)
    assert body["costs"] == {"recursive-512": 2400.0, "fixed-256": None, "semantic": None}
    assert body["diff_to_leader"]["recursive-512"] == [0.0, 0.0, 0.0]
    assert all(math.isfinite(value) for value in body["means"].values())


def test_decide_refuses_a_negative_margin() -> None:
    with pytest.raises(ValueError, match="practical_margin"):
        decide(tie_scores(), {}, metric="recall", practical_margin=-0.1)


# ---------------------------------------------------------------------------------------------- cannot tell


def test_a_metric_at_its_ceiling_gives_the_cannot_tell_decision() -> None:
    # Six configurations reach recall 1.00 on every one of 12 questions; a seventh misses some evidence.
    scores = {f"config-{i}": [1.0] * 12 for i in range(6)}
    scores["weak"] = [1.0, 0.5] * 6
    costs = {name: 1000 for name in scores}
    decision = decide(scores, costs, metric="recall")
    assert decision.status == "cannot_tell" and decision.best is None
    assert decision.cannot_tell["cause"] == "ceiling"
    assert decision.cannot_tell["configurations"] == [f"config-{i}" for i in range(6)]
    assert decision.verdict == (
        "The benchmark cannot tell 6 configurations apart on recall: config-0, config-1, config-2, config-3 and 2 "
        "more all reach its ceiling of 1.000 on the 12 questions; harder questions, a smaller k or a larger corpus "
        "would separate them. If a choice is needed now, context cost does not settle it: config-0, config-1, "
        "config-2, config-3 and 2 more need the same context (1,000 tokens per question)."
    )
    # The per-configuration reasons stay, as details behind the one sentence.
    assert decision.verdict not in decision.reasons
    assert any(reason.startswith("weak is ruled out") for reason in decision.reasons)
    body = decision.to_dict()
    assert body["verdict"] == decision.verdict and body["cannot_tell"]["ceiling"] == 1.0


def test_the_ceiling_of_a_lower_is_better_metric_is_its_floor() -> None:
    scores = {"A": [0.0] * 10, "B": [0.0] * 10, "C": [1.0, 0.0] * 5}
    decision = decide(scores, {"A": 1, "B": 1, "C": 1}, metric="judge_hallucination", higher_is_better=False)
    assert decision.status == "cannot_tell" and decision.cannot_tell["cause"] == "ceiling"
    assert decision.cannot_tell["configurations"] == ["A", "B"]


def test_differences_within_the_noise_say_more_questions_would_not_help() -> None:
    decision = decide(tie_scores(), {"A": 1000, "B": 1000}, metric="recall")
    assert decision.verdict == (
        "The benchmark cannot tell A from B on recall: they have the same mean; harder questions, a smaller k or a "
        "larger corpus would separate them. If a choice is needed now, context cost does not settle it: A and B need "
        "the same context (1,000 tokens per question)."
    )
    rng = np.random.default_rng(0)
    base = list(rng.uniform(0.2, 0.8, 20))
    margin = decide({"A": [b + 0.01 for b in base], "B": base}, {"A": 1000, "B": 1000}, metric="recall",
                    practical_margin=0.05)  # fmt: skip
    assert margin.status == "cannot_tell" and margin.cannot_tell["cause"] == "noise"
    assert "they differ by 0.010 on average, within the practical margin of 0.050" in margin.verdict


# ---------------------------------------------------------------------------------------------- equal budget

N_BUDGET_QUESTIONS = 20


def _budget_questions() -> list[dict]:
    # Question i's evidence: 100 characters at 10,000·i of the document.
    return [
        {"id": f"q{i}", "question": f"q{i}?", "references": [
            {"start_index": 10_000 * i, "end_index": 10_000 * i + 100, "content": "x" * 100}]}
        for i in range(N_BUDGET_QUESTIONS)
    ]  # fmt: skip


def _cell(key: str, question: int, chunks: list[tuple[int, int, int]]) -> CellResult:
    """A cell whose hits are ``(start, end, tokens)`` offsets relative to the question's evidence."""
    base = 10_000 * question
    retrieved = tuple(
        CellChunk(
            chunk_index=rank,
            start_index=base + start,
            end_index=base + end,
            role="hit",
            score=1.0 - rank / 10,
            tokens=tokens,
        )
        for rank, (start, end, tokens) in enumerate(chunks)
    )
    references = [(base, base + 100, None)]
    metrics = {"recall": context_budget.score(retrieved, references, "recall", float("inf")),
               "tok_at_k": sum(c.tokens for c in retrieved)}  # fmt: skip
    return CellResult(question_id=f"q{question}", config_key=key, status="ok", retrieved=retrieved, metrics=metrics)


def _budget_results(wide_evidence_rank: int) -> list[CellResult]:
    """Cells of "wide": five 100-token hits of 400 characters, the whole evidence in hit ``wide_evidence_rank``
    (0-based); and of "lean": two 100-token hits, its first covering 80 of the 100 evidence characters."""
    results = []
    for q in range(N_BUDGET_QUESTIONS):
        wide = [(-2000 - 500 * r, -1600 - 500 * r, 100) for r in range(5)]
        wide[wide_evidence_rank] = (-100, 300, 100)
        results.append(_cell("wide", q, wide))
        results.append(_cell("lean", q, [(20, 300, 100), (-3000, -2800, 100)]))
    return results


def _budget_decision(wide_evidence_rank: int) -> Decision:
    results = _budget_results(wide_evidence_rank)
    questions, keys = _budget_questions(), ["wide", "lean"]
    raw = context_budget.rescore(questions, keys, results, metric="recall", budget=float("inf"))
    context = context_budget.median_context(keys, results)
    limit = context_budget.default_budget(context)
    assert (context, limit) == ({"wide": 500.0, "lean": 200.0}, 200)
    at_budget = context_budget.rescore(questions, keys, results, metric="recall", budget=limit)
    return decide(raw, context, metric="recall", budget=BudgetScores(limit, "recall", at_budget, context))


def test_a_configuration_that_wins_only_by_context_length_does_not_win_at_equal_budget() -> None:
    # Raw: wide finds the whole evidence (recall 1.0) in its 4th hit, lean 0.8 with 200 tokens. Cut to lean's
    # 200 tokens, wide keeps its first two hits and finds nothing.
    decision = _budget_decision(wide_evidence_rank=3)
    assert decision.means == {"wide": 1.0, "lean": pytest.approx(0.8)}
    assert decision.status == "cannot_tell" and decision.best is None and decision.leader == "wide"
    assert decision.cannot_tell["cause"] == "context"
    matched = decision.budget_matched
    assert matched["budget"] == 200 and matched["ranking"] == ["lean", "wide"] and matched["leader"] == "lean"
    assert matched["means"] == {"wide": 0.0, "lean": pytest.approx(0.8)}
    assert decision.verdict == (
        "At 200 context tokens per question, lean leads on recall (0.800); with the full context, wide leads (1.000 "
        "at 500 tokens). The benchmark cannot tell whether wide is better on recall: it leads only by sending more "
        "context (500 tokens per question against 200 for lean), and with both cut to 200 tokens lean scores 0.800 "
        "against 0.000; compare them at equal budget, or rerun wide with a smaller k."
    )
    assert matched["rule"] == (
        "wide's lead does not hold at equal context: cut to 200 tokens, lean (median 200 context tokens against "
        "500) scores 0.800 on recall against 0.000."
    )
    assert matched["rule"] in decision.reasons


def test_a_winner_whose_lead_holds_at_equal_budget_keeps_its_name() -> None:
    # wide's evidence is in its first hit: within 200 tokens it still finds all of it.
    decision = _budget_decision(wide_evidence_rank=0)
    assert decision.status == "winner" and decision.best == "wide"
    assert decision.budget_matched["means"] == {"wide": 1.0, "lean": pytest.approx(0.8)}
    assert decision.budget_matched["rule"] == (
        "wide keeps the win at equal context: cut to 200 tokens, it scores 1.000 on recall, above every "
        "configuration that sends less context."
    )


def test_a_winner_sending_barely_more_context_is_not_withdrawn_at_equal_budget() -> None:
    # wide sends 5% more than lean (within the 10% cost margin): the two already send an equal budget, so lean is
    # not "leaner" and wide's raw win stands even though cutting it to lean's tokens loses its evidence.
    results = _budget_results(wide_evidence_rank=3)
    questions, keys = _budget_questions(), ["wide", "lean"]
    raw = context_budget.rescore(questions, keys, results, metric="recall", budget=float("inf"))
    context = {"wide": 210.0, "lean": 200.0}
    at_budget = context_budget.rescore(questions, keys, results, metric="recall", budget=200)
    decision = decide(raw, context, metric="recall", budget=BudgetScores(200, "recall", at_budget, context))
    assert decision.status == "winner" and decision.best == "wide"
    assert decision.budget_matched["means"]["wide"] == 0.0  # the cut did lose its evidence
    assert decision.budget_matched["rule"].startswith("wide keeps the win at equal context")


def test_reports_and_the_cli_sentence_show_the_cannot_tell_decision_and_the_equal_budget_view() -> None:
    from lxml import html as lxml_html

    from chunkbench.benchmarking.report.prose import decision_sentence
    from chunkbench.benchmarking.report.render import render_report

    decision = _budget_decision(wide_evidence_rank=3)
    questions = _budget_questions()
    cells = [c.model_dump(mode="json") for c in _budget_results(wide_evidence_rank=3)]
    experiment = {
        "id": "e1", "name": "budget", "status": "completed", "config": {"primary_metric": "recall"},
        "configurations": [{"key": "wide"}, {"key": "lean"}], "questions": questions, "cells": cells,
        "aggregate": {key: {"metrics": {"recall": {"mean": decision.means[key]}}} for key in ("wide", "lean")},
        "decision": decision.to_dict(),
    }  # fmt: skip
    assert decision_sentence(experiment) == decision.verdict
    for view in ("managerial", "technical"):
        tree = lxml_html.document_fromstring(render_report(experiment, view=view))
        assert tree.get_element_by_id("decision-sentence").text_content() == decision.verdict
        assert tree.get_element_by_id("budget-rule").text_content() == decision.budget_matched["rule"]
        rows = tree.xpath("//table[@id='budget-table']/tbody/tr")
        assert [r.get("data-budget-config") for r in rows] == ["lean", "wide"]
        assert [td.text_content() for td in rows[1].xpath("td")] == ["wide", "500", "1.00", "0.00"]
        [curve] = tree.xpath("//figure[@data-curve='recall']")
        assert len(curve.xpath(".//polyline")) == 2
    # Asked for another budget, the report compares there (the Decision's rule belongs to its own budget).
    tree = lxml_html.document_fromstring(render_report(experiment, view="managerial", budget=500))
    rows = tree.xpath("//table[@id='budget-table']/tbody/tr")
    assert [td.text_content() for td in rows[0].xpath("td")] == ["wide", "500", "1.00", "1.00"]
    assert not tree.xpath("//*[@id='budget-rule']")
