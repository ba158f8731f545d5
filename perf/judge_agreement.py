"""Judge agreement: how often the LLM judge's context relevance agrees with the span metrics on which retrieved
context holds the evidence.

What is measured: Chroma's State of the Union questions (``../shared/data/chroma_chunking_eval``) are retrieved
through chunkbench's corpus benchmark (``benchmarking.corpus_eval.evaluate``: the corpus ingested, chunked
fixed_size 200 tokens / no overlap, embedded with all-MiniLM-L6-v2, dense, k=1), which gives each question its
retrieved chunk and its span recall. Small chunks at k=1 give a healthy mix of recall-1 and recall-0 questions;
retrieval is only the source of cases, not what is measured. ``--questions N`` (default 40) of them are picked
deterministically (by question id), half with recall 1 and half with recall 0 where the pool allows. Each is then
judged by ``chunkbench.evaluation.judge.judge`` — the function a benchmark with ``--judge`` calls — with the
question, the expected answer as the answer (no answer model: the rating under test is the context's) and the
retrieved chunk's text as the only context.

Agreement rule, per question: recall 1 → the judge should rate context relevance HIGH (≥ 6 of 10); recall 0 →
LOW (≤ 5). A question with recall strictly between 0 and 1 is reported separately and not counted; a judge
failure (a verdict with no score) counts as a disagreement. Reported: questions counted (n recall-1, n recall-0),
agreement %, balanced accuracy (mean of the two per-class rates: a judge that always says the same scores 50 %),
mean relevance given recall 1 and given recall 0, judge failures and JSON repairs
(``chunkbench.llm.client.repair_counts``), seconds per judgement.

The model: ``--base-url URL --model NAME`` (any OpenAI-compatible server) or ``--gguf PATH`` (starts
``chunkbench llm serve PATH --threads 2`` as a child process — xllamacpp cannot share a process with uharfbuzz —
and stops it at the end). Results are merged into ``perf/results/judge_agreement.json`` keyed by ``--label``
(default: the model name), so measuring one model keeps the others' entries.

Usage: ``python perf/judge_agreement.py --gguf model.gguf --label NAME [--questions N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "judge_agreement.json"
CORPUS = "state_of_the_union"
CHUNK_SIZE, TOP_K = 200, 1
HIGH = 6  # context relevance ≥ HIGH (of 10) is "high"; below is "low"


@dataclass(frozen=True)
class Case:
    """One judged question: its span recall and the judge's context relevance (None: the judge failed)."""

    question_id: str
    recall: float
    relevance: int | None


def agreement(cases: Sequence[Case], high: int = HIGH) -> dict[str, Any]:
    """The figures of ``cases``: partial recall excluded, a failed verdict counted as a disagreement."""
    ones = [c for c in cases if c.recall >= 1.0]
    zeros = [c for c in cases if c.recall <= 0.0]
    agree_one = sum(1 for c in ones if c.relevance is not None and c.relevance >= high)
    agree_zero = sum(1 for c in zeros if c.relevance is not None and c.relevance < high)
    counted = len(ones) + len(zeros)
    rates = [agree / n for agree, n in ((agree_one, len(ones)), (agree_zero, len(zeros))) if n]

    def mean(group: list[Case]) -> float | None:
        values = [c.relevance for c in group if c.relevance is not None]
        return round(sum(values) / len(values), 2) if values else None

    return {
        "counted": counted,
        "recall_1": len(ones),
        "recall_0": len(zeros),
        "partial_excluded": len(cases) - counted,
        "judge_failures": sum(1 for c in cases if c.relevance is None),
        "agreement_pct": round(100.0 * (agree_one + agree_zero) / counted, 1) if counted else None,
        "balanced_accuracy_pct": round(100.0 * sum(rates) / len(rates), 1) if rates else None,
        "high_rate_given_recall_1_pct": round(100.0 * agree_one / len(ones), 1) if ones else None,
        "low_rate_given_recall_0_pct": round(100.0 * agree_zero / len(zeros), 1) if zeros else None,
        "mean_relevance_recall_1": mean(ones),
        "mean_relevance_recall_0": mean(zeros),
    }


def select(pool: Sequence[tuple[str, float]], n: int) -> list[tuple[str, float]]:
    """``n`` of (question id, recall), by id: half recall 1, half recall 0 (the other class fills a short one),
    then the partial-recall ones only if both classes run out."""
    ordered = sorted(pool)
    ones = [p for p in ordered if p[1] >= 1.0]
    zeros = [p for p in ordered if p[1] <= 0.0]
    partial = [p for p in ordered if 0.0 < p[1] < 1.0]
    take_one = min(len(ones), max(n // 2, n - len(zeros)))
    take_zero = min(len(zeros), n - take_one)
    chosen = ones[:take_one] + zeros[:take_zero]
    return sorted(chosen + partial[: n - len(chosen)])


def retrieve(data_dir: Path | None) -> tuple[dict[str, Any], dict[str, str], list[Any]]:
    """The corpus benchmark's cells (id → cell), the corpus text and the questions of ``CORPUS``."""
    from chunkbench.benchmarking import benchmarks, corpus_eval
    from chunkbench.chunking import variants
    from chunkbench.config import Settings
    from chunkbench.documents.discovery import SourceFile
    from chunkbench.evaluation.chroma import CHROMA_MODEL, ChromaConfig, load_chroma
    from chunkbench.models import StrategyName
    from chunkbench.storage.db import Database
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.storage.vectors import VectorStore

    folder, corpora, questions = load_chroma(data_dir)
    questions = [q for q in questions if q.document_id == CORPUS]
    with tempfile.TemporaryDirectory(prefix="chunkbench-judge-agree-") as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data")
        database, store = Database.from_settings(settings), VectorStore(settings)
        try:
            strategy = variants.add(settings, ChromaConfig(StrategyName.FIXED_SIZE, CHUNK_SIZE, 0).variant).name.value
            evaluation = corpus_eval.evaluate(
                database, settings, store, corpus="judge-agreement",
                sources=[SourceFile(folder / "corpora" / f"{CORPUS}.md", f"{CORPUS}.md")], questions=questions,
                strategies=[strategy], corpus_model=CHROMA_MODEL, retriever="dense", top_k=TOP_K,
                scope="corpus", name="judge agreement", tenant_id=DEFAULT_TENANT,
            )  # fmt: skip
            with database.session() as session:  # the full cells: the "scores" view has no retrieved chunks
                found = benchmarks.cells(session, evaluation.experiment_id)
        finally:
            store.close()
            database.dispose()
    cells = {c.question_id: c.model_dump(mode="json") for c in found if c.ok}
    return cells, corpora, questions


@contextmanager
def served(gguf: Path) -> Iterator[tuple[str, str]]:
    """``chunkbench llm serve GGUF --threads 2`` as a child process: (base URL, model name); stopped at the end."""
    from chunkbench.llm.local_server import serve_in_child

    with tempfile.TemporaryDirectory(prefix="chunkbench-llm-serve-") as tmp:
        env = {"CHUNKBENCH_DATA_DIR": tmp, "PYTHONPATH": str(ROOT / "src")}
        with serve_in_child(gguf, "--threads", "2", env=env) as server:
            yield server.base_url, server.model


def measure(base_url: str, model: str, n: int, data_dir: Path | None) -> dict[str, Any]:
    """Retrieve, select, judge; the figures and the per-question cases."""
    from chunkbench.config import Settings
    from chunkbench.evaluation.judge import judge
    from chunkbench.llm.client import LlmClient, repair_counts

    cells, corpora, questions = retrieve(data_dir)
    text = corpora[CORPUS]
    by_id = {q.id: q for q in questions}
    pool = [(qid, float(cell["metrics"]["recall"])) for qid, cell in cells.items() if qid in by_id]
    chosen = select(pool, n)
    client = LlmClient(Settings(_env_file=None, llm_base_url=base_url, llm_model=model))
    repairs_before = sum(repair_counts().values())
    cases: list[Case] = []
    retries = 0
    started = time.perf_counter()
    for index, (qid, recall) in enumerate(chosen, 1):
        question, cell = by_id[qid], cells[qid]
        contexts = [text[c["start_index"] : c["end_index"]] for c in cell["retrieved"]]
        verdict = judge(
            client, question=question.question, expected_answer=question.expected_answer or "",
            answer=question.expected_answer or "", contexts=contexts,
        )  # fmt: skip
        relevance = verdict.context_relevance
        retries += verdict.failures
        cases.append(Case(qid, recall, None if relevance is None else round(relevance)))
        print(f"  {index}/{len(chosen)} {qid} recall={recall:.2f} relevance={relevance}", flush=True)
    seconds = time.perf_counter() - started
    figures = agreement(cases)
    return {
        "model": model,
        "what": f"{CORPUS}, fixed_size {CHUNK_SIZE}/0, MiniLM dense k={TOP_K}; high = context relevance >= {HIGH}/10",
        "threshold_high": HIGH,
        "questions_judged": len(cases),
        **figures,
        "repairs": sum(repair_counts().values()) - repairs_before,
        "retried_attempts": retries,
        "seconds_per_judgement": round(seconds / len(cases), 2) if cases else None,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "cases": [{"id": c.question_id, "recall": c.recall, "relevance": c.relevance} for c in cases],
    }


def print_table(results: dict[str, Any]) -> None:
    print(f"\nJudge agreement (high = context relevance >= {HIGH}/10; partial recall not counted)")
    header = f"{'model':<40} {'n (r=1/r=0)':>12} {'agree %':>8} {'bal.acc %':>9} {'rel|r=1':>8} {'rel|r=0':>8}"
    print(header + f" {'fail':>5} {'repair':>6} {'s/judg':>7}")
    for label, r in results.items():
        if "error" in r:
            print(f"{label:<40} {r['error']}")
            continue
        counts = f"{r['counted']} ({r['recall_1']}/{r['recall_0']})"
        print(
            f"{label:<40} {counts:>12} {r['agreement_pct']!s:>8} {r['balanced_accuracy_pct']!s:>9} "
            f"{r['mean_relevance_recall_1']!s:>8} {r['mean_relevance_recall_0']!s:>8} {r['judge_failures']:>5} "
            f"{r['repairs']:>6} {r['seconds_per_judgement']!s:>7}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server's base URL (…/v1)")
    parser.add_argument("--model", help="the model name to send to --base-url")
    parser.add_argument("--gguf", type=Path, help="a GGUF file: started with `chunkbench llm serve` and stopped after")
    parser.add_argument("--questions", type=int, default=40, help="questions to judge (default 40)")
    parser.add_argument("--label", help="the results key (default: the model name)")
    parser.add_argument("--data", type=Path, help="Chroma's evaluation folder (default: the shipped copy)")
    args = parser.parse_args(argv)
    if bool(args.gguf) == bool(args.base_url and args.model):
        parser.error("give either --gguf PATH or both --base-url URL and --model NAME")
    if args.gguf:
        with served(args.gguf) as (base_url, model):
            result = measure(base_url, model, args.questions, args.data)
    else:
        result = measure(args.base_url, args.model, args.questions, args.data)
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results[args.label or result["model"]] = result
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print_table(results)


if __name__ == "__main__":
    main()
