"""Retrievers at scale: ``VectorStore.search`` (dense, bm25, hybrid) on 1,000 and 10,000 chunks, filtered.

It builds synthetic collections of MiniLM-embedded chunks (whole sentences of the Chroma corpora) in the embedded
store (Qdrant Edge), ``DOC_CHUNKS`` per document, and times ``VectorStore.search`` for the dense, bm25 and hybrid
retrievers with a filter to one document, after a few warm-up searches. It ends with what a Qdrant server would
change (``SERVER_NOTE``).

    PYTHONPATH=src python perf/query_scale.py [--quick] [--questions N]

The query pipeline against the raw path: ``perf/query_pipeline.py``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from query_common import (
    CORPORA,
    MODEL_ID,
    QUESTIONS,
    ROOT,
    TOP_K,
    WARMUP,
    p50_p95,
    prepare,
    questions,
    timed_ms,
    write_results,
)

RESULTS = ROOT / "perf" / "results" / "query_scale.json"

SCALES = (1_000, 10_000)
CHUNK_CHARS = 200  # synthetic chunks: whole sentences up to ~200 chars (short, so 10k embed in a few minutes)
DOC_CHUNKS = 500  # synthetic chunks per document; searches filter to one of them
EMBED_BATCH = 500
RETRIEVERS = ("dense", "bm25", "hybrid")

SERVER_NOTE = (
    "The embedded store is Qdrant Edge (the Qdrant engine in process): exact search here, as VectorStore.search "
    "defaults to; an HNSW graph serves non-exact searches once a collection has CHUNKBENCH_QDRANT_HNSW_MIN_POINTS "
    "chunks (perf/vector_store.py compares Edge, its graph and the old local mode up to 200,000 points). A Qdrant "
    "server (CHUNKBENCH_QDRANT_URL) runs the same engine behind the network (not measured: no server here)."
)


def synthetic_texts(count: int, size: int = CHUNK_CHARS) -> list[str]:
    """``count`` chunks of whole sentences from the corpora; later passes shift the grouping by a sentence."""
    sentences_per_file = []
    for path in sorted(CORPORA.glob("*.md")):
        text = " ".join(path.read_text(encoding="utf-8").split())
        sentences_per_file.append([s for s in re.split(r"(?<=[.!?])\s+", text) if s])
    texts: list[str] = []
    shift = 0
    while len(texts) < count:
        for sentences in sentences_per_file:
            current = ""
            for sentence in sentences[shift:]:
                if current and len(current) + 1 + len(sentence) > size:
                    texts.append(current)
                    current = ""
                    if len(texts) >= count:
                        return texts
                current = f"{current} {sentence}" if current else sentence[: size * 2]
            if current:
                texts.append(current)
                if len(texts) >= count:
                    return texts
        shift += 1
    return texts


def embed_all(texts: list[str], settings: Any) -> np.ndarray:
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.roles import embed_texts

    spec = get_spec(MODEL_ID)
    parts = []
    started = time.perf_counter()
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(embed_texts(spec, texts[start : start + EMBED_BATCH], "document", settings))
        done = min(start + EMBED_BATCH, len(texts))
        elapsed = time.perf_counter() - started
        print(f"  embedded {done:>6}/{len(texts)} chunks  {elapsed:6.1f} s  ({done / elapsed:.0f}/s)", flush=True)
    return np.vstack(parts)


def build_chunks(texts: list[str], document_id: str, offset: int) -> list[Any]:
    """Recursive-strategy chunks laid end to end, 50 per synthetic heading (the tests' chunk builder)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from chunkbench.models import StrategyName
    from chunkgen import chunks_from_texts

    return chunks_from_texts(
        document_id, texts, strategy=StrategyName.RECURSIVE,
        heading_path=lambda index: [f"Synthetic {offset + index // 50}"],
    )  # fmt: skip


def bench_scale(
    size: int, texts: list[str], dense: np.ndarray, questions: list[str], tmp: Path
) -> dict[str, dict[str, Any]]:
    from chunkbench.config import Settings
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.roles import embed_query
    from chunkbench.embedding.sparse import Bm25Encoder
    from chunkbench.models import StrategyName
    from chunkbench.retrieval.search import get_retriever
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import close_vector_stores, get_vector_store

    settings = Settings(_env_file=None, data_dir=tmp / f"scale-{size}")
    spec = get_spec(MODEL_ID)
    store = get_vector_store(settings)
    encoder = Bm25Encoder()
    started = time.perf_counter()
    documents = []
    for number, start in enumerate(range(0, size, DOC_CHUNKS)):
        document_id = f"synthetic-{number:04d}"
        documents.append(document_id)
        chunks = build_chunks(texts[start : start + DOC_CHUNKS], document_id, start)
        store.replace_document_chunks(
            StrategyName.RECURSIVE,
            spec.id,
            spec.dimension,
            tenant_id=DEFAULT_TENANT,
            chunks=chunks,
            dense=dense[start : start + DOC_CHUNKS],
            sparse=encoder.encode_documents(c.embedding_text for c in chunks),
        )
    upsert_s = time.perf_counter() - started
    print(f"  {size} chunks in {len(documents)} documents written in {upsert_s:.1f} s")
    target = documents[len(documents) // 2]
    query_vectors = [embed_query(spec, q, settings) for q in questions]
    query_sparse = [encoder.encode_query(q) for q in questions]

    def search(retriever: str, index: int) -> list[tuple[dict[str, Any], float]]:
        return store.search(
            StrategyName.RECURSIVE,
            spec.id,
            mode=get_retriever(retriever).query_mode,
            tenant_id=DEFAULT_TENANT,
            document_id=target,
            top_k=TOP_K,
            dense=query_vectors[index],
            sparse=query_sparse[index],
            prefetch_limit=max(2 * TOP_K, settings.rerank_candidate_k),  # as retrieval.search.retrieve asks
        )

    results: dict[str, dict[str, Any]] = {}
    for retriever in RETRIEVERS:
        for index in range(WARMUP):
            search(retriever, index)
        timings = []
        hits = []
        for index in range(len(questions)):
            ms, found = timed_ms(lambda r=retriever, i=index: search(r, i))
            timings.append(ms)
            hits.append(len(found))
            assert all(payload["document_id"] == target for payload, _ in found)
        results[retriever] = {**p50_p95(timings), "mean_hits": round(statistics.fmean(hits), 2)}
        print(
            f"  {retriever:<7} p50 {results[retriever]['p50_ms']:8.1f} ms  p95 {results[retriever]['p95_ms']:8.1f} ms"
        )
    close_vector_stores()
    return {
        "chunks": size,
        "documents": len(documents),
        "chunks_per_document": DOC_CHUNKS,
        "upsert_s": round(upsert_s, 2),
        "retrievers": results,
    }


def print_table(scale_results: list[dict[str, Any]], questions: int) -> None:
    print(f"Embedded Qdrant (Edge), VectorStore.search with a document filter ({DOC_CHUNKS} chunks per")
    print(f"  document), top_k {TOP_K}, {questions} queries after {WARMUP} warm-up each")
    print(f"{'chunks':>8}{'docs':>6}{'retriever':>11}{'p50 ms':>10}{'p95 ms':>10}")
    for result in scale_results:
        for retriever, row in result["retrievers"].items():
            size, docs = result["chunks"], result["documents"]
            print(f"{size:>8,}{docs:>6}{retriever:>11}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}")
    print()
    print(SERVER_NOTE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 chunks only")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="queries per retriever (max 30)")
    args = parser.parse_args()
    prepare()

    from chunkbench.config import Settings

    asked = questions(args.questions)
    scales = SCALES[:1] if args.quick else SCALES
    started = time.perf_counter()
    scale_results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp_name:
        tmp = Path(tmp_name)
        print(f"embedded Qdrant (Edge) at {', '.join(f'{s:,}' for s in scales)} chunks")
        texts = synthetic_texts(max(scales))
        dense = embed_all(texts, Settings(_env_file=None, data_dir=tmp / "embed"))
        for size in scales:
            scale_results.append(bench_scale(size, texts[:size], dense[:size], asked, tmp))
    total_s = time.perf_counter() - started
    print()
    print_table(scale_results, len(asked))
    result = {
        "scale": {
            "mode": "embedded (Qdrant Edge, exact)",
            "synthetic_chunk_chars": CHUNK_CHARS,
            "embedded_with": MODEL_ID,
            "results": scale_results,
        },
        "qdrant_server_note": SERVER_NOTE,
    }
    write_results(RESULTS, result, total_s)


if __name__ == "__main__":
    main()
