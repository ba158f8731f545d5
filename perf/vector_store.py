"""Vector store engines side by side: Qdrant Edge (the embedded default) vs qdrant-client's local mode (the old one).

At 10k, 50k and 200k points, through ``VectorStore`` as chunkbench uses it: upsert (``replace_document_chunks``,
documents of ``DOC_CHUNKS`` chunks), Edge's HNSW build (in its child process, after writes pause), dense / sparse /
hybrid search over the main tenant's corpus (95 % of the points), hybrid with a small tenant's filter (5 %), and
delete by document. Edge searches both exactly (benchmarks, eval) and on its graph (serving, ``exact=False``);
local mode is always exact (brute force in Python) and runs only where it finishes in reasonable time: on disk
(the old default) at 10k, in memory at 10k and 50k, not at 200k (estimated from SETUP-NOTES: minutes of upsert
and over 2 s per search). Vectors are synthetic but clustered (256 centres in 384 dimensions, cosine ~0.7 within
a cluster: real embeddings cluster, and i.i.d. random vectors are adversarial for HNSW); chunk texts are whole
sentences of the Chroma corpora, so BM25 sees real term statistics. On a shared, noisy machine: read the ratios.

    PYTHONPATH=src python perf/vector_store.py [--quick] [--queries N]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from query_common import ROOT, p50_p95, timed_ms, write_results
from query_scale import build_chunks, synthetic_texts

RESULTS = ROOT / "perf" / "results" / "vector_store.json"
SCALES = (10_000, 50_000, 200_000)
DIM = 384
DOC_CHUNKS = 250
SMALL_EVERY = 20  # every 20th document belongs to the small tenant: 5 % of the points
TOP_K = 10
PREFETCH = 50  # candidates per vector before RRF (rerank_candidate_k's default)
DELETES = 5
MODEL = "local:bench-384"
# Where local mode runs: (label, location) per scale; none at 200k.
LOCAL_RUNS = {10_000: ("local mode, disk", "local mode, memory"), 50_000: ("local mode, memory",)}
OPS = ("dense", "sparse", "hybrid", "hybrid_small_tenant")


def clustered(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).normal(size=(256, DIM))
    matrix = centres[rng.integers(0, len(centres), count)] + 0.6 * rng.normal(size=(count, DIM))
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def tenant_of(document: int) -> str:
    return "small" if document % SMALL_EVERY == 0 else "main"


def open_store(engine: str, folder: Path) -> Any:
    from qdrant_client import QdrantClient

    from chunkbench.config import Settings
    from chunkbench.storage.qdrant_server import ServerEngine
    from chunkbench.storage.vectors import VectorStore

    settings = Settings(_env_file=None, data_dir=folder)
    if engine == "edge":
        return VectorStore(settings)
    # The old embedded default was QdrantClient(path=…); qdrant-client's API is the server engine's.
    client = QdrantClient(path=str(folder / "local")) if "disk" in engine else QdrantClient(location=":memory:")
    return VectorStore(settings, engine=ServerEngine(settings, client=client))


def fill(store: Any, texts: list[str]) -> tuple[float, list[tuple[str, str]]]:
    """Write every document; returns the seconds it took and (tenant, document id) of each document."""
    from chunkbench.embedding.sparse import Bm25Encoder
    from chunkbench.models import StrategyName

    encoder = Bm25Encoder()
    documents = []
    started = time.perf_counter()
    for number, start in enumerate(range(0, len(texts), DOC_CHUNKS)):
        document_id = f"doc-{number:05d}"
        chunks = build_chunks(texts[start : start + DOC_CHUNKS], document_id, start)
        store.replace_document_chunks(
            StrategyName.RECURSIVE, MODEL, DIM, tenant_id=tenant_of(number), chunks=chunks,
            dense=clustered(len(chunks), seed=number), sparse=encoder.encode_documents(c.text for c in chunks),
        )  # fmt: skip
        documents.append((tenant_of(number), document_id))
    return time.perf_counter() - started, documents


def measure(
    store: Any, queries: list[tuple[np.ndarray, Any]], *, exact: bool
) -> tuple[dict[str, Any], list[list[str]]]:
    """p50/p95 per search kind, and the dense top-10 ids of every query (for recall)."""
    from chunkbench.models import StrategyName
    from chunkbench.storage.points import QueryMode

    def search(op: str, dense: np.ndarray, sparse: Any) -> list[tuple[dict[str, Any], float]]:
        mode = {"dense": QueryMode.DENSE, "sparse": QueryMode.SPARSE}.get(op, QueryMode.FUSION)
        return store.search(
            StrategyName.RECURSIVE, MODEL, mode=mode, tenant_id="small" if op == "hybrid_small_tenant" else "main",
            document_id=None, top_k=TOP_K, dense=dense, sparse=sparse, prefetch_limit=PREFETCH, exact=exact,
        )  # fmt: skip

    timings: dict[str, Any] = {}
    dense_ids: list[list[str]] = []
    for op in OPS:
        for dense, sparse in queries[:3]:
            search(op, dense, sparse)  # warm-up
        spent = []
        for dense, sparse in queries:
            ms, found = timed_ms(lambda o=op, d=dense, s=sparse: search(o, d, s))
            spent.append(ms)
            if op == "dense":
                dense_ids.append([payload["chunk_id"] for payload, _ in found])
        timings[op] = p50_p95(spent)
    return timings, dense_ids


def delete_documents(store: Any, documents: list[tuple[str, str]]) -> dict[str, float]:
    spent = []
    for tenant, document_id in [d for d in documents if d[0] == "main"][-DELETES:]:
        ms, deleted = timed_ms(lambda t=tenant, d=document_id: store.delete_document(t, d))
        assert deleted == DOC_CHUNKS
        spent.append(ms)
    return p50_p95(spent)


def run_engine(engine: str, texts: list[str], queries: list[tuple[np.ndarray, Any]], folder: Path) -> dict[str, Any]:
    from chunkbench.storage import edge_index

    edge_index.QUIET_S = 0.5
    store = open_store(engine, folder)
    result: dict[str, Any] = {"engine": engine, "points": len(texts)}
    try:
        print(f"  {engine}: writing {len(texts):,} points ...", flush=True)
        result["upsert_s"], documents = fill(store, texts)
        print(f"    upsert {result['upsert_s']:.1f} s", flush=True)
        if engine == "edge":
            # While the child builds the graph (searches never wait for it; they share the CPU with it).
            result["exact_during_build"], _ = measure(store, queries, exact=True)
            started = time.perf_counter()
            assert store.engine.indexer.wait_idle(3600)
            result["hnsw_build_wait_s"] = round(time.perf_counter() - started, 1)
            result["hnsw_builds"] = store.engine.indexer.builds
            print(f"    HNSW build done {result['hnsw_build_wait_s']} s after those searches", flush=True)
            result["exact"], exact_ids = measure(store, queries, exact=True)
            result["hnsw"], graph_ids = measure(store, queries, exact=False)
            hits = [len(set(a) & set(b)) / max(len(a), 1) for a, b in zip(exact_ids, graph_ids, strict=True)]
            result["hnsw_dense_recall_at_10"] = round(float(np.mean(hits)), 4)
            result["disk_mb"] = round(
                sum(p.stat().st_size for p in store.engine.root.rglob("*") if p.is_file()) / 2**20
            )
        else:
            result["exact"], _ = measure(store, queries, exact=True)
        result["delete_document"] = delete_documents(store, documents)
        for kind in ("exact", "hnsw"):
            if kind in result:
                print(f"    {kind}: " + "  ".join(f"{op} {result[kind][op]['p50_ms']:.2f}" for op in OPS) + " ms p50")
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)
    return result


def print_table(rows: list[dict[str, Any]], skipped: list[str]) -> None:
    print()
    print(
        f"p50 ms of VectorStore.search (top {TOP_K}, hybrid: {PREFETCH} candidates per vector, RRF); upsert s through"
    )
    print(f"replace_document_chunks ({DOC_CHUNKS}-chunk documents); build s: the HNSW build's remaining wait after")
    print("the searches made during it; delete: one document (p50 ms)")
    head = f"{'points':>8} {'engine':<24}{'upsert s':>9}{'build s':>8}"
    print(head + "".join(f"{op:>11}" for op in ("dense", "sparse", "hybrid", "hyb+tenant")) + f"{'delete':>9}")
    for row in rows:
        kinds = (
            [("exact", "edge, exact")]
            if row["engine"] != "edge"
            else [("exact", "edge, exact"), ("hnsw", "edge, HNSW")]
        )
        for kind, label in kinds:
            name = row["engine"] if row["engine"] != "edge" else label
            build = f"{row['hnsw_build_wait_s']:>8.1f}" if kind == "hnsw" else f"{'':>8}"
            upsert = f"{row['upsert_s']:>9.1f}" if kind == "exact" else f"{'':>9}"
            cells = "".join(f"{row[kind][op]['p50_ms']:>11.2f}" for op in OPS)
            delete = f"{row['delete_document']['p50_ms']:>9.1f}" if kind == "exact" else f"{'':>9}"
            print(f"{row['points']:>8,} {name:<24}{upsert}{build}{cells}{delete}")
    print()
    print("ratios, local mode ÷ Edge exact (how many times slower the old engine is):")
    by_scale = {row["points"]: row for row in rows if row["engine"] == "edge"}
    for row in rows:
        edge = by_scale.get(row["points"])
        if row["engine"] == "edge" or edge is None:
            continue
        ratios = {op: row["exact"][op]["p50_ms"] / edge["exact"][op]["p50_ms"] for op in OPS}
        ratios["upsert"] = row["upsert_s"] / edge["upsert_s"]
        ratios["delete"] = row["delete_document"]["p50_ms"] / edge["delete_document"]["p50_ms"]
        row["ratio_to_edge_exact"] = {op: round(value, 1) for op, value in ratios.items()}
        print(f"  {row['points']:>8,} {row['engine']:<20} " + "  ".join(f"{k} ×{v:.0f}" for k, v in ratios.items()))
    for row in rows:
        if row["engine"] == "edge":
            print(
                f"  {row['points']:>8,} Edge HNSW dense recall@10 vs exact: {row['hnsw_dense_recall_at_10']:.3f}; "
                f"{row['hnsw_builds']} build(s); {row['disk_mb']} MB on disk"
            )
    for line in skipped:
        print("  skipped: " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k points only")
    parser.add_argument("--queries", type=int, default=100, help="queries per search kind (Edge)")
    parser.add_argument("--local-queries", type=int, default=20, help="queries per search kind (local mode)")
    args = parser.parse_args()
    # Local mode says, once per collection and query, that payload indexes and search params do nothing there.
    warnings.filterwarnings("ignore", message="Payload indexes have no effect|Local mode performs exact")

    from chunkbench.embedding.sparse import Bm25Encoder

    scales = SCALES[:1] if args.quick else SCALES
    started = time.perf_counter()
    texts = synthetic_texts(max(scales))
    rng = np.random.default_rng(42)
    encoder = Bm25Encoder()
    picks = rng.integers(0, len(texts), args.queries)
    queries = [
        (clustered(1, seed=1_000_000 + i)[0], encoder.encode_query(" ".join(texts[p].split()[:6])))
        for i, p in enumerate(picks)
    ]
    rows: list[dict[str, Any]] = []
    skipped = [
        "local mode at 200,000 points: its brute-force Python search took 0.5 s per query at 50k (SETUP-NOTES), "
        "over 2 s expected at 200k, and minutes of upsert"
    ]
    skipped += ["local mode on disk at 50,000 points: 194 s of upsert at 50k in SETUP-NOTES"] if not args.quick else []
    with tempfile.TemporaryDirectory(prefix="chunkbench-vs-") as tmp_name:
        tmp = Path(tmp_name)
        for size in scales:
            print(f"{size:,} points", flush=True)
            rows.append(run_engine("edge", texts[:size], queries, tmp / f"edge-{size}"))
            for engine in LOCAL_RUNS.get(size, ()):
                rows.append(run_engine(engine, texts[:size], queries[: args.local_queries], tmp / f"{engine}-{size}"))
    total_s = time.perf_counter() - started
    print_table(rows, skipped)
    write_results(
        RESULTS,
        {
            "what": __doc__.split("\n\n")[0],
            "dimension": DIM,
            "chunks_per_document": DOC_CHUNKS,
            "small_tenant_share": 1 / SMALL_EVERY,
            "top_k": TOP_K,
            "prefetch": PREFETCH,
            "queries": {"edge": args.queries, "local": args.local_queries},
            "results": rows,
            "skipped": skipped,
        },
        total_s,
    )


if __name__ == "__main__":
    main()
