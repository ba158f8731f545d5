"""An Experiment's figures: per-configuration aggregates, the Decision, the cost, and marking it completed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chunkbench.benchmarking import context_budget, pricing
from chunkbench.benchmarking.decision import decide
from chunkbench.benchmarking.decision_ranking import EQUIVALENCE_MARGIN
from chunkbench.benchmarking.equal_budget import BudgetScores
from chunkbench.benchmarking.experiments import cells, get
from chunkbench.benchmarking.model import CellResult, Configuration, Experiment, ExperimentQuestion
from chunkbench.benchmarking.schemas import METRIC_DIRECTIONS
from chunkbench.config import Settings
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.storage.db import Database
from chunkbench.storage.schema import ExperimentRow, utcnow
from chunkbench.text.tokens import count_tokens


def _summary(values: Sequence[float], rng: np.random.Generator, resamples: int) -> dict[str, Any]:
    """Mean, population SD and a 95% percentile-bootstrap interval of the mean."""
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return {"mean": None, "std": None, "ci_low": None, "ci_high": None, "n": 0}
    means = array[rng.integers(0, array.size, size=(resamples, array.size))].mean(axis=1)
    return {
        "mean": float(array.mean()),
        "std": float(array.std()),
        "ci_low": float(np.percentile(means, 2.5)),
        "ci_high": float(np.percentile(means, 97.5)),
        "n": int(array.size),
    }


def _numeric(value: Any) -> float | None:
    if value is None:
        return None
    return float(value)  # booleans (hallucination) count as 0/1


def aggregate(
    configurations: Sequence[Configuration], questions: Sequence[BenchmarkQuestion], results: Sequence[CellResult],
    *, seed: int, resamples: int,
    llm_model: str | None, llm_provider: str, settings: Settings,
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per configuration: every metric's mean, SD, interval and count; failures; latency; tokens; cost."""
    order = {question.id: position for position, question in enumerate(questions)}
    by_key: dict[str, list[CellResult]] = {c.key: [] for c in configurations}
    # Plan order, not completion order: concurrent cells finish in any order, the figures must not depend on it.
    for result in sorted(results, key=lambda r: order.get(r.question_id, len(order))):
        by_key.setdefault(result.config_key, []).append(result)
    out: dict[str, dict[str, Any]] = {}
    for index, (key, rows) in enumerate(by_key.items()):
        rng = np.random.default_rng([seed, index])
        ok = [r for r in rows if r.ok]
        metrics = {
            name: _summary([v for r in ok if (v := _numeric(r.metrics.get(name))) is not None], rng, resamples)
            for name in METRIC_DIRECTIONS
        }
        totals = [r.latency_ms.get("total", 0.0) for r in ok]
        prompt = sum(r.tokens.prompt for r in ok)
        completion = sum(r.tokens.completion for r in ok)
        judged = [r.judge for r in ok if r.judge]
        out[key] = {
            "metrics": metrics,
            "hallucination_rate": metrics["judge_hallucination"]["mean"],
            "judge_failures": sum(int(j.get("failures", 0)) for j in judged),
            "judge_errors": sum(1 for j in judged if j.get("error")),
            "failed_cells": len(rows) - len(ok),
            "latency_ms_p50": float(np.percentile(totals, 50)) if totals else None,
            "latency_ms_p95": float(np.percentile(totals, 95)) if totals else None,
            "latency_ms_stages": {
                stage: float(np.mean([r.latency_ms.get(stage, 0.0) for r in ok])) if ok else None
                for stage in ("embed", "search", "rerank", "expand", "generate", "judge")
            },
            "tokens": {
                "prompt": prompt,
                "completion": completion,
                "context_mean": metrics["tok_at_k"]["mean"],
            },
            "cost_usd": pricing.cost_usd(llm_model, llm_provider, prompt, completion, settings) if llm_model else 0.0,
        }
    return out


def decision_for(
    questions: Sequence[BenchmarkQuestion],
    configurations: Sequence[Configuration],
    results: Sequence[CellResult],
    aggregates: dict[str, dict[str, Any]],
    *,
    metric: str,
    seed: int,
    resamples: int,
    budget: int | None = None,
    with_documents: bool = False,
    warnings: Sequence[Mapping[str, Any]] = (),
    equivalence_margin: float = EQUIVALENCE_MARGIN,
) -> dict[str, Any]:
    """The Decision on the primary metric: paired over questions, ties broken by context cost (tok@k), compared
    at an equal context ``budget`` (default: the smallest median tok@k), naming no configuration that the
    Experiment's language ``warnings`` (provenance) say is built on a model that cannot read a document."""
    by_cell = {(r.config_key, r.question_id): r for r in results}
    scores: dict[str, list[float | None]] = {}
    for configuration in configurations:
        column: list[float | None] = []
        for question in questions:
            result = by_cell.get((configuration.key, question.id))
            value = None if result is None or not result.ok else result.metrics.get(metric)
            column.append(_numeric(value))
        scores[configuration.key] = column
    costs = {key: aggregates[key]["metrics"]["tok_at_k"]["mean"] or 0.0 for key in scores}
    # A winner by probability must be best in 97.5% of resamples: as strict as a one-sided 95% interval.
    return decide(
        scores,
        costs,
        metric=metric,
        higher_is_better=METRIC_DIRECTIONS[metric],
        n_resamples=resamples,
        seed=seed,
        min_prob_best=0.975,
        budget=budget_scores(
            questions, list(scores), results, metric=metric, budget=budget, with_documents=with_documents
        ),
        uncovered=uncovered_configurations(warnings, questions),
        equivalence_margin=equivalence_margin,
    ).to_dict()


def uncovered_configurations(
    warnings: Sequence[Mapping[str, Any]], questions: Sequence[BenchmarkQuestion] = ()
) -> dict[str, dict[str, Any]]:
    """Configuration key → the model it is built on that does not cover a document's language, the languages and
    the models that cover them (from the Experiment's language warnings, the first model per configuration), and,
    for warnings that record them, the documents concerned, the positions of the questions on them in
    ``questions`` and whether they are material (the language rule; warnings stored before it: material)."""
    position = {question.id: index for index, question in enumerate(questions)}
    out: dict[str, dict[str, Any]] = {}
    for warning in warnings:
        for key in warning.get("configurations") or ():
            entry = out.setdefault(
                key, {"role": warning["role"], "model_id": warning["model_id"], "languages": [], "covering_models": []}
            )
            if warning["model_id"] == entry["model_id"]:
                entry["languages"] = list(dict.fromkeys([*entry["languages"], warning["language"]]))
                entry["covering_models"] = list(dict.fromkeys([*entry["covering_models"], *warning["covering_models"]]))
            if "material" not in warning:
                continue
            entry["material"] = bool(entry.get("material")) or bool(warning["material"])
            entry["material_share"] = warning.get("material_share")
            entry["min_confidence"] = warning.get("min_confidence")
            # Too unsure for any one of its warnings: the documents would be enough, their detections are not.
            unsure = entry.get("standing") == "unsure" or warning.get("standing") == "unsure"
            entry["standing"] = None if entry["material"] else "unsure" if unsure else "minority"
            entry["total_documents"] = warning.get("total_documents")
            entry["document_ids"] = list(dict.fromkeys([*entry.get("document_ids", []), *warning["document_ids"]]))
            found = [position[q] for q in warning.get("question_ids") or () if q in position]
            entry["questions"] = sorted({*entry.get("questions", []), *found})
    return out


def budget_scores(
    questions: Sequence[BenchmarkQuestion], keys: Sequence[str], results: Sequence[CellResult], *, metric: str,
    budget: int | None, with_documents: bool = False,
) -> BudgetScores | None:  # fmt: skip
    """The scores at equal context budget (``context_budget.py``); None when nothing has context or evidence.
    ``with_documents``: the Experiment spans several documents, so references and chunks name theirs."""
    context = context_budget.median_context(keys, results)
    limit = budget or context_budget.default_budget(context)
    stored = [ExperimentQuestion.of(q, with_documents=with_documents).model_dump(mode="json") for q in questions]
    if limit is None or not any(context_budget.references_of(q) for q in stored):
        return None
    scored = context_budget.budget_metric(metric)
    return BudgetScores(
        limit, scored, context_budget.rescore(stored, keys, results, metric=scored, budget=limit), context,
        "request" if budget else "default",
    )  # fmt: skip


def finalize(database: Database, settings: Settings, experiment_id: str, *, tenant_id: str) -> ExperimentRow:
    """Aggregate the cells, decide (a pruned run: among the survivors), price, and mark the Experiment completed."""
    with database.session() as session:
        row = get(session, experiment_id, tenant_id=tenant_id)
        experiment = Experiment.from_row(row)
        results = cells(session, experiment_id)
        seed = experiment.config.seed
        resamples = int(experiment.provenance.get("bootstrap_resamples", settings.benchmark_bootstrap_resamples))
        llm_model = experiment.provenance.get("llm_model")
        questions = experiment.questions
        metric = experiment.config.primary_metric
        assert metric is not None  # every planned Experiment ranks on one
        aggregates = aggregate(
            experiment.configurations, questions, results, seed=seed, resamples=resamples, llm_model=llm_model,
            llm_provider=pricing.llm_provider(settings), settings=settings,
        )  # fmt: skip
        row.aggregate_metrics = aggregates
        # A pruned run decides among the configurations that answered every question (pruning.py stopped the rest).
        pruned = set(experiment.pruned_keys)
        survivors = [c for c in experiment.configurations if c.key not in pruned]
        row.decision = decision_for(
            questions, survivors, results, aggregates,
            metric=metric, seed=seed, resamples=resamples, budget=experiment.config.budget,
            with_documents=experiment.spans_documents, warnings=experiment.provenance.get("warnings") or (),
            equivalence_margin=settings.benchmark_equivalence_margin,
        )  # fmt: skip
        prompt = sum(a["tokens"]["prompt"] for a in aggregates.values())
        completion = sum(a["tokens"]["completion"] for a in aggregates.values())
        costs = [a["cost_usd"] for a in aggregates.values()]
        row.cost = {
            "estimated_usd": None,
            "actual_usd": None if any(c is None for c in costs) else round(sum(costs), 6),
            "tokens": {
                "embedding": _embedded_tokens(questions, results),
                "prompt": prompt,
                "completion": completion,
            },
        }
        row.status, row.error, row.finished_at = "completed", None, utcnow()
        session.flush()
        session.expunge(row)
        return row


def _embedded_tokens(questions: Sequence[BenchmarkQuestion], results: Sequence[CellResult]) -> int:
    """Corpus-model tokens a run embedded: each cell's question, and its answer and the expected answer."""
    by_id = {q.id: q for q in questions}
    total = 0
    for result in results:
        question = by_id.get(result.question_id)
        if question is None:
            continue
        total += count_tokens(question.question)
        if question.expected_answer and result.ok:
            total += count_tokens(result.answer or "") + count_tokens(question.expected_answer)
    return total
