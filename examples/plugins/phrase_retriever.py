"""Example plugin: a "phrase" retriever, the BM25 hits that contain the whole question verbatim.

For look-ups of codes and names (``HW-7731``) where a near match is worse than no match.
"""

from __future__ import annotations

from dataclasses import replace

from chunkbench.plugins import Retriever, register_retriever
from chunkbench.retrieval.search import MAX_TOP_K, RetrievedChunk, SearchRequest, get_retriever
from chunkbench.storage.vectors import VectorStore


@register_retriever
class PhraseRetriever(Retriever):
    """BM25 candidates, kept only when their text contains the question (case-insensitive), best first."""

    name = "phrase"
    needs_query_vector = False
    uses_sparse = True

    def search(self, store: VectorStore, request: SearchRequest) -> list[RetrievedChunk]:
        candidates = get_retriever("bm25").search(store, replace(request, limit=max(request.limit, MAX_TOP_K)))
        phrase = " ".join(request.question.lower().split())
        return [hit for hit in candidates if phrase in " ".join(hit.text.lower().split())][: request.limit]
