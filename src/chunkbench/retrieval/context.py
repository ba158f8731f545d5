"""The answer step's context (seed 000 §9.3): numbered ``[Source n]`` blocks, parent text under its child."""

from __future__ import annotations

from dataclasses import dataclass

from chunkbench.models import StrategyName
from chunkbench.retrieval.search import RetrievedChunk
from chunkbench.storage.vectors import VectorStore


@dataclass
class ContextBlock:
    """One ``[Source n]`` of the context: a retrieved chunk and, for parent-child, its parent.

    ``parent_source`` is set instead of repeating a parent already shown under an earlier source.
    """

    source: int
    chunk: RetrievedChunk
    parent: RetrievedChunk | None = None
    parent_source: int | None = None


def attach_parents(
    store: VectorStore,
    chunks: list[RetrievedChunk],
    *,
    strategy: StrategyName | str,
    model_id: str,
    tenant_id: str,
    document_id: str | None,
) -> list[ContextBlock]:
    """One block per chunk, numbered 1.. in the given order; ``semantic_parent_child`` children get parents.

    Parents are fetched by id in one Qdrant call per document (one when ``document_id`` is given) and
    come back as ``role="parent"``, ``score=None``. A parent shared by several children is attached to
    the first of them only; the others point at that source, so the prompt does not repeat its text.
    """
    blocks = [ContextBlock(source=n, chunk=chunk) for n, chunk in enumerate(chunks, start=1)]
    if StrategyName(strategy) is not StrategyName.SEMANTIC_PARENT_CHILD:
        return blocks
    wanted: dict[str, list[str]] = {}
    for chunk in chunks:
        if chunk.parent_id and chunk.role != "parent":
            wanted.setdefault(document_id or chunk.document_id, []).append(chunk.parent_id)
    parents: dict[str, RetrievedChunk] = {}
    for doc, parent_ids in wanted.items():
        for payload in store.get_chunks_by_ids(
            strategy, model_id, tenant_id=tenant_id, document_id=doc, chunk_ids=parent_ids
        ):
            if payload.get("is_parent"):
                parent = RetrievedChunk.from_payload(payload, score=None, role="parent")
                parents[parent.chunk_id] = parent
    shown: dict[str, int] = {}
    for block in blocks:
        parent_id = block.chunk.parent_id
        if parent_id is None or parent_id not in parents:
            continue
        if parent_id in shown:
            block.parent_source = shown[parent_id]
        else:
            block.parent = parents[parent_id]
            shown[parent_id] = block.source
    return blocks


def _label(chunk: RetrievedChunk) -> str:
    parts = [chunk.document_name or chunk.document_id]
    if chunk.heading_path:
        parts.append(" > ".join(chunk.heading_path))
    return " | ".join(parts)


def build_context(blocks: list[ContextBlock]) -> str:
    """The prompt context: ``[Source n] document | headings`` then the chunk text, then its parent's."""
    sections: list[str] = []
    for block in blocks:
        lines = [f"[Source {block.source}] {_label(block.chunk)}", block.chunk.text.strip()]
        if block.parent is not None:
            lines += ["Parent context:", block.parent.text.strip()]
        elif block.parent_source is not None:
            lines.append(f"Parent context: see [Source {block.parent_source}].")
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def source_map(blocks: list[ContextBlock]) -> dict[int, RetrievedChunk]:
    """``n → chunk`` of ``[Source n]``, to resolve the answer's citations."""
    return {block.source: block.chunk for block in blocks}
