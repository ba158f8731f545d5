"""The Benchmarks tab in a real browser on a pruned Experiment: the Pruned table (configuration, rung, questions,
mean, interval) beneath the aggregates, a "pruned" badge in them, and the form's pruning option in its advanced
options (refused on a small grid with the server's message)."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from test_pruning import GRID, PRUNE, _document, _questions

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect


def test_a_pruned_experiment_shows_what_stopped_and_the_form_offers_pruning(page, live_server):
    document = httpx.post(
        f"{live_server}/documents", files={"file": ("schedule.md", _document().encode())}
    ).json()["document"]  # fmt: skip
    processed = httpx.post(
        f"{live_server}/documents/{document['id']}/process", params={"wait": "true"}, timeout=300,
        json={"strategies": ["fixed_size", "recursive"],
              "params": {"fixed_size": {"chunk_size": 6, "chunk_overlap": 0}, "recursive": {"chunk_size": 20}}},
    )  # fmt: skip
    assert processed.status_code == 200, processed.text
    ran = httpx.post(
        f"{live_server}/benchmarks", params={"wait": "true"}, timeout=300,
        json={"document_id": document["id"], "questions": _questions(), "name": "pruned grid", "prune": PRUNE, **GRID},
    )  # fmt: skip
    assert ran.status_code == 200, ran.text
    stored = ran.json()
    stopped = [p["config_key"] for p in stored["pruning"]["pruned"]]
    questions = json.dumps({"questions": _questions()}).encode()
    uploaded = httpx.post(f"{live_server}/admin/questions", files={"file": ("schedule.json", questions)})
    assert uploaded.status_code in (200, 201), uploaded.text

    page.goto("/app#benchmarks")
    panel = page.locator("#panel-benchmarks")
    panel.get_by_role("button", name=re.compile(r"^pruned grid: open the Experiment")).click()
    experiment = panel.get_by_role("region", name="Experiment", exact=True)
    pruned = experiment.get_by_role("region", name="Pruned", exact=True)
    expect(pruned).to_contain_text(f"Pruned: {len(stopped)} configurations stopped early")
    expect(pruned).to_contain_text("Holm")
    rows = pruned.get_by_test_id("pruned-table").locator("tbody tr")
    expect(rows).to_have_count(len(stopped))
    first = stored["pruning"]["pruned"][0]
    expect(rows.first.locator("td")).to_have_text(
        [first["config_key"], "1", "10", f"{first['mean']:.3f}", re.compile(r"vs recursive/dense/k1"),
         re.compile(r"%$")]
    )  # fmt: skip
    aggregates = experiment.get_by_role("table", name="Aggregates")
    expect(aggregates.locator("tr", has_text=stopped[-1]).get_by_text("pruned", exact=True)).to_be_visible()

    # The form: pruning sits in the advanced options, off; asked for on this 2-configuration grid (the form's default
    # k), the dry run shows the server's refusal.
    form = panel.get_by_role("region", name="New benchmark")
    expect(form.get_by_role("combobox", name="Question file", exact=True)).to_have_value("schedule.json")
    advanced = form.get_by_test_id("advanced-options")
    advanced.locator("summary").click()
    toggle = advanced.get_by_test_id("prune-toggle")
    expect(toggle).not_to_be_checked()
    toggle.check()
    form.get_by_role("button", name="Dry run").click()
    expect(form.get_by_role("alert").filter(has_text="30 or more configurations")).to_be_visible()
    # The refusal is the one 400 the browser logged (an expected one).
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.errors.clear()
