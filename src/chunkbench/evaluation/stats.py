"""Paired bootstrap over questions: how sure are we that one configuration's mean score beats the others?

Every configuration answered the same questions, so resampling *questions* (not scores per configuration)
keeps the pairing: a hard question is hard for all of them, and the differences between configurations
are much less noisy than their means. Each resample draws question indices with replacement
(``numpy.random.Generator(PCG64(seed))``), and every configuration's mean is taken over the same draw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

T = TypeVar("T")

# Resamples are processed in blocks of at most this many drawn indices, so memory stays bounded (~16 MB)
# for large question sets; the block size depends only on the input, so results stay deterministic.
_MAX_BLOCK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class BootstrapResult:
    """Observed means, the leader, each configuration's probability of being best and its paired
    difference to the leader with a percentile interval.

    ``diff_to_leader[config] = (observed mean of config − leader, lower, upper)`` at ``confidence``
    (2.5 % and 97.5 % percentiles by default); ``diff_sd[config]`` is the sample SD of the per-question
    differences config − leader. ``configs`` keeps the input order.
    """

    configs: list[str]
    means: dict[str, float]
    leader: str
    prob_best: dict[str, float]
    diff_to_leader: dict[str, tuple[float, float, float]]
    diff_sd: dict[str, float]
    n_questions: int
    dropped_questions: int
    n_resamples: int
    seed: int
    higher_is_better: bool
    confidence: float = 0.95
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "configs": list(self.configs),
            "means": dict(self.means),
            "leader": self.leader,
            "prob_best": dict(self.prob_best),
            "diff_to_leader": {name: list(values) for name, values in self.diff_to_leader.items()},
            "diff_sd": dict(self.diff_sd),
            "n_questions": self.n_questions,
            "dropped_questions": self.dropped_questions,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "higher_is_better": self.higher_is_better,
            "confidence": self.confidence,
            "notes": list(self.notes),
        }


def _is_missing(value: float | None) -> bool:
    return value is None or not math.isfinite(float(value))


def complete_matrix(scores: Mapping[str, Sequence[float | None]]) -> tuple[list[str], np.ndarray, int]:
    """``(configs, matrix[question, config], dropped)``: only questions every configuration has a finite
    score for. A ``ValueError`` when configurations have different numbers of questions."""
    configs = list(scores)
    if not configs:
        raise ValueError("No configurations to compare.")
    lengths = {name: len(values) for name, values in scores.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}: {length}" for name, length in lengths.items())
        raise ValueError(f"Every configuration must have a score slot for every question ({detail}).")
    total = lengths[configs[0]]
    # NaN or inf is treated like None: a question some configuration could not be scored on.
    keep = [i for i in range(total) if not any(_is_missing(scores[name][i]) for name in configs)]
    # cast: _is_missing has ruled out None on every kept question.
    matrix = np.array([[float(cast(float, scores[name][i])) for name in configs] for i in keep], dtype=np.float64)
    return configs, matrix.reshape(len(keep), len(configs)), total - len(keep)


def _best_index(values: np.ndarray, higher_is_better: bool) -> int:
    """The first index of the best value (input order breaks exact ties)."""
    return int(np.argmax(values) if higher_is_better else np.argmin(values))


def _resampled_means(matrix: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """``(n_resamples, n_configs)``: each configuration's mean over the same resampled questions."""
    n_questions = matrix.shape[0]
    rng = np.random.Generator(np.random.PCG64(seed))
    block = max(1, min(n_resamples, _MAX_BLOCK_ELEMENTS // n_questions))
    out = np.empty((n_resamples, matrix.shape[1]), dtype=np.float64)
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        indices = rng.integers(0, n_questions, size=(size, n_questions))
        # How often each question was drawn in each resample; counts @ scores / n = the resampled means.
        offsets = (np.arange(size) * n_questions)[:, None]
        counts = np.bincount((indices + offsets).ravel(), minlength=size * n_questions).reshape(size, n_questions)
        out[start : start + size] = counts @ matrix / n_questions
    return out


def paired_bootstrap(
    scores: Mapping[str, Sequence[float | None]],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    higher_is_better: bool = True,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap of per-question scores (``scores[config][i]`` = question i's score for config).

    Questions where any configuration has no score are dropped (and counted). ``prob_best`` is the share of
    resamples in which a configuration has the best mean, exact ties split evenly. Deterministic: the same
    input and seed give identical output. A ``ValueError`` when no question is left.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    configs, matrix, dropped = complete_matrix(scores)
    n_questions = matrix.shape[0]
    if n_questions == 0:
        raise ValueError(f"No question has a score for every configuration ({dropped} dropped).")

    observed = matrix.mean(axis=0)
    leader_index = _best_index(observed, higher_is_better)
    leader = configs[leader_index]

    means = _resampled_means(matrix, n_resamples, seed)
    best = means.max(axis=1) if higher_is_better else means.min(axis=1)
    # Resampled means of configurations with identical scores are computed identically, so their ties are
    # exact; the tolerance only absorbs summation-order rounding between different score columns.
    tolerance = 1e-12 * np.maximum(1.0, np.abs(best))
    is_best = np.abs(means - best[:, None]) <= tolerance[:, None]
    shares = (is_best / is_best.sum(axis=1, keepdims=True)).mean(axis=0)

    tail = (1 - confidence) / 2 * 100
    differences = means - means[:, [leader_index]]
    lower = np.percentile(differences, tail, axis=0)
    upper = np.percentile(differences, 100 - tail, axis=0)
    per_question = matrix - matrix[:, [leader_index]]
    sds = per_question.std(axis=0, ddof=1) if n_questions > 1 else np.zeros(len(configs))

    notes = []
    if n_questions < 10:
        notes.append(f"Only {n_questions} questions: bootstrap intervals are rough with so few.")
    return BootstrapResult(
        configs=configs,
        means={name: float(observed[i]) for i, name in enumerate(configs)},
        leader=leader,
        prob_best={name: float(shares[i]) for i, name in enumerate(configs)},
        diff_to_leader={
            name: (float(observed[i] - observed[leader_index]), float(lower[i]), float(upper[i]))
            for i, name in enumerate(configs)
        },
        diff_sd={name: float(sds[i]) for i, name in enumerate(configs)},
        n_questions=n_questions,
        dropped_questions=dropped,
        n_resamples=n_resamples,
        seed=seed,
        higher_is_better=higher_is_better,
        confidence=confidence,
        notes=notes,
    )


def holm_step_down(test: Callable[[float], Mapping[str, T]], family: int, alpha: float) -> dict[str, tuple[T, float]]:
    """Holm's step-down rule over ``family`` comparisons sharing the family-wise error ``alpha``: while some
    comparison not yet rejected is significant at ``alpha / remaining`` (``test(level)`` → the significant ones,
    with what each found), those are rejected and ``remaining`` shrinks. Name → (what the test found, its level)."""
    rejected: dict[str, tuple[T, float]] = {}
    while len(rejected) < family:
        level = alpha / (family - len(rejected))
        found = {name: value for name, value in test(level).items() if name not in rejected}
        if not found:
            break
        rejected.update({name: (value, level) for name, value in found.items()})
    return rejected
