"""The verdict on a Decision and the sentences it is made of: each is written by one function, and a test pins it.

``decision.py`` (with ``decision_ranking.py`` and ``equal_budget.py``) computes the Decision; ``verdict`` writes the
one text a reader sees first, from the Decision as stored, so the dashboard, both reports and the CLI show the same
words (``service.experiment_dict`` puts it in the Experiment as ``decision.verdict``). This module writes the verdict
at full context (a winner, a tie broken by cost or equivalence, too little data) and why nobody wins (cannot tell).
The other sentences are written beside it, each by one function, by what they serve: ``budget_verdicts.py`` (the
context budget), ``language_verdicts.py`` (models that cannot read a language), ``decision_reasons.py`` (the reasons,
a Decision's details); ``verdict_words.py`` shows the figures and names they all share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chunkbench.benchmarking.budget_verdicts import budget_sentence
from chunkbench.benchmarking.decision_reasons import MAX_QUESTIONS_FACTOR, tie_not_broken_clause
from chunkbench.benchmarking.language_verdicts import language_sentence, lead_sentence
from chunkbench.benchmarking.report.formatting import metric_name, pct
from chunkbench.benchmarking.verdict_words import cost_in, figure, join, plural, some, tokens, unnamable_in

FIX_HARDER = "harder questions, a smaller k or a larger corpus would separate them"
# How many other contenders a cost comparison names before it sums up the rest.
NAMED_COSTS = 2


# ------------------------------------------------------------------------------------------- the verdict


def verdict(decision: Mapping[str, Any]) -> str:
    """The verdict on a Decision (``Decision.to_dict()``, or one stored before this wording): led by the winner at
    the budget when it is not the one at full context (``budget_sentence``), then who wins, at what confidence and
    context cost, or why the benchmark cannot tell and what would; when nobody wins, the cheapest contender for a
    choice that cannot wait."""
    full = full_context_verdict(decision)
    budgeted = budget_sentence(decision)
    return f"{budgeted} {full}" if budgeted else full


def full_context_verdict(decision: Mapping[str, Any]) -> str:
    """The verdict at full context: the winner, the tie broken by cost or by equivalence, or why nobody wins."""
    status = decision.get("status")
    metric = metric_name(str(decision.get("metric") or "the metric"))
    best = decision.get("best")
    if best and status in ("winner", "tie_broken_by_cost"):
        if decision.get("equivalence"):
            named = equivalent_verdict(decision, metric)
        else:
            named = winner_verdict(decision, metric) if status == "winner" else tie_broken_verdict(decision, metric)
        # A choice that rests on questions its model cannot read says so where it is made.
        depends = lead_sentence(best, decision.get("language") or {}, only_if_it_depends=True)
        return f"{named} {depends}" if depends else named
    if status == "insufficient_data":
        return insufficient_verdict(decision, metric)
    why = decision.get("cannot_tell") if status == "cannot_tell" else _legacy_why(decision)
    if not why:
        return f"No configuration can be named on {metric}: the Decision records no reason."
    sentence = cannot_tell_sentence(metric, why)
    # With the context cause the sentence itself says which configuration to look at, and why; with the language
    # cause, what to benchmark instead; at the ceiling, only the configurations that reach it are recommended.
    among = list(why.get("configurations") or []) if why.get("cause") == "ceiling" else None
    cheapest = (
        cheapest_contender_sentence(decision, among=among) if why.get("cause") not in ("context", "language") else None
    )
    return f"{sentence} {cheapest}" if cheapest else sentence


def _sends(decision: Mapping[str, Any], name: str) -> str:
    cost = cost_in(decision, name)
    return f"; it sends {tokens(cost)} context tokens per question" if cost is not None else ""


def winner_verdict(decision: Mapping[str, Any], metric: str) -> str:
    """A winner: its mean against the runner-up's, its probability of being best, whether the rest are ruled out at
    the Decision's confidence, and its context cost."""
    best, means = decision["best"], decision.get("means") or {}
    runner_up = decision.get("runner_up")
    against = f" against {figure(means[runner_up])} for {runner_up}" if runner_up in means else ""
    others = [name for name in decision.get("contenders") or [] if name != best]
    level = f"{float(decision.get('confidence') or 0.95):.0%}"
    correction = decision.get("correction") or {}
    if correction.get("method") == "holm":
        level += f" family-wise (Holm's correction over {correction['comparisons']} comparisons)"
    if others:
        standing = f", though {join(others)} cannot be ruled out at {level} confidence"
    elif runner_up:
        standing = f", every other configuration ruled out at {level} confidence"
    else:
        standing = ""
    n = decision.get("n_questions")
    return (
        f"Use {best}: it is the best configuration on {metric} over {plural(int(n or 0), 'question')}, mean "
        f"{figure(means.get(best, 0.0))}{against}, best in {pct((decision.get('prob_best') or {}).get(best))} of "
        f"the bootstrap resamples{standing}{_sends(decision, best)}."
    )


def tie_broken_verdict(decision: Mapping[str, Any], metric: str) -> str:
    """A tie broken by cost: the contenders the data cannot tell apart, and how much less context the chosen one
    needs than each (the rule: at least the cost margin less than every other contender)."""
    best, leader = decision["best"], decision.get("leader")
    among = decision.get("tie_among") or decision.get("contenders") or []
    others = [name for name in among if name != best]
    prob = pct((decision.get("prob_best") or {}).get(leader))
    if decision.get("ceiling") is not None and decision.get("tie_among"):
        # Level at the ceiling: the questions are too easy to separate them, and the reader is told so.
        every = "both" if len(among) == 2 else f"all {len(among)}"
        lead = f"{every} reach its ceiling of {figure(float(decision['ceiling']))}; {FIX_HARDER}"
    elif leader == best:
        lead = f"it leads, but is best in only {prob} of the bootstrap resamples"
    else:
        named = "the leader" if others == [leader] else f"the leader, {leader},"
        lead = f"{named} is best in only {prob} of the bootstrap resamples"
    n = decision.get("n_questions")
    margin = float(decision.get("cost_margin") or 0.1)
    rivals = "one at the ceiling" if decision.get("ceiling") is not None and decision.get("tie_among") else "contender"
    return (
        f"Use {best}: the data cannot tell it from {join(others) if others else 'the other contenders'} on {metric} "
        f"over {plural(int(n or 0), 'question')} ({lead}), and it needs the least context, "
        f"{_costs_against(decision, best, others)}: at least {margin:.0%} less than every other {rivals}."
    )


def equivalent_verdict(decision: Mapping[str, Any], metric: str) -> str:
    """Practically equivalent contenders: each one's interval of difference to the leader within ±the margin, so
    the one needing the least context is chosen (``Decision.equivalence``)."""
    best, equivalence = decision["best"], decision["equivalence"]
    others = [name for name in equivalence["configurations"] if name != best]
    margin = figure(float(equivalence["margin"]))
    level = f"{float(equivalence.get('confidence') or 0.95):.0%}"
    n = int(decision.get("n_questions") or 0)
    mine, theirs = cost_in(decision, best), [cost_in(decision, name) for name in others]
    if mine is not None and theirs and all(cost is not None and cost == mine for cost in theirs):
        cost = f"they need the same context ({tokens(mine)} tokens per question), so either will do"
    else:
        cost = f"it needs the least context, {_costs_against(decision, best, others)}"
    return (
        f"Use {best}: it is equivalent to {join(others)} on {metric} within ±{margin} over {plural(n, 'question')} "
        f"(the {level} interval of every difference lies inside the margin; more questions would not separate them), "
        f"and {cost}."
    )


def _costs_against(decision: Mapping[str, Any], name: str, others: Sequence[str]) -> str:
    """``N tokens per question against M for B and K for C``, naming at most ``NAMED_COSTS`` others, cheapest
    first, and the most any of the rest needs."""
    mine = cost_in(decision, name)
    priced = sorted((cost, other) for other in others if (cost := cost_in(decision, other)) is not None)
    text = f"{tokens(mine)} tokens per question" if mine is not None else "an unknown number of tokens"
    if not priced:
        return text
    named = [f"{tokens(cost)} for {other}" for cost, other in priced[:NAMED_COSTS]]
    rest = priced[NAMED_COSTS:]
    if len(rest) == 1:
        named.append(f"{tokens(rest[0][0])} for {rest[0][1]}")
    elif rest:
        named.append(f"up to {tokens(rest[-1][0])} for the {plural(len(rest), 'other')}")
    return f"{text} against {join(named)}"


def cheapest_contender_sentence(decision: Mapping[str, Any], *, among: Sequence[str] | None = None) -> str | None:
    """What to pick when nobody wins and a choice cannot wait: the contender that needs the least context. When
    the contenders are tied, also why that does not break the tie (the rule as ``decision_ranking.py`` computes it).
    ``among``: only these (the configurations at the ceiling), called "the cheapest of them"."""
    # The Decision names none of the configurations built on a model that cannot read a material share of it.
    unnamable = set(unnamable_in(decision))
    pool = decision.get("contenders") or [] if among is None else among
    contenders = [name for name in pool if name not in unnamable]
    role = "contender" if among is None else f"of the {len(contenders)}"
    priced = sorted((cost, name) for name in contenders if (cost := cost_in(decision, name)) is not None)
    if len(contenders) < 2 or len(priced) < 2:
        return None
    lowest, cheapest = priced[0]
    level = [name for cost, name in priced if cost == lowest]
    if len(level) > 1:
        rest = ", the others more" if len(level) < len(priced) else ""
        return (
            f"If a choice is needed now, context cost does not settle it: {some(level)} need the same context "
            f"({tokens(lowest)} tokens per question){rest}."
        )
    margin = float(decision.get("cost_margin") or 0.1)
    # Among the configurations at the ceiling, a clearly cheaper one is simply the cheapest (the tie rule's margin).
    broken = among is not None and priced[0][0] <= (1 - margin) * priced[1][0]
    if decision.get("tied") and len(priced) == len(contenders) and not broken:
        clause = tie_not_broken_clause(priced, float(decision.get("cost_margin") or 0.1))
        return f"If a choice is needed now, {cheapest} is the cheapest {role}, but {clause}."
    costs = _costs_against(decision, cheapest, [name for _, name in priced[1:]])
    return f"If a choice is needed now, {cheapest} is the cheapest {role} ({costs})."


def insufficient_verdict(decision: Mapping[str, Any], metric: str) -> str:
    """Too little data for any Decision: fewer than 2 configurations, or too few questions scored by all."""
    names = list(decision.get("contenders") or decision.get("means") or [])
    minimum = decision.get("min_questions")
    if len(names) < 2:
        return too_few_configurations_sentence(names)
    if minimum is None:  # Decided before the rule's minimum was stored: its first reason says what was short.
        return str((decision.get("reasons") or [f"Not enough data to decide on {metric}."])[0])
    return too_few_questions_sentence(
        int(decision.get("n_questions") or 0), int(minimum), int(decision.get("dropped_questions") or 0), metric
    )


def too_few_configurations_sentence(names: Sequence[str]) -> str:
    only = f"only '{names[0]}'" if names else "none"
    return f"Nothing to compare: a decision needs at least 2 configurations ({only} given)."


def too_few_questions_sentence(n: int, minimum: int, dropped: int, metric: str) -> str:
    scored = f"Only {plural(n, 'question')} scored" if n else "No question scored"
    scored += " for every configuration"
    if dropped:
        return (
            f"{scored} ({dropped} left out because a configuration has no score for them); a decision on {metric} "
            f"needs at least {minimum}. Fix the failed cells, or add questions, and run again."
        )
    return f"{scored}; a decision on {metric} needs at least {minimum}. Add questions and run again."


def _legacy_why(decision: Mapping[str, Any]) -> dict[str, Any] | None:
    """``no_clear_winner`` (Experiments decided before ``cannot_tell``) read as the cause it would have today: too
    few questions when it estimated how many more, else noise."""
    leader, runner_up = decision.get("leader"), decision.get("runner_up")
    contenders = [name for name in decision.get("contenders") or [] if name != leader]
    second = runner_up if runner_up in contenders else (contenders[0] if contenders else None)
    if decision.get("status") != "no_clear_winner" or not leader or not second:
        return None
    means = decision.get("means") or {}
    difference = abs(float(means.get(leader, 0.0)) - float(means.get(second, 0.0)))
    why: dict[str, Any] = {"configurations": [leader, second], "n_questions": decision.get("n_questions")}
    if decision.get("questions_needed"):
        return why | {
            "cause": "too_few_questions",
            "difference": difference,
            "questions_needed": decision["questions_needed"],
        }
    return why | {
        "cause": "noise",
        "difference": difference,
        "practical_margin": decision.get("practical_margin") or 0.0,
    }


def with_verdict(decision: Mapping[str, Any]) -> dict[str, Any]:
    """The stored Decision with its ``verdict`` written now, so an Experiment decided under older wording reads
    like a new one. ``summary`` (the first sentence before the verdict existed) is dropped: no face shows two."""
    view = {name: value for name, value in decision.items() if name != "summary"}
    view["verdict"] = verdict(decision)
    return view


def no_decision_sentence(experiment_status: str | None) -> str:
    """An Experiment without a Decision: still running, or ended before one was made."""
    if experiment_status == "running":
        return "No decision yet: the experiment is still running."
    ended = {"failed": "failed", "cancelled": "was cancelled"}.get(experiment_status or "")
    return f"No decision: the experiment {ended} before one was made." if ended else "No decision has been made."


# ------------------------------------------------------------------------------------------- why nobody wins


def cannot_tell_sentence(metric: str, why: Mapping[str, Any]) -> str:
    """The cannot-tell Decision in one sentence: why the benchmark cannot separate the configurations (``why`` is
    ``Decision.cannot_tell``) and what would; ``metric`` as the reader should see it."""
    cause, names, n = why.get("cause"), list(why.get("configurations") or []), why.get("n_questions")
    if cause == "language":
        return language_sentence(metric, why)
    if cause == "ceiling":
        return (
            f"The benchmark cannot tell {len(names)} configurations apart on {metric}: {some(names)} all reach its "
            f"ceiling of {figure(float(why.get('ceiling') or 0.0))} on the {n} questions; {FIX_HARDER}."
        )
    first, second = names[0], names[1]  # every other cause names the two it could not separate
    if cause == "context":
        context, means = why.get("context") or {}, why.get("budget_means") or {}
        return (
            f"The benchmark cannot tell whether {first} is better on {metric}: it leads only by sending more context "
            f"({figure(context.get(first) or 0.0)} tokens per question against "
            f"{figure(context.get(second) or 0.0)} for {second}), and with both cut to {why.get('budget'):,} tokens "
            f"{second} scores "
            f"{figure(means.get(second) or 0.0)} against {figure(means.get(first) or 0.0)}; compare them at equal "
            f"budget, or rerun {first} with a smaller k."
        )
    difference = float(why.get("difference") or 0.0)
    if cause == "too_few_questions":
        needed = int(why.get("questions_needed") or 0)
        total = f" ({needed + n:,} in all)" if isinstance(n, int) else ""
        return (
            f"The benchmark cannot tell {first} from {second} on {metric} with {n} questions ({figure(difference)} "
            f"apart on average): about {needed:,} more questions{total} would likely separate them."
        )
    margin = float(why.get("practical_margin") or 0.0)
    if why.get("questions_needed_beyond"):
        return (
            f"The benchmark cannot tell {first} from {second} on {metric}: they differ by {figure(difference)} on "
            f"average, too little for more questions to separate them (over {MAX_QUESTIONS_FACTOR} times the {n} "
            f"scored would be needed); {FIX_HARDER}."
        )
    if difference == 0:
        gap = "they have the same mean"
    elif difference <= margin:
        gap = f"they differ by {figure(difference)} on average, within the practical margin of {figure(margin)}"
    else:
        gap = f"they differ by {figure(difference)} on average, less than the noise between the {n} questions"
    return f"The benchmark cannot tell {first} from {second} on {metric}: {gap}; {FIX_HARDER}."
