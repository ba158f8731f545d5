"""Chroma's reproduction as a corpus benchmark: strategy variants, one Experiment with a Decision, the same figures
as the span evaluation's own index gave for the same rows, and a second run that processes nothing again.

Two of Chroma's real corpora (state_of_the_union, chatlogs) with their own questions from questions_df.csv, and
two of the six rows, so that the run stays short: every stage is the product's (ingest, corpus job, benchmark).
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from chunkbench.benchmarking import benchmarks
from chunkbench.benchmarking.chroma_reproduction import CHROMA_CORPUS, reproduce
from chunkbench.benchmarking.report.render import render_report
from chunkbench.chunking import variants
from chunkbench.chunking.base import default_strategies, strategy_class
from chunkbench.config import Settings
from chunkbench.evaluation.chroma import load_chroma, select_configs
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.plugins import isolated_registries
from chunkbench.storage.db import Database
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import VectorStore

SHARED = DEFAULT_CHROMA_DIR
CORPORA = ("chatlogs", "state_of_the_union")
ROWS = ("fixed_size-250-125", "recursive-250-0")
# Per row: (metric → (mean, SD) in percent), searchable chunks, mean chunk tokens.
SPAN_EVALUATION = {
    "fixed_size-250-125": (
        {"recall": (97.107, 15.409), "precision": (4.237, 3.479), "precision_omega": (11.482, 6.599),
         "iou": (4.233, 3.473)}, 144, 249.5,
    ),
    "recursive-250-0": (
        {"recall": (95.181, 21.005), "precision": (4.501, 3.82), "precision_omega": (18.994, 10.657),
         "iou": (4.5, 3.82)}, 79, 230.0,
    ),
}  # fmt: skip


@pytest.fixture
def chroma_folder(tmp_path: Path) -> Path:
    """A Chroma evaluation folder holding two corpora and exactly their questions."""
    folder = tmp_path / "chroma"
    (folder / "corpora").mkdir(parents=True)
    for name in CORPORA:
        shutil.copy(SHARED / "corpora" / f"{name}.md", folder / "corpora" / f"{name}.md")
    shutil.copy(SHARED / "published_results_headline.csv", folder)
    with (SHARED / "questions_df.csv").open(encoding="utf-8", newline="") as source:
        rows = [row for row in csv.DictReader(source) if row["corpus_id"] in CORPORA]
    with (folder / "questions_df.csv").open("w", encoding="utf-8", newline="") as target:
        writer = csv.DictWriter(target, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerows(rows)
    return folder


@pytest.fixture
def registries():
    with isolated_registries():
        yield


@pytest.mark.model
def test_chroma_rows_are_one_experiment_with_the_span_evaluations_figures(
    settings: Settings, chroma_folder: Path, registries
) -> None:
    configs = [select_configs(name)[0] for name in ROWS]
    database = Database.from_settings(settings)
    store = VectorStore(settings)
    try:
        first = reproduce(database, settings, store, configs, chroma_folder, tenant_id=DEFAULT_TENANT)
        again = reproduce(database, settings, store, configs, chroma_folder, tenant_id=DEFAULT_TENANT)
        with database.session() as session:
            row = benchmarks.get(session, first.evaluation.experiment_id, tenant_id=DEFAULT_TENANT)
            experiment = benchmarks.experiment_dict(session, row)
    finally:
        store.close()
        database.dispose()

    # Each row ran as a variant of its own (its own configuration key), recorded in the variants file.
    assert [r["strategy"] for r in first.rows] == ["fixed_size_250_125", "recursive_250_0"]
    assert sorted(v.name for v in variants.read_file(settings.resolved_strategies_file)) == [
        "fixed_size_250_125", "recursive_250_0",
    ]  # fmt: skip
    assert strategy_class("fixed_size_250_125").variant.params == {"chunk_size": 250, "chunk_overlap": 125}
    assert "fixed_size_250_125" not in default_strategies()
    assert experiment["corpus"]["name"] == CHROMA_CORPUS and len(experiment["corpus"]["documents"]) == len(CORPORA)
    assert experiment["decision"]["status"] and experiment["decision"]["verdict"]
    assert {c["strategy"] for c in experiment["configurations"]} == {"fixed_size_250_125", "recursive_250_0"}
    for view in ("managerial", "technical"):
        page = render_report(experiment, view=view)
        assert "fixed_size_250_125" in page and "recursive_250_0" in page

    # The figures the span evaluation's own throwaway index gave for these two rows on the same data, before it
    # became this face of the corpus benchmark (recorded 2026-12-01 with evaluate_spans): the two paths agree.
    _folder, _corpora, questions = load_chroma(chroma_folder)
    for ours, (expected, chunks, tokens) in zip(first.rows, SPAN_EVALUATION.values(), strict=True):
        figures = ours["ours"]
        assert (figures["questions"], figures["failed"]) == (len(questions), 0) == (132, 0)
        assert (figures["chunks"], figures["mean_chunk_tokens"]) == (chunks, pytest.approx(tokens, abs=0.1))
        for metric, (mean, std) in expected.items():
            assert figures[metric]["mean"] == pytest.approx(mean, abs=1e-3), metric
            assert figures[metric]["std"] == pytest.approx(std, abs=1e-3), metric
    # Rank metrics (percent) of the same two runs.
    assert [(r["ours"]["recall_at_k"]["mean"], r["ours"]["mrr"]["mean"]) for r in first.rows] == [
        (pytest.approx(83.2702, abs=1e-3), pytest.approx(88.4975, abs=1e-3)),
        (pytest.approx(95.0758, abs=1e-3), pytest.approx(80.6061, abs=1e-3)),
    ]

    # Run again: nothing is ingested or processed twice, and the figures are the same in a new Experiment.
    assert (again.evaluation.processed.processed, again.evaluation.processed.skipped) == (0, len(CORPORA))
    assert again.evaluation.experiment_id != first.evaluation.experiment_id
    assert [r["ours"] for r in again.rows] == [r["ours"] for r in first.rows]
