"""The budget-led, honest verdict: the frontier of configurations best for some budget, the winner at the budget
beside the winner at full context, the ceiling case named among its own, practical equivalence and Holm's correction
over a large grid."""

from __future__ import annotations

import json

import numpy as np

from chunkbench.benchmarking.budget_verdicts import budget_sentence
from chunkbench.benchmarking.decision import decide, frontier
from chunkbench.benchmarking.decision_ranking import Decision
from chunkbench.benchmarking.equal_budget import BudgetScores
from chunkbench.benchmarking.report.prose import standing
from chunkbench.benchmarking.verdicts import verdict


def test_the_frontier_keeps_the_configurations_best_for_some_budget_cheapest_first() -> None:
    means = {"big": 0.85, "mid": 0.70, "dominated": 0.60, "small": 0.50, "twin": 0.50, "unpriced": 0.99}
    context = {"big": 2171.0, "mid": 714.0, "dominated": 900.0, "small": 300.0, "twin": 300.0, "unpriced": None}
    points = frontier(means, context)
    # dominated: less recall than mid at more context; twin: as good as small at the same context, after it.
    assert [p["config"] for p in points] == ["small", "mid", "big"]
    assert points[0] == {"config": "small", "context": 300.0, "mean": 0.5, "from_budget": 300.0, "to_budget": 714.0}
    assert points[-1]["to_budget"] is None
    # Lower is better (the hallucination rate): the cheapest point is kept, then only lower rates.
    assert [p["config"] for p in frontier({"a": 0.2, "b": 0.1, "c": 0.3}, {"a": 1, "b": 2, "c": 3},
                                          higher_is_better=False)] == ["a", "b"]  # fmt: skip


def test_every_decision_stores_its_frontier() -> None:
    scores = {"lean": [0.5, 0.6] * 10, "wide": [0.9, 0.8] * 10, "waste": [0.4, 0.5] * 10}
    decision = decide(scores, {"lean": 300, "wide": 1200, "waste": 2000}, metric="recall")
    stored = json.loads(json.dumps(decision.to_dict()))
    assert [p["config"] for p in stored["frontier"]] == ["lean", "wide"]


# ---------------------------------------------------------------------------------------------- the budgeted answer

BIG, LEAN, DENSE = "fixed_size/hybrid/k5", "recursive/hybrid/k5", "semantic/dense/k5"


def _code_corpus_decision() -> Decision:
    """The issue's code corpus in small: at full context BIG leads (sending 2,171 tokens), cut to LEAN's 714 tokens
    LEAN leads."""
    full = {BIG: [1.0] * 34 + [0.0] * 6, LEAN: [1.0] * 28 + [0.0] * 12, DENSE: [1.0] * 20 + [0.0] * 20}
    at_budget = {BIG: [1.0] * 26 + [0.0] * 14, LEAN: [1.0] * 28 + [0.0] * 12, DENSE: [1.0] * 18 + [0.0] * 22}
    costs = {BIG: 2171.0, LEAN: 714.0, DENSE: 900.0}
    return decide(full, costs, metric="recall", min_prob_best=0.975,
                  budget=BudgetScores(714, "recall", at_budget, costs))  # fmt: skip


def test_the_verdict_leads_with_the_winner_at_the_budget_when_it_is_not_the_one_at_full_context() -> None:
    decision = _code_corpus_decision()
    assert decision.budget_matched["leader"] == LEAN and decision.leader == BIG
    assert decision.verdict == (
        "At 714 context tokens per question, recursive/hybrid/k5 leads on recall (0.700); with the full context, "
        "fixed_size/hybrid/k5 leads (0.850 at 2,171 tokens). The benchmark cannot tell whether fixed_size/hybrid/k5 "
        "is better on recall: it leads only by sending more context (2,171 tokens per question against 714 for "
        "recursive/hybrid/k5), and with both cut to 714 tokens recursive/hybrid/k5 scores 0.700 against 0.650; "
        "compare them at equal budget, or rerun fixed_size/hybrid/k5 with a smaller k."
    )
    # One function writes it, from the stored Decision: read back from JSON, the same words.
    assert verdict(json.loads(json.dumps(decision.to_dict()))) == decision.verdict
    assert budget_sentence(decision.to_dict()) == decision.verdict.split(" The benchmark")[0]


def test_no_budget_sentence_when_the_budget_and_full_context_agree() -> None:
    full = {BIG: [1.0] * 34 + [0.0] * 6, LEAN: [1.0] * 20 + [0.0] * 20}
    costs = {BIG: 800.0, LEAN: 714.0}
    decision = decide(full, costs, metric="recall", budget=BudgetScores(714, "recall", full, costs))
    assert decision.budget_matched["leader"] == decision.best == BIG
    assert budget_sentence(decision.to_dict()) is None and decision.verdict.startswith(f"Use {BIG}:")


# ---------------------------------------------------------------------------------------------- the dashboard case


def test_at_the_ceiling_only_the_configurations_that_reach_it_are_named_cheapest_first() -> None:
    # The dashboard run: 6 questions, four configurations at recall 1.000, semantic/dense/k5 at 0.833 and
    # cheaper (not separable from them on 6 questions, but below the ceiling they reach). Costliest given first.
    scores = {
        "fixed_size/hybrid/k5": [1.0] * 6, "semantic/hybrid/k5": [1.0] * 6, "recursive/bm25/k5": [1.0] * 6,
        "semantic/bm25/k5": [1.0] * 6, "semantic/dense/k5": [1.0] * 5 + [0.0],
    }  # fmt: skip
    costs = {"fixed_size/hybrid/k5": 1950, "semantic/hybrid/k5": 1200, "recursive/bm25/k5": 820,
             "semantic/bm25/k5": 587, "semantic/dense/k5": 410}  # fmt: skip
    decision = decide(scores, costs, metric="recall", min_prob_best=0.975)
    # The tie is broken among the four at the ceiling, never by the cheaper configuration below it.
    assert decision.status == "tie_broken_by_cost" and decision.best == "semantic/bm25/k5"
    # The leader of a tie is its cheapest member, never its costliest.
    assert decision.leader == "semantic/bm25/k5"
    assert decision.tie_among == ["semantic/bm25/k5", "recursive/bm25/k5", "semantic/hybrid/k5", "fixed_size/hybrid/k5"]
    assert decision.verdict == (
        "Use semantic/bm25/k5: the data cannot tell it from recursive/bm25/k5, semantic/hybrid/k5 and "
        "fixed_size/hybrid/k5 on recall over 6 questions (all 4 reach its ceiling of 1.000; harder questions, a "
        "smaller k or a larger corpus would separate them), and it needs the least context, 587 tokens per question "
        "against 820 for recursive/bm25/k5, 1,200 for semantic/hybrid/k5 and 1,950 for fixed_size/hybrid/k5: at least "
        "10% less than every other one at the ceiling."
    )
    # Without a clearly cheaper one among the four, the benchmark cannot tell, and recommends only among them.
    close = decide(scores, costs | {"recursive/bm25/k5": 600}, metric="recall", min_prob_best=0.975)
    assert close.status == "cannot_tell" and close.cannot_tell["cause"] == "ceiling"
    assert close.verdict == (
        "The benchmark cannot tell 4 configurations apart on recall: semantic/bm25/k5, recursive/bm25/k5, "
        "semantic/hybrid/k5 and fixed_size/hybrid/k5 all reach its ceiling of 1.000 on the 6 questions; harder "
        "questions, a smaller k or a larger corpus would separate them. If a choice is needed now, semantic/bm25/k5 "
        "is the cheapest of the 4, but the tie is not broken by context cost: semantic/bm25/k5 needs 587 tokens per "
        "question, only 2% less than the 600 of recursive/bm25/k5, the next cheapest, and a tie is broken only when "
        "one contender needs at least 10% less than every other."
    )
    assert "semantic/dense/k5" not in close.verdict
    assert "semantic/dense/k5" not in decision.verdict
    # The reasons do not say the tie is unbroken by cost because of a configuration below the ceiling.
    assert not any("semantic/dense/k5 needs 410 tokens" in reason for reason in decision.reasons)


# ---------------------------------------------------------------------------------------------- practical equivalence

FIXED, RECURSIVE = "fixed_size/bm25/k5", "recursive/bm25/k5"
COVID = [float(v) for v in np.random.default_rng(5).uniform(0.2, 0.9, 1380)]


def test_configurations_equivalent_within_the_margin_are_chosen_by_cost() -> None:
    # COVID-QA's case: 1,380 questions, the two 0.000 apart, every per-question difference ±0.002.
    scores = {FIXED: COVID, RECURSIVE: [b + (0.002 if i % 2 else -0.002) for i, b in enumerate(COVID)]}
    decision = decide(scores, {FIXED: 320, RECURSIVE: 300}, metric="recall", min_prob_best=0.975)
    assert decision.status == "tie_broken_by_cost" and decision.best == RECURSIVE
    assert decision.equivalence == {"margin": 0.01, "configurations": [RECURSIVE, FIXED], "confidence": 0.95}
    assert decision.verdict == (
        "Use recursive/bm25/k5: it is equivalent to fixed_size/bm25/k5 on recall within ±0.010 over 1380 questions "
        "(the 95% interval of every difference lies inside the margin; more questions would not separate them), and "
        "it needs the least context, 300 tokens per question against 320 for fixed_size/bm25/k5."
    )
    text = " ".join([decision.verdict, *decision.reasons])
    assert "would likely separate" not in text and decision.questions_needed is None
    assert standing(decision.to_dict(), RECURSIVE) == "chosen: cheapest of the equivalent"
    # A margin of 0 turns the rule off; the margin is an option of decide().
    off = decide(scores, {FIXED: 320, RECURSIVE: 300}, metric="recall", equivalence_margin=0)
    assert off.equivalence is None and off.status == "cannot_tell"


def test_an_absurd_number_of_more_questions_is_never_advised() -> None:
    # 0.0003 apart with per-question differences of ±0.3: the estimate is millions of questions, over 100 × 1,380.
    scores = {FIXED: COVID, RECURSIVE: [b + (0.3 if i % 2 else -0.3) + 0.0003 for i, b in enumerate(COVID)]}
    decision = decide(scores, {FIXED: 320, RECURSIVE: 300}, metric="recall", min_prob_best=0.975)
    assert decision.status == "cannot_tell" and decision.cannot_tell["cause"] == "noise"
    assert decision.questions_needed is None and decision.cannot_tell["questions_needed_beyond"] > 100 * 1380
    assert decision.verdict.startswith(
        "The benchmark cannot tell recursive/bm25/k5 from fixed_size/bm25/k5 on recall: they differ by 0.000 on "
        "average, too little for more questions to separate them (over 100 times the 1380 scored would be needed); "
        "harder questions, a smaller k or a larger corpus would separate them."
    )
    assert "would likely separate" not in " ".join([decision.verdict, *decision.reasons])


# ---------------------------------------------------------------------------------------------- Holm on a large grid


def _large_grid(configurations: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    """A leader, two configurations 0.034 below it (significant at 95 % one by one, not with Holm over 34), and
    weak ones far below, up to ``configurations`` in all."""
    base = np.random.default_rng(0).uniform(0.3, 0.7, 40)
    grid = {
        "lead": list(base + 0.2),
        "near1": [b + 0.166 + (0.1 if i % 2 else -0.1) for i, b in enumerate(base)],
        "near2": [b + 0.166 + (0.1 if (i // 2) % 2 else -0.1) for i, b in enumerate(base)],
    }
    grid |= {f"weak{i:02d}": list(base - 0.1 - 0.01 * i) for i in range(configurations - 3)}
    return grid, {name: 500.0 + 10 * i for i, name in enumerate(grid)}


def test_a_grid_of_35_rules_out_with_holms_correction_and_says_so() -> None:
    scores, costs = _large_grid(35)
    decision = decide(scores, costs, metric="recall", min_prob_best=0.975)
    assert decision.correction == {"method": "holm", "comparisons": 34, "family_confidence": 0.95}
    assert decision.contenders == ["lead", "near1", "near2"] and len(decision.ruled_out) == 32
    assert decision.verdict == (
        "The benchmark cannot tell lead from near1 on recall with 40 questions (0.034 apart on average): about 30 "
        "more questions (70 in all) would likely separate them. If a choice is needed now, lead is the cheapest "
        "contender (500 tokens per question against 510 for near1 and 520 for near2)."
    )
    assert (
        "With 35 configurations, ruled out means ruled out with Holm's correction over the 34 comparisons to the "
        "leader (32 configurations ruled out): the chance that any configuration as good as the leader is ruled out "
        "stays within 5%."
    ) in decision.reasons
    assert (
        "weak00 is ruled out with Holm's correction over 34 comparisons: its recall is lower than lead's by 0.300 "
        "(99.85% interval 0.300 to 0.300)."
    ) in decision.reasons
    assert any(r.startswith("near1 is still a contender") and r.endswith(
        "not enough to rule it out with Holm's correction over 34 comparisons.") for r in decision.reasons)  # fmt: skip
    # Below 30 configurations the uncorrected 95 % intervals rule both out: the correction is what keeps them.
    smaller, small_costs = _large_grid(29)
    uncorrected = decide(smaller, small_costs, metric="recall", min_prob_best=0.975)
    assert uncorrected.correction is None and {"near1", "near2"} <= set(uncorrected.ruled_out)
