"""Chunks built by hand for vector-store and retrieval tests (and perf/query_scale.py's synthetic collections)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from chunkbench.chunking.base import Chunk, chunk_id
from chunkbench.models import StrategyName


def chunks_from_texts(
    document_id: str,
    texts: Sequence[str],
    *,
    strategy: StrategyName = StrategyName.FIXED_SIZE,
    parents: Sequence[str] = (),
    name: str | None = None,
    heading_path: Callable[[int], list[str]] = lambda index: ["Manual"],
) -> list[Chunk]:
    """Children laid end to end (one character apart), child i under parent ``i % len(parents)``, then the
    parents; token counts are word counts."""
    name = name or f"{document_id}.md"
    chunks: list[Chunk] = []
    position = 0
    for index, text in enumerate(texts):
        chunks.append(
            Chunk(
                chunk_id=chunk_id(strategy, document_id, index),
                document_id=document_id,
                document_name=name,
                strategy_name=strategy,
                chunk_index=index,
                text=text,
                start_index=position,
                end_index=position + len(text),
                token_count=len(text.split()),
                character_count=len(text),
                heading_path=heading_path(index),
                parent_id=chunk_id(strategy, document_id, index % len(parents), parent=True) if parents else None,
            )
        )
        position += len(text) + 1
    for index, text in enumerate(parents):
        chunks.append(
            Chunk(
                chunk_id=chunk_id(strategy, document_id, index, parent=True),
                document_id=document_id,
                document_name=name,
                strategy_name=strategy,
                chunk_index=index,
                text=text,
                start_index=0,
                end_index=len(text),
                token_count=len(text.split()),
                character_count=len(text),
                is_parent=True,
            )
        )
    return chunks
