"""Query latency: ``POST /queries`` through the real app against the raw embed + Qdrant path.

It ingests one real document (the State of the Union speech) through the API, processes it with the recursive
strategy, then times N questions through ``POST /queries`` (dense, top_k 5, extractive answers: no LLM)
interleaved with the raw path (``embed_query`` + ``query_points`` on the same collection), twice:

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

    PYTHONPATH=src python perf/query_pipeline.py [--corpus FILE] [--questions N]

Retrievers on larger collections: ``perf/query_scale.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from query_common import (
    CORPORA,
    MODEL_ID,
    QUESTIONS,
    ROOT,
    TOP_K,
    p50_p95,
    percentile,
    prepare,
    questions,
    timed_ms,
    write_results,
)
from serving import child_env, served_process

DEFAULT_CORPUS = CORPORA / "state_of_the_union.md"
RESULTS = ROOT / "perf" / "results" / "query_pipeline.json"
STRATEGY = "recursive"
TARGET_RATIO = 1.3


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
    """The raw path: ``embed_query`` + the engine's own query (Qdrant Edge's shard query, no chunkbench checks) on
    the recursive collection, filtered to the document, searched as the serving faces search (``exact=False``)."""
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.roles import embed_query
    from chunkbench.storage.engine import VectorQuery
    from chunkbench.storage.points import QueryMode, collection_name, document_filter
    from chunkbench.storage.schema import DEFAULT_TENANT

    spec = get_spec(MODEL_ID)
    collection = collection_name(STRATEGY, spec.id)
    point_filter = document_filter(DEFAULT_TENANT, document_id, include_parents=False)

    def search(question: str) -> Any:
        vector = embed_query(spec, question, settings)
        query = VectorQuery(QueryMode.DENSE, point_filter, TOP_K, dense=vector.tolist(), exact=False)
        return store.engine.query(collection, query)

    def run(question: str) -> tuple[float, float, dict[str, float] | None]:
        ms, out = timed_ms(lambda: search(question))
        assert len(out) == min(TOP_K, chunk_count)
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


def compare(questions: list[str], sides: dict[str, Side], mode: str) -> dict[str, Any]:
    """Every side on every question, alternating the order; p50/p95 and ratios to ``raw``.

    A first pass over all questions warms every side up and is kept as ``http_first_pass``: the first time a
    chunk comes back, the extractive answerer embeds its sentences (cached after that). The timed pass asks
    each side questions no cache has seen (the question with the side's name appended: every side embeds it
    with the model, as the first time a user asks), so the ratio is the pipeline's overhead over a real
    embedding + search; ``repeated`` then asks the warm-up questions again (their vectors come from the
    embedding cache on both sides).
    """
    first_pass: list[float] = []
    for question in questions:
        for name, side in sides.items():
            ms, _, _ = side(question)
            if name == "http":
                first_pass.append(ms)
    result = _timed(sides, lambda question, name: f"{question} ({mode}, {name} side)", questions)
    result["http_first_pass"] = p50_p95(first_pass)
    repeated = _timed(sides, lambda question, name: question, questions)
    result["repeated"] = {"raw": repeated["raw"], "http_total": repeated["http_total"]}
    result["meets_target"] = result["http_total"]["ratio_p50"] <= TARGET_RATIO
    return result


def _timed(sides: dict[str, Side], ask: Callable[[str, str], str], questions: list[str]) -> dict[str, Any]:
    """One timed pass: ``ask(question, side name)`` is what each side is asked."""
    wall: dict[str, list[float]] = {name: [] for name in sides}
    answer: dict[str, list[float]] = {name: [] for name in sides}
    stages: dict[str, list[float]] = {}
    names = list(sides)
    for index, question in enumerate(questions):
        # Alternate which goes first so neither side always runs on a warmer cache.
        for name in names if index % 2 == 0 else names[::-1]:
            ms, generate_ms, breakdown = sides[name](ask(question, name))
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

    result: dict[str, Any] = {"raw": raw_stats}
    for name in names:
        if name == "raw":
            continue
        result[f"{name}_total"] = ratio(wall[name])
        result[f"{name}_without_generate"] = ratio([w - g for w, g in zip(wall[name], answer[name], strict=True)])
    if stages:
        result["http_embed_plus_search_stages"] = ratio(
            [e + s for e, s in zip(stages.get("embed", [0.0] * len(stages["search"])), stages["search"], strict=True)]
        )
        # What the pipeline's own clock does not see: request entry, saving the query, the response, transport.
        result["http_outside_pipeline_ms"] = p50_p95(
            [w - t for w, t in zip(wall["http"], stages["total"], strict=True)]
        )
        result["stage_p50_ms"] = {stage: round(percentile(values, 50), 2) for stage, values in stages.items()}
        result["stage_p95_ms"] = {stage: round(percentile(values, 95), 2) for stage, values in stages.items()}
    return result


def bench_pipeline(corpus: Path, questions: list[str], tmp: Path) -> dict[str, Any]:
    import shutil

    import httpx

    from chunkbench.app import create_app
    from chunkbench.config import Settings
    from chunkbench.embedding.registry import get_spec
    from chunkbench.retrieval.queries import run_query
    from chunkbench.retrieval.schemas import QueryIn
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import close_vector_stores, get_vector_store

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
        chunk_count = store.count_document(
            STRATEGY, spec.id, tenant_id=DEFAULT_TENANT, document_id=document_id, include_parents=False
        )

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
            "same interpreter",
        )
    close_vector_stores()

    raw_dir = tmp / "raw"
    shutil.copytree(settings.qdrant_path, Settings(_env_file=None, data_dir=raw_dir).qdrant_path)
    print("  separate processes: chunkbench serve; the raw path in its own process on a copy of the Qdrant folder")
    with served_process(settings.data_dir) as base_url, raw_process(raw_dir, document_id, chunk_count) as raw:
        separate = compare(questions, {"http": http_side(base_url, document_id), "raw": raw}, "separate processes")
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


ROWS = (
    ("http_total", "POST /queries over HTTP, total"),
    ("http_without_generate", "POST /queries over HTTP minus generate"),
    ("http_embed_plus_search_stages", "  its embed + search stages only"),
    ("in_process_total", "run_query in process (no HTTP), total"),
    ("in_process_without_generate", "run_query in process minus generate"),
)


def print_table(pipeline: dict[str, Any], corpus: Path) -> None:
    print(f"{corpus.name}: {pipeline['document_chunks']} {STRATEGY} chunks, dense, top_k {TOP_K},")
    print(
        f"  {pipeline['questions']} questions after a warm-up pass over them, extractive answers; timed questions are"
    )
    print("  new to every cache (each side embeds them with the model); 'repeated' asks the warm-up questions again")
    for mode, title in (
        ("same_interpreter", "same interpreter (uvicorn thread, raw path on the server's vector store)"),
        ("separate_processes", "separate processes (chunkbench serve; raw path in its own process, Qdrant copy)"),
    ):
        rows = pipeline[mode]
        print(f"{title}")
        print(f"  {'path':<46}{'p50 ms':>9}{'p95 ms':>9}{'×raw p50':>10}{'×raw p95':>10}")
        print(f"  {'raw: embed_query + engine query':<46}{rows['raw']['p50_ms']:>9.1f}{rows['raw']['p95_ms']:>9.1f}")
        for key, label in ROWS:
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
        repeated = rows["repeated"]
        print(
            f"  repeated questions (vectors from the embedding cache): raw p50 {repeated['raw']['p50_ms']:.1f} ms, "
            f"POST /queries p50 {repeated['http_total']['p50_ms']:.1f} ms"
        )
        verdict = "meets" if rows["meets_target"] else "MISSES"
        print(
            f"  POST /queries total is {rows['http_total']['ratio_p50']:.2f}× raw at p50: {verdict} ≤ {TARGET_RATIO}×"
        )


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--raw-worker":
        raw_worker(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="document to ask (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="questions per side (max 30)")
    args = parser.parse_args()
    if not args.corpus.is_file():
        sys.exit(f"No corpus file {args.corpus}; pass --corpus FILE.")
    prepare()
    asked = questions(args.questions)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp_name:
        print(f"POST /queries vs raw embed_query + the engine query, {len(asked)} questions")
        pipeline = bench_pipeline(args.corpus, asked, Path(tmp_name))
    total_s = time.perf_counter() - started
    print()
    print_table(pipeline, args.corpus)
    write_results(RESULTS, {"pipeline_vs_raw": pipeline}, total_s)


if __name__ == "__main__":
    main()
