"""The injection screen's verdicts, pinned: every text of a fixed set gets exactly the risk, reasons and flag
recorded in ``fixtures/injection_verdicts.json``, so a change that makes the detector faster cannot change what it
detects. The set: perf/guard.py's labelled texts, the texts of the injection tests, and, where ``../shared/data``
is present, Chroma's questions, slices of COVID-QA papers and Chroma's corpora, and every labelled attack planted
in a COVID-QA slice (long scientific text is what the screen reads at indexing time).

When a pattern is changed on purpose, re-record (and review the fixture's diff):
``PYTHONPATH=src python tests/test_injection_verdicts.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from chunkbench.evaluation.datasets import DEFAULT_CHROMA_DIR, load_chroma_questions
from chunkbench.guard.injection import DEFAULT_THRESHOLD, InjectionDetector, InjectionVerdict
from test_injection import ATTACKS, BENIGN, OBFUSCATED
from test_injection_chunks import INJECTION, POLICY_DOC

GUARD_DATA = Path(__file__).resolve().parents[1] / "perf" / "data" / "guard"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "injection_verdicts.json"
# COVID-QA is not shipped (it is the project's shared data, beside the repository): its sets run where it is there.
COVID = Path(__file__).resolve().parents[2] / "shared" / "data" / "covid_qa" / "documents.jsonl"
SLICE = 2_000  # about a 512-token chunk of scientific text
COVID_PAPERS = 30
CORPUS_SLICES = 40  # the first slices of each of Chroma's corpora
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


# perf/guard.py's labelled files: ``category<TAB>text``, the fresh ones ``label<TAB>category<TAB>text``.
LABELLED = {"injection_attacks.tsv": 1, "injection_benign.tsv": 1, "injection_fresh.tsv": 2, "injection_fresh2.tsv": 2}


def _rows(name: str) -> list[list[str]]:
    lines = (GUARD_DATA / name).read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t", LABELLED[name]) for line in lines if line.strip() and not line.startswith("#")]
    return [[*fields[:-1], fields[-1].replace("\\n", "\n")] for fields in rows]


def labelled_texts() -> list[str]:
    """Every text of the labelled files: attacks and benign, tuning and fresh sets."""
    return [row[-1] for name in LABELLED for row in _rows(name)]


def labelled_attacks() -> list[str]:
    return [
        row[-1] for name in LABELLED for row in _rows(name) if name != "injection_benign.tsv" and row[0] != "benign"
    ]


def injection_test_texts() -> list[str]:
    """The texts the other injection tests check."""
    literals = ["Why did they ignore the rules?", "Why did they i*g*n*o*r*e the rules?", "i.g.n.o.r.e p.r.e.v.i.o.u.s"]
    return [text for text, _ in ATTACKS] + OBFUSCATED + BENIGN + literals + [INJECTION, POLICY_DOC]


def chroma_questions() -> list[str]:
    return [question.question for question in load_chroma_questions()]


def _slices(text: str) -> list[str]:
    return [text[start : start + SLICE] for start in range(0, len(text), SLICE)]


def covid_slices() -> list[str]:
    lines = COVID.read_text(encoding="utf-8").splitlines()[:COVID_PAPERS]
    return [piece for line in lines for piece in _slices(json.loads(line)["text"])]


def corpus_slices() -> list[str]:
    corpora = sorted((DEFAULT_CHROMA_DIR / "corpora").glob("*.md"))
    return [piece for path in corpora for piece in _slices(path.read_text(encoding="utf-8"))[:CORPUS_SLICES]]


def planted_attacks() -> list[str]:
    """Each labelled attack planted at the middle sentence boundary of a COVID-QA slice (taken in turn)."""
    hosts = covid_slices()
    planted = []
    for number, attack in enumerate(labelled_attacks()):
        sentences = _SENTENCE_END.split(hosts[number % len(hosts)])
        middle = len(sentences) // 2 or 1
        planted.append(" ".join([*sentences[:middle], attack, *sentences[middle:]]))
    return planted


# Each set, and whether its source is here (the shared data is not part of the repository).
SETS: dict[str, tuple[Callable[[], list[str]], bool]] = {
    "labelled": (labelled_texts, True),
    "tests": (injection_test_texts, True),
    "chroma_questions": (chroma_questions, (DEFAULT_CHROMA_DIR / "questions_df.csv").exists()),
    "covid_slices": (covid_slices, COVID.exists()),
    "corpus_slices": (corpus_slices, (DEFAULT_CHROMA_DIR / "corpora").is_dir()),
    "planted_attacks": (planted_attacks, COVID.exists()),
}


def key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def recorded() -> dict[str, InjectionVerdict]:
    """The fixture's verdicts by text key; the file groups the keys by verdict to stay small."""
    groups = json.loads(FIXTURE.read_text(encoding="utf-8"))["verdicts"]
    return {k: InjectionVerdict(risk, tuple(reasons), flagged) for risk, reasons, flagged, keys in groups for k in keys}


@pytest.fixture(scope="module")
def expected() -> dict[str, InjectionVerdict]:
    return recorded()


@pytest.mark.parametrize("name", SETS)
def test_verdicts_are_the_recorded_ones(name, expected):
    texts, present = SETS[name]
    if not present:
        pytest.skip(f"the source of {name!r} (../shared/data) is not present")
    detector = InjectionDetector()
    texts = texts()
    assert texts
    missing = [text[:80] for text in texts if key(text) not in expected]
    assert not missing, f"texts not in {FIXTURE.name}: re-record it (module docstring): {missing[:3]}"
    changed = [
        (text[:80], expected[key(text)], got) for text in texts if (got := detector.check(text)) != expected[key(text)]
    ]
    assert not changed, f"{len(changed)} of {len(texts)} verdicts changed, e.g. {changed[:3]}"


def record() -> None:
    """Write the fixture from the detector as it is now, every set included (the shared data must be present)."""
    absent = [name for name, (_, present) in SETS.items() if not present]
    if absent:
        raise SystemExit(f"cannot record without the sources of {absent} (../shared/data)")
    detector = InjectionDetector()
    groups: dict[tuple[float, tuple[str, ...], bool], set[str]] = {}
    for texts, _ in SETS.values():
        for text in texts():
            verdict = detector.check(text)
            groups.setdefault((verdict.risk, verdict.reasons, verdict.flagged), set()).add(key(text))
    rows = [
        json.dumps([risk, list(reasons), flagged, sorted(keys)])
        for (risk, reasons, flagged), keys in sorted(groups.items())
    ]
    body = ",\n".join(rows)
    about = f"verdicts at threshold {DEFAULT_THRESHOLD}: [risk, reasons, flagged, [sha256[:12] of each text]]"
    FIXTURE.write_text(f'{{"about": {json.dumps(about)},\n"verdicts": [\n{body}\n]}}\n', encoding="utf-8")
    print(f"wrote {sum(map(len, groups.values()))} verdicts in {len(groups)} groups to {FIXTURE}")


if __name__ == "__main__":
    record()
