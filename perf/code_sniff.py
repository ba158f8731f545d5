"""How well a ``.txt`` file's text is told for code (and its language) or prose, on real files found on this machine.

Code: source files of the CPython stdlib and whatever Rust, Go, Java, JavaScript, TypeScript, C, C++, C#, PHP and
shell sources the machine holds (each read as if renamed ``.txt``). Prose: the Chroma evaluation corpora (cut into
pieces), Debian ``copyright`` files, licences, and README/markdown files (prose with code examples in them), the
markdown files again with their code fences taken out (prose whose examples nothing marks as code: a hard case).
Prints precision and recall of "is code", the language accuracy per language, and the misses; writes JSON to
``perf/results/code_sniff.json``. Run: ``PYTHONPATH=src python perf/code_sniff.py``.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from chunkbench.documents.parsers.code_languages import BY_SUFFIX
from chunkbench.documents.parsers.code_sniff import sniff_code_language
from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR

PER_SUFFIX = 60
MIN_BYTES, MAX_BYTES = 400, 200_000
RESULTS = Path(__file__).parent / "results" / "code_sniff.json"
CODE_SUFFIXES = (".py", ".rs", ".go", ".java", ".js", ".ts", ".c", ".h", ".cpp", ".cc", ".hpp", ".cs", ".php", ".sh")
PROSE_CORPORA = DEFAULT_CHROMA_DIR / "corpora"


def _find(pattern: str, roots: list[str]) -> list[Path]:
    found = subprocess.run(
        ["find", *roots, "-xdev", "-type", "f", "-name", pattern], capture_output=True, text=True, check=False
    ).stdout.split("\n")
    return sorted(Path(line) for line in found if line and MIN_BYTES <= Path(line).stat().st_size <= MAX_BYTES)


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8").replace("\r\n", "\n")
    except (UnicodeDecodeError, OSError):
        return None


def code_samples(rng: random.Random) -> list[tuple[str, str, str]]:
    """``(name, text, expected language)`` of real source files, up to ``PER_SUFFIX`` per suffix."""
    samples = []
    for suffix in CODE_SUFFIXES:
        paths = _find(f"*{suffix}", ["/root", "/usr", "/opt", "/work/main/.venv"])
        for path in rng.sample(paths, min(PER_SUFFIX, len(paths))):
            text = _read(path)
            expected = BY_SUFFIX[suffix].name
            if text is not None and text.strip():
                samples.append((str(path), text, expected))
    # This machine holds few Java, Go, Rust and TypeScript sources: the test fixtures add one of each.
    for path in sorted((Path(__file__).parents[1] / "tests" / "data" / "code").iterdir()):
        if path.suffix in BY_SUFFIX:
            samples.append((str(path), path.read_text(encoding="utf-8"), BY_SUFFIX[path.suffix].name))
    return samples


def prose_samples(rng: random.Random) -> list[tuple[str, str]]:
    """``(name, text)`` of real prose: corpus pieces, copyright files, licences, READMEs."""
    samples = []
    for corpus in sorted(PROSE_CORPORA.glob("*.md")):
        text = corpus.read_text(encoding="utf-8")
        for index in range(0, min(len(text), 200_000), 20_000):
            samples.append((f"{corpus.name}[{index}]", text[index : index + 20_000]))
    copyrights = sorted(Path("/usr/share/doc").glob("*/copyright"))
    for path in rng.sample(copyrights, min(150, len(copyrights))):
        if (text := _read(path)) is not None:
            samples.append((str(path), text))
    for pattern, count in (("LICENSE*", 60), ("README*", 80), ("*.md", 80)):
        paths = [path for path in _find(pattern, ["/root", "/usr/share", "/work/main/.venv"]) if path.suffix != ".html"]
        for path in rng.sample(paths, min(count, len(paths))):
            if (text := _read(path)) is not None and text.strip():
                samples.append((str(path), text))
                # The same text with its code fences taken out: prose whose examples are not marked as code.
                if pattern == "*.md" and "```" in text:
                    unfenced = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("```"))
                    samples.append((f"{path} (fences removed)", unfenced))
    return samples


def main() -> None:
    rng = random.Random(7)
    code, prose = code_samples(rng), prose_samples(rng)
    began = time.perf_counter()
    per_language: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[str] = []
    code_hits = 0
    for name, text, expected in code:
        found = sniff_code_language(text)
        # A header is C or C++ alike; TSX is TypeScript.
        right = found == expected or (expected == "c" and found == "cpp" and name.endswith(".h"))
        per_language[expected]["files"] += 1
        per_language[expected]["code"] += found is not None
        per_language[expected]["language right"] += right
        code_hits += found is not None
        if not right:
            misses.append(f"code {expected} → {found}: {name}")
    false_code = 0
    for name, text in prose:
        found = sniff_code_language(text)
        if found is not None:
            false_code += 1
            misses.append(f"prose → {found}: {name}")
    seconds = time.perf_counter() - began
    precision = code_hits / (code_hits + false_code) if code_hits + false_code else 0.0
    recall = code_hits / len(code) if code else 0.0
    print(f"{len(code)} code files, {len(prose)} prose texts, {seconds:.1f} s")
    print(f"is code: precision {precision:.3f}, recall {recall:.3f}; prose taken for code: {false_code}/{len(prose)}")
    print(f"{'language':<12}{'files':>7}{'as code':>9}{'language right':>16}")
    for language, counts in sorted(per_language.items()):
        print(f"{language:<12}{counts['files']:>7}{counts['code']:>9}{counts['language right']:>16}")
    for miss in misses:
        print("  ", miss)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "code_files": len(code),
                "prose_texts": len(prose),
                "precision": round(precision, 4),
                "recall": round(recall, 4),
                "prose_taken_for_code": false_code,
                "per_language": {language: dict(counts) for language, counts in sorted(per_language.items())},
                "misses": misses,
                "seconds": round(seconds, 2),
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
