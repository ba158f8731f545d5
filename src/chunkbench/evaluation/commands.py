"""``chunkbench eval``: the group, and what its commands share. ``eval spans`` and ``eval chroma`` run the corpus
benchmark, so they are defined in ``benchmarking/commands.py`` and cli.py adds them to this group."""

from __future__ import annotations

import typer

eval_app = typer.Typer(
    help="Evaluate retrieval against span-annotated questions (Chroma's metrics), as corpus benchmarks.",
    no_args_is_help=True,
)

SPAN_LABELS = {"recall": "recall", "precision": "precision", "precision_omega": "precision_Ω", "iou": "IoU"}
RANK_LABELS = {"recall_at_k": "recall@k", "hit_at_k": "hit@k", "mrr": "MRR", "ndcg_at_k": "nDCG@k"}


def metric_cell(metric: dict[str, float], digits: int = 1) -> str:
    return f"{metric['mean']:.{digits}f} ± {metric['std']:.{digits}f}"
