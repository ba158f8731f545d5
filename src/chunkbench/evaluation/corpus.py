"""Corpus-level span evaluation: chunk every document, index them together, retrieve per question, score.

This is Chroma's general evaluation run through chunkbench's own pipeline: a strategy from the registry
cuts each document (offsets come from the strategy), the Corpus model embeds the chunks, one throwaway
Qdrant collection in a temporary data directory holds every document, and a registered retriever
(dense, bm25, hybrid) returns ``n`` chunks per question. By default the search spans the whole index, as
Chroma's ``collection.query`` does: a chunk of another document enlarges the retrieved length (precision
and IoU denominators) but is never evidence. ``scope="document"`` searches only the question's document.

Each question is scored with Chroma's span metrics (``spans.py``) in characters and in cl100k tokens, and
with the rank metrics of ``ranking.py``. All documents are laid out on one global axis (each document
shifted past the previous one, one unit apart) so that ranges of different documents never meet; a
reference may then sit in any document, and foreign chunks count exactly as Chroma counts them.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from chunkbench.chunking.base import (
    Chunk,
    ChunkingInput,
    ChunkingStrategy,
    StrategyParams,
    defaults_from_settings,
    strategy_class,
    validate_params,
)
from chunkbench.config import Settings, get_settings
from chunkbench.embedding.cache import EMBEDDINGS, EmbeddingCache
from chunkbench.embedding.registry import DEFAULT_MODEL_ID, EmbeddingModelSpec, get_spec
from chunkbench.embedding.service import boundary_embedder
from chunkbench.errors import EvaluationError
from chunkbench.evaluation.locate import resolve_evidence
from chunkbench.evaluation.questions import BenchmarkQuestion, load_question_set
from chunkbench.evaluation.ranking import ChunkRef, Evidence, rank_metrics, relevant_chunk_ids
from chunkbench.evaluation.spans import SpanMetrics, TokenMap, span_metrics
from chunkbench.indexing.contextual import make_prefixer
from chunkbench.indexing.pipeline import IndexingPlan, index_documents
from chunkbench.limits import MAX_CANDIDATE_K
from chunkbench.models import DocumentTree, NodeType, StrategyName, TreeNode
from chunkbench.retrieval import pipeline
from chunkbench.retrieval.search import RetrieverName, get_retriever
from chunkbench.storage.vectors import VectorStore
from chunkbench.text.tokens import get_tokenizer

EVAL_TENANT = "eval"
SPAN_METRICS = ("recall", "precision", "precision_omega", "iou")
RANK_METRICS = ("recall_at_k", "hit_at_k", "mrr", "ndcg_at_k")
STAGES = ("chunk", "embed", "index", "retrieve", "score")
DOCUMENT_SUFFIXES = (".md", ".txt")
_SHOWN = 5  # how many offending items an error message lists

# ``progress(stage, done, total)``: called as each stage advances.
ProgressCallback = Callable[[str, int, int], None]


class Scope(StrEnum):
    """Where a question's chunks are searched."""

    CORPUS = "corpus"
    DOCUMENT = "document"


# --------------------------------------------------------------------------------------------- loading


def load_documents(path: Path | str) -> dict[str, str]:
    """Documents by id: a directory of ``.md``/``.txt`` files (id = file stem) or a JSONL of
    ``{"document_id", "text"}`` lines. Texts are read as UTF-8; offsets are characters of that text."""
    path = Path(path)
    if not path.exists():
        raise EvaluationError(f"Documents path {path} does not exist: give a folder of .md/.txt files or a JSONL file.")
    if path.is_dir():
        return _documents_from_folder(path)
    return _documents_from_jsonl(path)


def _documents_from_folder(folder: Path) -> dict[str, str]:
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)
    if not files:
        raise EvaluationError(f"{folder} holds no .md or .txt files; put the documents to evaluate there.")
    documents: dict[str, str] = {}
    for file in files:
        if file.stem in documents:
            raise EvaluationError(
                f"Two files in {folder} have the document id '{file.stem}' (the file stem); rename one of them."
            )
        documents[file.stem] = _read_text(file)
    return documents


def _documents_from_jsonl(file: Path) -> dict[str, str]:
    documents: dict[str, str] = {}
    for number, row in _jsonl_rows(file):
        document_id, text = row.get("document_id"), row.get("text")
        if not isinstance(document_id, str) or not document_id or not isinstance(text, str):
            raise EvaluationError(f'{file}: line {number} needs {{"document_id": "<id>", "text": "<text>"}}.')
        if document_id in documents:
            raise EvaluationError(f"{file}: line {number} repeats the document id '{document_id}'.")
        documents[document_id] = text
    if not documents:
        raise EvaluationError(f"{file} holds no documents.")
    return documents


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{file} is not UTF-8 text ({exc.reason}); convert it to UTF-8.") from exc
    except OSError as exc:
        raise EvaluationError(f"Cannot read {file}: {exc.strerror or exc}.") from exc


def _jsonl_rows(file: Path) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(_read_text(file).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvaluationError(
                f"{file}: line {number} is not JSON ({exc.msg}); expected one object per line."
            ) from exc
        if not isinstance(row, dict):
            raise EvaluationError(f"{file}: line {number} is not a JSON object.")
        rows.append((number, row))
    return rows


def load_questions(path: Path | str, documents: Mapping[str, str]) -> list[BenchmarkQuestion]:
    """Questions of any question-set format (Chroma's ``questions_df.csv``, JSONL of ``{id, question, document_id,
    answer?, references: [{document_id?, content, start_index, end_index}]}``, seed JSON), every reference placed
    in ``documents`` (offsets checked; snippets located exact → whitespace → fuzzy) as the question-set library does.
    """
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"Question file {path} does not exist (or is a folder).")
    report = resolve_evidence(load_question_set(path), documents)
    if not report.ok:
        shown = "; ".join(
            f"question {p.question_id} reference {p.reference_index + 1} ({p.document}): {p.message or p.status}"
            for p in report.problems[:_SHOWN]
        )
        raise EvaluationError(
            f"{len(report.problems)} reference(s) of {path.name} cannot be placed in the documents: {shown}. "
            "chunkbench questions validate lists them all."
        )
    questions = []
    for question in report.resolved():
        if not question.references:
            raise EvaluationError(
                f"{path.name}: question {question.id} has no references; span evaluation needs evidence for each."
            )
        # A question naming no known document is about the one its first evidence is in.
        document_id = question.document_id if question.document_id in documents else question.references[0].document
        questions.append(replace(question, document_id=document_id))
    return questions


def placed_questions(questions: Sequence[BenchmarkQuestion], documents: dict[str, str]) -> list[BenchmarkQuestion]:
    """The questions with every reference placed in ``documents`` (document key, offsets, content); raises an
    ``EvaluationError`` naming unknown document ids, or references their offsets do not select, the first few."""
    report = resolve_evidence(questions, documents)
    unknown = sorted(
        {str(q.document_id) for q in questions if q.document_id not in documents}
        | {str(p.document) for p in report.problems if p.status == "unknown_document"}
    )
    if unknown:
        known = ", ".join(sorted(documents)[:10]) + (" …" if len(documents) > 10 else "")
        raise EvaluationError(
            f"The questions name {len(unknown)} unknown document id(s): {', '.join(unknown[:_SHOWN])}. "
            f"Known ids (file stems or JSONL document_id): {known}.",
            unknown_document_ids=unknown[:_SHOWN],
        )
    if report.problems:
        mismatches = [
            f"question {p.question_id} ref {p.reference_index} ({p.document}[{p.given_start}:{p.given_end}]): "
            f"expected {p.snippet[:40]!r}, found {(p.found or '')[:40]!r}"
            if p.status == "mismatch"
            else f"question {p.question_id} ref {p.reference_index} ({p.document}): {p.message}"
            for p in report.problems
        ]
        raise EvaluationError(
            f"{len(mismatches)} reference(s) do not match their document's text at their offsets (were the "
            f"documents edited, or read with another encoding?): {'; '.join(mismatches[:_SHOWN])}"
        )
    return report.resolved().questions


# --------------------------------------------------------------------------------------------- evaluation


@dataclass
class SpanEvaluation:
    """The outcome of one evaluation: configuration, per-question scores, summaries and stage timings."""

    config: dict[str, Any]
    documents: int
    questions: int
    chunks: int
    mean_chunk_tokens: float
    per_question: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self, unit: str = "chars") -> dict[str, dict[str, float]]:
        """Chroma's four metrics in ``unit`` ("chars" or "tokens"): mean and population SD, in percent."""
        return {name: _mean_std([q[unit][name] for q in self.per_question], 100) for name in SPAN_METRICS}

    def rank_summary(self) -> dict[str, dict[str, float]]:
        """Rank metrics: ratios in percent, ``tok_at_k`` in tokens; mean and population SD."""
        summary = {name: _mean_std([q["rank"][name] for q in self.per_question], 100) for name in RANK_METRICS}
        summary["tok_at_k"] = _mean_std([q["rank"]["tok_at_k"] for q in self.per_question], 1)
        return summary

    def to_dict(self, *, per_question: bool = False) -> dict[str, Any]:
        """The JSON of ``chunkbench eval spans --json``."""
        data: dict[str, Any] = {**self.summary("chars"), **self.rank_summary()}
        data.update(
            tokens=self.summary("tokens"),
            config=self.config,
            documents=self.documents,
            questions=self.questions,
            chunks=self.chunks,
            mean_chunk_tokens=self.mean_chunk_tokens,
            units={
                "span_metrics": "percent",
                "rank_ratios": "percent",
                "tok_at_k": "cl100k tokens",
                "sd": "population",
            },
            timings=self.timings,
        )
        if per_question:
            data["per_question"] = self.per_question
        return data


def _mean_std(values: Sequence[float], scale: float) -> dict[str, float]:
    array = np.asarray(values, dtype=np.float64) * scale
    # Chroma reports numpy's population SD (ddof=0).
    return {"mean": float(array.mean()), "std": float(array.std())} if len(array) else {"mean": 0.0, "std": 0.0}


class _Axis:
    """One global coordinate axis per unit: document ``d`` starts where the previous one ended, plus one."""

    def __init__(self, documents: dict[str, str]) -> None:
        tokenizer = get_tokenizer()
        self.char_offset: dict[str, int] = {}
        self.token_offset: dict[str, int] = {}
        self.token_maps: dict[str, TokenMap] = {}
        chars = tokens = 0
        for document_id, text in documents.items():
            starts = tokenizer.boundaries(text)[1].tolist()
            self.char_offset[document_id], self.token_offset[document_id] = chars, tokens
            self.token_maps[document_id] = TokenMap(starts)
            # One unit of gap: a range ending a document never touches one starting the next.
            chars += len(text) + 1
            tokens += len(starts)

    def chars(self, document_id: str, start: int, end: int) -> tuple[int, int]:
        offset = self.char_offset[document_id]
        return (offset + start, offset + end)

    def tokens(self, document_id: str, start: int, end: int) -> tuple[int, int]:
        first, last = self.token_maps[document_id]((start, end))
        offset = self.token_offset[document_id]
        return (offset + first, offset + last)


def _strategy(
    strategy: StrategyName, params: StrategyParams, settings: Settings, spec: EmbeddingModelSpec
) -> ChunkingStrategy:
    """The strategy with validated params; the semantic ones use the Corpus model as their Boundary model, at
    its default threshold."""
    cls = strategy_class(strategy)
    boundary = boundary_embedder(spec, spec.default_semantic_threshold, settings) if cls.needs_boundary else None
    return cls(params, boundary=boundary, prefixer=make_prefixer(settings))


def _inputs(documents: dict[str, str]) -> list[ChunkingInput]:
    # Evidence offsets point into the raw text: chunk it as is, with a tree of one root node (the heading-aware
    # strategies then find ``#`` heading lines in the text themselves).
    return [
        ChunkingInput(
            document_id=document_id,
            document_name=document_id,
            markdown=text,
            tree=DocumentTree(root=TreeNode(node_type=NodeType.DOCUMENT, start_index=0, end_index=len(text))),
        )
        for document_id, text in documents.items()
    ]


def evaluate_spans(
    documents: dict[str, str],
    questions: Sequence[BenchmarkQuestion],
    *,
    strategy: StrategyName | str = StrategyName.FIXED_SIZE,
    params: dict[str, Any] | None = None,
    retriever: RetrieverName | str = RetrieverName.DENSE,
    corpus_model: str = DEFAULT_MODEL_ID,
    n: int = 5,
    scope: Scope | str = Scope.CORPUS,
    settings: Settings | None = None,
    cache: EmbeddingCache | None = None,
    progress: ProgressCallback | None = None,
) -> SpanEvaluation:
    """Chunk, embed, index and search ``documents``, then score each question's top ``n`` chunks.

    Raises typed errors before any work for unknown strategies, parameters, retrievers, models, scopes and
    document ids, and for references that do not match their document.
    """
    report = progress or (lambda stage, done, total: None)
    base = settings or get_settings()
    strategy_name = StrategyName(strategy_class(strategy).name)  # unknown name: ChunkingError listing the known
    validated = validate_params(strategy_name, {**defaults_from_settings(strategy_name, base), **(params or {})})
    try:
        scope_value = Scope(scope)
    except ValueError:
        raise EvaluationError(f"Unknown scope '{scope}'. Scopes: {', '.join(s.value for s in Scope)}.") from None
    engine = get_retriever(retriever)
    spec = get_spec(corpus_model)
    if not 1 <= n <= MAX_CANDIDATE_K:
        raise EvaluationError(f"n (chunks retrieved per question) must be between 1 and {MAX_CANDIDATE_K}; got {n}.")
    if not documents:
        raise EvaluationError("There are no documents to evaluate.")
    if not questions:
        raise EvaluationError("There are no questions to evaluate.")
    questions = placed_questions(questions, documents)
    cache = cache if cache is not None else EMBEDDINGS
    timings: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    with tempfile.TemporaryDirectory(prefix="chunkbench-eval-") as folder:
        # A throwaway embedded store: the user's own collections (or Qdrant server) are never touched.
        settings_tmp = base.model_copy(
            update={"data_dir": Path(folder), "qdrant_url": "", "models_dir": base.resolved_models_dir}
        )
        store = VectorStore(settings_tmp)
        try:
            plan = IndexingPlan(EVAL_TENANT, _strategy(strategy_name, validated, base, spec), spec, keep_parents=False)
            run = index_documents(base, store, plan, _inputs(documents), cache=cache, progress=report)
            timings.update(run.timings)

            started = time.perf_counter()
            query_vectors = (
                cache.embed(spec, [q.question for q in questions], "query", base) if engine.needs_query_vector else None
            )
            timings["embed"] += time.perf_counter() - started

            started = time.perf_counter()
            hits = _retrieve(
                settings_tmp, store, RetrieverName(retriever), spec, strategy_name, questions, query_vectors, n,
                scope_value, report,
            )  # fmt: skip
            timings["retrieve"] = time.perf_counter() - started
        finally:
            store.close()

    chunks = run.chunks
    by_document = {indexed.document.document_id: indexed.searchable for indexed in run.documents}
    started = time.perf_counter()
    per_question = _score(documents, questions, by_document, hits, n, report)
    timings["score"] = time.perf_counter() - started
    return SpanEvaluation(
        config={
            "strategy": strategy_name.value,
            "params": validated.model_dump(),
            "retriever": RetrieverName(retriever).value,
            "corpus_model": spec.id,
            "n": n,
            "scope": scope_value.value,
        },
        documents=len(documents),
        questions=len(questions),
        chunks=len(chunks),
        mean_chunk_tokens=float(np.mean([c.token_count for c in chunks])) if chunks else 0.0,
        per_question=per_question,
        timings={stage: round(seconds, 3) for stage, seconds in timings.items()},
    )


def _retrieve(
    settings: Settings,
    store: VectorStore,
    retriever: RetrieverName,
    spec: EmbeddingModelSpec,
    strategy: StrategyName,
    questions: Sequence[BenchmarkQuestion],
    query_vectors: np.ndarray | None,
    n: int,
    scope: Scope,
    report: ProgressCallback,
) -> list[list[ChunkRef]]:
    """Each question's top ``n`` hits through the query pipeline, retrieval only (no floor, no answer)."""
    hits: list[list[ChunkRef]] = []
    for position, question in enumerate(questions):
        plan = pipeline.make_plan(
            settings,
            question=question.question,
            scope=pipeline.Scope.document(EVAL_TENANT, question.document_id)
            if scope is Scope.DOCUMENT
            else pipeline.Scope.corpus(EVAL_TENANT),
            strategy=strategy,
            corpus=spec,
            retriever=retriever,
            top_k=n,
            neighbor_prev=0,
            neighbor_next=0,
            parent_context=False,
            answer="none",
            query_vector=None if query_vectors is None else query_vectors[position],
        )
        # Chroma's protocol has no score floor: every question gets its n chunks.
        plan = replace(plan, score_floor=None)
        hits.append(
            [
                ChunkRef(hit.document_id, hit.chunk_index, hit.start_index, hit.end_index, hit.token_count)
                for hit in pipeline.run(settings, store, plan).hits
            ]
        )
        if position % 16 == 15 or position == len(questions) - 1:
            report("retrieve", position + 1, len(questions))
    return hits


def _score(
    documents: dict[str, str],
    questions: Sequence[BenchmarkQuestion],
    by_document: dict[str, list[Chunk]],
    hits: list[list[ChunkRef]],
    n: int,
    report: ProgressCallback,
) -> list[dict[str, Any]]:
    axis = _Axis(documents)
    chunkings = {
        document_id: [ChunkRef(document_id, c.chunk_index, c.start_index, c.end_index, c.token_count) for c in chunks]
        for document_id, chunks in by_document.items()
    }
    results: list[dict[str, Any]] = []
    for position, (question, retrieved) in enumerate(zip(questions, hits, strict=True)):
        # Placed references: each has its document and offsets.
        references = [(str(r.document), *r.span) for r in question.references]
        evidence_documents = list(dict.fromkeys(document for document, _, _ in references))
        chunking = [chunk for d in evidence_documents for chunk in chunkings.get(d, [])]
        evidence = [Evidence(*reference) for reference in references]
        scores: dict[str, Any] = {"id": question.id, "retrieved": [[c.document_id, c.chunk_index] for c in retrieved]}
        for unit, place in (("chars", axis.chars), ("tokens", axis.tokens)):
            metrics = span_metrics(
                [place(c.document_id, c.start_index, c.end_index) for c in retrieved],
                [place(*reference) for reference in references],
                [place(c.document_id, c.start_index, c.end_index) for c in chunking],
            )
            scores[unit] = _span_dict(metrics)
        ranks = rank_metrics(retrieved, relevant_chunk_ids(chunking, evidence), n)
        scores["rank"] = {
            "recall_at_k": ranks.recall_at_k,
            "hit_at_k": ranks.hit_at_k,
            "mrr": ranks.mrr,
            "ndcg_at_k": ranks.ndcg_at_k,
            "tok_at_k": ranks.tok_at_k,
        }
        results.append(scores)
        if position % 64 == 63 or position == len(questions) - 1:
            report("score", position + 1, len(questions))
    return results


def _span_dict(metrics: SpanMetrics) -> dict[str, float]:
    return {
        "recall": metrics.recall,
        "precision": metrics.precision,
        "precision_omega": metrics.precision_omega or 0.0,
        "iou": metrics.iou,
    }
