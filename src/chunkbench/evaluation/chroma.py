"""Chroma's general chunking evaluation with Chroma's settings: the all-MiniLM-L6-v2 rows we reproduce.

Chroma's ``TokenTextSplitter`` rows map to our ``fixed_size`` strategy, its ``RecursiveCharacterTextSplitter``
rows (``RecursiveTokenChunker`` with cl100k lengths) to our ``recursive`` strategy with Chroma's literal
separators, its ``ClusterSemanticChunker`` rows to ``cluster_semantic`` (max_chunk_size 250 and 200, pieces of 50
tokens, embedded with MiniLM as the Boundary model, as Chroma embedded them); each row is a strategy variant
(``fixed_size_250_125``). The Token and Recursive rows also run through LangChain's own splitters (the library
adapters ``langchain_token``, ``langchain_recursive``: ``langchain_token-250-0`` …, named explicitly, never in "all").
Every row retrieves 5 chunks per question
across all corpora with MiniLM (dense), as Chroma did. The run itself is a corpus benchmark
(``benchmarking/chroma_reproduction.py``): this module holds the rows, the published figures and the data.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkbench.chunking.base import Variant
from chunkbench.errors import EvaluationError
from chunkbench.evaluation.corpus_inputs import load_questions
from chunkbench.evaluation.questions import BenchmarkQuestion
from chunkbench.evaluation.spans import SPAN_METRICS
from chunkbench.models import StrategyName

CHROMA_MODEL = "all-MiniLM-L6-v2"
CHROMA_RETRIEVE = 5
# RecursiveTokenChunker's default separators in Chroma's chunking_evaluation.
CHROMA_SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]
# ClusterSemanticChunker's pieces: RecursiveTokenChunker at min_chunk_size tokens (Chroma's default, 50).
CLUSTER_MIN_CHUNK_SIZE = 50
_CLUSTER_SEMANTIC = "cluster_semantic"
# The published chunker each strategy's rows are compared with, and the strategies that take Chroma's separators.
_CHUNKERS = {
    StrategyName.FIXED_SIZE.value: "TokenTextSplitter",
    StrategyName.RECURSIVE.value: "RecursiveCharacterTextSplitter",
    _CLUSTER_SEMANTIC: "ClusterSemanticChunker",
    "langchain_token": "TokenTextSplitter",
    "langchain_recursive": "RecursiveCharacterTextSplitter",
}
_WITH_SEPARATORS = {"recursive", "langchain_recursive"}


@dataclass(frozen=True)
class ChromaConfig:
    """One published row: our strategy and parameters for Chroma's chunker at a size and overlap (tokens)."""

    # A strategy of an optional library (an adapter) is named before it is registered: StrategyName.stored.
    strategy: StrategyName
    chunk_size: int
    chunk_overlap: int

    @property
    def name(self) -> str:
        return f"{self.strategy.value}-{self.chunk_size}-{self.chunk_overlap}"

    @property
    def variant(self) -> Variant:
        """The strategy variant this row runs as: ``fixed_size_250_125`` pins the size, overlap (and separators)."""
        return Variant(
            f"{self.strategy.value}_{self.chunk_size}_{self.chunk_overlap}", self.strategy.value, self.params
        )

    @property
    def chunker(self) -> str:
        return _CHUNKERS[self.strategy.value]

    @property
    def params(self) -> dict[str, Any]:
        if self.strategy.value == _CLUSTER_SEMANTIC:
            # Chroma's rows name max_chunk_size; its pieces stay at the default size, with no overlap.
            return {"max_chunk_size": self.chunk_size, "min_chunk_size": CLUSTER_MIN_CHUNK_SIZE}
        params: dict[str, Any] = {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}
        if self.strategy.value in _WITH_SEPARATORS:
            params["separators"] = list(CHROMA_SEPARATORS)
        return params


CHROMA_CONFIGS: tuple[ChromaConfig, ...] = tuple(
    ChromaConfig(strategy, size, overlap)
    for strategy in (StrategyName.FIXED_SIZE, StrategyName.RECURSIVE)
    for size, overlap in ((250, 125), (250, 0), (200, 0))
) + tuple(ChromaConfig(StrategyName.add(_CLUSTER_SEMANTIC), size, 0) for size in (250, 200))
# The same published rows through the library adapters (chunking/adapters/): named explicitly, never in "all", as
# their library is an optional extra.
LIBRARY_CONFIGS: tuple[ChromaConfig, ...] = tuple(
    ChromaConfig(StrategyName.stored(strategy), size, overlap)
    for strategy in ("langchain_token", "langchain_recursive")
    for size, overlap in ((250, 0), (200, 0))
)


def select_configs(name: str | None) -> list[ChromaConfig]:
    """The configuration called ``name`` (e.g. ``recursive-250-0``, ``langchain_token-250-0``), or the rows of
    chunkbench's own strategies for ``None``/``all``."""
    if name is None or name == "all":
        return list(CHROMA_CONFIGS)
    known = (*CHROMA_CONFIGS, *LIBRARY_CONFIGS)
    chosen = [config for config in known if config.name == name]
    if not chosen:
        raise EvaluationError(f"Unknown Chroma configuration '{name}'. Known: all, {', '.join(c.name for c in known)}.")
    return chosen


def published_rows(data_dir: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    """The published all-MiniLM-L6-v2 rows by ``(chunker, size, overlap)``: four metrics (mean, sd), mean tokens."""
    file = data_dir / "published_results_headline.csv"
    if not file.is_file():
        raise EvaluationError(f"{file} is missing: --data must be Chroma's evaluation folder.")
    rows: dict[tuple[str, int, int], dict[str, Any]] = {}
    with file.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["embedding_model"] != CHROMA_MODEL or not row["size_tokens"]:
                continue
            key = (row["chunker"], int(row["size_tokens"]), int(row["overlap_tokens"]))
            rows[key] = {
                name: {"mean": float(row[f"{name}_mean"]), "std": float(row[f"{name}_sd"])} for name in SPAN_METRICS
            }
            rows[key]["mean_chunk_tokens"] = float(row["mean_chunk_tokens"])
    return rows


def load_chroma(data_dir: Path | str | None = None) -> tuple[Path, dict[str, str], list[BenchmarkQuestion]]:
    """Chroma's data folder (default: the copy chunkbench ships, ``datasets.chroma_dir``), corpora and questions."""
    from chunkbench.evaluation.datasets import chroma_dir, load_corpora

    folder = chroma_dir(data_dir)
    if not (folder / "corpora").is_dir() or not (folder / "questions_df.csv").is_file():
        raise EvaluationError(
            f"{folder} is not Chroma's evaluation folder (it needs corpora/*.md and questions_df.csv); pass --data DIR."
        )
    corpora = load_corpora(folder)
    return folder, corpora, load_questions(folder / "questions_df.csv", corpora)
