"""Folder ingest of real-world files: ``chunkbench ingest FOLDER --json`` twice, into a fresh data directory.

The folder holds documents collected from published packages (PyPI sdists, npm packages, Debian's
/usr/share/doc; see its MANIFEST.tsv), not generated ones, in subfolders where names repeat. Both passes run the
real CLI in a subprocess (interpreter start and imports included in the time). Reported per format: files,
outcomes (created, replaced, unchanged, flagged duplicate_of, failed by error code), where headings came from
(heading_source), files decoded from a legacy encoding, pages read by OCR, and the time of each pass. Checked
(exit 1 when broken): every supported file under the folder has a result, pass 1 keeps every file it ingests (as
many documents stored as files ingested: none replaced another), and pass 2 changes nothing (every ingested file
``unchanged`` with the same document id, every failed file failing with the same code).

Languages: with ``--labels FILE`` (TSV: a source-key prefix, then the language codes accepted for the files below
it, e.g. ``cpython-cjk/big5	zh``; the longest prefix wins; ``*`` for the rest), every ingested document's detected
language is checked against its accepted codes, and the accuracy and every miss are reported.

    PYTHONPATH=src python perf/real_folder.py [FOLDER] [--ocr] [--labels perf/data/real_folder_labels.tsv]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from chunkbench.documents.parsers import parser_for, supported_suffixes

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "perf" / "results"
DEFAULT_FOLDER = Path("/work/realfiles")
LEGACY_ENCODING = "Decoded as "  # how an ingest warning names a file that was not UTF-8 (parsers/encoding.py)


def attachments_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A result's attachments (a mail's files), nested ones too."""
    return [nested for child in result.get("attachments", []) for nested in (child, *attachments_of(child))]


def supported_files(folder: Path) -> list[str]:
    """Source keys of the files ``ingest`` should find: supported suffixes, hidden paths skipped."""
    keys = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        supported = path.suffix.lower() in supported_suffixes()
        if path.is_file() and supported and not any(p.startswith(".") for p in relative.parts):
            keys.append(relative.as_posix())
    return keys


def cli(args: list[str], data_dir: Path, ocr: bool) -> tuple[Any, float]:
    """Run ``python -m chunkbench ARGS --json`` on ``data_dir``; its JSON output and its wall time."""
    env = {
        **os.environ,
        "CHUNKBENCH_DATA_DIR": str(data_dir),
        "CHUNKBENCH_OCR": "on" if ocr else "off",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    }
    started = time.perf_counter()
    # cwd: the data directory's parent, so that no .env of the working tree is read
    done = subprocess.run(
        [sys.executable, "-m", "chunkbench", *args, "--json"],
        cwd=data_dir.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    try:
        return json.loads(done.stdout), seconds
    except json.JSONDecodeError:
        sys.exit(f"`chunkbench {' '.join(args)}` exited {done.returncode} without JSON output:\n{done.stderr[-3000:]}")


def file_format(source_key: str) -> str:
    """The format a file is read as: its parser's label for source code (one per language), else its suffix."""
    suffix = Path(source_key).suffix.lower()
    return "code" if parser_for(source_key).label.endswith("source file") else suffix.lstrip(".")


def read_labels(path: Path) -> list[tuple[str, frozenset[str]]]:
    """(source-key prefix, accepted codes), longest prefix first; ``*`` matches every key."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            prefix, codes = line.split("\t", 1)
            rows.append((prefix, frozenset(code.strip() for code in codes.split(","))))
    return sorted(rows, key=lambda row: (row[0] == "*", -len(row[0])))


def language_check(results: list[dict[str, Any]], labels: list[tuple[str, frozenset[str]]]) -> dict[str, Any]:
    """Every ingested document's language against the codes its label accepts: accuracy, per format, misses."""
    per_format: dict[str, Counter[str]] = {}
    misses = []
    for result in results:
        if result["document"] is None:
            continue
        key, language = result["source_key"], result["document"]["language"]
        accepted = next((codes for prefix, codes in labels if prefix == "*" or key.startswith(prefix)), None)
        if accepted is None:
            continue
        counts = per_format.setdefault(file_format(key), Counter())
        counts["files"] += 1
        if language in accepted:
            counts["right"] += 1
        else:  # und where a language was expected is a miss, but not a wrong language (it never moves a model)
            counts["undetermined" if language == "und" else "wrong"] += 1
            misses.append({"file": key, "language": language, "accepted": sorted(accepted)})
    files = sum(counts["files"] for counts in per_format.values())
    right = sum(counts["right"] for counts in per_format.values())
    return {
        "files": files,
        "right": right,
        "undetermined": sum(counts["undetermined"] for counts in per_format.values()),
        "wrong": sum(counts["wrong"] for counts in per_format.values()),
        "accuracy": round(right / files, 4) if files else None,
        "per_format": {name: dict(counts) for name, counts in sorted(per_format.items())},
        "misses": misses,
    }


def tally(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per format: files, outcomes, failures by code, heading sources, legacy encodings, OCR."""
    formats: dict[str, dict[str, Any]] = {}
    for result in results:
        row = formats.setdefault(
            file_format(result["source_key"]),
            {"files": 0, "outcomes": Counter(), "duplicate_of": 0, "failed": Counter(), "heading_source": Counter(),
             "with_headings": 0, "legacy_encoding": 0, "ocr": 0, "languages": Counter()},
        )  # fmt: skip
        row["files"] += 1
        row["outcomes"][result["outcome"]] += 1
        row["duplicate_of"] += result["duplicate_of"] is not None
        row["legacy_encoding"] += any(warning.startswith(LEGACY_ENCODING) for warning in result["warnings"])
        if result["error"] is not None:
            row["failed"][result["error"]["error"]] += 1
            continue
        document = result["document"]
        row["heading_source"][document["heading_source"] or "none"] += 1
        row["with_headings"] += document["heading_count"] > 0
        row["ocr"] += bool(document["ocr"])
        row["languages"][document["language"] or "none"] += 1
    return dict(sorted(formats.items()))


def second_pass_changes(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[str]:
    """What pass 2 changed: a file ingested again or replaced, a document id that moved, a failure that changed."""
    before = {result["source_key"]: result for result in first}
    changes = []
    for result in second:
        old = before.get(result["source_key"])
        key = result["source_key"]
        if old is not None and old["outcome"] == result["outcome"] == "skipped":
            continue  # not read either time
        if old is None:
            changes.append(f"{key}: not seen in pass 1")
        elif old["error"] is not None:
            if result["error"] is None or result["error"]["error"] != old["error"]["error"]:
                changes.append(f"{key}: failed with {old['error']['error']} in pass 1, now {result['outcome']}")
        elif result["outcome"] != "unchanged" or result["document"]["id"] != old["document"]["id"]:
            changes.append(
                f"{key}: {result['outcome']} (document {old['document']['id']} → {result['document']['id']})"
            )
    return changes


def print_table(formats: dict[str, dict[str, Any]]) -> None:
    columns = ("format", "files", "created", "replaced", "unchanged", "dup_of", "failed", "headed", "legacy enc", "ocr")
    print("  ".join(f"{name:>10}" for name in columns))
    totals: Counter[str] = Counter()
    for name, row in formats.items():
        values = {
            "files": row["files"], "created": row["outcomes"]["created"], "replaced": row["outcomes"]["replaced"],
            "unchanged": row["outcomes"]["unchanged"], "dup_of": row["duplicate_of"],
            "failed": sum(row["failed"].values()), "headed": row["with_headings"],
            "legacy enc": row["legacy_encoding"], "ocr": row["ocr"],
        }  # fmt: skip
        totals.update(values)
        print("  ".join([f"{name:>10}", *(f"{values[column]:>10}" for column in columns[1:])]))
    print("  ".join([f"{'all':>10}", *(f"{totals[column]:>10}" for column in columns[1:])]))
    print("headed: documents with at least one heading. heading_source and failures by code:")
    for name, row in formats.items():
        sources = ", ".join(f"{source} {count}" for source, count in row["heading_source"].most_common())
        failures = ", ".join(f"{code} {count}" for code, count in row["failed"].most_common()) or "none"
        languages = ", ".join(f"{code} {count}" for code, count in row["languages"].most_common())
        print(f"  {name:<5} headings from: {sources or '–'}; failed: {failures}; languages: {languages or '–'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER, help="the folder to ingest")
    parser.add_argument("--ocr", action="store_true", help="CHUNKBENCH_OCR=on: OCR scanned PDF pages (Tesseract)")
    parser.add_argument("--labels", type=Path, help="TSV of source-key prefixes and accepted language codes")
    args = parser.parse_args()
    folder = args.folder.resolve()
    if not folder.is_dir():
        sys.exit(
            f"{args.folder} is not a folder. Give the folder of real files to ingest (see the module docstring), "
            f"e.g. `python perf/real_folder.py /path/to/files`."
        )
    expected = supported_files(folder)
    if not expected:
        sys.exit(f"{folder} holds no file of a supported type ({', '.join(supported_suffixes())}) to ingest.")

    with tempfile.TemporaryDirectory(prefix="chunkbench-real-") as tmp:
        data_dir = Path(tmp) / "data"
        first, first_s = cli(["ingest", str(folder)], data_dir, args.ocr)
        stored = cli(["documents", "list", "--limit", "1000"], data_dir, args.ocr)[0]["total"]
        second, second_s = cli(["ingest", str(folder)], data_dir, args.ocr)

    read = [result for result in first if result["outcome"] != "skipped"]
    skipped: Counter[str] = Counter()  # files not read, by reason (a hidden folder counts its files)
    for result in first:
        if result["skip_reason"] is not None:
            skipped[result["skip_reason"]["code"]] += result["skip_reason"]["files"]
    formats = tally(read)
    ingested = sum(result["error"] is None for result in read)
    # A mail's attachments are stored as documents of their own (nested under the mail's result).
    attached = sum(nested["error"] is None for result in read for nested in attachments_of(result))
    problems = []
    missing = sorted(set(expected) - {result["source_key"] for result in first})
    if missing:
        problems.append(f"{len(missing)} supported files have no result: {', '.join(missing[:10])}")
    if stored != ingested + attached:
        problems.append(
            f"pass 1 ingested {ingested} files and {attached} attachments but {stored} documents are stored"
        )
    changes = second_pass_changes(first, second)
    problems.extend(f"pass 2 changed {change}" for change in changes)

    size_mb = sum((folder / key).stat().st_size for key in expected) / 1e6
    print(f"{folder}: {len(expected)} files, {size_mb:.1f} MB, OCR {'on' if args.ocr else 'off'}")
    print_table(formats)
    print(
        f"pass 1: {first_s:.1f} s, {ingested} ingested, {len(read) - ingested} failed, {attached} attachments "
        f"ingested; {stored} documents stored"
    )
    print("skipped (not read): " + (", ".join(f"{n} {code}" for code, n in skipped.most_common()) or "none"))
    second_outcomes = Counter(result["outcome"] for result in second)
    print(f"pass 2: {second_s:.1f} s, " + ", ".join(f"{n} {outcome}" for outcome, n in second_outcomes.most_common()))
    print("second pass changed nothing" if not changes else f"second pass CHANGED {len(changes)} files")
    languages = language_check(first, read_labels(args.labels)) if args.labels else None
    if languages is not None:
        print(
            f"languages: {languages['right']} of {languages['files']} documents as labelled ({languages['accuracy']}); "
            f"{languages['undetermined']} und where a language was expected, {languages['wrong']} another language"
        )
        for miss in languages["misses"]:
            print(f"  {miss['file']}: {miss['language']} (accepted: {', '.join(miss['accepted'])})")
    for problem in problems:
        print(f"PROBLEM: {problem}")

    out = RESULTS / ("real_folder_ocr.json" if args.ocr else "real_folder.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    top_folders = Counter(key.split("/", 1)[0] for key in expected)
    failures = {r["source_key"]: r["error"]["error"] for r in first if r["error"] is not None}
    out.write_text(
        json.dumps(
            {
                "folder": str(folder),
                "files": len(expected),
                "megabytes": round(size_mb, 2),
                "ocr": args.ocr,
                "subfolders": dict(top_folders.most_common()),
                "formats": formats,
                "pass1_s": round(first_s, 2),
                "pass2_s": round(second_s, 2),
                "ingested": ingested,
                "skipped": dict(skipped.most_common()),
                "documents_stored": stored,
                "attachments_ingested": attached,
                "pass2_outcomes": dict(second_outcomes),
                "second_pass_changes": changes,
                "failures": failures,
                "problems": problems,
                "languages": languages,
                "load_average_1min": os.getloadavg()[0],
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {out.relative_to(ROOT)}")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
