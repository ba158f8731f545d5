"""The dashboard leads from one step to the next (issue 27), in a real browser on the real app: a corpus made in
Documents is the one shown next; "Benchmark it…" on a set written over a corpus opens the benchmark form on that
corpus and set, whose validation places every document's evidence; a removed piece of evidence comes back with
Undo."""

from __future__ import annotations

import httpx
import pytest

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

OFFICE = (
    "# {name} office\n\nEvery employee in {name} receives {days} days of paid annual leave.\n\n"
    "The printer is on floor {floor}.\n"
)
BERLIN = OFFICE.format(name="Berlin", days=25, floor=2)
MADRID = OFFICE.format(name="Madrid", days=30, floor=3)
SET = "offices_questions.json"


def _upload(base: str, name: str, text: str) -> str:
    response = httpx.post(f"{base}/documents", files={"file": (name, text.encode())}, timeout=60)
    assert response.status_code in (200, 201), response.text
    return response.json()["document"]["id"]


def _evidence(base: str, document_id: str, source_key: str, content: str) -> dict:
    markdown = httpx.get(f"{base}/documents/{document_id}/markdown").text
    start = markdown.index(content)
    return {"document": source_key, "content": content, "start_index": start, "end_index": start + len(content)}


def _write_set(base: str, ids: dict[str, str]) -> None:
    """Two questions over the corpus: one on each document, and one whose evidence is in both."""
    leave = {key: f"Every employee in {key[:-3].title()} receives" for key in ids}
    questions = [
        ("Where is the Berlin printer?", [("berlin.md", "The printer is on floor 2.")]),
        ("Which office gives more leave?", [("madrid.md", leave["madrid.md"]), ("berlin.md", leave["berlin.md"])]),
    ]
    for question, pieces in questions:
        references = [_evidence(base, ids[key], key, content) for key, content in pieces]
        body = {"question": question, "document_id": pieces[0][0], "references": references}
        response = httpx.post(f"{base}/admin/questions/{SET}/questions", json=body, timeout=60)
        assert response.status_code == 201, response.text


def _make_corpus_in_documents(page) -> None:
    """Tick both documents in Documents and make the corpus ``offices`` from them."""
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    corpora = documents.get_by_role("region", name="Corpora")
    listing = documents.get_by_role("table", name="Documents list")
    for key in ("berlin.md", "madrid.md"):
        listing.get_by_label(f"Select {key}").check()
    corpora.get_by_role("button", name="New corpus…").click()
    form = corpora.get_by_role("form", name="New corpus")
    form.get_by_label("Name").fill("offices")
    form.get_by_role("button", name="Create with 2 documents").click()
    expect(corpora.get_by_role("status")).to_have_text("Created offices with 2 documents.")


def test_a_new_corpus_is_the_one_shown_next(page, live_server):
    for name, text in (("berlin.md", BERLIN), ("madrid.md", MADRID)):
        _upload(live_server, name, text)
    _make_corpus_in_documents(page)
    documents = page.locator("#panel-documents")
    corpora = documents.get_by_role("region", name="Corpora")
    # Without looking for it in the picker: the list is the corpus's, its actions (process it) at hand, in the URL.
    expect(corpora.get_by_label("Show corpus")).to_have_value("offices")
    expect(documents.get_by_role("heading", name="Documents in offices (2)")).to_be_visible()
    expect(corpora.get_by_role("button", name="Process corpus…")).to_be_visible()
    expect(page).to_have_url(f"{live_server}/app#documents/corpus/offices")


def test_a_folder_ingested_into_a_new_corpus_shows_that_corpus(page, settings):
    folder = settings.data_dir / "offices"
    folder.mkdir(parents=True)
    (folder / "berlin.md").write_text(BERLIN, encoding="utf-8")
    (folder / "madrid.md").write_text(MADRID, encoding="utf-8")
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_text("Ingest a folder of the server's data directory").click()
    documents.get_by_label("Folder path").fill("offices")
    documents.get_by_label("Folder corpus").fill("offices")
    documents.get_by_role("button", name="Ingest folder").click()
    expect(documents.get_by_role("status", name="Folder ingest summary")).to_be_visible(timeout=60_000)
    corpora = documents.get_by_role("region", name="Corpora")
    expect(corpora.get_by_label("Show corpus")).to_have_value("offices")
    expect(documents.get_by_role("heading", name="Documents in offices (2)")).to_be_visible()
    expect(corpora.get_by_role("button", name="Process corpus…")).to_be_visible()


def test_benchmark_it_carries_the_corpus_scope_and_the_set(page, live_server):
    ids = {name: _upload(live_server, name, text) for name, text in (("berlin.md", BERLIN), ("madrid.md", MADRID))}
    _make_corpus_in_documents(page)
    _write_set(live_server, ids)

    page.get_by_role("tab", name="Questions").click()
    questions = page.locator("#panel-questions")
    questions.get_by_label("a corpus").check()
    expect(questions.get_by_role("combobox", name="Corpus")).to_have_value("offices")
    expect(questions.get_by_label("Question set")).to_have_value(SET)
    expect(questions.get_by_test_id("set-status").locator(".badge")).to_have_text("valid")
    # The Benchmarks tab has never been opened: the click is what mounts it.
    questions.get_by_role("button", name="Benchmark it…").click()
    expect(page.get_by_role("tab", name="Benchmarks")).to_have_attribute("aria-selected", "true")
    bench = page.locator("#panel-benchmarks")
    expect(bench.get_by_label("a corpus")).to_be_checked()
    expect(bench.get_by_role("combobox", name="Corpus", exact=True)).to_have_value("offices")
    expect(bench.get_by_role("combobox", name="Question file")).to_have_value(SET)
    bench.get_by_role("button", name="Validate").click()
    validation = bench.get_by_role("region", name="Validation")
    # Every document's evidence is placed (none "not among the documents given"), at the offsets it was written at.
    expect(validation.get_by_role("status")).to_contain_text("valid 2 questions, 3 references · placed: 3 offsets")
    expect(validation.get_by_role("alert")).to_have_count(0)
    expect(validation.get_by_role("table", name="Evidence placements").locator("tbody tr")).to_have_count(3)


def _stored_references(base: str) -> list[list[dict]]:
    stored = httpx.get(f"{base}/admin/questions/{SET}").json()["questions"]
    return [[{k: r[k] for k in ("document", "content", "start_index", "end_index")} for r in q["references"]]
            for q in stored]  # fmt: skip


def test_a_removed_piece_of_evidence_comes_back_with_undo(page, live_server):
    ids = {name: _upload(live_server, name, text) for name, text in (("berlin.md", BERLIN), ("madrid.md", MADRID))}
    _write_set(live_server, ids)
    written = _stored_references(live_server)
    printer = written[0][0]
    assert printer["content"] == "The printer is on floor 2."

    page.goto("/app#questions")
    panel = page.locator("#panel-questions")
    expect(panel.get_by_label("Question set")).to_have_value(SET)
    rows = panel.get_by_role("table", name="Questions").get_by_test_id("question-row")
    expect(rows).to_have_count(2)
    # One click removes it (as before) — and the passage is one Undo away, back at the same offsets.
    panel.get_by_role("button", name="Remove evidence 1 of q1").click()
    expect(rows.nth(0)).to_contain_text("no evidence")
    assert _stored_references(live_server)[0] == []
    undo = panel.get_by_test_id("undo-removal")
    expect(undo).to_contain_text("Removed “The printer is on floor 2.” from q1.")
    undo.get_by_role("button", name="Undo").click()
    expect(rows.nth(0)).to_contain_text("The printer is on floor 2.")
    expect(undo).to_have_count(0)
    assert _stored_references(live_server) == written

    # Ctrl+Z outside a text field does the same (q2's second piece: the last one of the question goes back last).
    panel.get_by_role("button", name="Remove evidence 2 of q2").click()
    expect(rows.nth(1)).not_to_contain_text("Every employee in Berlin receives")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+z")
    expect(rows.nth(1)).to_contain_text("Every employee in Berlin receives")
    assert _stored_references(live_server) == written
    expect(panel.get_by_test_id("set-status").locator(".badge")).to_have_text("valid")

    # The evidence of a question not yet saved comes back too: one piece removed, then the whole draft discarded.
    panel.get_by_role("combobox", name="Document").select_option(label="berlin.md")
    find = panel.get_by_role("searchbox", name="Find in the text")
    draft = panel.get_by_role("list", name="Evidence of the new question").get_by_role("listitem")
    for phrase, button in (("The printer is on floor 2.", "Evidence for a new question"),
                           ("Every employee in Berlin receives", "Add to the new question")):  # fmt: skip
        find.fill(phrase)
        find.press("Enter")
        panel.get_by_role("button", name=button).click()
    expect(draft).to_have_count(2)
    panel.get_by_role("button", name="Remove evidence 1 of the new question").click()
    expect(draft).to_have_count(1)
    undo_draft = panel.get_by_test_id("undo-draft")
    expect(undo_draft).to_contain_text("Removed “The printer is on floor 2.” from the new question.")
    undo_draft.get_by_role("button", name="Undo").click()
    expect(draft).to_have_count(2)
    expect(draft.first).to_contain_text("The printer is on floor 2.")  # back in its place
    panel.get_by_role("button", name="Discard").click()
    expect(draft).to_have_count(0)
    expect(undo_draft).to_contain_text("Removed 2 pieces of evidence from the new question.")
    undo_draft.get_by_role("button", name="Undo").click()
    expect(draft).to_have_count(2)
    expect(undo_draft).to_have_count(0)
    assert _stored_references(live_server) == written  # a draft is the browser's until it is added


# The viewport rectangle of ``phrase`` in the evidence text, and of the text's box.
PHRASE_BOX = """(phrase) => {
  const box = document.getElementById("questions-evidence-text");
  const node = [...box.querySelectorAll("span, mark")].map((e) => e.firstChild)
    .find((t) => t && t.data.includes(phrase));
  const range = document.createRange();
  range.setStart(node, node.data.indexOf(phrase));
  range.setEnd(node, node.data.indexOf(phrase) + phrase.length);
  const r = range.getBoundingClientRect();
  return {left: r.left, right: r.right, y: (r.top + r.bottom) / 2};
}"""
TEXT_BOX = """() => {
  const r = document.getElementById("questions-evidence-text").getBoundingClientRect();
  return [r.left, r.top, r.width, r.height];
}"""


def test_selecting_with_the_mouse_does_not_move_the_text(page, live_server):
    _upload(live_server, "berlin.md", BERLIN)
    page.goto("/app#questions")
    panel = page.locator("#panel-questions")
    text = panel.get_by_label("Text to select evidence in")
    phrase = "receives 25 days of paid annual leave"
    expect(text).to_contain_text(phrase)
    before = page.evaluate(TEXT_BOX)
    where = page.evaluate(PHRASE_BOX, phrase)
    # A real drag: press at the phrase's first letter, move across it in steps, measure while the button is down.
    page.mouse.move(where["left"] + 1, where["y"])
    page.mouse.down()
    page.mouse.move((where["left"] + where["right"]) / 2, where["y"], steps=5)
    expect(panel.get_by_test_id("selection")).to_contain_text("characters")  # the bar shows a selection mid-drag
    during = page.evaluate(TEXT_BOX)
    page.mouse.move(where["right"] - 1, where["y"], steps=5)
    page.mouse.up()
    expect(panel.get_by_test_id("selection")).to_contain_text("“receives 25 days of paid annual leav")
    after = page.evaluate(TEXT_BOX)
    assert during == before
    assert after == before
    # The text under the pointer is still what was pressed on: the phrase did not slide away mid-drag.
    assert page.evaluate(PHRASE_BOX, phrase) == where


def _process(target: str) -> None:
    """Process a document or a corpus (its URL) with fixed_size in 12-token windows and recursive, now."""
    processed = httpx.post(
        f"{target}/process",
        params={"wait": "true"},
        json={
            "strategies": ["fixed_size", "recursive"],
            "params": {"fixed_size": {"chunk_size": 12, "chunk_overlap": 0}},
        },
        timeout=300,
    )
    assert processed.status_code == 200, processed.text


def test_a_deep_linked_experiment_comes_first_at_800_px(page, live_server):
    document_id = _upload(live_server, "berlin.md", BERLIN)
    _process(f"{live_server}/documents/{document_id}")
    questions = [
        {
            "id": "printer",
            "question": "Where is the printer?",
            "references": [{"content": "The printer is on floor 2."}],
        },
        {"id": "leave", "question": "How much leave?", "references": [{"content": "25 days of paid annual leave"}]},
    ]
    run = httpx.post(
        f"{live_server}/benchmarks",
        params={"wait": "true"},
        json={"document_id": document_id, "questions": questions, "strategies": ["fixed_size", "recursive"],
              "retrievers": ["dense"], "top_k": [1]},
        timeout=300,
    )  # fmt: skip
    assert run.status_code == 200, run.text
    experiment_id = run.json()["id"]

    page.set_viewport_size({"width": 800, "height": 800})
    page.goto(f"/app#benchmarks/experiment/{experiment_id}")
    experiment = page.locator("#panel-benchmarks").get_by_role("region", name="Experiment", exact=True)
    expect(experiment.get_by_role("heading", name="Experiment: berlin.md completed")).to_be_visible()
    # Without scrolling: the Experiment's top is on the first screen (the form and the list come after it).
    assert page.evaluate("window.scrollY") == 0
    top = experiment.bounding_box()["y"]
    assert 0 <= top < 800 / 2, top
    form_top = page.locator("#panel-benchmarks").get_by_role("button", name="Run benchmark").bounding_box()["y"]
    assert form_top > top


def _steps(page) -> dict[str, str]:
    strip = page.get_by_role("navigation", name="Steps")
    items = strip.locator("li[data-step]")
    expect(items).to_have_count(6)
    return {item.get_attribute("data-step"): item.get_attribute("data-done") for item in items.all()}


def test_the_step_strip_marks_each_stage_from_the_data_and_offers_the_next(page, live_server):
    strip = page.get_by_role("navigation", name="Steps")
    following = strip.get_by_test_id("next-step")
    page.goto("/app#admin")
    expect(strip.locator("li[data-step]")).to_have_text(
        ["1 Upload", "2 Corpus", "3 Process", "4 Questions", "5 Benchmark", "6 Decision"]
    )
    expect(strip.locator("li[data-done=true]")).to_have_count(0)
    expect(following).to_contain_text("Next: Upload documents")
    following.get_by_role("button", name="Upload documents").click()
    expect(page.get_by_role("tab", name="Documents")).to_have_attribute("aria-selected", "true")

    ids = {name: _upload(live_server, name, text) for name, text in (("berlin.md", BERLIN), ("madrid.md", MADRID))}
    page.reload()
    expect(strip.locator("li[data-step=upload]")).to_have_attribute("data-done", "true")
    expect(following).to_contain_text("Next: Make a corpus")
    _make_corpus_in_documents(page)  # the strip learns of it from the tab, without a reload
    expect(strip.locator("li[data-step=corpus]")).to_have_attribute("data-done", "true")
    expect(following).to_contain_text("Next: Process the corpus")
    page.get_by_role("tab", name="Admin").click()
    following.get_by_role("button", name="Process the corpus").click()
    expect(page).to_have_url(f"{live_server}/app#documents/corpus/offices")

    _process(f"{live_server}/corpora/offices")
    page.get_by_role("tab", name="Questions").click()  # a change of tab reads the strip again
    expect(strip.locator("li[data-step=process]")).to_have_attribute("data-done", "true")
    expect(following).to_contain_text("Next: Write or upload questions")
    _write_set(live_server, ids)
    page.get_by_role("tab", name="Benchmarks").click()
    expect(strip.locator("li[data-step=questions]")).to_have_attribute("data-done", "true")
    expect(following).to_contain_text("Next: Run a benchmark")
    assert _steps(page) == {"upload": "true", "corpus": "true", "process": "true", "questions": "true",
                            "benchmark": "false", "decision": "false"}  # fmt: skip
