"""Cheaper grids: successive halving over the questions, stopping configurations ruled out with high confidence.

Every surviving configuration is scored on a seeded random subset of the questions (a *rung*); the subset grows
by ``eta`` each rung until it holds every question. After each rung but the last, a configuration is **ruled
out** when the upper end of its paired-bootstrap interval of (configuration − rung leader), in the "better"
direction, lies below ``−margin`` (``evaluation.stats.paired_bootstrap``), at a confidence corrected for the
number of calls made:

* the family-wise error ``α = 1 − confidence`` is split evenly over the rungs that can prune (Bonferroni
  across rungs): ``α_rung = α / (rungs − 1)``;
* within a rung, the ``m`` comparisons with the leader share ``α_rung`` by Holm's step-down rule: while some
  remaining comparison is significant at ``α_rung / m_remaining`` (one-sided), those are ruled out and
  ``m_remaining`` shrinks (``correction="bonferroni"``: ``α_rung / m`` once);

so the chance that pruning stops any configuration that is in fact within the margin of the leader is at most
``α`` (the leader of a rung is itself chosen from the data, so this holds approximately). Only the confidently
bad configurations stop, never a fixed share; the rung's leader and its runner-up always continue, so the final
Decision (``decision.py``, unchanged) compares at least two configurations on every question.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkbench.benchmarking.model import CellResult, PruneOptions
from chunkbench.evaluation.stats import complete_matrix, holm_step_down, paired_bootstrap

# Fewer questions than this make bootstrap intervals rough: the first rung never has fewer (unless the set does).
MIN_RUNG_QUESTIONS = 10
# The corrected tails are small (α / (rungs − 1) / m, e.g. 1e-4): enough resamples that the percentile at that
# tail is an order statistic of the resamples rather than their maximum.
PRUNE_RESAMPLES = 10_000
# Configurations that always continue: the leader and its runner-up (the final Decision needs two).
KEEP = 2


@dataclass(frozen=True)
class RuledOut:
    """A configuration pruning stopped: after which rung, on how many questions, its mean there, and its
    difference to the rung's leader (observed, low, high; in the metric's own direction) at the corrected level."""

    config_key: str
    rung: int
    questions: int
    mean: float
    leader: str
    leader_mean: float
    difference: tuple[float, float, float]
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "config_key": self.config_key, "rung": self.rung, "questions": self.questions, "mean": self.mean,
            "leader": self.leader, "leader_mean": self.leader_mean, "difference": list(self.difference),
            "confidence": self.confidence,
        }  # fmt: skip


@dataclass(frozen=True)
class RungCall:
    """What one rung decided: its leader, the configurations it ruled out, and the level each comparison was at."""

    leader: str | None
    ruled_out: tuple[RuledOut, ...]
    alpha: float
    n_questions: int
    notes: tuple[str, ...] = ()


@dataclass
class PruningRecord:
    """A pruned run as the Experiment stores it (``provenance["pruning"]``): the options, the questions' order
    (each rung scores a prefix of it), and per rung its size, survivors and the configurations it ruled out."""

    options: PruneOptions
    order: list[str]
    sizes: list[int]
    metric: str
    rungs: list[dict[str, Any]] = field(default_factory=list)
    pruned: list[RuledOut] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "options": self.options.model_dump(mode="json"),
            "metric": self.metric,
            "rule": rule_sentence(self.options, len(self.sizes)),
            "order": list(self.order),
            "sizes": list(self.sizes),
            "rungs": list(self.rungs),
            "pruned": [p.to_dict() for p in self.pruned],
        }


def rung_sizes(n_questions: int, options: PruneOptions) -> list[int]:
    """How many questions each rung scores: the first share (at least ``MIN_RUNG_QUESTIONS``), times ``eta`` each
    rung, the last every question. One rung (no pruning) when the set is too small to split."""
    if n_questions <= 0:
        return []
    first = min(n_questions, max(math.ceil(n_questions * options.first_share), MIN_RUNG_QUESTIONS))
    sizes = [first]
    while sizes[-1] < n_questions:
        sizes.append(min(n_questions, sizes[-1] * options.eta))
    return sizes


def question_order(question_ids: Sequence[str], seed: int) -> list[str]:
    """The questions in the seeded random order the rungs take them in (the same seed, the same order)."""
    permutation = np.random.Generator(np.random.PCG64([seed, 0x70_72_75_6E])).permutation(len(question_ids))
    return [question_ids[int(i)] for i in permutation]


def rule_sentence(options: PruneOptions, rungs: int) -> str:
    """The rule in one sentence, as the reports and the README state it."""
    correction = "Holm's step-down rule" if options.correction == "holm" else "Bonferroni"
    return (
        f"Successive halving over {rungs} rung(s) (questions ×{options.eta} each rung): after each rung but the "
        f"last, a configuration stops when its paired-bootstrap difference to the rung's leader is below "
        f"−{options.margin:g} with family-wise confidence {options.confidence:.0%} (the error split evenly over the "
        f"pruning rungs, and over each rung's comparisons by {correction}); the leader and runner-up always continue."
    )


def rule_out(
    scores: Mapping[str, Sequence[float | None]],
    *,
    higher_is_better: bool,
    alpha: float,
    margin: float = 0.0,
    correction: str = "holm",
    rung: int = 1,
    n_resamples: int = PRUNE_RESAMPLES,
    seed: int = 0,
) -> RungCall:
    """The configurations one rung rules out at family-wise error ``alpha`` (``correction``: holm, bonferroni, or
    none for the uncorrected one-sided test), from ``scores[config][question]``, in input order."""
    configs, matrix, _ = complete_matrix(scores)
    if len(configs) <= KEEP or matrix.shape[0] < 2:
        notes = () if len(configs) <= KEEP else (f"Only {matrix.shape[0]} question(s) scored by all: none stopped.",)
        return RungCall(None, (), alpha, int(matrix.shape[0]), notes)
    sign = 1.0 if higher_is_better else -1.0
    observed = matrix.mean(axis=0) * sign
    # Best first; input order breaks exact ties (as paired_bootstrap picks its leader).
    ranked = sorted(range(len(configs)), key=lambda i: (-observed[i], i))
    leader, runner_up = configs[ranked[0]], configs[ranked[1]]
    candidates = [name for name in configs if name not in (leader, runner_up)]
    tested = len(configs) - 1  # every comparison with the leader is in the family, the runner-up's too
    ruled: dict[str, tuple[tuple[float, float, float], float]] = {}
    results: dict[float, Any] = {}

    def significant(tail: float) -> dict[str, tuple[float, float, float]]:
        if tail not in results:
            results[tail] = paired_bootstrap(
                scores, n_resamples=n_resamples, seed=seed, higher_is_better=higher_is_better, confidence=1 - 2 * tail
            )
        result = results[tail]
        out = {}
        for name in candidates:
            if name in ruled:
                continue
            difference = result.diff_to_leader[name]
            # The bound nearest the leader, in the "better" direction: below −margin means worse with confidence.
            if max(sign * difference[1], sign * difference[2]) < -margin:
                out[name] = difference
        return out

    if correction == "holm":
        ruled = {name: (d, 1 - tail) for name, (d, tail) in holm_step_down(significant, tested, alpha).items()}
    else:
        tail = alpha / tested if correction == "bonferroni" else alpha
        ruled = {name: (difference, 1 - tail) for name, difference in significant(tail).items()}
    n_questions = int(matrix.shape[0])
    means = dict(zip(configs, matrix.mean(axis=0).tolist(), strict=True))
    return RungCall(
        leader,
        tuple(
            RuledOut(name, rung, n_questions, means[name], leader, means[leader], ruled[name][0], ruled[name][1])
            for name in configs
            if name in ruled
        ),
        alpha,
        n_questions,
    )


def rung_scores(
    results: Sequence[CellResult], keys: Sequence[str], question_ids: Sequence[str], metric: str
) -> dict[str, list[float | None]]:
    """``scores[config][question]`` on ``metric`` for a rung's configurations and questions (None: failed, missing)."""
    by_cell = {(r.config_key, r.question_id): r for r in results}
    out: dict[str, list[float | None]] = {}
    for key in keys:
        column: list[float | None] = []
        for question_id in question_ids:
            result = by_cell.get((key, question_id))
            value = None if result is None or not result.ok else result.metrics.get(metric)
            column.append(None if value is None else float(value))
        out[key] = column
    return out


def pruning_alpha(options: PruneOptions, rungs: int) -> float:
    """Each pruning rung's share of the family-wise error (Bonferroni across the rungs that can prune)."""
    return (1 - options.confidence) / max(1, rungs - 1)
