"""Evaluation benchmarks: wall time of each stage, one section per measured command.

Section ``benchmark_concurrency``: a benchmark of 20 State of the Union questions × 2 strategies with an LLM
answering and judging through a local OpenAI-compatible server that takes 200 ms per call, run serially and with
bounded concurrency; the speed-up is what concurrency buys when cells wait on an LLM.

Section ``eval_chroma``: ``chunkbench eval chroma`` for each of Chroma's six MiniLM configurations, split
into chunk / embed / index / retrieve / score. The configurations run in order in one process and share the
embedding cache, as ``eval chroma`` does, so a configuration's embed time counts only chunk texts no earlier
configuration embedded; the model is loaded before timing starts. The run also refreshes
``perf/results/chroma_reproduce.json`` (the reproduction table) from the same results.

Section ``eval_chroma_vs_raw``: how close ``eval chroma`` (all six configurations) comes to the embedding limit.
The same run measures raw ``SentenceTransformer.encode`` of the distinct chunk texts of the six configurations
(the embedding work no pipeline can avoid), then ``eval chroma`` cold (empty embedding cache, in a fresh data
directory) and warm (the same data directory, memory cleared and the cache file reopened, as a second process
would find it). Ratios: cold / raw encode, warm / cold; the warm figures must equal the cold ones.

Results go to ``perf/results/eval.json`` as ``{section name: section}``; running a section replaces only
that section, so other sections (other scripts or later additions here) are kept.

Usage: ``python perf/eval.py [SECTION ...]`` (default: every section).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "eval.json"
LLM_LATENCY_S = 0.2  # the scripted LLM's answer time (issue: "a scripted LLM with 200 ms latency")
CONCURRENCY_LEVELS = (1, 8, 16)


def eval_chroma() -> dict[str, Any]:
    """Stage wall times of ``eval chroma`` (ingest, corpus job, benchmark) on a fresh data directory; the table."""
    sys.path.insert(0, str(ROOT / "perf"))
    import chroma_reproduce
    from chunkbench.config import Settings
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.roles import embed_texts
    from chunkbench.evaluation.chroma import CHROMA_CONFIGS, CHROMA_MODEL

    settings = Settings()
    embed_texts(get_spec(CHROMA_MODEL), ["warm-up"], "query", settings)  # model load outside the timings
    started = time.perf_counter()
    result = chroma_reproduce.run_rows(list(CHROMA_CONFIGS))
    total = time.perf_counter() - started
    chroma_reproduce.print_table(chroma_reproduce.write_results(result))
    chunks = {row["name"]: row["ours"]["chunks"] for row in result.rows}
    print(f"\neval chroma stage wall times (s), {result.rows[0]['ours']['questions']} questions, six configurations")
    print(" · ".join(f"{stage} {seconds:.1f}" for stage, seconds in result.evaluation.timings.items()))
    print(f"all stages: {total:.1f}s")
    return {
        "what": "chunkbench eval chroma, MiniLM on CPU, n=5, dense, Qdrant Edge: Chroma's corpora ingested into a "
        "corpus, one corpus job with the six variants, one Experiment (model loaded before timing)",
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "chunks": chunks,
        "seconds": result.evaluation.timings,
        "total_seconds": round(total, 1),
    }


def _distinct_chunk_texts(corpora: dict[str, str], configs: list[Any], settings: Any) -> list[str]:
    """Every distinct text the six configurations embed as chunks, in first-seen order."""
    from chunkbench.chunking.base import ChunkingInput, defaults_from_settings, strategy_class, validate_params
    from chunkbench.models import DocumentTree, NodeType, TreeNode

    texts: dict[str, None] = {}
    for config in configs:
        params = validate_params(
            config.strategy, {**defaults_from_settings(config.strategy, settings), **config.params}
        )
        strategy = strategy_class(config.strategy)(params)
        for document_id, text in corpora.items():
            tree = DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(text)))
            document = ChunkingInput(document_id=document_id, document_name=document_id, markdown=text, tree=tree)
            texts.update(dict.fromkeys(c.embedding_text for c in strategy.chunk(document) if not c.is_parent))
    return list(texts)


def eval_chroma_vs_raw() -> dict[str, Any]:
    """``eval chroma`` cold and warm against raw ``SentenceTransformer.encode`` of its distinct chunk texts."""
    import tempfile

    from chunkbench.chunking.base import strategy_class
    from chunkbench.config import Settings
    from chunkbench.embedding.cache import EMBEDDINGS, close_disk_caches, disk_cache
    from chunkbench.embedding.providers import get_provider
    from chunkbench.embedding.registry import get_spec
    from chunkbench.evaluation.chroma import CHROMA_CONFIGS, CHROMA_MODEL, load_chroma

    sys.path.insert(0, str(ROOT / "perf"))
    import chroma_reproduce

    spec = get_spec(CHROMA_MODEL)
    with tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data")
        model = get_provider(spec, settings).model  # loaded before any timing
        model.encode(["warm-up"], normalize_embeddings=True)
        _folder, corpora, questions = load_chroma()
        # The splitter rows: a Boundary-model row (cluster_semantic) also embeds pieces that are no chunk texts.
        configs = [c for c in CHROMA_CONFIGS if not strategy_class(c.strategy).needs_boundary]
        texts = _distinct_chunk_texts(corpora, configs, settings)
        started = time.perf_counter()
        model.encode(texts, batch_size=spec.batch_size, normalize_embeddings=True, convert_to_numpy=True)
        raw = time.perf_counter() - started

        runs: dict[str, Any] = {}
        for label in ("cold", "warm"):
            EMBEDDINGS.clear()
            close_disk_caches()  # the warm run finds only the cache file, as a new process would
            stored_before = disk_cache(settings).stats()["entries"]
            started = time.perf_counter()
            # The same data directory both times: the warm run finds the corpus processed and only benchmarks.
            result = chroma_reproduce.run_rows(configs, settings=settings)
            runs[label] = {
                "seconds": round(time.perf_counter() - started, 2),
                # New vectors in the cache file: the texts (chunks and questions) this run had to embed.
                "texts_embedded": disk_cache(settings).stats()["entries"] - stored_before,
                "figures": {r["name"]: {k: r["ours"][k] for k in ("recall", "iou", "precision")} for r in result.rows},
                "stages": result.evaluation.timings,
            }
        close_disk_caches()
    identical = runs["cold"]["figures"] == runs["warm"]["figures"]
    cold, warm = runs["cold"]["seconds"], runs["warm"]["seconds"]
    print(f"\neval chroma (6 configurations, {len(questions)} questions) against raw encode of its "
          f"{len(texts)} distinct chunk texts")  # fmt: skip
    print(f"{'run':<22} {'seconds':>8} {'× raw':>7} {'embedded':>9}  stages (s)")
    print(f"{'raw encode':<22} {raw:>8.1f} {1.0:>7.2f} {len(texts):>9}")
    for label in ("cold", "warm"):
        run = runs[label]
        stages = " ".join(f"{k} {v:.1f}" for k, v in run["stages"].items())
        print(f"{'eval chroma ' + label:<22} {run['seconds']:>8.1f} {run['seconds'] / raw:>7.2f} "
              f"{run['texts_embedded']:>9}  {stages}")  # fmt: skip
    print(f"cold / raw {cold / raw:.2f} (target ≤ 1.3) · warm / cold {warm / cold:.2f} (target ≤ 0.2) · "
          f"figures identical: {identical}")  # fmt: skip
    return {
        "what": "eval chroma, six MiniLM configurations, one process; raw = SentenceTransformer.encode of the "
        "distinct chunk texts (model loaded before timing); warm = same data dir, memory cleared, cache file reopened",
        "cpu_count": os.cpu_count(),
        "distinct_chunk_texts": len(texts),
        "raw_encode_seconds": round(raw, 2),
        "runs": {label: {k: v for k, v in run.items() if k != "figures"} for label, run in runs.items()},
        "cold_over_raw": round(cold / raw, 3),
        "warm_over_cold": round(warm / cold, 3),
        "figures_identical": identical,
        "figures": runs["cold"]["figures"],
    }


def benchmark_concurrency() -> dict[str, Any]:
    """Benchmark wall time against a scripted LLM answering in 200 ms: serial vs bounded concurrency."""
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from fastapi.testclient import TestClient

    from chunkbench.app import create_app
    from chunkbench.config import Settings
    from chunkbench.embedding.cache import EMBEDDINGS
    from chunkbench.evaluation.datasets import chroma_dir
    from chunkbench.evaluation.questions import load_question_set
    from chunkbench.llm.prompts import JUDGE_SYSTEM_PROMPT
    from fake_openai import Reply, running_fake_openai

    verdict = json.dumps({"context_relevance": 7, "answer_similarity": 6, "faithfulness": 8, "hallucination": False,
                          "reasoning": "scripted"})  # fmt: skip

    def responder(body: dict[str, Any]) -> Reply:
        time.sleep(LLM_LATENCY_S)
        judged = body["messages"][0]["content"] == JUDGE_SYSTEM_PROMPT
        return Reply(verdict if judged else "A scripted answer [Source 1].")

    data = chroma_dir()
    corpus = (data / "corpora" / "state_of_the_union.md").read_bytes()
    questions = [
        q.to_dict()
        for q in load_question_set(data / "questions_df.csv").questions
        if q.document_id == "state_of_the_union"
    ][:20]
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp,
        running_fake_openai(responder=responder) as llm,
    ):
        # The disk cache off and the memory cleared before each level: each level embeds its questions (and the
        # answerer's sentences) itself, so the later levels' speed-up is concurrency, not the earlier level's cache.
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data", llm_base_url=llm.url, llm_model="fake-model",
                            llm_max_retries=0, embedding_cache_enabled=False)  # fmt: skip
        with TestClient(create_app(settings)) as client:
            document = client.post("/documents", files={"file": ("sotu.md", corpus)}).json()["document"]
            client.post(f"/documents/{document['id']}/process", params={"wait": "true"},
                        json={"strategies": ["fixed_size", "recursive"]})  # fmt: skip
            for concurrency in CONCURRENCY_LEVELS:
                body = {"document_id": document["id"], "questions": questions, "concurrency": concurrency}
                EMBEDDINGS.clear()
                started = time.perf_counter()
                response = client.post("/benchmarks", params={"wait": "true"}, json=body)
                seconds = time.perf_counter() - started
                assert response.status_code == 200, response.text
                experiment = response.json()
                rows.append(
                    {"concurrency": concurrency, "cells": len(experiment["cells"]), "seconds": round(seconds, 2)}
                )
    serial = rows[0]["seconds"]
    for row in rows:
        row["speedup"] = round(serial / row["seconds"], 2)
    print(f"\nbenchmark wall time, scripted LLM {LLM_LATENCY_S * 1000:.0f} ms per call (answer + judge per cell)")
    print(f"{'concurrency':>11} {'cells':>6} {'seconds':>8} {'× serial':>9}")
    for row in rows:
        print(f"{row['concurrency']:>11} {row['cells']:>6} {row['seconds']:>8.2f} {row['speedup']:>9.2f}")
    return {"llm_latency_ms": LLM_LATENCY_S * 1000, "rows": rows}


SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "eval_chroma": eval_chroma,
    "eval_chroma_vs_raw": eval_chroma_vs_raw,
    "benchmark_concurrency": benchmark_concurrency,
}


def main() -> None:
    """Run the chosen sections and merge them into ``perf/results/eval.json``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    chosen = sys.argv[1:] or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown section(s) {unknown}; known: {list(SECTIONS)}")
    existing = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    for name in chosen:
        existing[name] = SECTIONS[name]()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(existing, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
