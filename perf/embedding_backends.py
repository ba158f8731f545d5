"""Embedding backends: MiniLM on torch (``all-MiniLM-L6-v2``) against MiniLM int8 on ONNX Runtime (``minilm-int8``).

Three parts, each written into ``perf/results/embedding_backends.json`` (a part run alone keeps the others'):

- ``speed``: chunks per second through chunkbench's own path (``embed_texts``, the embedding cache included) on the
  same texts for both backends, **cold**: every repeat starts on a fresh data folder with the in-memory cache
  cleared, so each text reaches the model. Texts: fixed_size chunks of 250 cl100k tokens of Chroma's five corpora
  (what corpus processing embeds) and sentences of the same corpora (what the semantic strategies' Boundary model
  embeds). The backends take turns going first; the int8/torch ratio is taken per repeat (same run) and its median
  reported. A ``warm`` row times the same call again on the data folder the cold run filled (the cache answers: no
  model work), to show what a warm figure would have hidden. Also: the one-time export, the load from an export,
  and the cosine between the two backends' vectors of the same texts.
- ``recall``: Chroma's evaluation (token-level recall, dense, k = 5, across the corpora searched) as a corpus
  benchmark through ``benchmarking.corpus_eval.evaluate``, once per backend, on Chroma's row ``fixed_size-250-0``.
- The verdict: the int8 backend may become the default Corpus model only if its recall is within 0.5 points of
  torch's (issue 25 item 6); this script reports, it changes no default.

Usage: ``python perf/embedding_backends.py [speed|recall|all] [--chunks N] [--sentences N] [--repeats N]
[--corpora a,b,…]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "embedding_backends.json"
TORCH_ID = "all-MiniLM-L6-v2"
INT8_ID = "minilm-int8"
BACKENDS = (TORCH_ID, INT8_ID)
RECALL_ROW = "fixed_size-250-0"
CHUNK_TOKENS = 250
DEFAULT_GATE_POINTS = 0.5


def _settings(data_dir: Path, models_dir: Path) -> Any:
    from chunkbench.config import Settings

    # One models folder for every repeat: the int8 export is made once (timed apart), as a deployment keeps it.
    return Settings(_env_file=None, data_dir=data_dir, models_dir=models_dir)


def _texts(corpora: list[str], chunks: int, sentences: int) -> dict[str, list[str]]:
    """``chunks`` fixed_size chunks (250 tokens) and ``sentences`` sentences, spread evenly over the corpora."""
    from chunkbench.chunking.base import ChunkingInput
    from chunkbench.chunking.strategies.fixed_size import FixedSizeParams, FixedSizeStrategy
    from chunkbench.evaluation.chroma import load_chroma
    from chunkbench.models import DocumentTree, NodeType, TreeNode
    from chunkbench.text.sentences import split_sentences

    _folder, names, _questions = load_chroma(None)
    strategy = FixedSizeStrategy(FixedSizeParams(chunk_size=CHUNK_TOKENS, chunk_overlap=0))
    all_chunks: list[str] = []
    all_sentences: list[str] = []
    for name in names:
        if corpora and name not in corpora:
            continue
        text = names[name]
        tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text)))
        all_chunks += [chunk.text for chunk in strategy.chunk(ChunkingInput(name, f"{name}.md", text, tree))]
        units = [" ".join(text[start:end].split()) for start, end in split_sentences(text)]
        all_sentences += [unit for unit in units if len(unit) >= 20]

    def spread(items: list[str], count: int) -> list[str]:
        step = max(1, len(items) // max(count, 1))
        return items[::step][:count]

    return {"chunks_250_tokens": spread(all_chunks, chunks), "sentences": spread(all_sentences, sentences)}


def _cold_embed(model_id: str, texts: list[str], data_dir: Path, models_dir: Path) -> tuple[float, np.ndarray]:
    """Seconds to embed ``texts`` through ``embed_texts`` with nothing cached (a fresh data folder, memory cleared)."""
    from chunkbench.embedding.cache import EMBEDDINGS, close_disk_caches
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.roles import embed_texts

    EMBEDDINGS.clear()
    close_disk_caches()
    settings = _settings(data_dir, models_dir)
    embedded_before = EMBEDDINGS.embedded
    started = time.perf_counter()
    vectors = embed_texts(get_spec(model_id), texts, "document", settings)
    seconds = time.perf_counter() - started
    # Cold means every distinct text reached the model.
    assert EMBEDDINGS.embedded - embedded_before == len(set(texts)), "a cold run found texts in the cache"
    return seconds, vectors


def _warm_embed(model_id: str, texts: list[str], data_dir: Path, models_dir: Path) -> float:
    """Seconds for the same call on the folder a cold run filled, from a new process's view (the file only)."""
    from chunkbench.embedding.cache import EMBEDDINGS, close_disk_caches
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.roles import embed_texts

    EMBEDDINGS.clear()
    close_disk_caches()
    embedded_before = EMBEDDINGS.embedded
    started = time.perf_counter()
    embed_texts(get_spec(model_id), texts, "document", _settings(data_dir, models_dir))
    seconds = time.perf_counter() - started
    assert EMBEDDINGS.embedded == embedded_before, "the warm run embedded texts"
    return seconds


def speed(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from chunkbench.embedding import onnx_int8
    from chunkbench.embedding.providers import get_provider
    from chunkbench.embedding.registry import get_spec

    models_dir = tmp / "models"
    texts = _texts(args.corpora, args.chunks, args.sentences)
    out: dict[str, Any] = {"repeats": args.repeats, "cpu_cores": os.cpu_count(), "kinds": {}}

    # One-off costs, outside the timed repeats: loading torch MiniLM, exporting the int8 model, loading the export.
    warm_settings = _settings(tmp / "load", models_dir)
    started = time.perf_counter()
    get_provider(get_spec(TORCH_ID), warm_settings).embed(["warm up"])
    out["torch_load_s"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    get_provider(get_spec(INT8_ID), warm_settings).embed(["warm up"])
    out["int8_export_and_load_s"] = round(time.perf_counter() - started, 2)
    onnx_int8.forget_runtimes()
    started = time.perf_counter()
    onnx_int8.load_runtime(warm_settings, Path)  # exported: no torch folder asked for
    out["int8_load_from_export_s"] = round(time.perf_counter() - started, 2)
    out["int8_model_mb"] = round(
        (onnx_int8.export_folder(warm_settings) / onnx_int8.MODEL_FILE).stat().st_size / 1e6, 1
    )

    import torch

    out["torch_threads"] = torch.get_num_threads()
    for kind, items in texts.items():
        seconds: dict[str, list[float]] = {model: [] for model in BACKENDS}
        vectors: dict[str, np.ndarray] = {}
        for repeat in range(args.repeats):
            # Turns: a burst of load from other processes, or a slower second run, hits both alike.
            order = BACKENDS if repeat % 2 == 0 else BACKENDS[::-1]
            for model in order:
                folder = tmp / f"{kind}-{model}-{repeat}"
                spent, vectors[model] = _cold_embed(model, items, folder, models_dir)
                seconds[model].append(spent)
            print(
                f"  {kind} repeat {repeat + 1}: " + ", ".join(f"{m} {seconds[m][-1]:.1f} s" for m in BACKENDS),
                flush=True,
            )
        warm = {model: _warm_embed(model, items, tmp / f"{kind}-{model}-0", models_dir) for model in BACKENDS}
        ratios = [t / i for t, i in zip(seconds[TORCH_ID], seconds[INT8_ID], strict=True)]
        cosines = np.sum(vectors[TORCH_ID] * vectors[INT8_ID], axis=1)
        out["kinds"][kind] = {
            "texts": len(items),
            "mean_chars": round(sum(map(len, items)) / len(items), 1),
            "cold_seconds": {m: [round(s, 2) for s in v] for m, v in seconds.items()},
            "cold_per_s_median": {m: round(len(items) / statistics.median(v), 2) for m, v in seconds.items()},
            "cold_per_s_best": {m: round(len(items) / min(v), 2) for m, v in seconds.items()},
            "int8_over_torch_per_repeat": [round(r, 3) for r in ratios],
            "int8_over_torch_median": round(statistics.median(ratios), 3),
            "warm_per_s": {m: round(len(items) / s, 1) for m, s in warm.items()},
            "cosine_int8_torch": {"mean": round(float(cosines.mean()), 4), "min": round(float(cosines.min()), 4)},
        }
    out["load_average_1min"] = round(os.getloadavg()[0], 2)
    return out


def recall(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Chroma's row ``RECALL_ROW`` as a corpus benchmark with each backend as the Corpus model (a fresh data folder
    each: nothing cached), span and rank figures in percent."""
    from chunkbench.benchmarking import corpus_eval
    from chunkbench.chunking import variants
    from chunkbench.documents.discovery import SourceFile
    from chunkbench.embedding.cache import EMBEDDINGS
    from chunkbench.evaluation.chroma import CHROMA_RETRIEVE, load_chroma, select_configs
    from chunkbench.storage.db import Database
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import VectorStore

    folder, every_corpus, every = load_chroma(None)
    names = [name for name in every_corpus if not args.corpora or name in args.corpora]
    questions = [q for q in every if q.document_id in names]
    (config,) = select_configs(RECALL_ROW)
    out: dict[str, Any] = {
        "row": RECALL_ROW, "corpora": names, "questions": len(questions), "retriever": "dense",
        "top_k": CHROMA_RETRIEVE, "models": {},
    }  # fmt: skip
    for model in BACKENDS:
        EMBEDDINGS.clear()
        settings = _settings(tmp / f"recall-{model}", tmp / "models")
        database, store = Database.from_settings(settings), VectorStore(settings)
        try:
            strategy = variants.add(settings, config.variant).name.value
            started = time.perf_counter()
            evaluation = corpus_eval.evaluate(
                database, settings, store, corpus="chroma-eval",
                sources=[SourceFile(folder / "corpora" / f"{name}.md", f"{name}.md") for name in names],
                questions=questions, strategies=[strategy], corpus_model=model, retriever="dense",
                top_k=CHROMA_RETRIEVE, scope="corpus", name=f"Chroma {RECALL_ROW} with {model}",
                tenant_id=DEFAULT_TENANT,
            )  # fmt: skip
            wall = time.perf_counter() - started
        finally:
            store.close()
            database.dispose()
        figures = corpus_eval.figures(evaluation.experiment, strategy)
        out["models"][model] = {
            "seconds": {**evaluation.timings, "total": round(wall, 1)},
            **{m: figures[m] for m in ("recall", "precision", "iou", "recall_at_k", "mrr")},
            "questions": figures["questions"],
            "chunks": figures["chunks"],
        }
        print(f"  {model}: recall {figures['recall']['mean']:.2f} ({wall:.0f} s)", flush=True)
    int8, torch_figures = out["models"][INT8_ID], out["models"][TORCH_ID]
    out["int8_minus_torch_recall_points"] = round(int8["recall"]["mean"] - torch_figures["recall"]["mean"], 2)
    return out


def verdict(results: dict[str, Any]) -> str:
    """What the recall gate says (issue 25: the int8 model becomes the default only if recall holds within 0.5)."""
    if "recall" not in results:
        return "no recall measured: the default stays all-MiniLM-L6-v2"
    delta = results["recall"]["int8_minus_torch_recall_points"]
    kept = "the default is left as it is (a new default moves every figure pinned on MiniLM's torch vectors)"
    if delta < -DEFAULT_GATE_POINTS:
        return f"recall {delta:+.2f} points below torch (gate -{DEFAULT_GATE_POINTS}): the default stays torch MiniLM"
    if delta <= DEFAULT_GATE_POINTS:
        return f"recall within {DEFAULT_GATE_POINTS} points of torch ({delta:+.2f}): int8 qualifies; {kept}"
    return (
        f"recall {delta:+.2f} points above torch: it holds (no loss), though not within ±{DEFAULT_GATE_POINTS} "
        f"read literally; {kept}"
    )


def print_table(results: dict[str, Any]) -> None:
    if "speed" in results:
        s = results["speed"]
        load = s["load_average_1min"]
        print(f"\ncold (no embedding cache), {s['repeats']} repeats, {s['cpu_cores']} cores, load average {load}")
        print(f"{'texts':<20}{'n':>5}{'torch/s':>10}{'int8/s':>10}{'int8÷torch':>12}{'cos mean':>10}{'cos min':>9}"
              f"{'warm torch/s':>14}{'warm int8/s':>13}")  # fmt: skip
        for kind, row in s["kinds"].items():
            median = row["cold_per_s_median"]
            print(
                f"{kind:<20}{row['texts']:>5}{median[TORCH_ID]:>10.1f}{median[INT8_ID]:>10.1f}"
                f"{row['int8_over_torch_median']:>12.2f}{row['cosine_int8_torch']['mean']:>10.4f}"
                f"{row['cosine_int8_torch']['min']:>9.4f}{row['warm_per_s'][TORCH_ID]:>14.0f}"
                f"{row['warm_per_s'][INT8_ID]:>13.0f}"
            )
        print(
            f"one-off: torch load {s['torch_load_s']} s · int8 export + load {s['int8_export_and_load_s']} s · "
            f"int8 load from export {s['int8_load_from_export_s']} s · int8 model {s['int8_model_mb']} MB"
        )
    if "recall" in results:
        r = results["recall"]
        print(f"\nChroma {r['row']}, {', '.join(r['corpora'])}: {r['questions']} questions, dense, k={r['top_k']}")
        print(f"{'model':<22}{'recall':>8}{'precision':>10}{'IoU':>7}{'MRR':>7}{'chunks':>8}{'process s':>10}")
        for model, row in r["models"].items():
            print(
                f"{model:<22}{row['recall']['mean']:>8.2f}{row['precision']['mean']:>10.2f}{row['iou']['mean']:>7.2f}"
                f"{row['mrr']['mean']:>7.2f}{row['chunks']:>8}{row['seconds'].get('process', 0):>10.1f}"
            )
        print(f"int8 − torch recall: {r['int8_minus_torch_recall_points']:+.2f} points")
    print(f"verdict: {results['verdict']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", nargs="?", default="all", choices=["speed", "recall", "all"])
    parser.add_argument("--chunks", type=int, default=200, help="250-token chunks timed per repeat")
    parser.add_argument("--sentences", type=int, default=600, help="sentences timed per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpora", type=lambda v: [c for c in v.split(",") if c], default=[], help="default: all")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    sys.path.insert(0, str(ROOT / "src"))
    results: dict[str, Any] = json.loads(args.output.read_text(encoding="utf-8")) if args.output.exists() else {}
    with tempfile.TemporaryDirectory(prefix="chunkbench-backends-") as tmp_name:
        tmp = Path(tmp_name)
        for name, run in (("speed", speed), ("recall", recall)):
            if args.part in (name, "all"):
                started = time.perf_counter()
                print(f"{name}…", flush=True)
                results[name] = run(args, tmp)
                results[name]["bench_seconds"] = round(time.perf_counter() - started, 1)
    results["verdict"] = verdict(results)
    print_table(results)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")


if __name__ == "__main__":
    main()
