"""docs/python-api.md runs as written: every ```python block of the page, in order, in one namespace, from a folder
that holds the repository's examples/, reaches the Decision the README's quickstart promises (the Python API and
the CLI give the same figures)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from test_quickstart import quickstart

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "python-api.md"

pytestmark = [pytest.mark.model, pytest.mark.slow]


def blocks() -> list[str]:
    found = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)
    assert len(found) >= 4, f"{PAGE} lost its code blocks"
    return found


def test_the_python_api_page_runs_from_workspace_to_the_verdict(tmp_path: Path, database_url: str) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    namespace: dict[str, object] = {}
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        for number, code in enumerate(blocks(), start=1):
            exec(compile(code, f"{PAGE.name}, block {number}", "exec"), namespace)
    finally:
        os.chdir(here)
    experiment = namespace["experiment"]
    assert experiment.status == "completed"  # type: ignore[attr-defined]
    _commands, promised = quickstart((ROOT / "README.md").read_text(encoding="utf-8"))
    assert " ".join(experiment.decision.verdict.split()) == promised  # type: ignore[attr-defined]
    assert (tmp_path / "quickstart-report.html").stat().st_size > 10_000
    recall = namespace["table"]["recall"].tolist()  # type: ignore[index]
    assert len(recall) == 4 and recall == sorted(recall, reverse=True)  # 2 strategies × 2 retrievers, best first
