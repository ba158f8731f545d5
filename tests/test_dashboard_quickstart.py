"""The quickstart in the dashboard, from an empty install to the Decision, only through the browser (issue 27): the
step strip points at each next action; the twelve handbook files are ingested as a folder of the data directory
into the corpus ``handbook`` (as the CLI quickstart does), processed with fixed_size and recursive, the question
file uploaded and validated on the corpus (all 29 pieces of evidence placed), benchmarked with dense and hybrid
retrieval at top-k 3, and the Decision read in the Experiment and on the Decision Board. Its two screenshots are
the README's."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx
import pytest

from conftest import screenshot

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"
SCREENSHOTS = ROOT / "docs" / "screenshots"
OTHER_STRATEGIES = ("semantic", "contextual_retrieval", "semantic_parent_child")


def _shoot(page, name: str) -> None:
    """The suite's screenshot (test-artifacts/), copied where the README links it."""
    page.evaluate("window.scrollTo(0, 0)")
    path = screenshot(page, f"quickstart-{name}")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, SCREENSHOTS / f"quickstart-{name}.png")


def test_the_quickstart_from_an_empty_install_to_the_decision(page, live_server, settings):
    files = sorted(p.relative_to(QUICKSTART / "corpus").as_posix() for p in (QUICKSTART / "corpus").rglob("*.*"))
    assert len(files) == 12
    shutil.copytree(QUICKSTART / "corpus", settings.data_dir / "quickstart")
    strip = page.get_by_role("navigation", name="Steps")
    following = strip.get_by_test_id("next-step")

    # 1. An empty install: nothing is done, and the strip's first action opens Documents.
    page.goto("/app#admin")
    expect(strip.locator("li[data-done=true]")).to_have_count(0)
    following.get_by_role("button", name="Upload documents").click()
    documents = page.locator("#panel-documents")
    documents.get_by_text("Ingest a folder of the server's data directory").click()
    documents.get_by_label("Folder path").fill("quickstart")
    documents.get_by_label("Folder corpus").fill("handbook")  # as `chunkbench ingest … --corpus handbook`
    documents.get_by_role("button", name="Ingest folder").click()
    expect(documents.get_by_role("status", name="Folder ingest summary")).to_be_visible(timeout=300_000)
    results = documents.get_by_role("table", name="Folder ingest results").locator("tbody tr")
    expect(results).to_have_count(12)
    expect(results.filter(has_text="added")).to_have_count(12)

    # 2. The corpus `handbook` holds the twelve, and is shown at once with its Process action.
    corpora = documents.get_by_role("region", name="Corpora")
    expect(corpora.get_by_label("Show corpus")).to_have_value("handbook")
    expect(corpora.get_by_label("Show corpus").locator("option:checked")).to_have_text("handbook (12)")
    stored = httpx.get(f"{live_server}/corpora/handbook").json()
    assert sorted(d["source_key"] for d in stored["documents"]) == files
    expect(following).to_contain_text("Next: Process the corpus")

    # 3. Process it with fixed_size and recursive (the quickstart's two), as one job.
    corpora.get_by_role("button", name="Process corpus…").click()
    process = corpora.get_by_role("region", name="Process the corpus handbook")
    for name in OTHER_STRATEGIES:
        process.get_by_role("checkbox", name=name, exact=True).uncheck()
    process.get_by_role("button", name="Run 2 strategies").click()
    expect(
        process.get_by_role(
            "heading", name=re.compile(r"^Outcome · 12 documents · \d+ processed, 0 skipped, 0 failed$")
        )
    ).to_be_visible(timeout=600_000)
    expect(process.get_by_role("table", name="Failed documents")).to_have_count(0)
    expect(following).to_contain_text("Next: Write or upload questions")

    # 4. The question file, uploaded where a benchmark is set up; validated on the corpus: all 29 placed.
    following.get_by_role("button", name="Write or upload questions").click()
    page.get_by_role("tab", name="Benchmarks").click()
    bench = page.locator("#panel-benchmarks")
    bench.get_by_label("a corpus").check()
    expect(bench.get_by_role("combobox", name="Corpus", exact=True)).to_have_value("handbook")
    bench.get_by_label("Question file to upload").set_input_files(QUICKSTART / "handbook-questions.json")
    expect(bench.get_by_role("status").filter(has_text="Uploaded handbook-questions.json")).to_contain_text(
        "29 questions, 29 references"
    )
    expect(bench.get_by_role("combobox", name="Question file")).to_have_value("handbook-questions.json")
    bench.get_by_role("button", name="Validate").click()
    validation = bench.get_by_role("region", name="Validation")
    expect(validation.get_by_role("status")).to_contain_text("valid 29 questions, 29 references · placed: 29 exact")
    expect(validation.get_by_role("alert")).to_have_count(0)
    expect(following).to_contain_text("Next: Run a benchmark")

    # 5. The benchmark: fixed_size and recursive × dense and hybrid, top-k 3 — four configurations.
    for name in ("fixed_size", "recursive"):
        expect(bench.get_by_label(name, exact=True)).to_be_checked()
    bench.get_by_label("hybrid", exact=True).check()
    expect(bench.get_by_label("dense", exact=True)).to_be_checked()
    bench.get_by_label("top_k values").fill("3")
    bench.get_by_role("button", name="Dry run").click()
    expect(bench.get_by_role("region", name="Dry run")).to_contain_text("4 configurations × 29 questions = 116 cells")
    bench.get_by_role("button", name="Run benchmark").click()
    experiment = bench.get_by_role("region", name="Experiment", exact=True)
    expect(experiment.get_by_role("heading", name="Experiment: corpus handbook completed")).to_be_visible(
        timeout=600_000
    )
    aggregates = experiment.get_by_role("table", name="Aggregates").locator("tbody tr")
    expect(aggregates).to_have_count(4)
    for key in ("fixed_size/dense/k3", "fixed_size/hybrid/k3", "recursive/dense/k3", "recursive/hybrid/k3"):
        expect(aggregates.filter(has_text=key)).to_have_count(1)
    [summary] = httpx.get(f"{live_server}/experiments", params={"corpus": "handbook"}).json()
    result = httpx.get(f"{live_server}/benchmarks/{summary['id']}", params={"cells": "scores"}).json()
    assert result["status"] == "completed" and len(result["cells"]) == 4 * 29
    verdict = result["decision"]["verdict"]
    # The same Decision as the CLI quickstart's, word for word (examples/quickstart/README.md quotes it).
    readme = (QUICKSTART / "README.md").read_text(encoding="utf-8")
    [quoted] = [line[2:] for line in readme.splitlines() if line.startswith("> At ")]
    assert verdict == quoted
    decision = experiment.get_by_role("region", name="Decision")
    expect(decision.get_by_role("heading", name=re.compile(r"^Decision "))).to_be_visible()
    expect(decision).to_contain_text(verdict)
    expect(following).to_contain_text("Every step is done")
    _shoot(page, "1-benchmark")

    # 6. The Decision Board: the Experiment's four configurations and the same verdict.
    following.get_by_role("button", name="open the Decision Board").click()
    expect(page.get_by_role("tab", name="Decision Board")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_test_id("config-row")).to_have_count(4)
    board = page.get_by_test_id("verdict")
    expect(board).to_have_count(1)
    expect(board).to_contain_text(verdict)
    expect(board).to_contain_text("over 29 questions")
    _shoot(page, "2-decision")
