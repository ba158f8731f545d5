"""perf/judge_agreement.py's arithmetic (no model): agreement, balanced accuracy, partial recall left out, selection;
the README's table gives the recorded figures."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "perf" / "judge_agreement.py"
_spec = importlib.util.spec_from_file_location("perf_judge_agreement", SCRIPT)
assert _spec is not None and _spec.loader is not None
judge_agreement = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = judge_agreement  # its dataclass looks its module up
_spec.loader.exec_module(judge_agreement)
Case = judge_agreement.Case


def test_agreement_counts_classes_and_leaves_partial_recall_out() -> None:
    cases = [
        Case("a", 1.0, 9), Case("b", 1.0, 6), Case("c", 1.0, 5), Case("d", 1.0, None),  # 2 of 4 high
        Case("e", 0.0, 1), Case("f", 0.0, 7),  # 1 of 2 low
        Case("g", 0.5, 10),  # partial: not counted
    ]  # fmt: skip
    figures = judge_agreement.agreement(cases, high=6)
    assert (figures["counted"], figures["recall_1"], figures["recall_0"]) == (6, 4, 2)
    assert figures["partial_excluded"] == 1
    assert figures["judge_failures"] == 1
    assert figures["agreement_pct"] == 50.0
    assert figures["balanced_accuracy_pct"] == 50.0
    assert figures["mean_relevance_recall_1"] == round(20 / 3, 2)
    assert figures["mean_relevance_recall_0"] == 4.0


def test_a_constant_judge_scores_half_balanced_accuracy() -> None:
    cases = [Case(str(i), 1.0, 10) for i in range(9)] + [Case("z", 0.0, 10)]
    figures = judge_agreement.agreement(cases)
    assert figures["agreement_pct"] == 90.0
    assert figures["balanced_accuracy_pct"] == 50.0


def test_selection_is_balanced_and_deterministic() -> None:
    pool = [(f"q{i:02d}", 1.0) for i in range(10)] + [(f"r{i}", 0.0) for i in range(3)] + [("p", 0.5)]
    chosen = judge_agreement.select(pool, 8)
    assert sum(1 for _, recall in chosen if recall == 0.0) == 3  # every recall-0 question; recall 1 fills the rest
    assert sum(1 for _, recall in chosen if recall == 1.0) == 5
    assert chosen == judge_agreement.select(list(reversed(pool)), 8)


def test_the_readme_table_gives_every_measured_models_figures() -> None:
    readme = (SCRIPT.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("**Judge agreement**", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and " % | " in line]
    results = json.loads(judge_agreement.RESULTS.read_text(encoding="utf-8"))
    assert len(rows) == len(results)
    for row, figures in zip(rows, results.values(), strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[1] == f"{figures['balanced_accuracy_pct']:.1f} %"
        assert cells[2].startswith(f"{figures['mean_relevance_recall_1']} / {figures['mean_relevance_recall_0']}")
        assert cells[3] == f"{figures['seconds_per_judgement']:.2f}"
