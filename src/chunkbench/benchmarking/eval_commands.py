"""``chunkbench eval``: the group, its commands ``eval spans`` and ``eval chroma`` and what they share (the metric
labels, the ``mean ± SD`` cell). The span evaluations are faces of the corpus benchmark
(``benchmarking/corpus_eval.py``), so the group lives with the benchmarks: benchmarking may import evaluation's
metrics and inputs, never the reverse. cli.py adds the group to the root app."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from chunkbench.console import (
    JsonOption,
    fail,
    job_progress,
    open_database,
    out,
    print_json,
    strategy_params,
    vector_store,
)
from chunkbench.errors import ChunkbenchError
from chunkbench.limits import MAX_TOP_K
from chunkbench.storage.schema import DEFAULT_TENANT

eval_app = typer.Typer(
    help="Evaluate retrieval against span-annotated questions (Chroma's metrics), as corpus benchmarks.",
    no_args_is_help=True,
)

SPAN_LABELS = {"recall": "recall", "precision": "precision", "precision_omega": "precision_Ω", "iou": "IoU"}
RANK_LABELS = {"recall_at_k": "recall@k", "hit_at_k": "hit@k", "mrr": "MRR", "ndcg_at_k": "nDCG@k"}


def metric_cell(metric: dict[str, float], digits: int = 1) -> str:
    return f"{metric['mean']:.{digits}f} ± {metric['std']:.{digits}f}"


@eval_app.command("spans")
def spans_command(
    documents: Annotated[
        Path, typer.Option(help="Folder of .md/.txt files (id = file stem) or JSONL of {document_id, text}")
    ],
    questions: Annotated[Path, typer.Option(help="Chroma's questions_df.csv or JSONL questions with references")],
    strategy: Annotated[str, typer.Option(help="Chunking strategy (or a variant)")] = "fixed_size",
    param: Annotated[
        list[str] | None,
        typer.Option(
            help="Strategy parameter [STRATEGY.]KEY=VALUE, e.g. chunk_size=250 (repeatable): runs as a variant; a "
            "STRATEGY. prefix must name --strategy"
        ),
    ] = None,
    retriever: Annotated[str, typer.Option(help="dense, bm25 or hybrid")] = "dense",
    corpus_model: Annotated[str, typer.Option(help="Corpus model id")] = "all-MiniLM-L6-v2",
    n: Annotated[int, typer.Option("-n", "--n", min=1, max=MAX_TOP_K, help="Chunks retrieved per question")] = 5,
    scope: Annotated[str, typer.Option(help="corpus: search every document (as Chroma); document: only its own")] = (
        "corpus"
    ),
    corpus: Annotated[str | None, typer.Option(help="The corpus to ingest into (default: eval-<folder name>)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Span and rank metrics of one strategy on span-annotated questions, as a corpus benchmark: the documents are
    ingested into a corpus, processed, and benchmarked as an Experiment (with a Decision and reports)."""
    from chunkbench.benchmarking import corpus_eval
    from chunkbench.evaluation.corpus_inputs import load_documents, load_questions, source_files

    settings, database = open_database()
    try:
        texts = load_documents(documents)
        loaded = load_questions(questions, texts)
        name = corpus_eval.strategy_for(settings, strategy, strategy_params(param or [], [strategy]).get(strategy, {}))
        target = corpus or corpus_eval.corpus_for(documents)
        store = vector_store(settings)
        with job_progress(f"eval spans · {name}") as report:
            evaluation = corpus_eval.evaluate(
                database, settings, store, corpus=target, sources=source_files(documents, texts, settings),
                questions=loaded, strategies=[name], corpus_model=corpus_model, retriever=retriever,
                top_k=n, scope=scope, name=f"eval spans: {name} on {documents.name}", tenant_id=DEFAULT_TENANT,
                progress=report,
            )  # fmt: skip
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    result = {
        "experiment_id": evaluation.experiment_id, "corpus": target,
        "config": {"strategy": name, "retriever": retriever, "corpus_model": corpus_model, "n": n, "scope": scope},
        "documents": len(texts), **corpus_eval.figures(evaluation.experiment, name), "timings": evaluation.timings,
    }  # fmt: skip
    if as_json:
        print_json(result)
        return
    title = f"{name} · {retriever} · {corpus_model} · n={n} · scope {scope}"
    table = Table("metric", "mean ± population SD", title=title)
    for metric, label in {**SPAN_LABELS, **RANK_LABELS}.items():
        table.add_row(f"{label} (%)", metric_cell(result[metric]))
    table.add_row("tok@k (tokens)", metric_cell(result["tok_at_k"], 0))
    out.print(table)
    _show_evaluation(evaluation, target, f"{result['documents']} documents, {result['questions']} questions, "
                     f"{result['chunks']} chunks (mean {result['mean_chunk_tokens']:.0f} tokens)")  # fmt: skip


def _show_evaluation(evaluation: Any, corpus: str, counts: str) -> None:
    """The lines under an evaluation's table: what ran, each stage's time, where the Experiment is."""
    processed = evaluation.processed
    stages = " · ".join(f"{stage} {seconds:.1f}s" for stage, seconds in evaluation.timings.items())
    out.print(
        f"{counts}\ncorpus {corpus}: {processed.processed} documents processed, {processed.skipped} already "
        f"current; {stages}\nexperiment {evaluation.experiment_id}, its Decision and reports: "
        f"chunkbench bench show {evaluation.experiment_id} · chunkbench report {evaluation.experiment_id}",
        highlight=False,
    )


@eval_app.command("chroma")
def chroma_command(
    data: Annotated[
        Path | None, typer.Option(help="Chroma's evaluation folder (default: the copy shipped with chunkbench)")
    ] = None,
    config: Annotated[str, typer.Option(help="One configuration (e.g. recursive-250-0) or 'all'")] = "all",
    as_json: JsonOption = False,
) -> None:
    """Chroma's MiniLM rows with Chroma's settings (n=5, corpus scope, dense) as a corpus benchmark: an Experiment
    with a Decision and reports; its figures next to the published."""
    from chunkbench.benchmarking.chroma_reproduction import CHROMA_CORPUS, reproduce
    from chunkbench.evaluation.chroma import CHROMA_MODEL, CHROMA_RETRIEVE, select_configs

    settings, database = open_database()
    try:
        configs = select_configs(config)
        store = vector_store(settings)
        with job_progress("Chroma reproduction") as report:
            result = reproduce(database, settings, store, configs, data, tenant_id=DEFAULT_TENANT, progress=report)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    evaluation = result.evaluation
    if as_json:
        print_json(
            {"model": CHROMA_MODEL, "n": CHROMA_RETRIEVE, "corpus": CHROMA_CORPUS,
             "experiment_id": evaluation.experiment_id, "timings": evaluation.timings, "configs": result.rows}
        )  # fmt: skip
        return
    table = Table(
        "config", "source", *SPAN_LABELS.values(), "tokens/chunk",
        title=f"{CHROMA_MODEL}, n={CHROMA_RETRIEVE}, corpus scope: mean ± population SD (%)",
    )  # fmt: skip
    for row in result.rows:
        ours, published = row["ours"], row["published"]
        table.add_row(
            row["name"], "ours", *(metric_cell(ours[name]) for name in SPAN_LABELS), f"{ours['mean_chunk_tokens']:.0f}"
        )
        if published:
            table.add_row(
                "", f"published ({row['chunker']})", *(metric_cell(published[name]) for name in SPAN_LABELS),
                f"{published['mean_chunk_tokens']:.0f}",
            )  # fmt: skip
    out.print(table)
    _show_evaluation(evaluation, CHROMA_CORPUS, f"{len(result.rows)} configurations")
