"""``chunkbench eval``: span evaluation of a strategy on a corpus (``eval chroma``, Chroma's published table
reproduced as a corpus benchmark, is ``benchmarking/commands.py``'s: cli.py adds it to this group)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from chunkbench.console import JsonOption, fail, out, progress_bar
from chunkbench.errors import ChunkbenchError
from chunkbench.models import StrategyName

# The evaluation modules pull in torch, Qdrant and numpy: imported inside the commands, so that every other
# ``chunkbench`` command starts without them. Retriever and scope names are validated by ``evaluate_spans``.
ProgressCallback = Callable[[str, int, int], None]

eval_app = typer.Typer(
    help="Evaluate retrieval against span-annotated questions (Chroma's metrics).", no_args_is_help=True
)

SPAN_LABELS = {"recall": "recall", "precision": "precision", "precision_omega": "precision_Ω", "iou": "IoU"}
_RANK_LABELS = {"recall_at_k": "recall@k", "hit_at_k": "hit@k", "mrr": "MRR", "ndcg_at_k": "nDCG@k"}


def parse_params(items: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values read as JSON when they parse (256, 0.4, true, ["\\n\\n", " "])."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"'{item}' is not key=value (e.g. chunk_size=256)")
        try:
            params[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            params[key.strip()] = raw
    return params


@contextmanager
def _progress(label: str) -> Iterator[ProgressCallback]:
    """A stage progress callback on stderr, the label shown before the stage."""
    with progress_bar() as progress:
        task = progress.add_task(label, total=None)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=f"{label} {stage}", completed=done, total=max(total, 1))

        yield report


def metric_cell(metric: dict[str, float], digits: int = 1) -> str:
    return f"{metric['mean']:.{digits}f} ± {metric['std']:.{digits}f}"


@eval_app.command("spans")
def spans(
    documents: Annotated[
        Path, typer.Option(help="Folder of .md/.txt files (id = file stem) or JSONL of {document_id, text}")
    ],
    questions: Annotated[Path, typer.Option(help="Chroma's questions_df.csv or JSONL questions with references")],
    strategy: Annotated[StrategyName, typer.Option(help="Chunking strategy")] = StrategyName.FIXED_SIZE,
    param: Annotated[
        list[str] | None, typer.Option(help="Strategy parameter key=value, e.g. chunk_size=250 (repeatable)")
    ] = None,
    retriever: Annotated[str, typer.Option(help="dense, bm25 or hybrid")] = "dense",
    corpus_model: Annotated[str, typer.Option(help="Corpus model id")] = "all-MiniLM-L6-v2",
    n: Annotated[int, typer.Option("-n", "--n", min=1, help="Chunks retrieved per question")] = 5,
    scope: Annotated[str, typer.Option(help="corpus: search every document (as Chroma); document: only its own")] = (
        "corpus"
    ),
    as_json: JsonOption = False,
) -> None:
    """Chunk every document, index them together, retrieve n chunks per question, print span and rank metrics."""
    from chunkbench.evaluation.corpus import evaluate_spans
    from chunkbench.evaluation.corpus_inputs import load_documents, load_questions

    params = parse_params(param or [])
    try:
        loaded_documents = load_documents(documents)
        loaded_questions = load_questions(questions, loaded_documents)
        with _progress(strategy.value) as report:
            evaluation = evaluate_spans(
                loaded_documents, loaded_questions, strategy=strategy, params=params, retriever=retriever,
                corpus_model=corpus_model, n=n, scope=scope, progress=report,
            )  # fmt: skip
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    result = evaluation.to_dict()
    if as_json:
        out.print_json(json.dumps(result, ensure_ascii=False))
        return
    config = result["config"]
    title = (
        f"{config['strategy']} {json.dumps(config['params'], ensure_ascii=False)} · {config['retriever']} · "
        f"{config['corpus_model']} · n={config['n']} · scope {config['scope']}"
    )
    table = Table("metric", "characters (%)", "tokens (%)", title=title)
    for name, label in SPAN_LABELS.items():
        table.add_row(label, metric_cell(result[name]), metric_cell(result["tokens"][name]))
    for name, label in _RANK_LABELS.items():
        table.add_row(label, metric_cell(result[name]), "")
    table.add_row("tok@k (tokens)", metric_cell(result["tok_at_k"], 0), "")
    out.print(table)
    timings = " · ".join(f"{stage} {seconds:.1f}s" for stage, seconds in result["timings"].items())
    out.print(
        f"{result['documents']} documents, {result['questions']} questions, {result['chunks']} chunks "
        f"(mean {result['mean_chunk_tokens']:.0f} tokens); mean ± population SD\n{timings}",
        highlight=False,
    )
