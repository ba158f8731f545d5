"""multilingual-e5-small against all-MiniLM-L6-v2: its semantic threshold, its speed, and its quality in English.

Three parts, each written into ``perf/results/multilingual.json`` (a part run alone keeps the others' figures):

- ``threshold``: adjacent-sentence and random-pair cosines of both models on the same sentences (the opening
  sentences of Chroma's five corpora, and the Farsi test corpus). MiniLM's 0.3 was chosen where adjacent sentences
  are about as alike as random text; e5's cosines sit higher, so its threshold is the value at which it cuts the
  same share of the English adjacent-sentence boundaries as MiniLM does at 0.3 (pooled over the five corpora).
- ``throughput``: texts per second of both models on the same texts (sentences, and 250-token chunks), cold caches,
  interleaved runs (the median of three), and e5's ratio to MiniLM.
- ``recall``: Chroma's evaluation (dense, k=5, across all the corpora searched) as a corpus benchmark through
  ``benchmarking.corpus_eval.evaluate``, once per model, on one of Chroma's rows (``fixed_size-250-0``) and its three
  smaller corpora (chatlogs, state_of_the_union, wikitexts: 276 of the 472 questions). e5 embeds a 250-token chunk
  an order of magnitude slower than MiniLM on 2 cores: the five corpora and six rows would take hours.

Usage: ``python perf/multilingual.py [threshold|throughput|recall|all] [CHROMA_DATA_DIR]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "multilingual.json"
FARSI = ROOT / "tests" / "data" / "farsi"
MODELS = ("all-MiniLM-L6-v2", "multilingual-e5-small")
MINILM_THRESHOLD = 0.3
SENTENCES_PER_CORPUS = 120
RANDOM_PAIRS = 400
RECALL_ROW = "fixed_size-250-0"
RECALL_CORPORA = ("chatlogs", "state_of_the_union", "wikitexts")


def _settings(data_dir: Path) -> Any:
    from chunkbench.config import Settings

    # No disk cache: every figure is the model's own work.
    return Settings(_env_file=None, data_dir=data_dir, embedding_cache_enabled=False)


def _embed(model_id: str, texts: list[str], settings: Any) -> np.ndarray:
    from chunkbench.embedding.providers import get_provider
    from chunkbench.embedding.registry import get_spec

    return get_provider(get_spec(model_id), settings).embed(texts, "document")


def _sentences(text: str, limit: int) -> list[str]:
    from chunkbench.text.sentences import split_sentences

    units = [" ".join(text[start:end].split()) for start, end in split_sentences(text)]
    return [unit for unit in units if len(unit) >= 20][:limit]


def _corpora(chroma_dir: str | None) -> dict[str, str]:
    from chunkbench.evaluation.chroma import load_chroma

    folder, names, _questions = load_chroma(chroma_dir)
    return {name: (folder / "corpora" / f"{name}.md").read_text(encoding="utf-8") for name in names}


def threshold(chroma_dir: str | None, settings: Any) -> dict[str, Any]:
    """Cosine statistics of both models on the same sentences, and e5's threshold matched to MiniLM's cut share."""
    texts = {name: _sentences(text, SENTENCES_PER_CORPUS) for name, text in _corpora(chroma_dir).items()}
    texts["farsi (tests/data/farsi)"] = [
        unit for path in sorted(FARSI.glob("*.md")) for unit in _sentences(path.read_text(encoding="utf-8"), 1000)
    ]
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"corpora": {}}
    adjacent: dict[tuple[str, str], np.ndarray] = {}
    for name, sentences in texts.items():
        row: dict[str, Any] = {"sentences": len(sentences)}
        pairs = rng.integers(0, len(sentences), size=(RANDOM_PAIRS, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        for model in MODELS:
            vectors = _embed(model, sentences, settings)
            adjacent[name, model] = np.sum(vectors[:-1] * vectors[1:], axis=1)
            random = np.sum(vectors[pairs[:, 0]] * vectors[pairs[:, 1]], axis=1)
            row[model] = {
                "adjacent_median": round(float(np.median(adjacent[name, model])), 3),
                "random_median": round(float(np.median(random)), 3),
            }
        out["corpora"][name] = row
    english = [name for name in texts if not name.startswith("farsi")]
    minilm = np.concatenate([adjacent[name, MODELS[0]] for name in english])
    e5 = np.concatenate([adjacent[name, MODELS[1]] for name in english])
    share = float(np.mean(minilm < MINILM_THRESHOLD))
    chosen = round(float(np.quantile(e5, share)), 2)  # the default: the matched value to two decimals
    out |= {"minilm_threshold": MINILM_THRESHOLD, "minilm_cut_share": round(share, 3), "e5_threshold": chosen}
    for name in texts:  # what each threshold cuts in each corpus
        for model, value in ((MODELS[0], MINILM_THRESHOLD), (MODELS[1], chosen)):
            out["corpora"][name][model]["cut_share"] = round(float(np.mean(adjacent[name, model] < value)), 3)
    return out


def throughput(chroma_dir: str | None, settings: Any) -> dict[str, Any]:
    """Texts per second of both models on the same sentences and 250-token chunks (median of three runs each)."""
    from chunkbench.text.tokens import get_tokenizer

    corpora = _corpora(chroma_dir)
    sentences = [s for text in corpora.values() for s in _sentences(text, 40)]
    tokenizer = get_tokenizer()
    ids = tokenizer.encode(corpora["wikitexts"])
    chunks = [tokenizer.decode(ids[start : start + 250]) for start in range(0, 250 * 48, 250)]
    for model in MODELS:  # load both before timing anything
        _embed(model, ["warm up"], settings)
    out: dict[str, Any] = {"cpu_cores": os.cpu_count(), "runs": 3}
    for label, texts in (("sentences", sentences), ("chunks_250_tokens", chunks)):
        times: dict[str, list[float]] = {model: [] for model in MODELS}
        for _ in range(3):
            for model in MODELS:  # interleaved: a busy moment of the machine hits both models
                started = time.perf_counter()
                _embed(model, texts, settings)
                times[model].append(time.perf_counter() - started)
        rates = {model: round(len(texts) / float(np.median(seconds)), 1) for model, seconds in times.items()}
        out[label] = {
            "texts": len(texts),
            "texts_per_s": rates,
            "e5_to_minilm": round(rates[MODELS[1]] / rates[MODELS[0]], 3),
        }
    return out


def recall(chroma_dir: str | None, data_dir: Path) -> dict[str, Any]:
    """Chroma's row ``RECALL_ROW`` on ``RECALL_CORPORA`` as a corpus benchmark with each model: span and rank
    figures, in percent."""
    from chunkbench.benchmarking import corpus_eval
    from chunkbench.chunking import variants
    from chunkbench.config import Settings
    from chunkbench.documents.discovery import SourceFile
    from chunkbench.evaluation.chroma import CHROMA_RETRIEVE, load_chroma, select_configs
    from chunkbench.storage.db import Database
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import VectorStore

    folder, _corpora, every = load_chroma(chroma_dir)
    names = RECALL_CORPORA
    questions = [q for q in every if q.document_id in names]
    (config,) = select_configs(RECALL_ROW)
    out: dict[str, Any] = {
        "row": RECALL_ROW, "corpora": list(names), "questions": len(questions), "retriever": "dense",
        "top_k": CHROMA_RETRIEVE, "models": {},
    }  # fmt: skip
    for model in MODELS:
        settings = Settings(_env_file=None, data_dir=data_dir / model)
        database, store = Database.from_settings(settings), VectorStore(settings)
        try:
            strategy = variants.add(settings, config.variant).name.value
            evaluation = corpus_eval.evaluate(
                database, settings, store, corpus="chroma-eval",
                sources=[SourceFile(folder / "corpora" / f"{name}.md", f"{name}.md") for name in names],
                questions=questions, strategies=[strategy], corpus_model=model, retriever="dense",
                top_k=CHROMA_RETRIEVE, scope="corpus", name=f"Chroma {RECALL_ROW} with {model}",
                tenant_id=DEFAULT_TENANT,
            )  # fmt: skip
        finally:
            store.close()
            database.dispose()
        figures = corpus_eval.figures(evaluation.experiment, strategy)
        out["models"][model] = {
            "seconds": evaluation.timings,
            **{m: figures[m] for m in ("recall", "precision", "iou", "recall_at_k", "mrr")},
            "questions": figures["questions"],
            "chunks": figures["chunks"],
        }
    e5, minilm = out["models"][MODELS[1]], out["models"][MODELS[0]]
    out["e5_minus_minilm_recall_points"] = round(e5["recall"]["mean"] - minilm["recall"]["mean"], 2)
    return out


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    chroma_dir = sys.argv[2] if len(sys.argv) > 2 else None
    if part not in ("threshold", "throughput", "recall", "all"):
        raise SystemExit(f"unknown part '{part}': threshold, throughput, recall or all")
    results: dict[str, Any] = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    with tempfile.TemporaryDirectory(prefix="chunkbench-multilingual-") as tmp:
        settings = _settings(Path(tmp) / "data")
        for name in ("threshold", "throughput", "recall"):
            if part not in (name, "all"):
                continue
            started = time.perf_counter()
            if name == "recall":
                results[name] = recall(chroma_dir, Path(tmp) / "recall")
            else:
                results[name] = (
                    threshold(chroma_dir, settings) if name == "threshold" else throughput(chroma_dir, settings)
                )
            results[name]["bench_seconds"] = round(time.perf_counter() - started, 1)
            print(json.dumps({name: results[name]}, indent=1, ensure_ascii=False))
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
