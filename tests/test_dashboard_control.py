"""Issue 16 (items 5, 8, 9) in a real browser on the real app: only what can work is offered and a failed query
clears the answer; honest progress (live counts in the Experiment list and card, report links once a report
exists, Cancel for benchmark and processing jobs, an upload that does not silently change the selection, a PDF
dropped on the Documents tab said to be in the PDF tab); deep links with history; the glossary's tooltips."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest

from chunkbench.benchmarking import experiments, planning, runner
from chunkbench.benchmarking.schemas import METRIC_DIRECTIONS, BenchmarkIn
from chunkbench.jobs import execution
from chunkbench.storage.schema import DEFAULT_TENANT
from chunkbench.storage.vectors import get_vector_store
from conftest import screenshot
from docgen import pdfs
from test_dashboard_benchmarks import SIX, _processed_handbook
from test_dashboard_query_admin import _ingest
from test_queries import HANDBOOK

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

QUESTION_FILE = "handbook-questions.json"


def _question_file(base: str, name: str = QUESTION_FILE, questions: list[dict] = SIX) -> None:
    uploaded = httpx.post(f"{base}/admin/questions", files={"file": (name, json.dumps(questions).encode())})
    assert uploaded.status_code == 201, uploaded.text


def _hold(app) -> threading.Event:
    """Occupy the app's one job worker until the returned event is set: the next job submitted stays queued."""
    gate = threading.Event()
    execution.register_kind("hold", lambda call, progress, stop: {"released": gate.wait(timeout=120)})
    app.state.jobs.submit(kind="hold", tenant_id=DEFAULT_TENANT, document_id=None, request={}, payload={})
    return gate


def _until_cancelling(base: str, kind: str) -> None:
    """Wait until the server has the cancel request (the click only sends it): then the held worker may go on."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(job["kind"] == kind and job["status"] == "cancelling" for job in httpx.get(f"{base}/jobs").json()):
            return
        time.sleep(0.05)
    pytest.fail(f"the {kind} job was never asked to stop")


def _hash(page) -> str:
    return page.evaluate("window.location.hash")


def test_only_what_can_work_is_offered_and_a_failed_query_clears_the_answer(
    page, live_server, settings, tiny_cross_encoder
):
    handbook = _ingest(live_server, "handbook.md", HANDBOOK, ["recursive"])
    page.goto("/app#query")
    form = page.get_by_role("form", name="Ask a question")
    rerank = form.get_by_label("Rerank")
    expect(rerank.locator("option[value=cross_encoder]")).to_be_disabled()
    expect(rerank.locator("option[value=llm]")).to_be_disabled()
    notes = form.get_by_test_id("unavailable-options")
    expect(notes).to_contain_text(
        "Cross-encoder reranking is not available: No cross-encoder is configured: set CHUNKBENCH_CROSS_ENCODER_MODEL"
    )
    expect(notes).to_contain_text(
        "LLM listwise reranking is not available: LLM listwise reranking needs an LLM. No LLM configured: answers are "
        "extractive. Set CHUNKBENCH_LLM_BASE_URL and CHUNKBENCH_LLM_MODEL to use one."
    )
    screenshot(page, "16d-query-unavailable")

    # The server gets a cross-encoder: coming back to the tab, it is offered and reranks.
    settings.cross_encoder_model = str(tiny_cross_encoder)
    page.get_by_role("tab", name="Documents").click()
    page.get_by_role("tab", name="Query").click()
    expect(rerank.locator("option[value=cross_encoder]")).to_be_enabled()
    expect(notes).not_to_contain_text("Cross-encoder")
    rerank.select_option("cross_encoder")
    form.get_by_label("Question", exact=True).fill("How many days of paid annual leave do employees get?")
    form.get_by_role("button", name="Ask", exact=True).click()
    answer = page.get_by_test_id("query-answer")
    expect(answer).to_contain_text("rerank cross_encoder")
    expect(answer).to_contain_text("25 days")

    # The document is deleted meanwhile: the failed question leaves no earlier answer standing beside its error.
    assert httpx.delete(f"{live_server}/documents/{handbook}").status_code == 204
    form.get_by_label("Question", exact=True).fill("Which ticket code is used for broken equipment?")
    form.get_by_role("button", name="Ask", exact=True).click()
    expect(form.get_by_role("alert")).to_contain_text(handbook)
    expect(answer).to_have_count(0)
    expect(page.get_by_text("The answer, its sources, the Expansion Tree")).to_be_visible()
    page.errors[:] = [error for error in page.errors if "status of 404" not in error]

    # The Benchmarks form offers the same: the cross-encoder now, neither the judge nor LLM reranking.
    page.get_by_role("tab", name="Benchmarks").click()
    bench = page.get_by_role("region", name="New benchmark")
    expect(bench.get_by_label("cross-encoder", exact=True)).to_be_enabled()
    expect(bench.get_by_label("LLM listwise (not available)")).to_be_disabled()
    expect(bench.get_by_label("LLM-as-judge")).to_be_disabled()
    expect(bench.get_by_test_id("unavailable-options")).to_contain_text(
        "The LLM-as-judge is not available: The LLM-as-judge needs an LLM."
    )


def test_live_counts_cancel_resume_and_report_links(page, live_app, settings):
    base, app = live_app
    document_id = _processed_handbook(base)
    _question_file(base)
    database = app.state.database

    # A run driven from elsewhere (as `chunkbench bench run` would), paused after its third cell: the list and
    # the card follow it without a reload.
    with database.session() as session:
        request = BenchmarkIn(document_id=document_id, question_set=QUESTION_FILE, concurrency=1)
        plan = planning.plan(session, settings, request, tenant_id=DEFAULT_TENANT)
    experiment_id = experiments.create(database, settings, plan).id
    reported: list[str] = []
    paused, resume = threading.Event(), threading.Event()

    def stop() -> bool:
        if "3/12 cells" in reported and not resume.is_set():
            paused.set()
            resume.wait(timeout=120)
        return False

    page.goto(f"/app#benchmarks/experiment/{experiment_id}")
    panel = page.locator("#panel-benchmarks")
    card = panel.get_by_role("region", name="Experiment", exact=True)
    row = panel.get_by_role("table", name="Experiments").locator("tbody tr")
    expect(card).to_contain_text("cells 0/12")
    expect(row).to_contain_text("0/12")
    # No report exists before the run has finished: no link to one.
    expect(card.get_by_role("link", name="Technical report")).to_have_count(0)
    expect(card.get_by_test_id("experiment-links")).to_contain_text("The reports exist once every cell has run")

    worker = threading.Thread(target=runner.execute, kwargs={
        "database": database, "settings": settings, "store": get_vector_store(settings),
        "experiment_id": experiment_id, "tenant_id": DEFAULT_TENANT, "stop": stop,
        "progress": lambda fraction, message: reported.append(message),
    })  # fmt: skip
    worker.start()
    try:
        assert paused.wait(timeout=120)
        expect(card).to_contain_text("cells 3/12")
        expect(card).to_contain_text("3/12 cells")  # the progress bar's label
        expect(row).to_contain_text("3/12")
        screenshot(page, "16d-live-counts")
    finally:
        resume.set()
        worker.join(timeout=300)
    expect(card.get_by_role("heading", name=re.compile("completed"))).to_be_visible(timeout=60_000)
    expect(card).to_contain_text("cells 12/12")
    expect(row).to_contain_text("12/12")
    expect(card.get_by_role("link", name="Technical report")).to_be_visible()

    # A run started in the form and cancelled while it waits for the worker: nothing is lost, Resume finishes it.
    gate = _hold(app)
    bench = panel.get_by_role("region", name="New benchmark")
    bench.get_by_label("recursive").uncheck()
    bench.get_by_role("button", name="Run benchmark").click()
    expect(card).to_contain_text("cells 0/6")
    expect(card.get_by_role("button", name="Cancel")).to_be_visible()
    bench.get_by_role("button", name="Cancel", exact=True).click()
    expect(bench.get_by_role("button", name="Cancelling…")).to_be_disabled()
    _until_cancelling(base, "benchmark")
    gate.set()
    notice = "Cancelled after 0 of 6 cells; the finished cells are kept. Resume the Experiment to run the other 6."
    expect(bench.get_by_role("status").filter(has_text="Cancelled after")).to_have_text(notice)
    expect(card.get_by_role("heading", name=re.compile("interrupted"))).to_be_visible()
    expect(card.get_by_role("status").filter(has_text="Cancelled after")).to_have_text(notice)
    expect(card.get_by_test_id("experiment-links")).to_contain_text("resume the run")
    screenshot(page, "16d-cancelled")
    card.get_by_role("button", name="Resume").click()
    expect(card.get_by_role("heading", name=re.compile("completed"))).to_be_visible(timeout=120_000)
    expect(card).to_contain_text("cells 6/6")
    expect(card.get_by_role("link", name="Managerial report")).to_be_visible()
    expect(panel.get_by_role("table", name="Experiments").locator("tbody tr").first).to_contain_text("6/6")


def test_cancel_processing_and_uploads_that_say_what_they_did(page, live_app, tmp_path):
    base, app = live_app
    document = httpx.post(f"{base}/documents", files={"file": ("notes.md", HANDBOOK.encode())}).json()["document"]
    page.goto(f"/app#documents/doc/{document['id']}")
    process = page.get_by_role("region", name="Process", exact=True)
    for strategy in ("fixed_size", "semantic", "contextual_retrieval", "semantic_parent_child"):
        process.get_by_label(strategy, exact=True).uncheck()
    gate = _hold(app)
    process.get_by_role("button", name="Run 1 strategy").click()
    process.get_by_role("button", name="Cancel").click()
    _until_cancelling(base, "process")
    gate.set()
    expect(process.get_by_role("status")).to_have_text(
        "Cancelled before processing started; nothing changed. Run recursive again."
    )
    assert httpx.get(f"{base}/documents/{document['id']}").json()["status"] == "parsed"

    # A PDF dropped on the Documents tab joins the PDF tab's list: the row says so, and opens it there.
    pdf = pdfs.make_structured_pdf(tmp_path, chapters=1)
    documents = page.locator("#panel-documents")
    documents.get_by_label("Choose files to upload").set_input_files(pdf)
    uploads = documents.get_by_role("table", name="Uploads")
    expect(uploads.locator("tr", has_text=pdf.name)).to_contain_text("added in the PDF tab, not here")
    expect(uploads.locator(".badge.good")).to_have_count(0)
    uploads.get_by_role("button", name="open it in the PDF tab").click()
    expect(page.get_by_role("tab", name="PDF")).to_have_attribute("aria-selected", "true")
    [listed] = [d for d in httpx.get(f"{base}/documents").json()["items"] if d["filename"] == pdf.name]
    assert _hash(page) == f"#pdf/doc/{listed['id']}"
    expect(page.locator("#panel-pdf").get_by_role("heading", name=pdf.name)).to_be_visible()

    # A question file uploaded while another is chosen: the choice stays, the page says so and offers to switch.
    _question_file(base, "first.json", SIX[:2])
    page.get_by_role("tab", name="Benchmarks").click()
    bench = page.get_by_role("region", name="New benchmark")
    chosen = bench.get_by_role("combobox", name="Question file", exact=True)
    expect(chosen).to_have_value("first.json")
    bench.locator('input[type="file"]').set_input_files(
        files=[{"name": "second.json", "mimeType": "application/json", "buffer": json.dumps(SIX).encode()}]
    )
    status = bench.get_by_role("status").filter(has_text="Uploaded second.json")
    expect(status).to_contain_text("This benchmark still uses first.json.")
    expect(chosen).to_have_value("first.json")
    status.get_by_role("button", name="Use second.json").click()
    expect(chosen).to_have_value("second.json")
    expect(status).to_contain_text("This benchmark uses it.")


def test_deep_links_history_and_the_glossary(page, live_server):
    document_id = _processed_handbook(live_server)
    _question_file(live_server)
    made = httpx.post(f"{live_server}/corpora", json={"name": "handbooks", "document_ids": [document_id]})
    assert made.status_code == 201, made.text
    experiment = httpx.post(
        f"{live_server}/benchmarks", params={"wait": "true"},
        json={"document_id": document_id, "question_set": QUESTION_FILE}, timeout=300,
    ).json()  # fmt: skip

    # A document and a corpus: the URL names both, a reload opens them again.
    page.goto(f"/app#documents/doc/{document_id}")
    documents = page.locator("#panel-documents")
    expect(documents.get_by_role("heading", name="handbook.md")).to_be_visible()
    documents.get_by_label("Show corpus").select_option("handbooks")
    assert _hash(page) == f"#documents/doc/{document_id}/corpus/handbooks"
    page.reload()
    expect(documents.get_by_role("heading", name="handbook.md")).to_be_visible()
    expect(documents.get_by_label("Show corpus")).to_have_value("handbooks")

    # Tabs are history entries: Back returns to the document, Forward to the tab after it.
    page.get_by_role("tab", name="Query").click()
    assert _hash(page) == "#query"
    page.go_back()
    expect(page.get_by_role("tab", name="Documents")).to_have_attribute("aria-selected", "true")
    assert _hash(page) == f"#documents/doc/{document_id}/corpus/handbooks"
    page.go_back()  # the corpus was chosen after the document was opened
    expect(documents.get_by_label("Show corpus")).to_have_value("")
    page.go_forward()
    page.go_forward()
    expect(page.get_by_role("tab", name="Query")).to_have_attribute("aria-selected", "true")

    # An Experiment and a question in Retrieval Inspect.
    page.goto(f"/app#benchmarks/experiment/{experiment['id']}")
    panel = page.locator("#panel-benchmarks")
    card = panel.get_by_role("region", name="Experiment", exact=True)
    expect(card.get_by_role("heading", name=re.compile("Experiment: handbook.md"))).to_be_visible()
    card.get_by_role("button", name="Retrieval Inspect").click()
    inspect = panel.get_by_role("region", name="Retrieval Inspect")
    inspect.get_by_role("option", name=re.compile("^hotel")).click()
    expect(inspect.get_by_role("heading", name="hotel · question 3 of 6")).to_be_visible()
    assert _hash(page) == f"#benchmarks/experiment/{experiment['id']}/inspect/{experiment['id']}/question/hotel"
    page.reload()
    expect(inspect.get_by_role("heading", name="hotel · question 3 of 6")).to_be_visible()
    inspect.get_by_role("button", name="← Back to the Experiment").click()
    assert _hash(page) == f"#benchmarks/experiment/{experiment['id']}"
    page.go_back()
    expect(inspect.get_by_role("heading", name="hotel · question 3 of 6")).to_be_visible()
    page.goto(f"/app#query/doc/{document_id}")
    expect(page.get_by_test_id("query-document")).to_have_value(document_id)

    # The glossary: every metric the API names has an entry; a term explains itself on hover and on focus.
    names = page.evaluate("import('/app/static/glossary.js').then((g) => Object.keys(g.GLOSSARY))")
    assert set(METRIC_DIRECTIONS) <= set(names)
    page.goto(f"/app#benchmarks/experiment/{experiment['id']}")
    aggregates = card.get_by_role("table", name="Aggregates")
    tip = page.locator("#glossary-tip")
    aggregates.locator("th [data-term=tok_at_k]").hover()
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("cl100k tokens of everything the answerer receives")
    screenshot(page, "16d-glossary")
    # The pointer leaves: charts still loading above the table can move another term under a resting pointer.
    page.mouse.move(0, 0)
    best = aggregates.locator("th [data-term=p_best]")
    best.focus()
    expect(tip).to_contain_text("paired bootstrap resamples")
    expect(best).to_have_attribute("aria-describedby", "glossary-tip")
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()
    card.locator("[data-term=neighbors]").first.hover()
    expect(tip).to_contain_text("±0/0 means none")
