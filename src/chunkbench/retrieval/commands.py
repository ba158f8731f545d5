"""`chunkbench query`: ask a processed document a question through the one query pipeline (``retrieval.queries``)
and show the answer, its sources, the Expansion Tree and the latency. A top-level command: cli.py registers it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from chunkbench.console import JsonOption, fail, num_cell, out, print_json
from chunkbench.documents.lookup_commands import open_document
from chunkbench.errors import ChunkbenchError
from chunkbench.limits import MAX_TOP_K
from chunkbench.models import StrategyName
from chunkbench.storage.schema import DEFAULT_TENANT


def query(
    document: Annotated[str, typer.Argument(help="Document id or filename")],
    question: Annotated[str, typer.Argument(help="The question")],
    strategy: Annotated[
        StrategyName, typer.Option(parser=StrategyName, help="Strategy whose index to search")
    ] = StrategyName.RECURSIVE,
    retriever: Annotated[str, typer.Option(help="dense, bm25 or hybrid")] = "dense",
    top_k: Annotated[int | None, typer.Option(min=1, max=MAX_TOP_K, help="Hits (default CHUNKBENCH_TOP_K)")] = None,
    prev: Annotated[int | None, typer.Option(min=0, max=5, help="Neighbours before each hit (fixed_size)")] = None,
    next_: Annotated[
        int | None, typer.Option("--next", min=0, max=5, help="Neighbours after each hit (fixed_size)")
    ] = None,
    rerank: Annotated[str, typer.Option(help="none, cross_encoder or llm")] = "none",
    corpus_model: Annotated[str | None, typer.Option(help="Corpus model id (default: the one used to process)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Ask a processed document a question: answer, sources, Expansion Tree, latency breakdown."""
    from pydantic import ValidationError

    from chunkbench.retrieval import queries
    from chunkbench.retrieval.schemas import QueryIn

    settings, database, store, document_id = open_document(document, as_json)
    try:
        request = QueryIn(
            document_id=document_id, strategy=strategy, question=question, top_k=top_k, neighbor_prev=prev,
            neighbor_next=next_, retriever=retriever, rerank=rerank, corpus_model_id=corpus_model,
        )  # fmt: skip
        result = queries.run_query(database, settings, store, request, tenant_id=DEFAULT_TENANT)
    except ValidationError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    out.rule(f"answer ({result.answer_mode})")
    out.print(result.answer, markup=False, highlight=False)
    sources = Table("n", "chunk", "role", "score", "headings", "text", title="sources")
    for source in result.sources:
        excerpt = " ".join(source.text.split())
        sources.add_row(
            str(source.number), str(source.chunk_index), source.role, num_cell(source.score and round(source.score, 4)),
            " > ".join(source.heading_path), excerpt[:70] + ("…" if len(excerpt) > 70 else ""),
        )  # fmt: skip
    out.print(sources)
    out.rule("Expansion Tree")
    for node in result.expansion_tree:
        out.print(f"hit #{node['chunk_index']} rank {node['rank']} score {node['score']:.4f}", highlight=False)
        for side in ("neighbors_prev", "neighbors_next"):
            for neighbour in node.get(side, []):
                also = f" (hit, rank {neighbour['rank']})" if neighbour["role"] == "hit" else ""
                out.print(f"    {side.removeprefix('neighbors_')} #{neighbour['chunk_index']}{also}", highlight=False)
    latency = " · ".join(f"{stage} {ms:.0f} ms" for stage, ms in result.latency_breakdown.items())
    tokens = result.token_usage
    out.print(
        f"latency: {latency}\ntokens: prompt {tokens['prompt_tokens']} · completion {tokens['completion_tokens']}"
        f" · context {tokens['context_tokens']}",
        highlight=False,
    )
