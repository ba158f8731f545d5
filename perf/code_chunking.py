"""Code-aware chunking measured on real source code, through chunkbench's own benchmark pipeline.

The corpus is real, permissively licensed source in five languages, copied byte for byte under
``perf/data/code_corpus/`` with where each file came from (``SOURCES.tsv``): CPython's standard library (Python,
PSF), epub.js (JavaScript, BSD-2-Clause), rtf.js (TypeScript, MIT), JPype's Java module (Java, Apache-2.0), git's
persistent-https helper (Go, Apache-2.0) and Rust's error-index generator (Rust, MIT/Apache-2.0).

Questions are built the CodeSearchNet way: for each function or method with a docstring (Python) or a doc comment
right above it (the other languages), the first sentence of that text is the question and the function's code is
the evidence. The docstring or comment is left out of the evidence so that the question's words are not
trivially in it: in Python the evidence is two spans, the signature and the body after the docstring; elsewhere it
is the definition from its signature to its end (its comment is above it). Questions whose sentence is shorter
than four words, or repeated in the corpus (an ambiguous ``Constructor.``), are dropped.

One corpus Experiment, each stage one ``chunkbench`` command in a fresh data directory:

1. ``strategies add code_aware_symbol --base code_aware --param prefix_symbol=true``
2. ``ingest perf/data/code_corpus --corpus code``
3. ``process --corpus code --strategies code_aware,code_aware_symbol,recursive,fixed_size``
4. ``bench run --corpus code -q questions.jsonl --retrievers dense,hybrid --no-answers``

The chunk sizes are the defaults for the Corpus model (all-MiniLM-L6-v2), so the strategies compare at the sizes
a user gets without choosing. Results: ``perf/results/code_chunking.json`` (the Decision with its verdict, the
frontier and the equal-budget ranking) and a printed table.

Usage: ``python perf/code_chunking.py [--out DIR] [--limit-questions N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT / "perf" / "data" / "code_corpus"
RESULTS = ROOT / "perf" / "results" / "code_chunking.json"
CORPUS = "code"
STRATEGIES = ["code_aware", "code_aware_symbol", "recursive", "fixed_size"]
FUNCTIONS = frozenset(
    {
        "function_definition", "method_definition", "function_declaration", "method_declaration",
        "constructor_declaration", "function_item", "generator_function_declaration",
    }
)  # fmt: skip
_COMMENT_MARKERS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?|#)\s?")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:\s|$)")
MIN_WORDS = 4
SEED = 24


def _language(path: Path) -> str | None:
    from chunkbench.documents.parsers.code import suffix_language

    return suffix_language(path.name, "")


def _first_sentence(comment: str) -> str:
    """The first sentence of a docstring or doc comment, markers and tags removed, on one line."""
    lines = []
    for line in comment.splitlines():
        line = _COMMENT_MARKERS.sub("", line).strip().strip('"').strip("'").strip()
        if line.startswith("@") or line.endswith("*/"):
            line = "" if line.startswith("@") else line.removesuffix("*/").strip()
        if not line:
            if lines:
                break
            continue
        lines.append(line)
    text = " ".join(lines)
    match = _SENTENCE_END.search(text)
    return (text[: match.start()] if match else text).strip()


def _doc_comment(node: Any, data: bytes) -> str | None:
    """The comment right above a definition (no blank line between), its decorators and annotations skipped."""
    holder = node
    while holder.parent is not None and holder.parent.type in ("decorated_definition", "export_statement"):
        holder = holder.parent
    parts: list[str] = []
    previous = holder.prev_named_sibling
    start = holder.start_byte
    while previous is not None and "comment" in previous.type:
        if data[previous.end_byte : start].count(b"\n") > 1:
            break
        parts.insert(0, data[previous.start_byte : previous.end_byte].decode("utf-8", "replace"))
        start = previous.start_byte
        previous = previous.prev_named_sibling
    return "\n".join(parts) or None


def _python_docstring(node: Any) -> Any | None:
    body = node.child_by_field_name("body")
    if body is None or not body.named_children:
        return None
    first = body.named_children[0]
    if first.type == "expression_statement" and first.named_children and first.named_children[0].type == "string":
        return first
    return None


def questions_of(path: Path, key: str) -> list[dict[str, Any]]:
    """The CodeSearchNet-style questions of one source file (see the module docstring)."""
    from tree_sitter import Parser

    from chunkbench.documents.parsers.code_languages import grammar

    language = _language(path)
    text = path.read_text(encoding="utf-8")
    data = text.encode("utf-8")
    lang = grammar(language) if language else None
    if lang is None:
        return []
    root = Parser(lang).parse(data).root_node
    char = _char_offsets(text, data)
    found: list[dict[str, Any]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack += reversed(node.children)
        if node.type not in FUNCTIONS:
            continue
        name = node.child_by_field_name("name")
        symbol = data[name.start_byte : name.end_byte].decode() if name is not None else node.type
        if language == "python":
            docstring = _python_docstring(node)
            if docstring is None or len(node.child_by_field_name("body").named_children) < 2:
                continue
            comment = data[docstring.start_byte : docstring.end_byte].decode("utf-8", "replace")
            body = node.child_by_field_name("body")
            after = docstring.next_named_sibling
            signature = (node.start_byte, body.start_byte)
            rest = (after.start_byte, node.end_byte)
            spans = [signature, rest]
        else:
            comment = _doc_comment(node, data)
            if comment is None:
                continue
            spans = [(node.start_byte, node.end_byte)]
        question = _first_sentence(comment)
        if len(question.split()) < MIN_WORDS:
            continue
        references = []
        for start, end in spans:
            a, b = char(start), char(end)
            content = text[a:b].rstrip()
            references.append({"content": content, "start_index": a, "end_index": a + len(content)})
        found.append({"question": question, "document_id": key, "symbol": symbol, "references": references})
    return found


def _char_offsets(text: str, data: bytes):
    if len(text) == len(data):
        return lambda byte: byte
    from bisect import bisect_right
    from itertools import accumulate

    ends = list(accumulate(len(c.encode()) for c in text))
    return lambda byte: bisect_right(ends, byte)


def build_questions(limit: int | None) -> tuple[list[Path], list[dict[str, Any]]]:
    """The corpus files and their questions (repeated sentences dropped; a seeded sample when ``limit``)."""
    files = sorted(p for p in CORPUS_DIR.rglob("*") if p.is_file() and p.name != "SOURCES.tsv")
    questions: list[dict[str, Any]] = []
    for path in files:
        questions += questions_of(path, path.relative_to(CORPUS_DIR).as_posix())
    repeated = {q for q, n in Counter(q["question"].lower() for q in questions).items() if n > 1}
    questions = [q for q in questions if q["question"].lower() not in repeated]
    for position, question in enumerate(questions):
        question["id"] = f"code-{position:04d}"
    if limit is not None and len(questions) > limit:
        questions = sorted(random.Random(SEED).sample(questions, limit), key=lambda q: q["id"])
    return files, questions


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


def table(decision: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per configuration: its mean on the Decision's metric, at the equal budget, and its context."""
    matched = decision.get("budget_matched") or {}
    on_frontier = {point["config"]: point for point in decision.get("frontier") or []}
    rows = []
    for name, mean in sorted(decision["means"].items(), key=lambda item: (-(item[1] or 0.0), item[0])):
        rows.append(
            {
                "configuration": name,
                "mean": mean,
                "at_budget": (matched.get("means") or {}).get(name),
                "context_tokens": (matched.get("context") or {}).get(name),
                "frontier": name in on_frontier,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--limit-questions", type=int, default=300)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    folder = args.out or Path(tempfile.mkdtemp(prefix="chunkbench-code-"))
    folder.mkdir(parents=True, exist_ok=True)
    files, questions = build_questions(args.limit_questions)
    # The sources only (not SOURCES.tsv), under the same relative paths: the questions name documents by them.
    documents = folder / "documents"
    for path in files:
        target = documents / path.relative_to(CORPUS_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for question in questions:
            handle.write(json.dumps(question, ensure_ascii=False) + "\n")
    env = {
        **os.environ,
        "CHUNKBENCH_DATA_DIR": str(folder / "data"),
        "PYTHONPATH": str(ROOT / "src"),
        "HF_HUB_OFFLINE": "1",
    }
    stages: dict[str, float] = {}
    _chunkbench(env, "strategies", "add", "code_aware_symbol", "--base", "code_aware", "--param", "prefix_symbol=true")
    stages["ingest"], _ = _chunkbench(env, "ingest", str(documents), "--corpus", CORPUS, "--json")
    strategies = ",".join(STRATEGIES)
    stages["process"], processed = _chunkbench(env, "process", "--corpus", CORPUS, "--strategies", strategies, "--json")
    stages["benchmark"], output = _chunkbench(
        env, "bench", "run", "--corpus", CORPUS, "-q", str(folder / "questions.jsonl"), "--strategies", strategies,
        "--retrievers", "dense,hybrid", "--no-answers", "--json",
    )  # fmt: skip
    experiment = json.loads(output)
    decision = experiment.get("decision") or {}
    languages = Counter(_language(path) for path in files)
    result = {
        "documents": len(files),
        "languages": dict(sorted(languages.items())),
        "bytes": sum(path.stat().st_size for path in files),
        "questions": len(questions),
        "questions_by_language": dict(
            sorted(Counter(_language(CORPUS_DIR / q["document_id"]) for q in questions).items())
        ),
        "strategies": STRATEGIES,
        "retrievers": ["dense", "hybrid"],
        "stages_s": {name: round(value, 1) for name, value in stages.items()},
        "processing": _processing_summary(processed),
        "metric": decision.get("metric"),
        "verdict": decision.get("verdict"),
        "table": table(decision) if decision.get("means") else [],
        "decision": decision,
        "experiment_id": experiment.get("id"),
        "work_folder": str(folder),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    budget = (decision.get("budget_matched") or {}).get("budget")
    print(f"{len(files)} files {dict(languages)}, {len(questions)} questions; metric {result['metric']}")
    print(f"{'configuration':<36}{'mean':>8}{f'@{budget} tok':>12}{'context':>10}  frontier")
    for row in result["table"]:
        at_budget = "" if row["at_budget"] is None else f"{row['at_budget']:.3f}"
        context = "" if row["context_tokens"] is None else f"{row['context_tokens']:.0f}"
        mark = "*" if row["frontier"] else ""
        print(f"{row['configuration']:<36}{row['mean']:>8.3f}{at_budget:>12}{context:>10}  {mark}")
    print(f"verdict: {result['verdict']}")
    for name, value in stages.items():
        print(f"{name:<12}{value:>8.1f} s")


def _processing_summary(output: str) -> Any:
    """Chunks per strategy as the process command reported them (its JSON), or the raw text if it is not JSON."""
    try:
        body = json.loads(output)
    except json.JSONDecodeError:
        return output[-2000:]
    strategies = body.get("strategies") if isinstance(body, dict) else None
    if not isinstance(strategies, list):
        return body
    return [
        {key: entry.get(key) for key in ("strategy", "status", "chunk_count", "processed", "failed", "params")}
        for entry in strategies
    ]


if __name__ == "__main__":
    main()
