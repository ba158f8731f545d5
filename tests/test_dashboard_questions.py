"""Writing a question set in the dashboard's Questions tab, in a real browser on the real app: evidence selected in a
document's markdown (by a drag's Range, or found from the keyboard) becomes a new question's or is added to one in
the set; the stored file holds the exact offsets (in characters, though the browser counts UTF-16 units); evidence
and questions are removed, the set downloaded; and a person goes from an empty install to a Decision with a question
set made only in the dashboard (upload → corpus → process → write six questions → benchmark → Decision)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from conftest import screenshot
from question_store import stored_question_file, stored_question_names
from test_corpus_benchmark import TEMPLATE

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

# The emoji before the evidence is one character to Python and two UTF-16 units to the browser.
HANDBOOK = """# Staff handbook 🙂

Every employee receives 25 days of paid annual leave per calendar year.

Unused leave can be carried over until the end of March.

Broken equipment is reported with ticket code HW-7731 within one working day.
"""
LEAVE = "Every employee receives 25 days of paid annual leave per calendar year."
SET = "handbook_questions.json"

# Selects [at, at + len(phrase)) of the evidence text, widened by ``pad`` characters each side, as a drag leaves it.
SELECT = """([phrase, pad]) => {
  const box = document.getElementById("questions-evidence-text");
  const at = box.textContent.indexOf(phrase);
  if (at < 0) throw new Error(`not in the text: ${phrase}`);
  const [from, to] = [at - pad, at + phrase.length + pad];
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let seen = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const length = node.data.length;
    if (seen <= from && from < seen + length) range.setStart(node, from - seen);
    if (seen < to && to <= seen + length) range.setEnd(node, to - seen);
    seen += length;
  }
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}"""


def _watch_requests(page) -> list[str]:
    """Every request that failed or answered an error, as it happens."""
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(f"{request.method} {request.url}: {request.failure}"))
    page.on(
        "response",
        lambda response: (
            failed.append(f"{response.request.method} {response.url}: HTTP {response.status}")
            if response.status >= 400
            else None
        ),
    )
    return failed


def _select(page, phrase: str, pad: int = 0) -> None:
    page.evaluate(SELECT, [phrase, pad])


def _stored(settings, name: str = SET) -> dict:
    return json.loads(stored_question_file(settings, name).decode("utf-8"))


def test_questions_are_written_from_selections_with_exact_offsets(page, live_server, settings):
    failed = _watch_requests(page)
    uploaded = httpx.post(f"{live_server}/documents", files={"file": ("handbook.md", HANDBOOK.encode())}, timeout=60)
    document_id = uploaded.json()["document"]["id"]
    markdown = httpx.get(f"{live_server}/documents/{document_id}/markdown").text

    # The Benchmarks tab opened first has no question file to offer; it learns of the set written below.
    page.goto("/app#benchmarks")
    files = page.locator("#panel-benchmarks").get_by_role("combobox", name="Question file")
    expect(files).to_have_value("")
    page.get_by_role("tab", name="Questions").click()
    panel = page.locator("#panel-questions")
    expect(panel.get_by_label("Question set")).to_have_value("")  # no set yet: a new one, named after the document
    expect(panel.get_by_label("Name of the new set")).to_have_value(SET)
    expect(panel.get_by_test_id("set-status")).to_have_text("A new set is written when its first question is added.")
    expect(panel.get_by_role("combobox", name="Document")).to_contain_text("handbook.md")

    # Ctrl+Enter before any evidence is chosen says what is missing (and sends nothing).
    panel.get_by_label("Question text").fill("How many days?")
    panel.get_by_label("Question text").press("Control+Enter")
    expect(panel.get_by_role("alert")).to_have_text(
        "Select the question's evidence in the text first, then choose Evidence for a new question."
    )

    # 1. A drag over the first rule, the line breaks around it included: the selection is the sentence alone.
    expect(panel.get_by_label("Text to select evidence in")).to_contain_text(LEAVE)
    _select(page, LEAVE, pad=2)
    selection = panel.get_by_test_id("selection")
    start = markdown.index(LEAVE)
    expect(selection).to_contain_text(f"characters {start}–{start + len(LEAVE)}")
    panel.get_by_role("button", name="Evidence for a new question").click()
    expect(panel.get_by_role("list", name="Evidence of the new question")).to_contain_text(LEAVE)
    expect(panel.locator("mark.authored.draft")).to_have_text(LEAVE)
    panel.get_by_label("Question text").fill("How many days of paid leave does an employee get?")
    panel.get_by_label("Expected answer").fill("25 days")
    panel.get_by_role("button", name="Add question").click()
    note = panel.get_by_test_id("authoring-note")
    expect(note).to_have_text(f"Added q1 to {SET} with 1 piece of evidence.")
    assert _stored(settings)["questions"] == [
        {
            "id": "q1",
            "question": "How many days of paid leave does an employee get?",
            "expected_answer": "25 days",
            "category": None,
            "difficulty": None,
            "document_id": "handbook.md",
            "references": [
                {"document": "handbook.md", "content": LEAVE, "start_index": start, "end_index": start + len(LEAVE)}
            ],
        }
    ]
    expect(panel.get_by_label("Question set")).to_have_value(SET)
    expect(panel.locator("mark.authored.saved")).to_have_text(LEAVE)
    expect(panel.locator("mark.authored.saved")).to_have_attribute("title", "evidence of q1")

    # 2. From the keyboard: find a phrase, make it evidence, find another and add it to the same new question.
    find = panel.get_by_role("searchbox", name="Find in the text")
    find.fill("ticket code HW-7731")
    find.press("Enter")
    expect(selection).to_contain_text("“ticket code HW-7731”")
    panel.get_by_role("button", name="Evidence for a new question").click()
    find.fill("WITHIN ONE WORKING DAY")  # not written so: found ignoring case, and taken as the text has it
    find.press("Enter")
    expect(selection).to_contain_text("“within one working day”")
    panel.get_by_role("button", name="Add to the new question").click()
    expect(panel.get_by_role("list", name="Evidence of the new question").get_by_role("listitem")).to_have_count(2)
    panel.get_by_label("Question text").fill("How is broken equipment reported?")
    panel.get_by_label("Question text").press("Control+Enter")
    expect(note).to_have_text(f"Added q2 to {SET} with 2 pieces of evidence.")

    # 3. More evidence for a question already in the set.
    find.fill("Unused leave can be carried over")
    find.press("Enter")
    panel.get_by_label("Existing question").select_option("q1")
    panel.get_by_role("button", name="Add to question").click()
    expect(note).to_have_text("Added the evidence to q1.")
    stored = _stored(settings)["questions"]
    assert [[r["content"] for r in q["references"]] for q in stored] == [
        [LEAVE, "Unused leave can be carried over"],
        ["ticket code HW-7731", "within one working day"],
    ]
    for question in stored:
        for reference in question["references"]:
            assert markdown[reference["start_index"] : reference["end_index"]] == reference["content"]
    status = panel.get_by_test_id("set-status")
    expect(status.locator(".badge")).to_have_text("valid")
    expect(status).to_contain_text("2 questions, 4 pieces of evidence, each at its exact place in its document")
    rows = panel.get_by_role("table", name="Questions").get_by_test_id("question-row")
    expect(rows).to_have_count(2)
    # The screenshot: the set, its evidence marked, a new selection ready for the next question.
    find.fill("end of March")
    find.press("Enter")
    panel.get_by_role("button", name="Evidence for a new question").click()
    panel.get_by_label("Question text").fill("Until when can unused leave be carried over?")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "questions-authoring")

    # 4. Removing: one piece of q2's evidence, then q2 itself (after a yes).
    panel.get_by_role("button", name="Discard").click()
    panel.get_by_role("button", name="Remove evidence 2 of q2").click()
    expect(rows.nth(1)).not_to_contain_text("within one working day")
    rows.nth(1).get_by_role("button", name="Delete q2").click()
    rows.nth(1).get_by_role("button", name="Delete q2", exact=True).click()
    expect(rows).to_have_count(1)
    assert [q["id"] for q in _stored(settings)["questions"]] == ["q1"]

    # 5. The download is the file as stored.
    with page.expect_download() as download:
        panel.get_by_role("link", name=f"Download {SET}").click()
    assert Path(download.value.path()).read_bytes() == stored_question_file(settings, SET)

    # 6. A set the server cannot write is refused with its reason; nothing is written, the draft stays.
    panel.get_by_label("Question set").select_option("")
    panel.get_by_label("Name of the new set").fill("notes.txt")
    _select(page, "Unused leave")
    panel.get_by_role("button", name="Evidence for a new question").click()
    panel.get_by_label("Question text").fill("What happens to unused leave?")
    panel.get_by_role("button", name="Add question").click()
    expect(panel.get_by_role("alert")).to_contain_text("'notes.txt' must end in .json")
    expect(panel.get_by_role("list", name="Evidence of the new question")).to_contain_text("Unused leave")
    assert stored_question_names(settings) == [SET]
    # The refusal is the only request that failed, and the browser's only console message about one.
    assert failed == [f"POST {live_server}/admin/questions/notes.txt/questions: HTTP 400"]
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.errors.clear()

    # 7. The Benchmarks tab, mounted before the set existed, lists it as it is now.
    page.get_by_role("tab", name="Benchmarks").click()
    expect(files).to_contain_text(f"{SET} (1 questions)")


def test_a_passage_far_down_a_long_document_is_found_and_scrolled_to(page, live_server):
    paragraphs = [f"Paragraph {n} says nothing in particular about rule {n}." for n in range(1, 301)]
    paragraphs[279] = "The rule that matters: visitors sign in at the front desk."
    long_text = "# Long rules\n\n" + "\n\n".join(paragraphs) + "\n"
    httpx.post(f"{live_server}/documents", files={"file": ("rules.md", long_text.encode())}, timeout=60)
    page.goto("/app#questions")
    panel = page.locator("#panel-questions")
    find = panel.get_by_role("searchbox", name="Find in the text")
    find.fill("visitors sign in at the front desk")
    find.press("Enter")
    expect(panel.get_by_test_id("selection")).to_contain_text("“visitors sign in at the front desk”")
    panel.get_by_role("button", name="Evidence for a new question").click()
    # The text box scrolled to the passage: its mark is on screen, not 280 paragraphs down.
    expect(panel.locator("mark.authored.draft")).to_have_text("visitors sign in at the front desk")
    expect(panel.locator("mark.authored.draft")).to_be_in_viewport()
    # A phrase the document does not hold says so and selects nothing.
    find.fill("no such phrase")
    find.press("Enter")
    expect(panel.get_by_role("search").get_by_role("status")).to_have_text("not in this document")


# ------------------------------------------------------------------------------------------- the whole journey

OFFICES = {
    "berlin.txt": {"city": "Berlin", "leave": 25, "ticket": "HW-7731", "hotel": 150, "laptop": 3, "floor": 2},
    "madrid.txt": {"city": "Madrid", "leave": 30, "ticket": "HW-8842", "hotel": 170, "laptop": 4, "floor": 3},
}
# (document, evidence, question, expected answer): each written in the dashboard; the last has evidence in both.
WRITTEN = [
    ("berlin.txt", "Staff in Berlin receive 25 days of paid annual leave per calendar year.",
     "How many days of paid annual leave do staff in Berlin get?", "25 days"),
    ("berlin.txt", "ticket code HW-7731", "Which ticket code reports broken equipment in Berlin?", "HW-7731"),
    ("berlin.txt", "The Berlin printer sits on floor 2.", "On which floor is the Berlin printer?", "floor 2"),
    ("madrid.txt", "Hotel costs in Madrid are reimbursed up to 170 euros a night.",
     "Up to how much are hotel costs reimbursed in Madrid?", "170 euros a night"),
    ("madrid.txt", "Laptops in Madrid are replaced every 4 years",
     "How often are laptops replaced in Madrid?", "every 4 years"),
]  # fmt: skip
BOTH = [
    ("madrid.txt", "Staff in Madrid receive 30 days of paid annual leave"),
    ("berlin.txt", "Staff in Berlin receive 25 days of paid annual leave"),
]


def test_from_an_empty_install_to_a_decision_with_questions_written_in_the_dashboard(
    page, live_server, settings, tmp_path
):
    failed = _watch_requests(page)
    paths = []
    for name, values in OFFICES.items():
        paths.append(tmp_path / name)
        paths[-1].write_text(TEMPLATE.format(**values), encoding="utf-8")

    # 1. Upload both handbooks and make them a corpus.
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_label("Choose files to upload").set_input_files(paths)
    listing = documents.get_by_role("table", name="Documents list")
    for name in OFFICES:
        expect(listing.get_by_role("row").filter(has_text=name)).to_contain_text("parsed")
        listing.get_by_label(f"Select {name}").check()
    corpora = documents.get_by_role("region", name="Corpora")
    corpora.get_by_role("button", name="New corpus…").click()
    corpora.get_by_role("form", name="New corpus").get_by_label("Name").fill("offices")
    corpora.get_by_role("button", name="Create with 2 documents").click()
    expect(corpora.get_by_role("status")).to_have_text("Created offices with 2 documents.")

    # 2. Process the corpus with two strategies (fixed_size in 30-token windows, recursive).
    corpora.get_by_label("Show corpus").select_option(label="offices (2)")
    corpora.get_by_role("button", name="Process corpus…").click()
    process = corpora.get_by_role("region", name="Process the corpus offices")
    for name in ("semantic", "contextual_retrieval", "semantic_parent_child"):
        process.get_by_role("checkbox", name=name, exact=True).uncheck()
    process.get_by_label("fixed_size Chunk Size").fill("30")
    process.get_by_label("fixed_size Chunk Overlap").fill("0")
    process.get_by_role("button", name="Run 2 strategies").click()
    expect(
        process.get_by_role("heading", name="Outcome · 2 documents · 2 processed, 0 skipped, 0 failed")
    ).to_be_visible(timeout=180_000)

    # 3. Write six questions over the corpus in the Questions tab: select (or find) the evidence, type the question.
    page.get_by_role("tab", name="Questions").click()
    panel = page.locator("#panel-questions")
    expect(panel.get_by_label("Name of the new set")).to_be_visible()  # the set list has arrived: a new set
    panel.get_by_label("a corpus").check()
    expect(panel.get_by_role("combobox", name="Corpus")).to_have_value("offices")
    name = "offices_questions.json"
    expect(panel.get_by_label("Name of the new set")).to_have_value(name)
    text = panel.get_by_label("Text to select evidence in")
    find = panel.get_by_role("searchbox", name="Find in the text")
    document = panel.get_by_role("combobox", name="Document")
    note = panel.get_by_test_id("authoring-note")

    def open_document(source_key: str) -> None:
        document.select_option(label=source_key)
        expect(panel.get_by_role("heading", name=f"{source_key} · select the evidence")).to_be_visible()

    for number, (source_key, evidence, question, answer) in enumerate(WRITTEN, start=1):
        open_document(source_key)
        expect(text).to_contain_text(evidence)
        if number == 1:  # a drag
            _select(page, evidence)
        else:
            find.fill(evidence)
            find.press("Enter")
        expect(panel.get_by_test_id("selection")).to_contain_text(f"“{evidence}”")
        panel.get_by_role("button", name="Evidence for a new question").click()
        panel.get_by_label("Question text").fill(question)
        panel.get_by_label("Expected answer").fill(answer)
        panel.get_by_role("button", name="Add question").click()
        expect(note).to_have_text(f"Added q{number} to {name} with 1 piece of evidence.")
    # The sixth compares the offices: its evidence is in both documents, gathered across a change of document.
    for position, (source_key, evidence) in enumerate(BOTH):
        open_document(source_key)
        find.fill(evidence)
        find.press("Enter")
        label = "Evidence for a new question" if position == 0 else "Add to the new question"
        panel.get_by_role("button", name=label).click()
    panel.get_by_label("Question text").fill("Which office gives more paid annual leave, Berlin or Madrid?")
    panel.get_by_label("Expected answer").fill("Madrid: 30 days against 25")
    panel.get_by_role("button", name="Add question").click()
    expect(note).to_have_text(f"Added q6 to {name} with 2 pieces of evidence.")
    expect(panel.get_by_role("table", name="Questions").get_by_test_id("question-row")).to_have_count(6)
    expect(panel.get_by_test_id("set-status").locator(".badge")).to_have_text("valid")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "questions-journey-authored")

    # What was written names each document by its source key, at offsets that select the evidence.
    markdown = {}
    for listed in httpx.get(f"{live_server}/corpora/offices").json()["documents"]:
        markdown[listed["source_key"]] = httpx.get(f"{live_server}/documents/{listed['id']}/markdown").text
    stored = _stored(settings, name)["questions"]
    assert [q["document_id"] for q in stored] == [w[0] for w in WRITTEN] + ["madrid.txt"]
    assert [[r["document"] for r in q["references"]] for q in stored][-1] == ["madrid.txt", "berlin.txt"]
    for question in stored:
        for reference in question["references"]:
            assert (
                markdown[reference["document"]][reference["start_index"] : reference["end_index"]]
                == (reference["content"])
            )

    # 4. Benchmark the corpus on the set, and read the Decision.
    page.get_by_role("tab", name="Benchmarks").click()
    bench = page.locator("#panel-benchmarks")
    bench.get_by_label("a corpus").check()
    expect(bench.get_by_role("combobox", name="Corpus", exact=True)).to_have_value("offices")
    expect(bench.get_by_role("combobox", name="Question file")).to_have_value(name)
    for strategy in ("fixed_size", "recursive"):
        expect(bench.get_by_label(strategy, exact=True)).to_be_checked()
    bench.get_by_label("top_k values").fill("3")
    bench.get_by_role("button", name="Run benchmark").click()
    experiment = bench.get_by_role("region", name="Experiment", exact=True)
    expect(experiment.get_by_role("heading", name="Experiment: corpus offices completed")).to_be_visible(
        timeout=180_000
    )
    [summary] = httpx.get(f"{live_server}/experiments", params={"corpus": "offices"}).json()
    result = httpx.get(f"{live_server}/benchmarks/{summary['id']}").json()
    assert result["status"] == "completed" and len(result["cells"]) == 2 * 6
    assert {c["question_id"] for c in result["cells"]} == {f"q{n}" for n in range(1, 7)}
    assert result["decision"]["status"] != "insufficient_data"  # six usable questions, two configurations
    decision = experiment.get_by_role("region", name="Decision")
    expect(decision.get_by_role("heading", name=re.compile(r"^Decision "))).to_be_visible()
    expect(decision).to_contain_text(result["decision"]["verdict"])
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "questions-journey-decision")
    assert failed == []
