"""One person's journey through the whole dashboard, in a real browser on the real app (MiniLM, embedded Qdrant,
SQLite): upload a Word and a PDF document, process the Word one with all five strategies, ask it a question and
read the Expansion Tree, benchmark the five strategies on a question file, inspect a retrieval, and read the
Decision Board. Only the browser is used; every stage leaves a journey-*.png screenshot."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from chunkbench.text.tokens import count_tokens
from conftest import screenshot
from docgen import office, pdfs

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

STRATEGIES = ["fixed_size", "recursive", "semantic", "contextual_retrieval", "semantic_parent_child"]
WINDOW = 30  # fixed_size chunk size in tokens, without overlap: the report is cut into ceil(tokens / 30) windows
# Every evidence snippet is a sentence of office.make_structured_docx, so each one is placed exactly.
QUESTIONS = [
    {
        "id": "intro",
        "question": "What does the introduction explain?",
        "expected_answer": "The report.",
        "references": [{"content": "The introduction explains the report."}],
    },
    {
        "id": "lists",
        "question": "What sits between the bullet list and the numbered steps?",
        "expected_answer": "Between the lists.",
        "references": [{"content": "Between the lists."}],
    },
    {
        "id": "table",
        "question": "What comes right after the table?",
        "expected_answer": "After the table.",
        "references": [{"content": "After the table."}],
    },
    {
        "id": "article",
        "question": "What does Article 5 say?",
        "expected_answer": "Article five text.",
        "references": [{"content": "Article five text."}],
    },
    {
        "id": "closing",
        "question": "How does the report close?",
        "expected_answer": "With a closing paragraph.",
        "references": [{"content": "Closing paragraph."}],
    },
]


def _shoot(page, name: str) -> None:
    """A full-page screenshot from the top (the sticky header would otherwise sit where the page was scrolled)."""
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, f"journey-{name}")


def _row(panel, name: str):
    """The list row of the document ``name`` in a tab's panel."""
    return panel.get_by_role("row").filter(has=panel.page.get_by_role("button", name=name, exact=True))


def test_a_person_goes_from_upload_to_the_decision_board(page, tmp_path: Path):
    docx_path = office.make_structured_docx(tmp_path / "report.docx")
    pdf_path = pdfs.make_structured_pdf(tmp_path, chapters=2)

    # 1. Upload: the Word report in the Documents tab, the PDF in the PDF tab; each is listed, parsed.
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_label("Choose files to upload").set_input_files(docx_path)
    report = _row(documents, "report.docx")
    expect(report).to_contain_text("parsed")
    page.get_by_role("tab", name="PDF").click()
    pdf_panel = page.locator("#panel-pdf")
    pdf_panel.get_by_label("Choose files to upload").set_input_files(pdf_path)
    expect(_row(pdf_panel, pdf_path.name)).to_contain_text("parsed")
    _row(pdf_panel, pdf_path.name).get_by_role("button", name=pdf_path.name).click()
    expect(pdf_panel.get_by_label("Section tree").get_by_text("Chapter 2 Overview of topic 2")).to_be_visible()
    _shoot(page, "1-pdf")

    # 2. Process the report with all five strategies (every box is ticked by default); fixed_size in 30-token
    # windows without overlap, so the report's Markdown, as the preview shows it, gives the window count.
    page.get_by_role("tab", name="Documents").click()
    report.get_by_role("button", name="report.docx").click()
    preview = documents.get_by_label("Markdown preview")
    expect(preview).to_contain_text("Closing paragraph.")
    windows = math.ceil(count_tokens(preview.inner_text()) / WINDOW)
    assert windows == 5  # 126 tokens
    for name in STRATEGIES:
        expect(documents.get_by_role("checkbox", name=name, exact=True)).to_be_checked()
    documents.get_by_label("fixed_size Chunk Size").fill(str(WINDOW))
    documents.get_by_label("fixed_size Chunk Overlap").fill("0")
    documents.get_by_role("button", name="Run 5 strategies").click()
    outcome = documents.get_by_role("table", name="Strategy outcomes")
    expect(outcome.locator("tbody tr")).to_have_count(5, timeout=120_000)
    rows = {
        cells[0]: cells
        for cells in (r.get_by_role("cell").all_inner_texts() for r in outcome.locator("tbody tr").all())
    }
    assert sorted(rows) == sorted(STRATEGIES)
    assert {name: cells[1] for name, cells in rows.items()} == dict.fromkeys(STRATEGIES, "completed")
    assert rows["fixed_size"][2] == str(windows)
    chunk_counts = {name: int(cells[2]) for name, cells in rows.items()}
    assert all(count > 0 for count in chunk_counts.values())
    expect(report.get_by_role("cell").nth(2)).to_have_text("indexed")
    _shoot(page, "2-processed")

    # 3. Ask a question: fixed_size, one hit, Neighbor Expansion ±1 — the tree shows the hit and its neighbours.
    documents.get_by_role("button", name="Ask a question").click()
    expect(page.get_by_role("tab", name="Query")).to_have_attribute("aria-selected", "true")
    query = page.locator("#panel-query")  # tabs stay mounted: the Documents tab has "Strategy" fields too
    expect(query.get_by_test_id("query-document")).to_have_value(re.compile(r"^[0-9a-f]{32}$"))
    expect(query.get_by_test_id("query-document").locator("option:checked")).to_have_text("report.docx")
    query.get_by_label("Strategy").select_option("fixed_size")
    query.get_by_label("top_k").fill("1")
    query.get_by_label("Neighbours before").fill("1")
    query.get_by_label("Neighbours after").fill("1")
    query.get_by_label("Question", exact=True).fill("Which steps are numbered?")
    query.get_by_role("button", name="Ask", exact=True).click()
    tree = query.get_by_test_id("expansion-tree")
    hit = tree.locator("[data-role=hit]")
    expect(hit).to_have_count(1)
    hit_index = int(re.search(r"chunk (\d+)", hit.inner_text()).group(1))
    # A hit has a neighbour before unless it is the first window, and one after unless it is the last.
    before, after = int(hit_index > 0), int(hit_index < windows - 1)
    expect(tree).to_contain_text(f"1 hit, {before + after} neighbour")
    neighbours = tree.locator("[data-role=neighbor]")
    expect(neighbours).to_have_count(before + after)
    expected_rows = [f"neighbour before chunk {hit_index - 1}"] * before + [
        f"neighbour after chunk {hit_index + 1}"
    ] * after
    assert [" ".join(text.split()[:4]) for text in neighbours.all_inner_texts()] == expected_rows
    answer = query.get_by_test_id("query-answer")
    expect(answer).to_contain_text("First step")
    expect(answer).to_contain_text("Second step")
    expect(query.get_by_test_id("query-sources")).to_contain_text(f"Sources ({1 + before + after})")
    _shoot(page, "3-query")

    # 4. Benchmarks: upload the question file, validate it (all five snippets placed), run the five strategies.
    page.get_by_role("tab", name="Benchmarks").click()
    bench = page.locator("#panel-benchmarks")
    expect(bench.get_by_role("combobox", name="Document", exact=True).locator("option:checked")).to_have_text(
        "report.docx"
    )
    bench.get_by_label("Question file to upload").set_input_files(
        files=[
            {"name": "report-questions.json", "mimeType": "application/json", "buffer": json.dumps(QUESTIONS).encode()}
        ]
    )
    expect(bench.get_by_role("status").filter(has_text="Uploaded report-questions.json")).to_contain_text(
        "5 questions, 5 references"
    )
    bench.get_by_role("button", name="Validate").click()
    validation = bench.get_by_role("region", name="Validation")
    expect(validation).to_contain_text("valid 5 questions, 5 references · placed: 5 exact")
    expect(validation.get_by_role("alert")).to_have_count(0)
    expect(validation.get_by_role("table", name="Evidence placements").locator("tbody tr")).to_have_count(5)
    for name in STRATEGIES:
        expect(bench.get_by_label(name, exact=True)).to_be_checked()
    bench.get_by_label("top_k values").fill("3")
    bench.get_by_role("button", name="Dry run").click()
    expect(bench.get_by_role("region", name="Dry run")).to_contain_text(
        "5 configurations × 5 questions = 25 cells · 0 LLM calls"
    )
    _shoot(page, "4-validation")

    bench.get_by_role("button", name="Run benchmark").click()
    experiment = bench.get_by_role("region", name="Experiment", exact=True)
    expect(experiment.get_by_role("heading", name="Experiment: report.docx completed")).to_be_visible(timeout=120_000)
    listed = bench.get_by_role("table", name="Experiments").locator("tbody tr")
    expect(listed).to_have_count(1)
    expect(listed.first).to_contain_text("25/25")
    # The Experiment's own count agrees with the list once the run is over (not the last figure polled mid-run).
    expect(experiment.locator("dl.kv")).to_contain_text("5 · cells 25/25")
    aggregates = experiment.get_by_role("table", name="Aggregates").locator("tbody tr")
    expect(aggregates).to_have_count(5)
    for name in STRATEGIES:
        expect(aggregates.filter(has_text=f"{name}/dense/k3")).to_have_count(1)
    decision = experiment.get_by_role("region", name="Decision")
    expect(decision.get_by_role("heading", name=re.compile(r"^Decision "))).to_be_visible()
    sentence = decision.locator("p strong").inner_text()
    assert sentence
    _shoot(page, "5-experiment")

    # 5. Retrieval Inspect: recursive cut the report into 3 chunks, so top_k 3 retrieves all of them and the
    # first question's evidence is marked where the question file placed it.
    assert chunk_counts["recursive"] == 3
    experiment.get_by_role("button", name="Retrieval Inspect").click()
    inspect = bench.get_by_role("region", name="Retrieval Inspect")
    inspect.get_by_role("combobox", name="Configuration").select_option("recursive/dense/k3")
    expect(inspect.get_by_role("heading", name="intro · question 1 of 5")).to_be_visible()
    expect(inspect.get_by_role("region", name="Expected answer")).to_contain_text("The report.")
    chunks = inspect.get_by_role("region", name="Retrieved chunks")
    expect(chunks.get_by_role("article")).to_have_count(3)
    evidence = chunks.locator("mark.evidence")
    expect(evidence).to_have_count(1)
    expect(evidence).to_have_text("The introduction explains the report.")
    expect(evidence).to_be_visible()
    _shoot(page, "6-inspect")

    # 6. The Decision Board: the Experiment's five configurations in the heat table, and the same verdict.
    page.get_by_role("tab", name="Decision Board").click()
    expect(page.get_by_test_id("candidate")).to_have_count(1)
    configurations = page.get_by_test_id("config-row")
    expect(configurations).to_have_count(5)
    for name in STRATEGIES:
        expect(configurations.filter(has_text=f"{name}/dense/k3")).to_have_count(1)
    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_have_count(1)
    expect(verdict).to_contain_text(sentence)
    expect(verdict).to_contain_text("over 5 questions")
    _shoot(page, "7-decision")
