"""Retrieval Inspect in a real browser on the real app (issue 16): the Expansion Tree where neighbours overlap hits,
a miss explained (where the evidence lies, the rank it came at, the chunk that held it), the failures filter, two
configurations side by side, contextual_retrieval's prefix, and a cell stored before evidence ranks were kept."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import select

from chunkbench.storage.db import Database
from chunkbench.storage.schema import BenchmarkCellRow
from conftest import screenshot

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

POLICY = """# Office Policy

## Leave

Every employee receives 25 days of paid annual leave per calendar year. Unused leave can be carried over until
the end of March, after which it expires without compensation. Sick leave requires a doctor's note after three
days of absence, sent to the personnel office.

## Equipment

Laptops are replaced every four years. Broken equipment is reported through the service desk with the ticket
code HW-7731. The service desk answers within one working day and lends a spare device while a repair lasts.

## Travel

Train travel is preferred for journeys under five hours. Hotel costs are reimbursed up to 150 euros a night,
breakfast included. Taxis are reimbursed only after midnight or when no public transport runs.

## Security

Badges are worn visibly at all times inside the building. Visitors sign in at the reception desk and are
accompanied by their host until they leave. Lost badges are reported to security on the same day.
"""
QUESTIONS = [
    {
        "id": "leave",
        "question": "How many days of paid annual leave do employees get, and until when can it be carried over?",
        "expected_answer": "25 days, carried over until the end of March",
        "references": [
            {
                "content": "Every employee receives 25 days of paid annual leave per calendar year. Unused leave can "
                "be carried over until the end of March, after which it expires without compensation."
            }
        ],
    },
    {
        "id": "ticket",
        "question": "Which ticket code is used to report broken equipment?",
        "expected_answer": "HW-7731",
        "references": [{"content": "ticket code HW-7731"}],
    },
    {
        "id": "badges",
        "question": "What happens when a badge is lost?",
        "expected_answer": "It is reported to security on the same day",
        "references": [{"content": "Lost badges are reported to security on the same day."}],
    },
    # About nothing in the policy, its evidence a real sentence: BM25 shares no term with the question.
    {
        "id": "walls",
        "question": "Which colour are the walls painted?",
        "references": [{"content": "Laptops are replaced every four years."}],
    },
]
STRATEGIES = ["fixed_size", "recursive", "contextual_retrieval"]
FIXED, BM25, DENSE, CONTEXTUAL = (
    "fixed_size/dense/k2/n1-1",
    "recursive/bm25/k2",
    "recursive/dense/k2",
    ("contextual_retrieval/dense/k2"),
)


@pytest.fixture
def experiment(live_server: str) -> dict:
    """The policy processed with three strategies and benchmarked (dense and BM25, top 2, ±1/1) through the API."""
    document = httpx.post(f"{live_server}/documents", files={"file": ("policy.md", POLICY.encode())}).json()
    document_id = document["document"]["id"]
    processed = httpx.post(
        f"{live_server}/documents/{document_id}/process",
        params={"wait": "true"},
        json={
            "strategies": STRATEGIES,
            "params": {
                "fixed_size": {"chunk_size": 20, "chunk_overlap": 0},
                "recursive": {"chunk_size": 60},
                "contextual_retrieval": {"chunk_size": 60},
            },
        },
        timeout=300,
    )
    assert processed.status_code == 200, processed.text
    run = httpx.post(
        f"{live_server}/benchmarks",
        params={"wait": "true"},
        json={"document_id": document_id, "questions": QUESTIONS, "strategies": STRATEGIES,
              "retrievers": ["dense", "bm25"], "top_k": [2], "neighbor_prev": 1, "neighbor_next": 1},
        timeout=300,
    )  # fmt: skip
    assert run.status_code == 200, run.text
    return run.json()


@pytest.fixture
def failed_requests(page) -> list[str]:
    """Requests the page made that failed or were answered with an error status (none may be)."""
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(f"{request.url}: {request.failure}"))
    page.on("response", lambda response: failed.append(f"{response.url}: {response.status}") if response.status >= 400
            else None)  # fmt: skip
    return failed


def _cell(experiment: dict, question: str, key: str) -> dict:
    return next(c for c in experiment["cells"] if (c["question_id"], c["config_key"]) == (question, key))


def _open_inspect(page, experiment: dict):
    page.goto("/app#benchmarks")
    panel = page.locator("#panel-benchmarks")
    panel.get_by_role("table", name="Experiments").locator("tbody tr").first.click()
    panel.get_by_role("region", name="Experiment", exact=True).get_by_role("button", name="Retrieval Inspect").click()
    inspect = panel.get_by_role("region", name="Retrieval Inspect")
    expect(inspect.get_by_role("heading", name=f"{experiment['questions'][0]['id']} · question 1 of 4")).to_be_visible()
    return inspect


def _what(entry: dict) -> str:
    return f"hit #{entry['rank']}" if entry["role"] == "hit" else "neighbour"


def _rank_text(chunk: dict, evidence: dict, top_k: int) -> str:
    """What the evidence table says of a chunk's rank, from the stored cell."""
    if chunk["rank"] is not None:
        return f"#{chunk['rank']} (a hit)" if chunk["rank"] <= top_k else f"#{chunk['rank']}, below the top {top_k}"
    if evidence["ranked"] == 0:
        return "not ranked: the retriever returned nothing for this question"
    if evidence["ranked"] < evidence["depth"]:
        return f"not ranked: the retriever ranked only {evidence['ranked']} chunks"
    return f"not in the top {evidence['depth']}"


def test_the_expansion_tree_shows_each_hit_once_and_a_hit_in_another_window_by_its_rank(
    page, experiment, failed_requests
):
    # The leave evidence spans adjacent 20-token chunks: both hits, each in the other's ±1 window.
    cell = _cell(experiment, "leave", FIXED)
    tree = cell["expansion_tree"]
    listed = [(side, n) for node in tree for side in ("before", "after")
              for n in node["neighbors_prev" if side == "before" else "neighbors_next"]]  # fmt: skip
    assert any(n["role"] == "hit" for _, n in listed), tree

    inspect = _open_inspect(page, experiment)
    inspect.get_by_role("combobox", name="Configuration").select_option(FIXED)
    drawn = inspect.get_by_role("region", name="Expansion Tree")
    hits = drawn.locator("ul.inspect-tree > li[data-role=hit]")
    expect(hits).to_have_count(len(tree))
    for node, hit in zip(tree, hits.all(), strict=True):
        expect(hit).to_have_accessible_name(f"hit #{node['rank']}, chunk #{node['chunk_index']}")
        below = hit.locator(":scope > ul > li")
        expected = [
            f"{side}: {_what(n)}, chunk #{n['chunk_index']}"
            for side, key in (("before", "neighbors_prev"), ("after", "neighbors_next"))
            for n in node[key]
        ]
        assert [item.get_attribute("aria-label") for item in below.all()] == expected
    # A hit listed under another carries no second copy of its text; every neighbour appears once.
    also = drawn.locator("li[data-role=hit] li[data-role=hit]")
    expect(also.first).to_contain_text("its own node is hit #")
    expect(also.locator(".mono")).to_have_count(0)
    neighbours = [c["chunk_index"] for c in cell["retrieved"] if c["role"] == "neighbor"]
    expect(drawn.locator("li[data-role=neighbor]")).to_have_count(len(neighbours))
    screenshot(page, "inspect-expansion-tree")
    assert failed_requests == []


def test_a_miss_explained_filtered_and_side_by_side(page, experiment, failed_requests):
    inspect = _open_inspect(page, experiment)
    inspect.get_by_role("combobox", name="Configuration").select_option(BM25)
    # Only the failures: the questions whose hits held none of the evidence under recursive/bm25/k2.
    inspect.get_by_role("combobox", name="Show").select_option("hit")
    misses = [q["id"] for q in experiment["questions"] if _cell(experiment, q["id"], BM25)["metrics"]["hit_at_k"] == 0]
    assert "walls" in misses and len(misses) < len(QUESTIONS)
    rail = inspect.get_by_role("listbox", name="Questions (up and down keys)")
    expect(rail.get_by_role("option")).to_have_count(len(misses))
    expect(inspect.get_by_role("status").filter(has_text="questions:")).to_have_text(
        f"{len(misses)} of {len(QUESTIONS)} questions: hit@k 0 (no evidence in the hits)"
    )
    rail.get_by_role("option").filter(has_text="walls").click()
    expect(inspect.get_by_role("heading", name="walls · question 4 of 4")).to_be_visible()

    # Where the evidence lies, and that BM25 never ranked it; the chunk that holds it, with the evidence marked.
    cell = _cell(experiment, "walls", BM25)
    where = inspect.get_by_role("region", name="Where the evidence is")
    expect(where.get_by_role("heading")).to_have_text("Where the evidence is miss")
    expect(where.get_by_role("status")).to_have_text(
        "1 chunk of recursive holds the evidence; none reached the context."
    )
    [row] = where.get_by_role("table", name="Evidence chunks").locator("tbody tr").all()
    [chunk] = cell["evidence"]["chunks"]
    expect(row.locator("td")).to_have_text(
        [f"#{chunk['chunk_index']}", f"{chunk['start_index']}–{chunk['end_index']}",
         _rank_text(chunk, cell["evidence"], 2), "no"]
    )  # fmt: skip
    expect(where.get_by_role("article").locator("mark.evidence")).to_have_text("Laptops are replaced every four years.")

    # Dense beside BM25 on the same question: its own rank for the same chunk.
    inspect.get_by_role("group", name="Side by side with").get_by_label(DENSE).check()
    columns = [inspect.get_by_role("region", name=key, exact=True) for key in (BM25, DENSE)]
    for column in columns:
        expect(column).to_be_visible()
    dense = _cell(experiment, "walls", DENSE)
    [dense_chunk] = dense["evidence"]["chunks"]
    dense_row = columns[1].get_by_role("table", name="Evidence chunks").locator("tbody tr td")
    expect(dense_row.nth(2)).to_have_text(_rank_text(dense_chunk, dense["evidence"], 2))
    expect(columns[1].get_by_role("region", name="Retrieved chunks").get_by_role("article")).to_have_count(
        len(dense["retrieved"])
    )
    screenshot(page, "inspect-miss-explained")
    assert failed_requests == []


def test_contextual_retrieval_shows_its_prefix_and_an_old_cell_still_renders(
    page, experiment, failed_requests, settings
):
    # A cell stored before evidence ranks were kept (no "evidence"): the same as it was in the database, less that.
    old = _cell(experiment, "ticket", DENSE)
    database = Database(settings.sqlalchemy_url)
    with database.session() as session:
        row = session.scalar(
            select(BenchmarkCellRow).where(
                BenchmarkCellRow.experiment_id == experiment["id"], BenchmarkCellRow.config_key == DENSE,
                BenchmarkCellRow.question_id == "ticket",
            )
        )  # fmt: skip
        row.result = {k: v for k, v in row.result.items() if k != "evidence"}
    database.dispose()

    inspect = _open_inspect(page, experiment)
    inspect.get_by_role("combobox", name="Configuration").select_option(CONTEXTUAL)
    cell = _cell(experiment, "leave", CONTEXTUAL)
    prefixes = inspect.get_by_role("region", name="Retrieved chunks").get_by_label("Context prefix")
    expect(prefixes).to_have_count(len(cell["retrieved"]))
    for chunk, prefix in zip(cell["retrieved"], prefixes.all(), strict=True):
        expect(prefix).to_have_text(re.compile(rf"^prefix · deterministic\s+{re.escape(chunk['prefix'])}$"))
    assert all(c["prefix"].startswith('This chunk is from "Office Policy"') for c in cell["retrieved"])
    screenshot(page, "inspect-contextual-prefix")

    inspect.get_by_role("combobox", name="Configuration").select_option(DENSE)
    inspect.get_by_role("listbox", name="Questions (up and down keys)").get_by_role("option").filter(
        has_text="ticket"
    ).click()
    where = inspect.get_by_role("region", name="Where the evidence is")
    expect(where).to_contain_text("This cell was recorded before chunkbench kept where the evidence lies")
    expect(inspect.get_by_role("region", name="Retrieved chunks").get_by_role("article")).to_have_count(
        len(old["retrieved"])
    )
    assert failed_requests == []


def test_the_inspect_link_keeps_its_configuration_filter_and_side_by_side(page, experiment, failed_requests):
    inspect = _open_inspect(page, experiment)
    inspect.get_by_role("combobox", name="Configuration").select_option(BM25)
    inspect.get_by_role("combobox", name="Show").select_option("hit")
    inspect.get_by_role("group", name="Side by side with").get_by_label(DENSE).check()
    rail = inspect.get_by_role("listbox", name="Questions (up and down keys)")
    rail.get_by_role("option").filter(has_text="walls").click()
    expect(inspect.get_by_role("heading", name="walls · question 4 of 4")).to_be_visible()
    link = page.url
    assert "/config/" in link and "/compare/" in link and "/filter/hit" in link

    def same_view(view) -> None:
        expect(view.get_by_role("combobox", name="Configuration")).to_have_value(BM25)
        expect(view.get_by_role("combobox", name="Show")).to_have_value("hit")
        expect(view.get_by_role("group", name="Side by side with").get_by_label(DENSE)).to_be_checked()
        expect(view.get_by_role("heading", name="walls · question 4 of 4")).to_be_visible()
        for key in (BM25, DENSE):
            expect(view.get_by_role("region", name=key, exact=True)).to_be_visible()
        expect(view.get_by_role("status").filter(has_text="questions:")).to_contain_text("hit@k 0")

    # A reload opens the same view; so does the link pasted into another browser window.
    page.reload()
    same_view(page.locator("#panel-benchmarks").get_by_role("region", name="Retrieval Inspect"))
    other = page.context.new_page()
    other.goto(link)
    same_view(other.locator("#panel-benchmarks").get_by_role("region", name="Retrieval Inspect"))
    other.close()
    # Closing Inspect forgets its state: the next Inspect opens on the defaults.
    inspect = page.locator("#panel-benchmarks").get_by_role("region", name="Retrieval Inspect")
    inspect.get_by_role("button", name="← Back to the Experiment").click()
    assert "/config/" not in page.url and "/filter/" not in page.url
    assert failed_requests == []
