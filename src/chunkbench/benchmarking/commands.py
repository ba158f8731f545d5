"""``chunkbench bench|report|sweep|check``: benchmarks, Experiments, reports, sweeps and the CI gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from chunkbench.benchmarking.rendering import SHOWN_METRICS, fmt, show_check, show_estimate, show_experiment
from chunkbench.console import (
    JsonOption,
    err,
    fail,
    job_progress,
    open_database,
    out,
    print_json,
    split_pairs,
    vector_store,
)
from chunkbench.errors import ChunkbenchError
from chunkbench.storage.schema import DEFAULT_TENANT

bench_app = typer.Typer(help="Run benchmarks and read their Experiments.", no_args_is_help=True)
sweep_app = typer.Typer(help="Benchmark Sweeps: one Experiment per level (docs/benchmarks.md).", no_args_is_help=True)


def _csv(value: str | None) -> list[str] | None:
    return None if value is None else [part.strip() for part in value.split(",") if part.strip()]


def read_questions(path: Path) -> list[dict[str, Any]]:
    """A question file for the CLI (any path): question JSON, JSONL or Chroma's CSV, read by the question-set loader."""
    from chunkbench.evaluation.questions import load_question_set

    return [question.to_dict() for question in load_question_set(path)]


def _request(document_id: str | None, questions: Path | None, question_set: str | None, **fields: Any):
    from chunkbench.benchmarking.schemas import BenchmarkIn

    inline = read_questions(questions) if questions is not None else None
    try:
        return BenchmarkIn(
            document_id=document_id,
            questions=inline,
            question_set=question_set,
            **{key: value for key, value in fields.items() if value is not None},
        )
    except ValidationError as exc:
        raise typer.BadParameter(str(exc)) from exc


QuestionsOption = Annotated[
    Path | None, typer.Option("--questions", "-q", help="Question file: question JSON, JSONL or Chroma CSV")
]
QuestionSetOption = Annotated[str | None, typer.Option(help="A question file by name (chunkbench questions list)")]
BudgetOption = Annotated[
    int | None,
    typer.Option(min=1, help="Context tokens of the equal-budget comparison (default: smallest median tok@k)"),
]


@bench_app.command("run")
def bench_run(
    document: Annotated[str | None, typer.Argument(help="Document id or filename (or give --corpus)")] = None,
    questions: QuestionsOption = None,
    question_set: QuestionSetOption = None,
    corpus: Annotated[str | None, typer.Option(help="A corpus (name or id) to benchmark: all its documents")] = None,
    strategies: Annotated[str | None, typer.Option(help="Comma-separated (default: every processed one)")] = None,
    retrievers: Annotated[str, typer.Option(help="Comma-separated: dense, bm25, hybrid")] = "dense",
    top_k: Annotated[str, typer.Option("--top-k", help="Comma-separated k values (one configuration each)")] = "5",
    prev: Annotated[int, typer.Option("--prev", help="Neighbor Expansion before each hit (fixed_size)")] = 0,
    next_: Annotated[int, typer.Option("--next", help="Neighbor Expansion after each hit (fixed_size)")] = 0,
    rerank: Annotated[str, typer.Option(help="Comma-separated: none, cross_encoder, llm")] = "none",
    judge: Annotated[bool | None, typer.Option("--judge/--no-judge", help="LLM-as-judge (default: if an LLM)")] = None,
    repeats: Annotated[int, typer.Option(help="Judge repeats (mean and spread)")] = 1,
    metric: Annotated[str | None, typer.Option(help="Primary metric of the Decision")] = None,
    corpus_model: Annotated[
        str | None, typer.Option(help="Corpus model id; comma-separated ids compare the models in one grid")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Cells in flight at once")] = None,
    name: Annotated[str | None, typer.Option(help="A name for the Experiment")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap")] = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Estimate cells, tokens and USD; run nothing")] = False,
    resume: Annotated[str | None, typer.Option(help="Resume an interrupted or failed Experiment by id")] = None,
    budget: BudgetOption = None,
    scope: Annotated[
        str, typer.Option(help="corpus: each question searches every document; document: only its own")
    ] = "corpus",
    answers: Annotated[
        bool, typer.Option("--answers/--no-answers", help="Answer every cell; --no-answers: retrieval only, faster")
    ] = True,
    fail_under: Annotated[
        list[str] | None,
        typer.Option("--fail-under", help="METRIC=VALUE: exit 1 when the chosen configuration's mean is worse"),
    ] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Successive halving: stop configurations ruled out on a share of questions")
    ] = False,
    prune_first_share: Annotated[float, typer.Option(help="--prune: share of the questions of the first rung")] = 0.25,
    prune_eta: Annotated[int, typer.Option(help="--prune: how much the question subset grows each rung")] = 3,
    prune_confidence: Annotated[float, typer.Option(help="--prune: family-wise confidence of 'ruled out'")] = 0.99,
    prune_min_configurations: Annotated[
        int, typer.Option(help="--prune: refuse grids smaller than this (lower it to prune a small grid)")
    ] = 30,
    as_json: JsonOption = False,
) -> None:
    """Benchmark a document's (or a corpus's) strategies on a question set: an Experiment with a Decision."""
    from chunkbench.benchmarking import benchmarks, check, runner
    from chunkbench.documents import library

    settings, database = open_database()
    try:
        thresholds = check.parse_thresholds(_thresholds(fail_under, "--fail-under"), option="--fail-under")
        if resume is None and (document is None) == (corpus is None):
            raise typer.BadParameter("give a DOCUMENT or --corpus NAME to benchmark (one of them), or --resume ID")
        if resume is not None:
            experiment_id = benchmarks.prepare_resume(database, resume, tenant_id=DEFAULT_TENANT).id
        else:
            document_id = None
            if document is not None:
                with database.session() as session:
                    document_id = library.resolve(session, document, tenant_id=DEFAULT_TENANT).id
            models = _csv(corpus_model) or []
            request = _request(
                document_id, questions, question_set, corpus=corpus, strategies=_csv(strategies),
                retrievers=_csv(retrievers), top_k=[int(k) for k in _csv(top_k) or []], neighbor_prev=prev,
                neighbor_next=next_, rerank=_csv(rerank), judge=judge, judge_repeats=repeats, primary_metric=metric,
                corpus_model_id=models[0] if len(models) == 1 else None,
                corpus_models=models if len(models) > 1 else None,
                concurrency=concurrency, name=name, seed=seed, dry_run=dry_run, budget=budget, scope=scope,
                answers=answers,
                prune={"first_share": prune_first_share, "eta": prune_eta, "confidence": prune_confidence,
                       "min_configurations": prune_min_configurations} if prune else None,
            )  # fmt: skip
            if dry_run:
                with database.session() as session:
                    estimate = benchmarks.estimate(session, settings, request, tenant_id=DEFAULT_TENANT)
                if as_json:
                    print_json(estimate.model_dump(mode="json"))
                else:
                    show_estimate(estimate, out=out)
                return
            started = benchmarks.start(database, settings, request, tenant_id=DEFAULT_TENANT)
            experiment_id = started.experiment.id
            err.print(f"experiment {experiment_id}: {started.plan.cells} cells", highlight=False)
        store = vector_store(settings)
        with job_progress("benchmark") as report:
            runner.execute(database, settings, store, experiment_id, tenant_id=DEFAULT_TENANT, progress=report)
        with database.session() as session:
            experiment = benchmarks.experiment_dict(
                session, benchmarks.get(session, experiment_id, tenant_id=DEFAULT_TENANT)
            )
        failures = check.below(experiment, thresholds) if thresholds else []
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(experiment)
    else:
        show_experiment(experiment, out=out)
    for failure in failures:
        err.print(f"[red]fail-under:[/red] {failure}", highlight=False)
    if failures:
        raise typer.Exit(code=1)


@bench_app.command("list")
def bench_list(
    document: Annotated[str | None, typer.Option(help="Only this document (id or filename)")] = None,
    corpus: Annotated[str | None, typer.Option(help="Only corpus Experiments of this corpus (name or id)")] = None,
    strategy: Annotated[str | None, typer.Option(help="Only Experiments that include this strategy")] = None,
    corpus_model: Annotated[str | None, typer.Option(help="Only this Corpus model")] = None,
    as_json: JsonOption = False,
) -> None:
    """Experiments, newest first."""
    from chunkbench.benchmarking import benchmarks
    from chunkbench.documents import library

    _settings, database = open_database()
    try:
        with database.session() as session:
            document_id = library.resolve(session, document, tenant_id=DEFAULT_TENANT).id if document else None
            rows = benchmarks.get_all(
                session, tenant_id=DEFAULT_TENANT, document_id=document_id, corpus=corpus, strategy=strategy,
                corpus_model_id=corpus_model,
            )  # fmt: skip
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json([row.model_dump(mode="json") for row in rows])
        return
    table = Table("id", "name", "status", "document / corpus", "strategies", "±n", "cells", "metric", "best", "created")
    for row in rows:
        table.add_row(
            row.id, row.name or "", row.status, _searched(row), ",".join(row.strategies),
            f"{row.neighbor_prev}/{row.neighbor_next}", f"{row.cells_done}/{row.cells_total}",
            row.primary_metric or "", row.best or "—", row.created_at.strftime("%Y-%m-%d %H:%M"),
        )  # fmt: skip
    out.print(table)


def _searched(row: Any) -> str:
    """A list row's document, or its corpus with how many documents it searched."""
    if row.document_id is not None:
        return row.document_name or row.document_id
    return f"corpus {row.corpus_name or row.corpus_id} ({row.documents} documents)"


@bench_app.command("show")
def bench_show(experiment_id: str, as_json: JsonOption = False, budget: BudgetOption = None) -> None:
    """One Experiment: per-configuration results and the Decision (``--budget``: made again at that budget)."""
    from chunkbench.benchmarking import benchmarks

    _settings, database = open_database()
    try:
        with database.session() as session:
            experiment = benchmarks.experiment_dict(
                session, benchmarks.get(session, experiment_id, tenant_id=DEFAULT_TENANT)
            )
            if budget is not None:
                experiment["decision"] = benchmarks.decide_again(
                    session, experiment_id, tenant_id=DEFAULT_TENANT, budget=budget
                )
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(experiment)
    else:
        show_experiment(experiment, out=out)


@bench_app.command("compare")
def bench_compare(a: str, b: str, as_json: JsonOption = False) -> None:
    """Two Experiments side by side (B − A per configuration), with what makes them incomparable."""
    from chunkbench.benchmarking import benchmarks

    _settings, database = open_database()
    try:
        with database.session() as session:
            result = benchmarks.compare(session, a, b, tenant_id=DEFAULT_TENANT)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    table = Table("configuration", *(f"{m} A → B" for m in SHOWN_METRICS), title=f"{a} vs {b}")
    for row in result.rows:
        table.add_row(
            row["config_key"],
            *(f"{fmt(row[m]['a'])} → {fmt(row[m]['b'])}" for m in SHOWN_METRICS),
        )
    out.print(table)
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}")


def report_command(
    experiment_id: str,
    view: Annotated[Literal["managerial", "technical", "json"], typer.Option(help="managerial, technical or json")] = (
        "managerial"
    ),
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write")] = Path("report.html"),
    budget: BudgetOption = None,
) -> None:
    """Write an Experiment's self-contained HTML report (or its JSON export) to a file."""
    from chunkbench.benchmarking import benchmarks

    settings, database = open_database()
    try:
        with database.session() as session:
            store = vector_store(settings) if view == "technical" else None
            text = benchmarks.report(
                session, store, experiment_id, view=view, budget=budget, tenant_id=DEFAULT_TENANT,
            )  # fmt: skip
    except ChunkbenchError as exc:
        raise fail(exc, False) from exc
    output.write_text(text, encoding="utf-8")
    err.print(f"wrote {output} ({len(text) // 1024} KB)", highlight=False)


@sweep_app.command("neighbors")
def sweep_neighbors(
    document: Annotated[str, typer.Argument(help="Document id or filename")],
    questions: QuestionsOption = None,
    question_set: QuestionSetOption = None,
    levels: Annotated[str, typer.Option(help="Comma-separated levels n for ±n (0,1,2,3)")] = "0,1,2,3",
    retriever: Annotated[str, typer.Option(help="dense, bm25 or hybrid")] = "dense",
    top_k: Annotated[int, typer.Option("--top-k")] = 5,
    as_json: JsonOption = False,
) -> None:
    """Windowed strategies (fixed_size) with Neighbor Expansion (0,0)…(3,3): one Experiment per level."""
    from chunkbench.benchmarking import sweep

    _run_sweep(
        document,
        as_json,
        lambda document_id: _request(document_id, questions, question_set, retrievers=[retriever], top_k=[top_k]),
        sweep.neighbors,
        levels=[int(level) for level in _csv(levels) or []],
    )


@sweep_app.command("chunks")
def sweep_chunks(
    document: Annotated[str, typer.Argument(help="Document id or filename")],
    questions: QuestionsOption = None,
    question_set: QuestionSetOption = None,
    strategy: Annotated[str, typer.Option(help="A strategy with chunk_size (fixed_size, recursive, …)")] = "fixed_size",
    sizes: Annotated[str, typer.Option(help="Comma-separated chunk sizes (tokens)")] = "256,512",
    overlaps: Annotated[str, typer.Option(help="Comma-separated overlaps (tokens)")] = "0,50",
    retriever: Annotated[str, typer.Option(help="dense, bm25 or hybrid")] = "dense",
    top_k: Annotated[int, typer.Option("--top-k")] = 5,
    as_json: JsonOption = False,
) -> None:
    """A chunk size × overlap grid: the document is re-processed per point, one Experiment each."""
    from chunkbench.benchmarking import sweep
    from chunkbench.models import StrategyName

    _run_sweep(
        document,
        as_json,
        lambda document_id: _request(document_id, questions, question_set, retrievers=[retriever], top_k=[top_k]),
        sweep.chunk_grid,
        strategy=StrategyName(strategy),
        sizes=[int(size) for size in _csv(sizes) or []],
        overlaps=[int(overlap) for overlap in _csv(overlaps) or []],
    )


def _run_sweep(document: str, as_json: bool, make_request: Any, run: Any, **knobs: Any) -> None:
    """Resolve the document, run one sweep function with a progress bar, print its levels."""
    from chunkbench.documents import library

    settings, database = open_database()
    try:
        with database.session() as session:
            document_id = library.resolve(session, document, tenant_id=DEFAULT_TENANT).id
        store = vector_store(settings)
        with job_progress("sweep") as report:
            levels = run(
                database, settings, store, make_request(document_id), tenant_id=DEFAULT_TENANT, progress=report,
                **knobs,
            )  # fmt: skip
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(levels)
        return
    table = Table("level", "experiment", "configuration", "metric", "mean [95% CI]", "tok@k", title="sweep")
    for level in levels:
        table.add_row(
            level["level"], level["experiment_id"], level["config_key"], level["metric"],
            f"{fmt(level['mean'])} [{fmt(level['ci_low'])}, {fmt(level['ci_high'])}]", fmt(level["tok_at_k"], 0),
        )  # fmt: skip
    out.print(table)


def check_command(
    experiment_id: Annotated[str, typer.Argument(help="The Experiment to gate (id)")],
    baseline: Annotated[
        str, typer.Option(help="The baseline: an Experiment id, or a FILE.json that `bench show ID --json` wrote")
    ],
    config: Annotated[
        str | None, typer.Option("--config", help="Configuration key (default: the Decision's best, else leader)")
    ] = None,
    max_drop: Annotated[
        list[str] | None,
        typer.Option("--max-drop", help="METRIC=TOLERANCE, repeatable (default: the primary metric at 0.02)"),
    ] = None,
    fail_on_judge: Annotated[
        bool, typer.Option("--fail-on-judge", help="Fail on judge metrics too (they only warn by default)")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """CI gate: exit 0 when no metric of the chosen configuration dropped beyond its tolerance against the
    baseline, 1 when one did, 2 when the two cannot be compared (each difference named)."""
    from chunkbench.benchmarking import benchmarks, check

    _settings, database = open_database()
    try:
        tolerances = check.parse_thresholds(_thresholds(max_drop, "--max-drop"), option="--max-drop")
        with database.session() as session:
            current = benchmarks.experiment_dict(
                session, benchmarks.get(session, experiment_id, tenant_id=DEFAULT_TENANT), cells_view="scores"
            )
            if Path(baseline).is_file():
                reference = _baseline_file(Path(baseline))
            else:
                row = benchmarks.get(session, baseline, tenant_id=DEFAULT_TENANT)
                reference = benchmarks.experiment_dict(session, row, cells_view="scores")
        result = check.check(current, reference, config_key=config, max_drop=tolerances, fail_on_judge=fail_on_judge)
    except ChunkbenchError as exc:
        # The gate could not compare at all: the same exit as two incomparable Experiments, never a "drop".
        raise fail(exc, as_json, code=check.EXIT_NOT_COMPARABLE) from exc
    if as_json:
        print_json(result.to_dict())
    else:
        show_check(result, out=out, err=err)
    raise typer.Exit(code=result.exit_code)


def _thresholds(items: list[str] | None, option: str) -> list[tuple[str, str]]:
    """``--fail-under`` / ``--max-drop`` items split by the shared splitter; ``check.parse_thresholds`` reads them."""
    example = "recall=0.8" if option == "--fail-under" else "recall=0.02"
    return split_pairs(items or [], option=option, syntax="METRIC=VALUE", example=example)


def _baseline_file(path: Path) -> dict[str, Any]:
    from chunkbench.errors import InvalidRequestError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequestError(
            f"The baseline file {path} is not JSON ({exc}); write one with `chunkbench bench show ID --json > {path}`."
        ) from exc
    if not isinstance(data, dict) or "aggregate" not in data or "configurations" not in data:
        raise InvalidRequestError(
            f"The baseline file {path} is not an Experiment; write one with `chunkbench bench show ID --json`."
        )
    return data
