"""Guard figures: prompt-injection detection and false-positive rates, PII detector precision and recall.

Injection: the labelled attacks (``perf/data/guard/injection_attacks.tsv``, written for this bench: ignore-previous,
role play, fake system turns, prompt leaks, exfiltration, payload splitting, obfuscation, other languages,
indirect instructions) and benign texts (every question of Chroma's ``questions_df.csv`` plus
``injection_benign.tsv``, texts with the words attacks use) are split by a hash of the text into a *tune* part
(about two thirds, what the patterns were written against) and a *held-out* part (reported, not used to write
patterns). Both parts share their author's phrasing, so two *fresh* sets were written after a freeze of the
patterns, paraphrased on purpose: ``injection_fresh.tsv`` (fresh-1, after the first freeze; its misses were then
used for a second round of patterns) and ``injection_fresh2.tsv`` (fresh-2, after the final freeze, never used
to tune: the least optimistic figure). Chunks: the benign
ones are Chroma's five corpora chunked with ``recursive`` (the default chunk size); the attack ones are benign
paragraphs of those corpora with one attack inserted at a sentence boundary. Each set gets its rate at several
thresholds: detection rate (TPR) for attacks, false-positive rate for benign texts.

PII: ``pii_labelled.txt`` marks every entity as ``[[type:value]]``; a detection counts when type and span match
exactly. The regex detector always; Presidio when ``chunkbench[presidio]`` is installed.

    PYTHONPATH=src python perf/guard.py [--chroma DIR] [--output perf/results/guard.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from chunkbench.chunking.base import ChunkingInput
from chunkbench.chunking.strategies.recursive import RecursiveParams, RecursiveStrategy
from chunkbench.config import Settings
from chunkbench.documents.parsers import parse_document
from chunkbench.evaluation.datasets import chroma_dir, load_chroma_questions
from chunkbench.guard.injection import DEFAULT_THRESHOLD, InjectionDetector
from chunkbench.guard.pii import EntityType, PiiDetector, RegexDetector

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "perf" / "data" / "guard"
RESULTS = ROOT / "perf" / "results" / "guard.json"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
SEED = 7


def split_of(text: str) -> str:
    """``heldout`` for about a third of the texts (by a hash of the text, so stable), ``tune`` otherwise."""
    return "heldout" if hashlib.sha256(text.encode("utf-8")).digest()[0] % 3 == 0 else "tune"


@dataclass(frozen=True)
class Labelled:
    category: str
    text: str

    @property
    def split(self) -> str:
        return split_of(self.text)


def load_tsv(path: Path) -> list[Labelled]:
    """``category<TAB>text`` lines (``#`` comments skipped); a literal ``\\n`` in a text is a line break."""
    rows: list[Labelled] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        category, text = line.split("\t", 1)
        rows.append(Labelled(category, text.replace("\\n", "\n")))
    return rows


def load_fresh(path: Path) -> tuple[list[Labelled], list[Labelled]]:
    """``label<TAB>category<TAB>text`` lines: the attacks and the benign texts written after tuning."""
    attacks: list[Labelled] = []
    benign: list[Labelled] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, category, text = line.split("\t", 2)
        (attacks if label == "attack" else benign).append(Labelled(category, text.replace("\\n", "\n")))
    return attacks, benign


def rates(detector_risks: list[float]) -> dict[str, float]:
    """Share of texts whose risk reaches each threshold."""
    total = len(detector_risks) or 1
    return {f"{t:.1f}": round(sum(r >= t for r in detector_risks) / total, 4) for t in THRESHOLDS}


def load_corpus_documents(corpora: Path) -> list[ChunkingInput]:
    """Chroma's corpora parsed by chunkbench, as the chunkers see them."""
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(_env_file=None, data_dir=Path(data_dir))
        parsed = [(path, parse_document(path, settings)) for path in sorted(corpora.glob("*.md"))]
    return [ChunkingInput(path.stem, path.name, result.markdown, result.tree) for path, result in parsed]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def embed_attacks(attacks: list[Labelled], documents: list[ChunkingInput]) -> list[Labelled]:
    """Each attack inside a benign paragraph of the corpora (200–1500 characters), at a sentence boundary."""
    paragraphs = [
        p.strip()
        for document in documents
        for p in document.markdown.split("\n\n")
        if 200 <= len(p.strip()) <= 1500 and len(_SENTENCE_END.split(p.strip())) >= 2
    ]
    rng = random.Random(SEED)
    embedded: list[Labelled] = []
    for attack in attacks:
        sentences = _SENTENCE_END.split(rng.choice(paragraphs))
        at = rng.randrange(1, len(sentences) + 1)
        embedded.append(Labelled(attack.category, " ".join([*sentences[:at], attack.text, *sentences[at:]])))
    return embedded


# --------------------------------------------------------------------------- PII

_MARK = re.compile(r"\[\[(\w+):(.+?)\]\]")


def parse_pii_line(line: str) -> tuple[str, set[tuple[str, int, int]]]:
    """The plain text of a ``[[type:value]]``-marked line and its gold ``(type, start, end)`` spans."""
    pieces: list[str] = []
    gold: set[tuple[str, int, int]] = set()
    cursor = length = 0
    for match in _MARK.finditer(line):
        before = line[cursor : match.start()]
        pieces.append(before)
        length += len(before)
        value = match.group(2)
        gold.add((match.group(1), length, length + len(value)))
        pieces.append(value)
        length += len(value)
        cursor = match.end()
    pieces.append(line[cursor:])
    return "".join(pieces), gold


def load_pii() -> list[tuple[str, set[tuple[str, int, int]]]]:
    lines = (DATA / "pii_labelled.txt").read_text(encoding="utf-8").splitlines()
    return [parse_pii_line(line) for line in lines if line.strip() and not line.startswith("#")]


def score_pii(detector: PiiDetector, samples: list[tuple[str, set[tuple[str, int, int]]]]) -> dict[str, dict]:
    """Precision, recall and counts per entity type (exact type and span), and over all types."""
    counts: dict[str, dict[str, int]] = {}

    def bump(kind: str, key: str) -> None:
        for name in (kind, "all"):
            counts.setdefault(name, {"tp": 0, "fp": 0, "fn": 0})[key] += 1

    for text, gold in samples:
        found = {(entity.type.value, entity.start, entity.end) for entity in detector.detect(text)}
        for item in found & gold:
            bump(item[0], "tp")
        for item in found - gold:
            bump(item[0], "fp")
        for item in gold - found:
            bump(item[0], "fn")
    scores: dict[str, dict] = {}
    for kind, c in sorted(counts.items()):
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
        scores[kind] = {**c, "precision": _round(precision), "recall": _round(recall)}
    return scores


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def pii_detectors() -> dict[str, PiiDetector]:
    detectors: dict[str, PiiDetector] = {"regex": RegexDetector()}
    try:
        from chunkbench.guard.presidio import PresidioDetector, presidio_available
    except ImportError:
        return detectors
    if presidio_available():
        detectors["presidio"] = PresidioDetector()
    return detectors


# --------------------------------------------------------------------------- main


def print_injection_table(rows: list[dict]) -> None:
    header = f"{'set':<34} {'kind':<6} {'n':>5} " + " ".join(f"{'≥' + f'{t:.1f}':>7}" for t in THRESHOLDS)
    print(header)
    print("-" * len(header))
    for row in rows:
        cells = " ".join(f"{row['rates'][f'{t:.1f}'] * 100:>6.1f}%" for t in THRESHOLDS)
        print(f"{row['set']:<34} {row['metric']:<6} {row['n']:>5} {cells}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chroma", type=Path, default=None, help="Chroma's evaluation folder (default: shared)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    detector = InjectionDetector()
    attacks = load_tsv(DATA / "injection_attacks.tsv")
    benign = load_tsv(DATA / "injection_benign.tsv")
    folder = chroma_dir(args.chroma)
    if not (folder / "questions_df.csv").exists():
        sys.exit(f"Chroma's evaluation data is not at {folder}; pass --chroma DIR.")
    questions = [q.question for q in load_chroma_questions(folder)]
    documents = load_corpus_documents(folder / "corpora")
    strategy = RecursiveStrategy(RecursiveParams(chunk_size=Settings(_env_file=None).chunk_size))
    started = time.perf_counter()
    benign_chunks = [chunk.text for document in documents for chunk in strategy.chunk(document)]

    def risk(text: str) -> float:
        return detector.check(text).risk

    rows: list[dict] = []

    def add(name: str, metric: str, texts: list[str]) -> None:
        rows.append({"set": name, "metric": metric, "n": len(texts), "rates": rates([risk(t) for t in texts])})

    for split in ("tune", "heldout"):
        add(f"attack queries ({split})", "TPR", [a.text for a in attacks if a.split == split])
    add("Chroma questions (all)", "FPR", questions)
    for split in ("tune", "heldout"):
        add(f"benign trigger-word texts ({split})", "FPR", [b.text for b in benign if b.split == split])
    for split in ("tune", "heldout"):
        embedded = embed_attacks([a for a in attacks if a.split == split], documents)
        add(f"attack chunks ({split})", "TPR", [e.text for e in embedded])
    add(f"benign chunks (recursive {strategy.params.chunk_size})", "FPR", benign_chunks)
    fresh_attacks, fresh_benign = [], []
    for part, file in (("fresh-1", "injection_fresh.tsv"), ("fresh-2", "injection_fresh2.tsv")):
        attacks_part, benign_part = load_fresh(DATA / file)
        add(f"{part} attack queries", "TPR", [a.text for a in attacks_part])
        add(f"{part} attack chunks", "TPR", [e.text for e in embed_attacks(attacks_part, documents)])
        add(f"{part} benign texts", "FPR", [b.text for b in benign_part])
        if part == "fresh-2":
            fresh_attacks, fresh_benign = attacks_part, benign_part
    check_seconds = time.perf_counter() - started

    heldout = [a for a in attacks if a.split == "heldout"]
    by_category: dict[str, dict[str, float | int]] = {}
    for category in sorted({a.category for a in attacks}):
        texts = [a.text for a in heldout if a.category == category]
        detected = sum(risk(t) >= DEFAULT_THRESHOLD for t in texts)
        by_category[category] = {"n": len(texts), "detected": detected, "rate": round(detected / (len(texts) or 1), 4)}
    false_positives = sorted(
        {t for t in questions + [b.text for b in benign] + benign_chunks if risk(t) >= DEFAULT_THRESHOLD}
    )
    missed = [a.text for a in heldout if risk(a.text) < DEFAULT_THRESHOLD]
    fresh_missed = [a.text for a in fresh_attacks if risk(a.text) < DEFAULT_THRESHOLD]
    false_positives += sorted(b.text for b in fresh_benign if risk(b.text) >= DEFAULT_THRESHOLD)

    print(f"Prompt injection (InjectionDetector, {len(detector.patterns)} patterns): share of texts flagged")
    print_injection_table(rows)
    print(f"\nHeld-out attacks detected at {DEFAULT_THRESHOLD} by category:")
    for category, figures in by_category.items():
        print(f"  {category:<18} {figures['detected']:>3}/{figures['n']:<3} {figures['rate'] * 100:5.1f}%")
    print(f"\nMissed held-out attacks at {DEFAULT_THRESHOLD} ({len(missed)}):")
    for text in missed:
        print(f"  - {text[:110]!r}")
    print(f"\nMissed fresh-2 attacks at {DEFAULT_THRESHOLD} ({len(fresh_missed)}):")
    for text in fresh_missed:
        print(f"  - {text[:110]!r}")
    print(f"\nBenign texts flagged at {DEFAULT_THRESHOLD} ({len(false_positives)}):")
    for text in false_positives[:20]:
        print(f"  - {text[:110]!r}")

    samples = load_pii()
    pii: dict[str, dict] = {}
    print(f"\nPII on {len(samples)} labelled lines (exact type and span):")
    print(f"{'detector':<9} {'type':<12} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>9} {'recall':>7}")
    for name, pii_detector in pii_detectors().items():
        pii[name] = score_pii(pii_detector, samples)
        for kind, s in pii[name].items():
            precision = f"{s['precision']:.3f}" if s["precision"] is not None else "—"
            recall = f"{s['recall']:.3f}" if s["recall"] is not None else "—"
            print(f"{name:<9} {kind:<12} {s['tp']:>4} {s['fp']:>4} {s['fn']:>4} {precision:>9} {recall:>7}")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "thresholds": list(THRESHOLDS),
                "default_threshold": DEFAULT_THRESHOLD,
                "patterns": len(detector.patterns),
                "injection": rows,
                "heldout_by_category": by_category,
                "missed_heldout": missed,
                "missed_fresh": fresh_missed,
                "false_positives": false_positives,
                "check_seconds": round(check_seconds, 2),
                "pii_types": [t.value for t in EntityType],
                "pii": pii,
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
