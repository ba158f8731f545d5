"""Reading the Experiment dict the runner produces: its config, configurations and metric means."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkbench.benchmarking.report.formatting import as_number


def experiment_config(experiment: Mapping[str, Any]) -> Mapping[str, Any]:
    return experiment.get("config") or {}


def experiment_configurations(experiment: Mapping[str, Any]) -> list[dict[str, Any]]:
    configurations = [dict(c) for c in experiment.get("configurations") or [] if c.get("key")]
    known = {c["key"] for c in configurations}
    # A runner that failed before planning may only have aggregates; show those configurations too.
    configurations += [{"key": k} for k in (experiment.get("aggregate") or {}) if k not in known]
    return configurations


def metric_mean(aggregate: Mapping[str, Any], key: str, metric: str) -> float | None:
    return as_number((((aggregate.get(key) or {}).get("metrics") or {}).get(metric) or {}).get("mean"))


def has_metric(experiment: Mapping[str, Any], metric: str, *, per_cell: bool = False) -> bool:
    if per_cell:
        return any(as_number((c.get("metrics") or {}).get(metric)) is not None for c in experiment.get("cells") or [])
    return any(
        metric_mean(experiment.get("aggregate") or {}, k, metric) is not None for k in experiment.get("aggregate") or {}
    )
