"""Deciding for a corpus, end to end from the CLI: ingest a folder, process it with every strategy, benchmark it.

The corpus is public data from ``../shared/data``: the 98 COVID-QA papers (``covid_qa/``, one ``.txt`` each) and
Chroma's five evaluation corpora (``chroma/``, ``.md``): 103 documents. The questions are COVID-QA's 1,380 and
Chroma's 472 (1,852), each naming its document by source key (``covid_qa/630.txt``) with its evidence span; the
offsets count in the raw files, so chunkbench places them in its parsed text as it does any user's offsets.

Each stage is one ``chunkbench`` command in a fresh data directory, timed from outside:

1. ``ingest DIR --corpus NAME``
2. ``process --corpus NAME --strategies all``
3. ``bench run --corpus NAME -q questions.jsonl --retrievers dense,bm25,hybrid``
4. ``report EXPERIMENT`` (both reports)

Results go to ``perf/results/corpus_decide.json``: each stage's wall time, the corpus and question counts, the
Decision and the budget-matched comparison as the Experiment recorded them.

Usage: ``python perf/corpus_decide.py [--out DIR] [--limit-questions N] [--strategies LIST]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "perf" / "results" / "corpus_decide.json"
CORPUS = "covid-chroma"


def write_corpus(folder: Path, limit_questions: int | None = None) -> tuple[int, int]:
    """The documents under ``folder/documents`` and ``folder/questions.jsonl``; returns (documents, questions)."""
    sys.path.insert(0, str(ROOT / "src"))
    from chunkbench.evaluation.datasets import load_chroma_questions, load_corpora

    documents = folder / "documents"
    (documents / "covid_qa").mkdir(parents=True, exist_ok=True)
    (documents / "chroma").mkdir(parents=True, exist_ok=True)
    questions: list[dict[str, Any]] = []
    count = 0
    for line in (SHARED / "covid_qa" / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        (documents / "covid_qa" / f"{record['document_id']}.txt").write_text(record["text"], encoding="utf-8")
        count += 1
    for line in (SHARED / "covid_qa" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["id"] = f"covid-{record['id']}"
        record["document_id"] = f"covid_qa/{record['document_id']}.txt"
        questions.append(record)
    for name, text in load_corpora().items():
        (documents / "chroma" / f"{name}.md").write_text(text, encoding="utf-8")
        count += 1
    for position, question in enumerate(load_chroma_questions()):
        questions.append(
            {
                "id": f"chroma-{position}",
                "question": question.question,
                "document_id": f"chroma/{question.document_id}.md",
                "references": [
                    {"content": r.content, "start_index": r.start_index, "end_index": r.end_index}
                    for r in question.references
                ],
            }
        )
    if limit_questions is not None:
        questions = questions[:limit_questions]
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for question in questions:
            handle.write(json.dumps(question, ensure_ascii=False) + "\n")
    return count, len(questions)


def _chunkbench(env: dict[str, str], *args: str) -> tuple[float, str]:
    """Run one CLI command; its wall time and stdout. A failure stops the benchmark with the command's output."""
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "chunkbench", *args], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1):  # 1: some documents or cells failed, reported in the output
        raise SystemExit(f"chunkbench {' '.join(args)} exited {completed.returncode}:\n{completed.stderr[-4000:]}")
    return seconds, completed.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--limit-questions", type=int)
    parser.add_argument("--strategies", default="all")
    parser.add_argument("--retrievers", default="dense,bm25,hybrid")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="chunkbench-corpus-"))
    documents, questions = write_corpus(folder, args.limit_questions)
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(folder / "data"), "PYTHONPATH": str(ROOT / "src")}
    stages: dict[str, float] = {}
    stages["ingest"], _ = _chunkbench(env, "ingest", str(folder / "documents"), "--corpus", CORPUS, "--json")
    stages["process"], _ = _chunkbench(env, "process", "--corpus", CORPUS, "--strategies", args.strategies, "--json")
    stages["benchmark"], output = _chunkbench(
        env, "bench", "run", "--corpus", CORPUS, "-q", str(folder / "questions.jsonl"),
        "--retrievers", args.retrievers, "--json",
    )  # fmt: skip
    experiment = json.loads(output)
    experiment_id = experiment["id"]
    report_seconds = 0.0
    for kind in ("technical", "managerial"):
        seconds, _ = _chunkbench(
            env, "report", experiment_id, "--view", kind, "--output", str(folder / f"report-{kind}.html")
        )
        report_seconds += seconds
    stages["reports"] = report_seconds
    result = {
        "documents": documents,
        "questions": questions,
        "configurations": len(experiment.get("configurations", [])),
        "stages_s": {name: round(value, 1) for name, value in stages.items()},
        "decision": experiment.get("decision"),
        "experiment_id": experiment_id,
        "work_folder": str(folder),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{'stage':<12}{'seconds':>10}")
    for name, value in stages.items():
        print(f"{name:<12}{value:>10.1f}")
    print(f"{documents} documents, {questions} questions, {result['configurations']} configurations")
    print(f"reports: {folder}/report-*.html")


if __name__ == "__main__":
    main()
