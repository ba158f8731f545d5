"""Query latency: ``POST /queries`` through the real app vs the raw embed + Qdrant path, and retrievers at scale.

Part 1 ingests one real document (the State of the Union speech) through the API, processes it with the
recursive strategy, then times N questions through ``POST /queries`` (dense, top_k 5, extractive answers: no
LLM) interleaved with the raw path (``embed_query`` + ``query_points`` on the same collection), twice:

- in one interpreter: uvicorn in a thread of this process, ``run_query`` called directly, and the raw path on
  the server's own vector store (the client, the server and the raw path share one GIL);
- in separate processes: ``chunkbench serve`` as a subprocess on the same data directory, and the raw path in
  a fresh process of its own on a copy of the Qdrant folder (embedded Qdrant admits one process per folder);
  this process is only the client, so neither side shares an interpreter with anything else.

Each side first answers every question once, untimed (kept as the first-pass figure: that is when the
extractive answerer embeds a chunk's sentences, cached afterwards), then every question again, timed, the
sides alternating. An HTTP request is timed until its body has arrived; the client parses the JSON after the
clock stops (the raw path returns Python objects, so neither side pays for decoding). The ``generate``
stage is also reported on its own, and the ratio is given with and without it. Both processes inherit the
environment, so OpenMP settings (``OMP_WAIT_POLICY``, ``OMP_NUM_THREADS``) apply to both sides alike.

Part 2 builds synthetic collections of 1,000 and 10,000 MiniLM-embedded chunks in embedded (local) Qdrant and
times ``VectorStore.search`` for the dense, bm25 and hybrid retrievers with a document filter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from serving import child_env, served_process

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPORA = SHARED / "data" / "chroma_chunking_eval" / "corpora"
DEFAULT_CORPUS = CORPORA / "state_of_the_union.md"
RESULTS = ROOT / "bench" / "results" / "query.json"
MODEL_ID = "all-MiniLM-L6-v2"
STRATEGY = "recursive"
TOP_K = 5
WARMUP = 3
TARGET_RATIO = 1.3
SCALES = (1_000, 10_000)
CHUNK_CHARS = 200  # synthetic chunks: whole sentences up to ~200 chars (short, so 10k embed in a few minutes)
DOC_CHUNKS = 500  # synthetic chunks per document; searches filter to one of them
EMBED_BATCH = 500
RETRIEVERS = ("dense", "bm25", "hybrid")

QUESTIONS = [
    "What did Franklin Roosevelt say to Congress in January 1941?",
    "What is Putin doing in Ukraine?",
    "What is Ukraine asking the United States for?",
    "How does the President describe the threat to democracy at home?",
    "What happened on January 6th?",
    "What does the speech say about NATO?",
    "How many jobs were created during this administration?",
    "What is said about inflation?",
    "How does the President propose to lower prescription drug costs?",
    "What is the cap on insulin for seniors?",
    "What does the speech say about the CHIPS and Science Act?",
    "What is proposed for child care costs?",
    "What does the President say about billionaires and taxes?",
    "What is the minimum tax rate proposed for corporations?",
    "What is said about the border and immigration?",
    "What does the President say about Roe v. Wade and reproductive freedom?",
    "What is proposed about IVF?",
    "What does the speech say about gun violence?",
    "What about the assault weapons ban?",
    "What is said about climate change and clean energy?",
    "What is the plan for housing and mortgage costs?",
    "What does the President say about student debt?",
    "What is said about Gaza and Israel?",
    "What about humanitarian aid to Gaza by sea?",
    "How does the President talk about China?",
    "What does the speech say about Social Security and Medicare?",
    "What is said about the cancer moonshot?",
    "What does the President say about junk fees?",
    "What is said about police and public safety?",
    "How does the speech end?",
]

SERVER_NOTE = (
    "Expected, not measured (no Qdrant server here): embedded (local) Qdrant scores every point in Python "
    "(brute force), and a payload filter is also evaluated point by point, so latency grows linearly with the "
    "collection size (SETUP-NOTES 'Qdrant embedded': hybrid + filter 449 ms at 10k points, 3.1 s at 50k; it "
    "warns above 20,000 points per collection and ignores payload indexes). A Qdrant server "
    "(CHUNKBENCH_QDRANT_URL) searches dense vectors through an HNSW graph (CHUNKBENCH_QDRANT_HNSW_M / "
    "_EF_CONSTRUCT / _EF_SEARCH), sparse BM25 vectors through an inverted index, and chunkbench creates "
    "tenant_id / document_id payload indexes on a server so the document filter narrows candidates before "
    "scoring; search should then be roughly constant in collection size (a few ms plus network), leaving "
    "query embedding and, for extractive answers, the generate stage as the dominant costs."
)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def p50_p95(values_ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values_ms, 50), 2), "p95_ms": round(percentile(values_ms, 95), 2)}


def timed_ms(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = func()
    return (time.perf_counter() - start) * 1000, value


# ---------------------------------------------------------------- part 1: pipeline vs raw


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """The app under a real uvicorn server on a free loopback port, in this process (so the raw path
    shares its vector store): requests go through HTTP exactly as a client's would."""
    import socket
    import threading

    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


# A side of the comparison: question → (wall ms, the answer stage's ms, the stages' breakdown or None).
Side = Callable[[str], tuple[float, float, dict[str, float] | None]]


def http_side(base_url: str, document_id: str) -> Side:
    """``POST /queries`` on one keep-alive connection, timed until the response body has arrived.

    The client is the standard library's ``http.client``: the figure is the server's, and httpx's own
    request/response handling (~0.45 ms a request here) is not. The JSON is decoded after the clock stops.
    """
    import http.client
    from urllib.parse import urlsplit

    address = urlsplit(base_url)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=120)
    headers = {"Content-Type": "application/json"}

    def post(payload: bytes) -> tuple[int, bytes]:
        connection.request("POST", "/queries", body=payload, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()

    def run(question: str) -> tuple[float, float, dict[str, float] | None]:
        body = {"document_id": document_id, "strategy": STRATEGY, "question": question, "retriever": "dense"}
        payload = json.dumps({**body, "top_k": TOP_K}).encode()
        try:
            ms, (status, content) = timed_ms(lambda: post(payload))
        except (ConnectionError, http.client.HTTPException):
            # uvicorn closes a connection idle for 5 s (e.g. while the raw worker loads its model):
            # reconnect outside the clock and ask again.
            connection.close()
            connection.connect()
            ms, (status, content) = timed_ms(lambda: post(payload))
        if status != 201:
            raise RuntimeError(f"POST /queries answered {status}: {content[:500]!r}")
        out = json.loads(content)
        assert out["answer_mode"] == "extractive", out["answer_mode"]
        breakdown = {stage: float(value) for stage, value in out["latency_breakdown"].items()}
        return ms, breakdown.get("generate", 0.0), breakdown

    return run


def raw_side(store: Any, settings: Any, document_id: str, chunk_count: int) -> Side:
    """The raw path: ``embed_query`` + ``query_points`` on the recursive collection, filtered to the document."""
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.service import embed_query
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import DENSE_VECTOR, collection_name, document_filter

    spec = get_spec(MODEL_ID)
    collection = collection_name(STRATEGY, spec.id)
    point_filter = document_filter(DEFAULT_TENANT, document_id, include_parents=False)

    def search(question: str) -> Any:
        vector = embed_query(spec, question, settings)
        return store.client.query_points(
            collection, query=vector.tolist(), using=DENSE_VECTOR, limit=TOP_K, query_filter=point_filter,
            with_payload=True,
        )  # fmt: skip

    def run(question: str) -> tuple[float, float, dict[str, float] | None]:
        ms, out = timed_ms(lambda: search(question))
        assert len(out.points) == min(TOP_K, chunk_count)
        return ms, 0.0, None

    return run


@contextmanager
def raw_process(data_dir: Path, document_id: str, chunk_count: int) -> Iterator[Side]:
    """The raw path in a fresh process of its own (like the server's): it reads a question per line on stdin,
    times embed + search itself and answers with the milliseconds; the pipe is outside the clock."""
    import subprocess

    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--raw-worker",
        str(data_dir),
        document_id,
        str(chunk_count),
    ]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=child_env()
    )

    def run(question: str) -> tuple[float, float, dict[str, float] | None]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(question) + "\n")
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the raw worker exited with {process.wait()}")
        return float(line), 0.0, None

    try:
        yield run
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)


def raw_worker(data_dir: Path, document_id: str, chunk_count: int) -> None:
    """``--raw-worker``: serve :func:`raw_process`'s requests until stdin closes."""
    from chunkbench.config import Settings
    from chunkbench.storage.vectors import close_vector_stores, get_vector_store

    settings = Settings(_env_file=None, data_dir=data_dir)
    side = raw_side(get_vector_store(settings), settings, document_id, chunk_count)
    for line in sys.stdin:
        ms, _, _ = side(json.loads(line))
        print(ms, flush=True)
    close_vector_stores()


def compare(questions: list[str], sides: dict[str, Side]) -> dict[str, Any]:
    """Every side on every question, alternating the order; p50/p95 and ratios to ``raw``.

    A first pass over all questions warms every side up and is kept as ``http_first_pass``: the first time a
    chunk comes back, the extractive answerer embeds its sentences (cached after that). The timed pass is the
    steady state of a document asked many questions (a benchmark run, a chatbot after its first questions).
    """
    first_pass: list[float] = []
    for question in questions:
        for name, side in sides.items():
            ms, _, _ = side(question)
            if name == "http":
                first_pass.append(ms)
    wall: dict[str, list[float]] = {name: [] for name in sides}
    answer: dict[str, list[float]] = {name: [] for name in sides}
    stages: dict[str, list[float]] = {}
    names = list(sides)
    for index, question in enumerate(questions):
        # Alternate which goes first so neither side always runs on a warmer cache.
        for name in names if index % 2 == 0 else names[::-1]:
            ms, generate_ms, breakdown = sides[name](question)
            wall[name].append(ms)
            answer[name].append(generate_ms)
            if name == "http" and breakdown:
                for stage, value in breakdown.items():
                    stages.setdefault(stage, []).append(value)
    raw_stats = p50_p95(wall["raw"])

    def ratio(values: list[float]) -> dict[str, float]:
        stats = p50_p95(values)
        return {
            **stats,
            "ratio_p50": round(stats["p50_ms"] / raw_stats["p50_ms"], 3),
            "ratio_p95": round(stats["p95_ms"] / raw_stats["p95_ms"], 3),
        }

    result: dict[str, Any] = {"raw": raw_stats, "http_first_pass": p50_p95(first_pass)}
    for name in names:
        if name == "raw":
            continue
        result[f"{name}_total"] = ratio(wall[name])
        result[f"{name}_without_generate"] = ratio([w - g for w, g in zip(wall[name], answer[name], strict=True)])
    if stages:
        result["http_embed_plus_search_stages"] = ratio(
            [e + s for e, s in zip(stages["embed"], stages["search"], strict=True)]
        )
        # What the pipeline's own clock does not see: request entry, saving the query, the response, transport.
        result["http_outside_pipeline_ms"] = p50_p95(
            [w - t for w, t in zip(wall["http"], stages["total"], strict=True)]
        )
        result["stage_p50_ms"] = {stage: round(percentile(values, 50), 2) for stage, values in stages.items()}
        result["stage_p95_ms"] = {stage: round(percentile(values, 95), 2) for stage, values in stages.items()}
    result["meets_target"] = result["http_total"]["ratio_p50"] <= TARGET_RATIO
    return result


def bench_pipeline(corpus: Path, questions: list[str], tmp: Path) -> dict[str, Any]:
    import shutil

    import httpx

    from chunkbench.app import create_app
    from chunkbench.config import Settings
    from chunkbench.embedding.registry import get_spec
    from chunkbench.retrieval.schemas import QueryIn
    from chunkbench.retrieval.service import run_query
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import close_vector_stores, collection_name, document_filter, get_vector_store

    settings = Settings(_env_file=None, data_dir=tmp / "pipeline")
    if settings.llm_configured:
        sys.exit("An LLM is configured in the environment; this benchmark needs extractive answers.")
    spec = get_spec(MODEL_ID)
    app = create_app(settings)
    with serving(app) as base_url, httpx.Client(base_url=base_url, timeout=120) as client:
        with corpus.open("rb") as handle:
            response = client.post("/documents", files={"file": (corpus.name, handle, "text/markdown")})
        response.raise_for_status()
        document_id = response.json()["document"]["id"]
        process_ms, response = timed_ms(
            lambda: client.post(f"/documents/{document_id}/process?wait=true", json={"strategies": [STRATEGY]})
        )
        response.raise_for_status()
        print(f"ingested and processed {corpus.name} ({STRATEGY}) in {process_ms / 1000:.1f} s")

        store = get_vector_store(settings)
        point_filter = document_filter(DEFAULT_TENANT, document_id, include_parents=False)
        chunk_count = store.client.count(collection_name(STRATEGY, spec.id), count_filter=point_filter).count

        def in_process(question: str) -> tuple[float, float, dict[str, float] | None]:
            # The same pipeline without HTTP: what the app's own code costs (incl. saving the query).
            request = QueryIn(
                document_id=document_id, strategy=STRATEGY, question=question, retriever="dense", top_k=TOP_K
            )
            ms, out = timed_ms(
                lambda: run_query(app.state.database, settings, store, request, tenant_id=DEFAULT_TENANT)
            )
            return ms, out.latency_breakdown.get("generate", 0.0), out.latency_breakdown

        print("  same interpreter: uvicorn thread + run_query + raw on the server's vector store")
        same = compare(
            questions,
            {
                "http": http_side(base_url, document_id),
                "in_process": in_process,
                "raw": raw_side(store, settings, document_id, chunk_count),
            },
        )
    close_vector_stores()

    raw_dir = tmp / "raw"
    shutil.copytree(settings.qdrant_path, Settings(_env_file=None, data_dir=raw_dir).qdrant_path)
    print("  separate processes: chunkbench serve; the raw path in its own process on a copy of the Qdrant folder")
    with served_process(settings.data_dir) as base_url, raw_process(raw_dir, document_id, chunk_count) as raw:
        separate = compare(questions, {"http": http_side(base_url, document_id), "raw": raw})
    close_vector_stores()
    return {
        "corpus": str(corpus),
        "document_chunks": chunk_count,
        "process_s": round(process_ms / 1000, 2),
        "questions": len(questions),
        "warmup": "one untimed pass over all questions per side",
        "target_ratio": TARGET_RATIO,
        "same_interpreter": same,
        "separate_processes": separate,
    }


# ---------------------------------------------------------------- part 2: retrievers at scale


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
    from chunkbench.embedding.service import embed_texts

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
    from chunkbench.embedding.service import embed_query
    from chunkbench.embedding.sparse import Bm25Encoder
    from chunkbench.models import StrategyName
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
            retriever=retriever,
            tenant_id=DEFAULT_TENANT,
            document_id=target,
            top_k=TOP_K,
            dense=query_vectors[index],
            sparse=query_sparse[index],
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


# ---------------------------------------------------------------- report


PART1_ROWS = (
    ("http_total", "POST /queries over HTTP, total"),
    ("http_without_generate", "POST /queries over HTTP minus generate"),
    ("http_embed_plus_search_stages", "  its embed + search stages only"),
    ("in_process_total", "run_query in process (no HTTP), total"),
    ("in_process_without_generate", "run_query in process minus generate"),
)


def print_part1(pipeline: dict[str, Any], corpus: Path) -> None:
    print(f"Part 1 — {corpus.name}: {pipeline['document_chunks']} {STRATEGY} chunks, dense, top_k {TOP_K},")
    print(f"  {pipeline['questions']} questions after a warm-up pass over them, extractive answers")
    for mode, title in (
        ("same_interpreter", "same interpreter (uvicorn thread, raw path on the server's vector store)"),
        ("separate_processes", "separate processes (chunkbench serve; raw path in its own process, Qdrant copy)"),
    ):
        rows = pipeline[mode]
        print(f"{title}")
        print(f"  {'path':<46}{'p50 ms':>9}{'p95 ms':>9}{'×raw p50':>10}{'×raw p95':>10}")
        print(f"  {'raw: embed_query + query_points':<46}{rows['raw']['p50_ms']:>9.1f}{rows['raw']['p95_ms']:>9.1f}")
        for key, label in PART1_ROWS:
            if key in rows:
                row = rows[key]
                print(
                    f"  {label:<46}{row['p50_ms']:>9.1f}{row['p95_ms']:>9.1f}"
                    f"{row['ratio_p50']:>10.2f}{row['ratio_p95']:>10.2f}"
                )
        first = rows["http_first_pass"]
        print(f"  {'POST /queries, first pass (warm-up, untimed)':<46}{first['p50_ms']:>9.1f}{first['p95_ms']:>9.1f}")
        stage_text = "  ".join(f"{stage} {ms:.1f}" for stage, ms in rows["stage_p50_ms"].items())
        print(f"  stage p50 (ms, from latency_breakdown): {stage_text}")
        if "http_outside_pipeline_ms" in rows:
            outside = rows["http_outside_pipeline_ms"]
            print(
                f"  outside the pipeline's clock (request entry, save, response, transport): p50 "
                f"{outside['p50_ms']:.1f} ms, p95 {outside['p95_ms']:.1f} ms"
            )
        verdict = "meets" if rows["meets_target"] else "MISSES"
        print(
            f"  POST /queries total is {rows['http_total']['ratio_p50']:.2f}× raw at p50: {verdict} ≤ {TARGET_RATIO}×"
        )


def print_part2(scale_results: list[dict[str, Any]], questions: int) -> None:
    print(f"Part 2 — embedded (local) Qdrant, VectorStore.search with a document filter ({DOC_CHUNKS} chunks per")
    print(f"  document), top_k {TOP_K}, {questions} queries after {WARMUP} warm-up each")
    print(f"{'chunks':>8}{'docs':>6}{'retriever':>11}{'p50 ms':>10}{'p95 ms':>10}")
    for result in scale_results:
        for retriever, row in result["retrievers"].items():
            size, docs = result["chunks"], result["documents"]
            print(f"{size:>8,}{docs:>6}{retriever:>11}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}")
    print()
    print("What a Qdrant server would change: " + SERVER_NOTE)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--raw-worker":
        raw_worker(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT_CORPUS, help="document for part 1 (default: %(default)s)"
    )
    parser.add_argument("--quick", action="store_true", help="part 2 at 1,000 chunks only")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="questions per side (max 30)")
    parser.add_argument(
        "--part", choices=("1", "2", "all"), default="all", help="run one part only (results not written)"
    )
    args = parser.parse_args()
    if not args.corpus.is_file():
        sys.exit(f"No corpus file {args.corpus}; pass --corpus FILE.")
    # Weights come from folders; without these the hub client still tries the network first.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    from chunkbench.config import Settings

    questions = QUESTIONS[: max(WARMUP, min(args.questions, len(QUESTIONS)))]
    scales = SCALES[:1] if args.quick else SCALES
    started = time.perf_counter()
    pipeline: dict[str, Any] | None = None
    scale_results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.part in ("1", "all"):
            print(f"part 1: POST /queries vs raw embed_query + query_points, {len(questions)} questions")
            pipeline = bench_pipeline(args.corpus, questions, tmp)
        if args.part in ("2", "all"):
            print(f"part 2: embedded Qdrant at {', '.join(f'{s:,}' for s in scales)} chunks")
            texts = synthetic_texts(max(scales))
            dense = embed_all(texts, Settings(_env_file=None, data_dir=tmp / "embed"))
            for size in scales:
                scale_results.append(bench_scale(size, texts[:size], dense[:size], questions, tmp))
    total_s = time.perf_counter() - started

    print()
    if pipeline is not None:
        print_part1(pipeline, args.corpus)
        print()
    if scale_results:
        print_part2(scale_results, len(questions))
    if pipeline is None or not scale_results:
        print(f"one part only: {RESULTS.relative_to(ROOT)} left as it was (total {total_s:.0f} s)")
        return

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "pipeline_vs_raw": pipeline,
        "scale": {
            "mode": "embedded (local, on disk)",
            "synthetic_chunk_chars": CHUNK_CHARS,
            "embedded_with": MODEL_ID,
            "results": scale_results,
        },
        "qdrant_server_note": SERVER_NOTE,
        "total_runtime_s": round(total_s, 1),
        "torch_threads": torch.get_num_threads(),
        # OpenMP threads that spin after each parallel region fight for the cores of a busy machine; the
        # server subprocess inherits this environment, so both sides of part 1 run under the same policy.
        "omp_env": {key: os.environ.get(key) for key in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")},
        "load_average_1min": os.getloadavg()[0],
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)} (total {total_s:.0f} s)")


if __name__ == "__main__":
    main()
