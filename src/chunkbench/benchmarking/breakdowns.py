"""Breakdowns of an Experiment: which documents, languages and question categories each configuration fails on.

Computed from the stored questions and cells, so every Experiment has them (older ones too) and a running one
shows them as far as it got. A question belongs to its documents (the one it names, else its evidence's), to their
languages and to its category; a group's figures per configuration are its questions, the primary metric's mean
over the cells that measured it, and its failures: failed cells and scores of zero on a metric where higher is
better.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chunkbench.benchmarking.model import CellResult, Configuration
from chunkbench.benchmarking.schemas import METRIC_DIRECTIONS
from chunkbench.embedding.languages import language_label
from chunkbench.evaluation.questions import BenchmarkQuestion

NO_CATEGORY = "(none)"


def question_documents(question: BenchmarkQuestion) -> list[str]:
    """The documents a question of a several-document Experiment is about: the one it names, else its evidence's."""
    if question.document_id is not None:
        return [question.document_id]
    return list(dict.fromkeys(r.document for r in question.references if r.document is not None))


def breakdowns(
    questions: Sequence[BenchmarkQuestion],
    configurations: Sequence[Configuration],
    results: Iterable[CellResult],
    *,
    metric: str,
    documents: Mapping[str, str | None],
    languages: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """``{metric, documents?, languages?, categories?}``; each a list of groups, worst first.

    ``documents``: the Experiment's document ids → source keys, in order; ``languages``: document id → detected
    language. Documents are broken down only when the Experiment spans several, languages only when its documents
    have two or more, categories only when a question has one.
    """
    cells = {(r.config_key, r.question_id): r for r in results}
    higher = METRIC_DIRECTIONS.get(metric, True)
    keys = [c.key for c in configurations]
    out: dict[str, Any] = {"metric": metric}
    if len(documents) > 1:
        members: dict[str, list[BenchmarkQuestion]] = {d: [] for d in documents}
        for question in questions:
            for document_id in question_documents(question):
                members.setdefault(document_id, []).append(question)
        out["documents"] = _worst_first(
            [
                {"id": d, "source_key": documents.get(d), **_group(qs, keys, cells, metric, higher)}
                for d, qs in members.items()
                if qs
            ],
            higher,
        )
    known = {d: code for d, code in (languages or {}).items() if d in documents and code is not None}
    if len(set(known.values())) > 1:
        by_language: dict[str, list[BenchmarkQuestion]] = {}
        for question in questions:
            for code in dict.fromkeys(known[d] for d in question_documents(question) if d in known):
                by_language.setdefault(code, []).append(question)
        out["languages"] = _worst_first(
            [
                {
                    "language": code, "label": language_label(code),
                    "documents": sum(value == code for value in known.values()),
                    **_group(qs, keys, cells, metric, higher),
                }
                for code, qs in by_language.items()
            ],
            higher,
        )  # fmt: skip
    if any(q.category for q in questions):
        by_category: dict[str, list[BenchmarkQuestion]] = {}
        for question in questions:
            by_category.setdefault(question.category or NO_CATEGORY, []).append(question)
        out["categories"] = _worst_first(
            [{"category": c, **_group(qs, keys, cells, metric, higher)} for c, qs in by_category.items()], higher
        )
    return out


def _group(
    questions: Sequence[BenchmarkQuestion],
    keys: Sequence[str],
    cells: Mapping[tuple[str, str], CellResult],
    metric: str,
    higher: bool,
) -> dict[str, Any]:
    figures: dict[str, dict[str, Any]] = {}
    for key in keys:
        values: list[float] = []
        failures = 0
        for question in questions:
            cell = cells.get((key, question.id))
            if cell is None:
                continue
            if not cell.ok:
                failures += 1
                continue
            value = cell.metrics.get(metric)
            if value is None:
                continue
            values.append(float(value))
            failures += int(higher and float(value) == 0.0)
        figures[key] = {
            "mean": sum(values) / len(values) if values else None,
            "measured": len(values),
            "failures": failures,
        }
    return {"questions": len(questions), "configurations": figures}


def _worst_first(groups: list[dict[str, Any]], higher: bool) -> list[dict[str, Any]]:
    """By the group's mean over its configurations' means, worst first; groups nothing measured go last."""

    def badness(group: dict[str, Any]) -> tuple[bool, float]:
        means = [f["mean"] for f in group["configurations"].values() if f["mean"] is not None]
        if not means:
            return (True, 0.0)
        average = sum(means) / len(means)
        return (False, average if higher else -average)

    return sorted(groups, key=badness)
