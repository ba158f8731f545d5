"""The sentences that say a Decision: each is written by one function here, and a test pins it.

``decision.py`` (with ``decision_ranking.py`` and ``equal_budget.py``) computes the Decision and calls these for its
reasons (the details); ``verdict`` writes the one text a reader sees first, from the Decision as stored, so the
dashboard, both reports and the CLI show the same words (``service.experiment_dict`` puts it in the Experiment as
``decision.verdict``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chunkbench.benchmarking.report.formatting import metric_name, pct
from chunkbench.embedding.languages import language_label, percent

FIX_HARDER = "harder questions, a smaller k or a larger corpus would separate them"
# Mirrors decision_ranking.MAX_QUESTIONS_FACTOR (this module is imported by decision_ranking.py, so it cannot import
# it back).
MAX_QUESTIONS_FACTOR = 100
# How many configurations a sentence names before it counts the rest.
NAMED_AT_CEILING = 4
# How many other contenders a cost comparison names before it sums up the rest.
NAMED_COSTS = 2


def figure(value: float) -> str:
    """A figure as a sentence shows it: thousands grouped above 100, three decimals below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}"


def tokens(value: float) -> str:
    """Context tokens as a sentence shows them: a whole number, thousands grouped."""
    return f"{value:,.0f}"


def _join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _some(names: Sequence[str]) -> str:
    """At most ``NAMED_AT_CEILING`` names, then how many more."""
    named = list(names[:NAMED_AT_CEILING])
    rest = len(names) - len(named)
    return _join([*named, f"{rest} more"]) if rest else _join(named)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# ------------------------------------------------------------------------------------------- the verdict


def verdict(decision: Mapping[str, Any]) -> str:
    """The verdict on a Decision (``Decision.to_dict()``, or one stored before this wording): led by the winner at
    the budget when it is not the one at full context (``budget_sentence``), then who wins, at what confidence and
    context cost, or why the benchmark cannot tell and what would; when nobody wins, the cheapest contender for a
    choice that cannot wait."""
    full = full_context_verdict(decision)
    budgeted = budget_sentence(decision)
    return f"{budgeted} {full}" if budgeted else full


def budget_sentence(decision: Mapping[str, Any]) -> str | None:
    """The budgeted answer beside the full-context one, when they name different configurations: who leads with
    every context cut to the budget, and who leads with the full context (``Decision.budget_matched``)."""
    matched = decision.get("budget_matched") or {}
    at_budget, means = matched.get("leader"), matched.get("means") or {}
    full = decision.get("best") or decision.get("leader")
    if decision.get("status") == "insufficient_data" or not at_budget or not full or at_budget == full:
        return None
    if int(matched.get("n_questions") or 0) < int(decision.get("min_questions") or 5) or at_budget not in means:
        return None
    # The configuration named by the Decision is the one that may not be named (language rule): say nothing.
    if at_budget in _unnamable(decision) or full in _unnamable(decision):
        return None
    budget_metric = metric_name(str(matched.get("metric") or decision.get("metric") or "the metric"))
    metric = metric_name(str(decision.get("metric") or "the metric"))
    full_mean = (decision.get("means") or {}).get(full)
    cost = _cost(decision, full)
    if cost is None and isinstance((matched.get("context") or {}).get(full), int | float):
        cost = float(matched["context"][full])
    sends = f" at {tokens(cost)} tokens" if cost is not None else ""
    same = budget_metric == metric
    on = "" if same else f" on {metric}"
    score = f"{figure(full_mean)}{'' if same else ' ' + metric}{sends}" if full_mean is not None else sends.strip()
    return (
        f"At {int(matched['budget']):,} context tokens per question, {at_budget} leads on {budget_metric} "
        f"({figure(float(means[at_budget]))}); with the full context, {full} leads{on} ({score})."
    ).replace(" ()", "")


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


def _cost(decision: Mapping[str, Any], name: str) -> float | None:
    value = (decision.get("costs") or {}).get(name)
    return float(value) if isinstance(value, int | float) else None


def _sends(decision: Mapping[str, Any], name: str) -> str:
    cost = _cost(decision, name)
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
        standing = f", though {_join(others)} cannot be ruled out at {level} confidence"
    elif runner_up:
        standing = f", every other configuration ruled out at {level} confidence"
    else:
        standing = ""
    n = decision.get("n_questions")
    return (
        f"Use {best}: it is the best configuration on {metric} over {_plural(int(n or 0), 'question')}, mean "
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
        f"Use {best}: the data cannot tell it from {_join(others) if others else 'the other contenders'} on {metric} "
        f"over {_plural(int(n or 0), 'question')} ({lead}), and it needs the least context, "
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
    mine, theirs = _cost(decision, best), [_cost(decision, name) for name in others]
    if mine is not None and theirs and all(cost is not None and cost == mine for cost in theirs):
        cost = f"they need the same context ({tokens(mine)} tokens per question), so either will do"
    else:
        cost = f"it needs the least context, {_costs_against(decision, best, others)}"
    return (
        f"Use {best}: it is equivalent to {_join(others)} on {metric} within ±{margin} over {_plural(n, 'question')} "
        f"(the {level} interval of every difference lies inside the margin; more questions would not separate them), "
        f"and {cost}."
    )


def _costs_against(decision: Mapping[str, Any], name: str, others: Sequence[str]) -> str:
    """``N tokens per question against M for B and K for C``, naming at most ``NAMED_COSTS`` others, cheapest
    first, and the most any of the rest needs."""
    mine = _cost(decision, name)
    priced = sorted((cost, other) for other in others if (cost := _cost(decision, other)) is not None)
    text = f"{tokens(mine)} tokens per question" if mine is not None else "an unknown number of tokens"
    if not priced:
        return text
    named = [f"{tokens(cost)} for {other}" for cost, other in priced[:NAMED_COSTS]]
    rest = priced[NAMED_COSTS:]
    if len(rest) == 1:
        named.append(f"{tokens(rest[0][0])} for {rest[0][1]}")
    elif rest:
        named.append(f"up to {tokens(rest[-1][0])} for the {_plural(len(rest), 'other')}")
    return f"{text} against {_join(named)}"


def cheapest_contender_sentence(decision: Mapping[str, Any], *, among: Sequence[str] | None = None) -> str | None:
    """What to pick when nobody wins and a choice cannot wait: the contender that needs the least context. When
    the contenders are tied, also why that does not break the tie (the rule as ``decision_ranking.py`` computes it).
    ``among``: only these (the configurations at the ceiling), called "the cheapest of them"."""
    # The Decision names none of the configurations built on a model that cannot read a material share of it.
    unnamable = set(_unnamable(decision))
    pool = decision.get("contenders") or [] if among is None else among
    contenders = [name for name in pool if name not in unnamable]
    role = "contender" if among is None else f"of the {len(contenders)}"
    priced = sorted((cost, name) for name in contenders if (cost := _cost(decision, name)) is not None)
    if len(contenders) < 2 or len(priced) < 2:
        return None
    lowest, cheapest = priced[0]
    level = [name for cost, name in priced if cost == lowest]
    if len(level) > 1:
        rest = ", the others more" if len(level) < len(priced) else ""
        return (
            f"If a choice is needed now, context cost does not settle it: {_some(level)} need the same context "
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


def _unnamable(decision: Mapping[str, Any]) -> list[str]:
    """The configurations the Decision may not name: built on a model that does not cover a material share of it."""
    language = decision.get("language") or {}
    return list(language.get("configurations") or []) if language.get("material", True) else []


def tie_not_broken_clause(priced: Sequence[tuple[float, str]], margin: float) -> str:
    """Why context cost does not break a tie, as computed: the cheapest contender is not ``margin`` below the next
    cheapest (``priced``: every contender's cost, cheapest first), so not below every other one."""
    (cheapest_cost, cheapest), (next_cost, runner) = priced[0], priced[1]
    less = 1 - cheapest_cost / next_cost if next_cost else 0.0
    named = f"{runner}, the next cheapest" if len(priced) > 2 else runner
    gap = f"only {less:.0%} less than the {tokens(next_cost)} of {named}" if less > 0 else f"as much as {named}"
    return (
        f"the tie is not broken by context cost: {cheapest} needs {tokens(cheapest_cost)} tokens per question, {gap}, "
        f"and a tie is broken only when one contender needs at least {margin:.0%} less than every other"
    )


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
    scored = f"Only {_plural(n, 'question')} scored" if n else "No question scored"
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
            f"The benchmark cannot tell {len(names)} configurations apart on {metric}: {_some(names)} all reach its "
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


def _languages(codes: Sequence[str]) -> str:
    return _join([language_label(code) for code in codes])


def language_sentence(metric: str, why: Mapping[str, Any]) -> str:
    """The cannot-tell Decision of cause ``language``: the configuration that leads is built on a model that does
    not cover a language of the benchmark's documents, so its lead is on scores that mean nothing."""
    (name,) = why["configurations"]
    role = "Corpus" if why.get("role", "corpus") == "corpus" else "Boundary"
    covering = list(why.get("covering_models") or [])
    fix = f"benchmark configurations built on a model that covers it ({covering[0]})" if covering else (
        "benchmark configurations built on a model that covers it"
    )  # fmt: skip
    return (
        f"The benchmark cannot name {name} on {metric}: it leads, but its {role} model {why['model_id']} does not "
        f"cover {_languages(why['languages'])}, a language of the benchmark's documents, so its scores are not "
        f"meaningful; {fix}."
    )


# ------------------------------------------------------------------------------------------- the reasons


def dropped_sentence(dropped: int) -> str:
    return (
        f"{dropped} question{'s were' if dropped != 1 else ' was'} left out because at least one configuration "
        "has no score for it."
    )


def winner_reason(leader: str, metric: str, mean: float, runner_up: tuple[str, float] | None, prob: float,
                  n_resamples: int, n_questions: int) -> str:  # fmt: skip
    against = f" vs {figure(runner_up[1])} for {runner_up[0]}" if runner_up else ""
    return (
        f"{leader} is the best configuration on {metric}: mean {figure(mean)}{against}, best in {prob:.0%} of "
        f"{n_resamples:,} bootstrap resamples of the {n_questions} questions."
    )


def tie_broken_reason(metric: str, contenders: Sequence[str], leader: str, prob: float, best: str,
                      priced: Sequence[tuple[float, str]], tie_break: str) -> str:  # fmt: skip
    listed = ", ".join(f"{figure(cost)} for {name}" for cost, name in priced[1:])
    return (
        f"tie on {metric}, broken by {tie_break}: {', '.join(contenders)} cannot be told apart (leader {leader} best "
        f"in only {prob:.0%} of resamples), and {best} needs the least context ({figure(priced[0][0])} tokens vs "
        f"{listed})."
    )


def ceiling_clause(names: Sequence[str]) -> str:
    """Why a tie at the metric's ceiling is not broken: the questions cannot tell those configurations apart."""
    return f"{_some(names)} all reach the metric's ceiling, so the questions cannot tell them apart"


def unpriced_clause(unpriced: Sequence[str]) -> str:
    return f"the tie cannot be broken by context cost because it is unknown for {', '.join(unpriced)}"


def leads_reason(leader: str, metric: str, mean: float, prob: float, others: Sequence[str], why: str | None, *,
                 close: Sequence[str] = (), margin: float = 0.0) -> str:  # fmt: skip
    """The leader's lead that the data does not confirm: too rarely best, or (``close``) ahead of some contenders by
    no more than the practical ``margin``; ``why``: why a tie is not broken by cost, when tied."""
    if close:
        lead = (
            f"{leader} leads on {metric} with mean {figure(mean)}, best in {prob:.0%} of resamples, but by no more "
            f"than the practical margin of {figure(margin)} over {', '.join(close)}"
        )
    else:
        lead = (
            f"{leader} leads on {metric} with mean {figure(mean)} but is best in only {prob:.0%} of resamples, and "
            f"{', '.join(others)} cannot be ruled out"
        )
    return f"{lead}{'; ' + why if why else ''}."


def kept_contender_reason(name: str, leader: str, gap: float, worse: str, interval: str, prob: float,
                          min_prob_best: float, level: str) -> str:  # fmt: skip
    return (
        f"{name} is not ruled out at {level} ({figure(gap)} {worse} on average, {interval}), but {leader} is best in "
        f"{prob:.0%} of resamples, above the {min_prob_best:.0%} required."
    )


def contender_reason(name: str, leader: str, gap: float, worse: str, interval: str, *, holm: int | None = None) -> str:
    """A contender; ``holm``: the comparisons of the Holm correction it was not ruled out with (a large grid)."""
    average = f"{figure(gap)} {worse} than {leader} on average" if gap else f"level with {leader} on average"
    corrected = f", not enough to rule it out with Holm's correction over {holm} comparisons" if holm else ""
    return f"{name} is still a contender: {average} ({interval}){corrected}."


def interval_text(level: str, name: str, leader: str, low: float, high: float) -> str:
    return f"{level} interval of {name} − {leader}: {figure(low)} to {figure(high)}"


def ruled_out_reason(name: str, metric: str, worse: str, leader: str, gap: float, level: str, low: float,
                     high: float, *, holm: int | None = None) -> str:  # fmt: skip
    """A configuration ruled out; ``holm``: the number of comparisons Holm's correction was made over."""
    how = f" with Holm's correction over {holm} comparisons" if holm else ""
    return (
        f"{name} is ruled out{how}: its {metric} is {worse} than {leader}'s by {figure(gap)} ({level} interval "
        f"{figure(low)} to {figure(high)})."
    )


def holm_reason(configurations: int, ruled_out: int, level: str) -> str:
    """The family-wise rule a large grid is ruled out with (``decision.HOLM_MIN_CONFIGURATIONS``)."""
    return (
        f"With {configurations} configurations, ruled out means ruled out with Holm's correction over the "
        f"{configurations - 1} comparisons to the leader ({_plural(ruled_out, 'configuration')} ruled out): the "
        f"chance that any configuration as good as the leader is ruled out stays within {100 - int(level[:-1])}%."
    )


def equivalent_reason(metric: str, names: Sequence[str], margin: float, level: str,
                      costs: Sequence[float | None]) -> str:  # fmt: skip
    """Practically equivalent contenders (``names``, cheapest first, with their ``costs``): chosen by cost."""
    priced = ", ".join(f"{name} {tokens(cost)}" if cost is not None else f"{name} unknown"
                       for name, cost in zip(names, costs, strict=True))  # fmt: skip
    return (
        f"{_join(list(names))} are equivalent on {metric} within ±{figure(margin)}: the {level} interval of each "
        f"difference to the leader lies inside the margin, so the one needing the least context is chosen (context "
        f"tokens per question: {priced})."
    )


def beyond_questions_reason(n_questions: int, leader: str, runner_up: str, difference: float) -> str:
    """An estimate of more questions too large to be advice (over ``MAX_QUESTIONS_FACTOR`` times those scored)."""
    return (
        f"{leader} and {runner_up} differ by {figure(difference)}: more questions would not separate them (over "
        f"{MAX_QUESTIONS_FACTOR} times the {n_questions} scored would be needed)."
    )


def same_mean_reason(leader: str, runner_up: str) -> str:
    return (
        f"{leader} and {runner_up} have the same mean: no detectable difference, so more questions are unlikely to "
        "separate them."
    )


def within_margin_reason(leader: str, runner_up: str, difference: float, margin: float) -> str:
    return (
        f"{leader} and {runner_up} differ by {figure(difference)}, within the practical margin of {figure(margin)}: "
        "more questions would not change the decision."
    )


def more_questions_reason(needed: int, n_questions: int, leader: str, runner_up: str, difference: float) -> str:
    return (
        f"About {needed:,} more questions (beyond the {n_questions} scored) would likely separate {leader} from "
        f"{runner_up} (80% power), if the observed difference of {figure(difference)} is real."
    )


def enough_questions_reason(n_questions: int, leader: str, runner_up: str) -> str:
    return (
        f"The {n_questions} questions should already separate {leader} from {runner_up} at 80% power; the remaining "
        "doubt comes from a few questions with large differences, so more questions like these are unlikely to "
        "separate them."
    )


def equal_budget_sentence(
    metric: str,
    winner: str,
    rival: str | None,
    *,
    budget: int,
    means: Mapping[str, float],
    context: Mapping[str, float | None],
) -> str:
    """The equal-budget rule as computed: the winner's lead holds with every context cut to ``budget`` tokens,
    or ``rival`` (sending less context) scores at least as well there."""
    at = f"cut to {budget:,} tokens"
    if rival is None:
        return (
            f"{winner} keeps the win at equal context: {at}, it scores {figure(means[winner])} on {metric}, above "
            "every configuration that sends less context."
        )
    return (
        f"{winner}'s lead does not hold at equal context: {at}, {rival} (median {figure(context.get(rival) or 0.0)} "
        f"context tokens against {figure(context.get(winner) or 0.0)}) scores {figure(means[rival])} on {metric} "
        f"against {figure(means[winner])}."
    )


def uncovered_sentence(names: Sequence[str], languages: Sequence[str], share: str | None = None) -> str:
    """The reason that flags configurations built on a model that does not cover a language of the documents (and,
    when known, the share of the documents and questions in it)."""
    plural = len(names) > 1
    held = f", the language of {share}" if share else ""
    return (
        f"{_join(list(names))} {'are' if plural else 'is'} built on a model that does not cover "
        f"{_languages(languages)}{held}: {'their' if plural else 'its'} scores on those documents are not "
        "meaningful, and the Decision names none of them."
    )


# ------------------------------------------------------------------------------------------- language warnings


def language_reasons(best: str | None, language: Mapping[str, Any]) -> list[str]:
    """Every reason about languages a Decision gives (``Decision.language``): the configurations it names none of,
    when the documents they cannot read are material; else the share they are not meaningful on, and whether the
    named configuration's lead depends on those questions."""
    names, codes = list(language["configurations"]), list(language["languages"])
    if language.get("material", True):
        return [uncovered_sentence(names, codes, language_share(language))]
    reasons = [minority_sentence(language)]
    lead = lead_sentence(best, language) if best else None
    return [*reasons, lead] if lead else reasons


def language_share(language: Mapping[str, Any]) -> str | None:
    """``2 of 52 documents (3.8 %), 4.0 % of the questions`` (the questions alone, in a one-document Experiment); None
    when the Decision's warnings did not record it."""
    questions, total = language.get("questions"), language.get("total_questions")
    if questions is None or not total:
        return None
    documents, of = language.get("documents"), language.get("total_documents")
    held = ""
    if documents is not None and of is not None and of > 1:  # several documents
        held = f"{documents} of {of} documents ({percent(documents / of)}), "
    return f"{held}{percent(questions / total)} of the questions"


def _models(models: Sequence[Sequence[str]]) -> str:
    return _join([f"the {'Corpus' if role == 'corpus' else 'Boundary'} model {model_id}" for role, model_id in models])


def minority_sentence(language: Mapping[str, Any]) -> str:
    """Configurations built on a model that does not cover a few of the documents: the share, and why the Decision
    stands (below the language rule's share)."""
    names = list(language["configurations"])
    models = list(language.get("models") or [])
    share = language_share(language) or "Some of the questions"
    built_on = "them" if len(models) > 1 else "it"
    if language.get("standing") == "unsure":
        sure = language.get("min_confidence")
        why = (
            f"but their language was detected with a confidence below {float(sure if sure is not None else 0.8):.2f},"
            " too unsure to void it, so the Decision stands (set the documents' language if the guess is right)"
        )
    else:
        rule = language.get("material_share")
        below = f"fewer than the {percent(rule)} of the questions" if rule is not None else "too few"
        why = f"but they are {below} at which the Decision names no configuration built on {built_on}, so the " + (
            "Decision stands"
        )
    return (
        f"{share} are in {_languages(language['languages'])}, which {_models(models)} "
        f"{'do' if len(models) > 1 else 'does'} not cover: the scores of {_join(names)} on those questions are not "
        f"meaningful, {why}."
    )


def lead_sentence(best: str | None, language: Mapping[str, Any], *, only_if_it_depends: bool = False) -> str | None:
    """Whether the named configuration's lead depends on the questions its models' languages leave out (the Decision
    made again without them, ``language["without"]``); ``only_if_it_depends``: say nothing when it does not."""
    without = language.get("without")
    if not best or not without:
        return None
    other, n = without.get("best"), int(without.get("n_questions") or 0)
    k = int(language.get("questions") or 0)
    those, them = ("that question", "it") if k == 1 else (f"those {k} questions", "them")
    if other == best:
        if only_if_it_depends:
            return None
        return f"Without {those}, {best} is still named on the other {n}: its lead does not depend on {them}."
    if other:
        return f"{best}'s lead depends on {those}: without {them}, {other} would lead instead (on the other {n})."
    return (
        f"{best}'s lead depends on {those}: without {them}, the benchmark could not name a configuration on the "
        f"other {n}."
    )
