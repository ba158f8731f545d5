"""Paired bootstrap over questions: hand-checkable cases, ties, dropped questions, direction, determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chunkbench.evaluation.stats import complete_matrix, paired_bootstrap


def test_one_differing_question_gives_the_hand_computed_probability() -> None:
    # A beats B only on question 0. A resample of 4 questions misses it with probability (3/4)^4, and then
    # the two tie (each gets half), so P(A best) = 1 − (3/4)^4 / 2 = 0.841796875.
    result = paired_bootstrap({"A": [1, 0, 0, 0], "B": [0, 0, 0, 0]}, n_resamples=20000)
    assert result.prob_best["A"] == pytest.approx(1 - 0.75**4 / 2, abs=0.01)
    assert result.prob_best["A"] + result.prob_best["B"] == pytest.approx(1.0)
    assert result.leader == "A"
    assert result.means == {"A": 0.25, "B": 0.0}
    # B − A per resample is −(times question 0 was drawn)/4: the 2.5 % quantile is −3/4 (drawn 3 times has
    # probability 4·(1/4)^3·(3/4) = 4.7 %, 3 or more 5.1 %), the 97.5 % quantile is 0.
    observed, low, high = result.diff_to_leader["B"]
    assert (observed, low, high) == (-0.25, -0.75, 0.0)
    assert result.diff_to_leader["A"] == (0.0, 0.0, 0.0)
    # Per-question differences B − A: [−1, 0, 0, 0], sample SD = sqrt((0.75² + 3·0.25²) / 3) = 0.5.
    assert result.diff_sd["B"] == pytest.approx(0.5)
    assert (result.n_questions, result.dropped_questions) == (4, 0)


def test_dominating_configuration_is_always_best() -> None:
    result = paired_bootstrap({"low": [0.1, 0.2, 0.3, 0.4, 0.5], "high": [0.3, 0.4, 0.5, 0.6, 0.7]})
    assert result.leader == "high"
    assert result.prob_best == {"low": 0.0, "high": 1.0}
    # A constant paired difference has a zero-width interval.
    assert result.diff_to_leader["low"] == pytest.approx((-0.2, -0.2, -0.2))
    assert result.diff_sd["low"] == pytest.approx(0.0)


def test_identical_configurations_split_every_resample() -> None:
    scores = [0.3, 0.9, 0.1, 0.5, 0.7, 0.2]
    result = paired_bootstrap({"A": scores, "B": list(scores), "C": list(scores)})
    assert result.prob_best == {"A": pytest.approx(1 / 3), "B": pytest.approx(1 / 3), "C": pytest.approx(1 / 3)}
    assert result.leader == "A"  # input order breaks an exact tie of means
    assert result.diff_to_leader["C"] == (0.0, 0.0, 0.0)


def test_lower_is_better_picks_the_smallest_mean() -> None:
    result = paired_bootstrap(
        {"fast": [10, 12, 11, 9, 10], "slow": [20, 25, 22, 19, 21]}, higher_is_better=False, n_resamples=500
    )
    assert result.leader == "fast" and result.prob_best["fast"] == 1.0
    observed, low, high = result.diff_to_leader["slow"]
    assert observed == pytest.approx(11.0) and 0 < low <= observed <= high


def test_questions_without_a_score_for_every_configuration_are_dropped() -> None:
    result = paired_bootstrap(
        {"A": [1.0, None, 0.5, 0.0, float("nan")], "B": [0.0, 1.0, None, 0.0, 1.0]}, n_resamples=100
    )
    # Questions 1 (A None), 2 (B None) and 4 (A NaN) go; 0 and 3 stay.
    assert (result.n_questions, result.dropped_questions) == (2, 3)
    assert result.means == {"A": 0.5, "B": 0.0}
    assert any("Only 2 questions" in note for note in result.notes)


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(1)
    scores = {name: list(rng.uniform(size=50)) for name in ("A", "B", "C")}
    first = paired_bootstrap(scores, seed=7).to_dict()
    again = paired_bootstrap(scores, seed=7).to_dict()
    assert json.dumps(first, allow_nan=False) == json.dumps(again, allow_nan=False)
    other = paired_bootstrap(scores, seed=8).to_dict()
    assert other["prob_best"] != first["prob_best"]
    # The observed means do not depend on the seed.
    assert other["means"] == first["means"]


def test_resampled_means_match_a_plain_loop() -> None:
    # The vectorised resampling (counts @ scores) equals drawing indices and averaging, same generator.
    scores = {"A": [0.1, 0.5, 0.9, 0.3], "B": [0.2, 0.2, 0.8, 0.6]}
    result = paired_bootstrap(scores, n_resamples=300, seed=3)
    rng = np.random.Generator(np.random.PCG64(3))
    indices = rng.integers(0, 4, size=(300, 4))
    matrix = np.array([scores["A"], scores["B"]]).T
    means = matrix[indices].mean(axis=1)
    # Real ties (q0 and q2 drawn: B gains 0.1 on one, A 0.1 on the other) differ by float rounding only.
    tied = np.isclose(means[:, 0], means[:, 1], rtol=0, atol=1e-12)
    wins_a = (~tied & (means[:, 0] > means[:, 1])) + 0.5 * tied
    assert tied.any() and not (means[:, 0] == means[:, 1])[tied].all()
    assert result.prob_best["A"] == pytest.approx(wins_a.mean())
    assert result.diff_to_leader["A"][1] == pytest.approx(np.percentile(means[:, 0] - means[:, 1], 2.5))


def test_bootstrap_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="No configurations"):
        paired_bootstrap({})
    with pytest.raises(ValueError, match=r"score slot for every question \(A: 3, B: 2\)"):
        paired_bootstrap({"A": [1, 2, 3], "B": [1, 2]})
    with pytest.raises(ValueError, match=r"No question has a score for every configuration \(2 dropped\)"):
        paired_bootstrap({"A": [None, 1], "B": [1, None]})
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap({"A": [1]}, n_resamples=0)


def test_complete_matrix_keeps_config_order() -> None:
    configs, matrix, dropped = complete_matrix({"z": [1, 2, None], "a": [3, 4, 5]})
    assert configs == ["z", "a"] and dropped == 1
    assert matrix.tolist() == [[1.0, 3.0], [2.0, 4.0]]
