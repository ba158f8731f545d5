"""Reproduce Chroma's published all-MiniLM-L6-v2 TokenTextSplitter rows with our FixedSizeStrategy.

Chunks every corpus of Chroma's general evaluation, embeds chunks and questions with MiniLM, retrieves the
top 5 chunks per question by cosine over *all* corpora (Chroma queries one collection holding every corpus,
with no corpus filter), scores them with ``chunkbench.evaluation.spans`` in characters (what Chroma's code
computes) and in cl100k tokens, prints ours vs published and writes ``bench/results/chroma_reproduce.json``.

Usage: ``python bench/chroma_reproduce.py [DATA_DIR]``.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "chroma_reproduce.json"
MODEL = "all-MiniLM-L6-v2"
RETRIEVE = 5
CONFIGS = [(250, 125), (250, 0), (200, 0)]  # (chunk_size, chunk_overlap) in tokens
METRICS = ["recall", "precision", "precision_omega", "iou"]


def published_rows(data_dir: Path) -> dict[tuple[int, int], dict[str, float]]:
    """The report's MiniLM TokenTextSplitter rows by ``(size, overlap)``."""
    rows: dict[tuple[int, int], dict[str, float]] = {}
    with (data_dir / "published_results_headline.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["embedding_model"] == MODEL and row["chunker"] == "TokenTextSplitter":
                key = (int(row["size_tokens"]), int(row["overlap_tokens"]))
                rows[key] = {f"{m}_{s}": float(row[f"{m}_{s}"]) for m in METRICS for s in ("mean", "sd")}
    return rows


def main() -> None:
    """Run every configuration once, print the comparison table and write the JSON results."""
    # Weights come from folders; without these the hub client still tries the network first.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from chunkbench.chunking.base import ChunkingInput
    from chunkbench.chunking.strategies.fixed_size import FixedSizeParams, FixedSizeStrategy
    from chunkbench.chunking.tokens import get_tokenizer
    from chunkbench.config import Settings
    from chunkbench.embedding.registry import get_spec
    from chunkbench.embedding.service import embed_texts
    from chunkbench.evaluation.datasets import chroma_dir, load_chroma_questions, load_corpora, validate_references
    from chunkbench.evaluation.spans import TokenMap, span_metrics, token_span_metrics
    from chunkbench.models import DocumentTree, NodeType, TreeNode

    data_dir = chroma_dir(sys.argv[1] if len(sys.argv) > 1 else None)
    corpora = load_corpora(data_dir)
    questions = load_chroma_questions(data_dir)
    validate_references(questions, corpora)
    published = published_rows(data_dir)
    tokenizer = get_tokenizer()
    token_maps = {cid: TokenMap(tokenizer.boundaries(text)[1].tolist()) for cid, text in corpora.items()}

    spec = get_spec(MODEL)
    cache: dict[str, np.ndarray] = {}  # chunk text -> embedding: configs share many identical windows
    results: dict[str, object] = {
        "model": MODEL,
        "retrieve": RETRIEVE,
        "retrieval_scope": "all corpora (as Chroma's collection.query), exact cosine",
        "sd": "population (numpy std, as Chroma)",
        "configs": [],
    }
    with tempfile.TemporaryDirectory(prefix="chunkbench-chroma-") as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data")
        started = time.perf_counter()
        question_vectors = embed_texts(spec, [q.question for q in questions], "query", settings)
        for size, overlap in CONFIGS:
            config_start = time.perf_counter()
            strategy = FixedSizeStrategy(FixedSizeParams(chunk_size=size, chunk_overlap=overlap))
            chunks: list[tuple[str, int, int, str]] = []  # (corpus_id, start, end, text)
            for corpus_id, text in corpora.items():
                tree = DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(text)))
                document = ChunkingInput(document_id=corpus_id, document_name=corpus_id, markdown=text, tree=tree)
                chunks.extend((corpus_id, c.start_index, c.end_index, c.text) for c in strategy.chunk(document))
            missing = list(dict.fromkeys(c[3] for c in chunks if c[3] not in cache))
            if missing:
                cache.update(zip(missing, embed_texts(spec, missing, "document", settings), strict=True))
            matrix = np.stack([cache[c[3]] for c in chunks])
            top = np.argsort(-(question_vectors @ matrix.T), axis=1, kind="stable")[:, :RETRIEVE]
            by_corpus: dict[str, list[tuple[int, int]]] = {}
            for corpus_id, start, end, _text in chunks:
                by_corpus.setdefault(corpus_id, []).append((start, end))
            token_lengths = [token_maps[c[0]]((c[1], c[2])) for c in chunks]
            scores: dict[str, dict[str, list[float]]] = {"chars": {m: [] for m in METRICS}, "tokens": {}}
            scores["tokens"] = {m: [] for m in METRICS}
            for question, row in zip(questions, top, strict=True):
                own = [int(i) for i in row if chunks[i][0] == question.corpus_id]
                foreign = [int(i) for i in row if chunks[i][0] != question.corpus_id]
                refs = [r.span for r in question.references]
                retrieved = [(chunks[i][1], chunks[i][2]) for i in own]
                char_m = span_metrics(
                    retrieved, refs, by_corpus[question.corpus_id], [chunks[i][2] - chunks[i][1] for i in foreign]
                )
                token_m = token_span_metrics(
                    retrieved,
                    refs,
                    by_corpus[question.corpus_id],
                    token_maps[question.corpus_id],
                    [token_lengths[i][1] - token_lengths[i][0] for i in foreign],
                )
                for unit, m in (("chars", char_m), ("tokens", token_m)):
                    for name in METRICS:
                        scores[unit][name].append(float(getattr(m, name)))
            summary = {
                unit: {name: {"mean": 100 * float(np.mean(v)), "sd": 100 * float(np.std(v))} for name, v in per.items()}
                for unit, per in scores.items()
            }
            results["configs"].append(  # type: ignore[union-attr]
                {
                    "chunk_size": size,
                    "chunk_overlap": overlap,
                    "chunks": len(chunks),
                    "mean_chunk_tokens": float(np.mean([b - a for a, b in token_lengths])),
                    "ours": summary,
                    "published": published.get((size, overlap)),
                    "seconds": round(time.perf_counter() - config_start, 1),
                }
            )
        results["seconds_total"] = round(time.perf_counter() - started, 1)

    print(f"{MODEL}, FixedSizeStrategy vs Chroma TokenTextSplitter, n={RETRIEVE}, mean ± sd (%)")
    print(f"{'config':<10} {'source':<14} " + " ".join(f"{m:>16}" for m in METRICS))
    for config in results["configs"]:  # type: ignore[union-attr]
        label = f"{config['chunk_size']}/{config['chunk_overlap']}"
        for unit in ("chars", "tokens"):
            cells = " ".join(
                f"{config['ours'][unit][m]['mean']:>7.1f} ± {config['ours'][unit][m]['sd']:>5.1f}" for m in METRICS
            )
            print(f"{label:<10} {'ours/' + unit:<14} {cells}")
        if config["published"]:
            pub = config["published"]
            cells = " ".join(f"{pub[m + '_mean']:>7.1f} ± {pub[m + '_sd']:>5.1f}" for m in METRICS)
            print(f"{label:<10} {'published':<14} {cells}")
        print(f"{'':<10} chunks={config['chunks']} mean tokens={config['mean_chunk_tokens']:.1f} {config['seconds']}s")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
