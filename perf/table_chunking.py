"""Questions over table rows: recall of table_aware vs recursive vs fixed_size through a corpus Experiment (the CLI).

The corpus: Chroma's ``finance.md`` (200 tables from financial filings, parsed as pipe rows) with the Chroma questions
whose evidence overlaps one of its tables, plus two generated files read by chunkbench's real parsers: a DOCX price
list (a 300-row table) and an XLSX stock sheet (400 rows, written by the parser as blocks of 50 under a repeated
header), each with questions whose evidence is one row. Each stage is one ``chunkbench`` command in a fresh data
directory (``ingest``, ``process --strategies table_aware,recursive,fixed_size``, ``bench run``), default parameters
(the sizes MiniLM reads whole), dense and BM25 retrieval. Results: ``perf/results/table_chunking.json``.

Usage: ``python perf/table_chunking.py [--out DIR] [--retrievers dense,bm25]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results" / "table_chunking.json"
CORPUS = "tables"
STRATEGIES = "table_aware,recursive,fixed_size"
PRICE_ROWS, STOCK_ROWS, ASKED_ROWS = 300, 400, 40
COLOURS = ("red", "blue", "green", "black", "white")
CITIES = ("Lyon", "Porto", "Gdansk", "Turin", "Ghent")


def _price_row(i: int) -> list[str]:
    return [f"Item {i}", f"{i}.50 EUR", f"Ships in {i % 9 + 1} days from {CITIES[i % 5]}, colour {COLOURS[i % 5]}."]


def _stock_row(i: int) -> list[Any]:
    return [f"SKU-{i:04d}", ("North", "South", "East")[i % 3], i * 7 % 500, f"aisle {i % 40}"]


def write_corpus(folder: Path) -> dict[str, int]:
    """The documents under ``folder/documents`` and ``folder/questions.jsonl``; returns question counts by source."""
    sys.path.insert(0, str(ROOT / "src"))
    import docx
    import openpyxl

    from chunkbench.chunking.tables import find_tables
    from chunkbench.evaluation.datasets import load_chroma_questions, load_corpora

    documents = folder / "documents"
    (documents / "chroma").mkdir(parents=True, exist_ok=True)
    questions: list[dict[str, Any]] = []
    finance = load_corpora()["finance"]
    (documents / "chroma" / "finance.md").write_text(finance, encoding="utf-8")
    tables = [(t.start, t.end) for t in find_tables(finance)]
    for position, question in enumerate(load_chroma_questions()):
        in_table = question.document_id == "finance" and any(
            a < r.end_index and r.start_index < b for r in question.references for a, b in tables
        )
        if in_table:
            references = [
                {"content": r.content, "start_index": r.start_index, "end_index": r.end_index}
                for r in question.references
            ]
            questions.append(
                {"id": f"finance-{position}", "question": question.question, "document_id": "chroma/finance.md",
                 "references": references}
            )  # fmt: skip
    counts = {"finance": len(questions)}

    document = docx.Document()
    document.add_heading("Price list 2024", 1)
    document.add_paragraph("Prices include taxes. Items ship from our five warehouses; colours as listed.")
    table = document.add_table(rows=1, cols=3)
    for cell, text in zip(table.rows[0].cells, ("Product", "Price", "Shipping"), strict=True):
        cell.text = text
    for i in range(PRICE_ROWS):
        for cell, text in zip(table.add_row().cells, _price_row(i), strict=True):
            cell.text = text
    document.save(documents / "prices.docx")
    rng = random.Random(24)
    for i in sorted(rng.sample(range(PRICE_ROWS), ASKED_ROWS)):
        questions.append(
            {"id": f"price-{i}", "question": f"What does Item {i} cost, and where does it ship from?",
             "document_id": "prices.docx", "references": [" | ".join(_price_row(i))]}
        )  # fmt: skip

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Stock"
    sheet.append(["sku", "warehouse", "quantity", "location"])
    for i in range(STOCK_ROWS):
        sheet.append(_stock_row(i))
    workbook.save(documents / "stock.xlsx")
    for i in sorted(rng.sample(range(STOCK_ROWS), ASKED_ROWS)):
        sku, warehouse, quantity, location = _stock_row(i)
        questions.append(
            {"id": f"stock-{i}", "question": f"How many {sku} are in stock, in which warehouse and where?",
             "document_id": "stock.xlsx", "references": [f"| {sku} | {warehouse} | {quantity} | {location} |"]}
        )  # fmt: skip
    counts.update(prices=ASKED_ROWS, stock=ASKED_ROWS)
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for question in questions:
            handle.write(json.dumps(question, ensure_ascii=False) + "\n")
    return counts


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


def _by_source(experiment: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Mean span recall per configuration and question source (finance, prices, stock), from the cells."""
    sums: dict[str, dict[str, list[float]]] = {}
    for cell in experiment.get("cells", []):
        recall = (cell.get("metrics") or {}).get("recall")
        if cell.get("status") != "ok" or recall is None:
            continue
        source = str(cell["question_id"]).split("-")[0]
        sums.setdefault(cell["config_key"], {}).setdefault(source, []).append(float(recall))
    return {
        key: {source: round(sum(values) / len(values), 4) for source, values in sorted(sources.items())}
        for key, sources in sorted(sums.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--retrievers", default="dense,bm25")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="chunkbench-tables-"))
    counts = write_corpus(folder)
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(folder / "data"), "PYTHONPATH": str(ROOT / "src")}
    env.setdefault("HF_HUB_OFFLINE", "1")
    stages: dict[str, float] = {}
    stages["ingest"], _ = _chunkbench(env, "ingest", str(folder / "documents"), "--corpus", CORPUS, "--json")
    stages["process"], _ = _chunkbench(env, "process", "--corpus", CORPUS, "--strategies", STRATEGIES, "--json")
    stages["benchmark"], output = _chunkbench(
        env, "bench", "run", "--corpus", CORPUS, "-q", str(folder / "questions.jsonl"),
        "--retrievers", args.retrievers, "--json",
    )  # fmt: skip
    experiment = json.loads(output)
    aggregate = {
        key: {name: round(float(value["mean"]), 4) for name, value in sorted(entry["metrics"].items())
              if isinstance(value, dict) and value.get("mean") is not None}
        for key, entry in sorted(experiment.get("aggregate", {}).items())
    }  # fmt: skip
    result = {
        "questions": counts,
        "strategies": STRATEGIES.split(","),
        "retrievers": args.retrievers.split(","),
        "stages_s": {name: round(value, 1) for name, value in stages.items()},
        "aggregate": aggregate,
        "recall_by_source": _by_source(experiment),
        "decision": experiment.get("decision"),
        "experiment_id": experiment.get("id"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    metrics = sorted({name for entry in aggregate.values() for name in entry})
    shown = [m for m in ("recall", "precision", "iou", "recall_at_k", "hit_at_k", "mrr", "tok_at_k") if m in metrics]
    print(f"{'configuration':<28}" + "".join(f"{m:>12}" for m in shown))
    for key, entry in aggregate.items():
        print(f"{key:<28}" + "".join(f"{entry.get(m, float('nan')):>12.3f}" for m in shown))
    print(f"questions: {counts}; stages (s): {result['stages_s']}")


if __name__ == "__main__":
    main()
