"""The injection screen's cost: ``InjectionDetector.check`` on chunks of scientific text, as indexing runs it.

The chunks are 2,000-character slices (about a 512-token chunk) of the first ``--papers`` COVID-QA papers
(``shared/data/covid_qa/documents.jsonl``): hyphenated terms ("mother-to-child", "HIV-1") give nearly every one
the hyphen readings, so each chunk is read ~4 times. Reported: ms per chunk, best of ``--repeats`` passes after a
warm-up pass (which also works out the patterns' shortcuts, guard/quick_search.py), and the readings per chunk.

    PYTHONPATH=src python perf/injection_screen.py [--papers 30] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from chunkbench.guard.injection import InjectionDetector, readings

ROOT = Path(__file__).resolve().parents[1]
PAPERS = ROOT.parent / "shared" / "data" / "covid_qa" / "documents.jsonl"
SLICE = 2_000


def chunks(papers: int) -> list[str]:
    with PAPERS.open(encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for _, line in zip(range(papers), lines, strict=False)]
    return [text[start : start + SLICE] for text in texts for start in range(0, len(text), SLICE)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    texts = chunks(args.papers)
    detector = InjectionDetector()
    flagged = sum(detector.check(text).flagged for text in texts)  # the warm-up pass
    best = float("inf")
    for _ in range(args.repeats):
        started = time.perf_counter()
        for text in texts:
            detector.check(text)
        best = min(best, time.perf_counter() - started)
    per_chunk = sum(len(readings(text)) for text in texts) / len(texts)
    print(
        f"{len(texts)} chunks of {args.papers} papers: {1000 * best / len(texts):.2f} ms per chunk "
        f"(best of {args.repeats}), {per_chunk:.2f} readings per chunk, {flagged} flagged"
    )


if __name__ == "__main__":
    main()
