"""The CI gate: has the chosen configuration of an Experiment got worse than in a baseline Experiment?

Both Experiments are the dicts ``service.experiment_dict`` builds (what ``chunkbench bench show ID --json``
prints, so a baseline can be a stored file). The chosen configuration is the one asked for, else the Decision's
best, else its leader, else the only one; it is compared with the same configuration key in the baseline,
metric by metric on the aggregate means:

* the primary metric is always checked, with ``DEFAULT_TOLERANCE`` unless ``max_drop`` names it; every other
  metric only when ``max_drop`` names it;
* a drop is a change in the worse direction (``schemas.METRIC_DIRECTIONS``: for tok@k and the hallucination rate
  a rise); a metric fails when its drop exceeds the tolerance (absolute, in the metric's own units);
* judge metrics (``judge_*``) only warn, unless ``fail_on_judge``: an LLM's grades move between runs;
* exit code 0 when nothing failed, 1 when a metric dropped beyond its tolerance, 2 when the two cannot be
  compared: a different corpus (its hash), different questions (ids and texts), Corpus or Boundary model, a
  configuration the baseline lacks, or an Experiment that has not completed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from chunkbench.benchmarking.schemas import METRIC_DIRECTIONS
from chunkbench.errors import InvalidRequestError

DEFAULT_TOLERANCE = 0.02
JUDGE_PREFIX = "judge_"
EXIT_PASS, EXIT_DROPPED, EXIT_NOT_COMPARABLE = 0, 1, 2
# How many differing question ids a "different questions" line names.
NAMED_QUESTIONS = 3

MetricVerdict = Literal["ok", "dropped", "warn", "not measured"]


@dataclass(frozen=True)
class MetricCheck:
    """One metric of the chosen configuration: baseline and current means, the change and what it means."""

    metric: str
    baseline: float | None
    current: float | None
    change: float | None
    tolerance: float
    higher_is_better: bool
    verdict: MetricVerdict


@dataclass(frozen=True)
class CheckResult:
    """The gate's answer: its exit code, what makes the two incomparable, and each checked metric."""

    experiment_id: str | None
    baseline_id: str | None
    config_key: str | None
    exit_code: int
    differences: list[str] = field(default_factory=list)
    metrics: list[MetricCheck] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return {EXIT_PASS: "pass", EXIT_DROPPED: "fail"}.get(self.exit_code, "not comparable")

    @property
    def warnings(self) -> list[str]:
        return [
            f"{m.metric} dropped by {abs(m.change or 0.0):.4g} (tolerance {m.tolerance:g}); judge metrics only warn "
            "(--fail-on-judge to fail on them)."
            for m in self.metrics
            if m.verdict == "warn"
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "experiment_id": self.experiment_id,
            "baseline_id": self.baseline_id,
            "config_key": self.config_key,
            "differences": list(self.differences),
            "warnings": self.warnings,
            "metrics": [asdict(m) for m in self.metrics],
        }


def parse_thresholds(pairs: Sequence[tuple[str, str]], *, option: str) -> dict[str, float]:
    """``METRIC=VALUE`` items, already split (``console.split_pairs``: ``[("recall", "0.02"), …]``), as
    ``{"recall": 0.02}``; an ``InvalidRequestError`` naming the bad item otherwise (an unknown metric, a value that is
    no finite number, a negative tolerance)."""
    out: dict[str, float] = {}
    for name, value in pairs:
        pair = f"{name}={value}"
        if name not in METRIC_DIRECTIONS:
            raise InvalidRequestError(
                f"{option} {pair!r}: give METRIC=VALUE with METRIC one of {', '.join(METRIC_DIRECTIONS)}.",
                option=option,
            )
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or (option == "--max-drop" and number < 0):
            raise InvalidRequestError(f"{option} {pair!r}: VALUE must be a finite number (≥ 0 for a tolerance).")
        out[name] = number
    return out


def chosen_configuration(experiment: Mapping[str, Any], config_key: str | None = None) -> str:
    """The configuration to gate on: ``config_key``, else the Decision's best, else its leader, else the only one."""
    keys = [c["key"] for c in experiment.get("configurations") or []]
    decision = experiment.get("decision") or {}
    only = keys[0] if len(keys) == 1 else None
    chosen = config_key or decision.get("best") or decision.get("leader") or only
    if chosen is None or chosen not in keys:
        named = f"'{chosen}' is not one of its configurations" if chosen else "its Decision names no configuration"
        raise InvalidRequestError(
            f"Experiment '{experiment.get('id')}': {named}; pass --config with one of: {', '.join(keys) or 'none'}.",
            config_key=chosen,
        )
    return chosen


def corpus_hash(experiment: Mapping[str, Any]) -> str | None:
    """The hash of what was benchmarked: the corpus's, else (an Experiment of one document) the document's."""
    provenance = experiment.get("provenance") or {}
    return (provenance.get("corpus") or {}).get("hash") or provenance.get("document_sha256")


def incomparable(current: Mapping[str, Any], baseline: Mapping[str, Any], config_key: str) -> list[str]:
    """What keeps the two Experiments' figures of ``config_key`` from being compared, each named."""
    out = [
        f"Experiment '{e.get('id')}' is {e.get('status')}: only a completed Experiment has figures to compare."
        for e in (current, baseline)
        if e.get("status") != "completed"
    ]
    hashes = corpus_hash(current), corpus_hash(baseline)
    if hashes[0] != hashes[1]:
        out.append(f"Different corpus: content hash {_short(hashes[1])} in the baseline, {_short(hashes[0])} now.")
    out.extend(_question_differences(current, baseline))
    for label, name in (("Corpus model", "corpus_model"), ("Boundary model", "boundary_model")):
        models = ((baseline.get("provenance") or {}).get(name), (current.get("provenance") or {}).get(name))
        if models[0] != models[1]:
            out.append(f"Different {label}: {models[0] or 'none'} in the baseline, {models[1] or 'none'} now.")
    baseline_keys = [c["key"] for c in baseline.get("configurations") or []]
    if config_key not in baseline_keys:
        out.append(
            f"The baseline has no configuration {config_key} (it has {', '.join(baseline_keys) or 'none'}); pass "
            "--config to gate on one both have."
        )
    return out


def _short(value: str | None) -> str:
    return value[:12] if value else "unknown"


def _question_differences(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    def questions(experiment: Mapping[str, Any]) -> dict[str, str]:
        return {str(q.get("id")): q.get("question") or "" for q in experiment.get("questions") or []}

    now, before = questions(current), questions(baseline)
    if now == before:
        return []
    added = [q for q in now if q not in before]
    removed = [q for q in before if q not in now]
    changed = [q for q in now if q in before and now[q] != before[q]]
    parts = [
        f"{label} {', '.join(ids[:NAMED_QUESTIONS])}{' …' if len(ids) > NAMED_QUESTIONS else ''}"
        for label, ids in (("added", added), ("removed", removed), ("reworded", changed))
        if ids
    ]
    return [f"Different questions ({len(before)} in the baseline, {len(now)} now): {'; '.join(parts)}."]


def _mean(experiment: Mapping[str, Any], config_key: str, metric: str) -> float | None:
    stat = (((experiment.get("aggregate") or {}).get(config_key) or {}).get("metrics") or {}).get(metric) or {}
    value = stat.get("mean")
    return float(value) if value is not None and math.isfinite(float(value)) else None


def check(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    *,
    config_key: str | None = None,
    max_drop: Mapping[str, float] | None = None,
    fail_on_judge: bool = False,
) -> CheckResult:
    """The gate (module docstring): ``current``'s chosen configuration against the same key in ``baseline``."""
    key = chosen_configuration(current, config_key)
    ids = current.get("id"), baseline.get("id")
    differences = incomparable(current, baseline, key)
    if differences:
        return CheckResult(ids[0], ids[1], key, EXIT_NOT_COMPARABLE, differences)
    primary = (current.get("decision") or {}).get("metric") or (current.get("config") or {}).get("primary_metric")
    tolerances = {**({primary: DEFAULT_TOLERANCE} if primary else {}), **(max_drop or {})}
    checks = []
    for metric, tolerance in tolerances.items():
        before, now = _mean(baseline, key, metric), _mean(current, key, metric)
        higher = METRIC_DIRECTIONS[metric]
        verdict: MetricVerdict
        if before is None or now is None:
            change, verdict = None, "not measured"
        else:
            change = now - before
            drop = -change if higher else change
            # A hair of float noise (the same run twice) never fails a zero tolerance.
            if drop <= tolerance + 1e-9:
                verdict = "ok"
            else:
                verdict = "warn" if metric.startswith(JUDGE_PREFIX) and not fail_on_judge else "dropped"
        checks.append(MetricCheck(metric, before, now, change, tolerance, higher, verdict))
    failed = any(c.verdict == "dropped" for c in checks)
    return CheckResult(ids[0], ids[1], key, EXIT_DROPPED if failed else EXIT_PASS, [], checks)


def below(
    experiment: Mapping[str, Any], thresholds: Mapping[str, float], *, config_key: str | None = None
) -> list[str]:
    """``bench run --fail-under``: each metric of the chosen configuration whose mean is worse than its threshold
    (under it, or over it for a lower-is-better metric such as tok@k), as a sentence; a metric not measured fails."""
    key = chosen_configuration(experiment, config_key)
    out = []
    for metric, threshold in thresholds.items():
        mean = _mean(experiment, key, metric)
        higher = METRIC_DIRECTIONS[metric]
        if mean is None:
            out.append(f"{key}: {metric} was not measured, so it cannot be held to {threshold:g}.")
        elif (mean < threshold) if higher else (mean > threshold):
            out.append(f"{key}: {metric} is {mean:.4g}, {'under' if higher else 'over'} the required {threshold:g}.")
    return out
