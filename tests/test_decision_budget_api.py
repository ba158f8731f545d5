"""Re-deciding a stored Experiment at another context budget: the API route (the Decision Board's control) makes
the Decision again from the stored cells, with its verdict, and stores nothing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from chunkbench.benchmarking.verdicts import verdict
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from test_benchmarks import QUESTIONS, processed_handbook


@pytest.mark.model
def test_a_decision_is_made_again_at_another_budget_without_storing_it(client, settings, monkeypatch) -> None:
    document_id = processed_handbook(client)
    body = {"document_id": document_id, "questions": QUESTIONS, "retrievers": ["bm25"], "top_k": [1, 3]}
    created = client.post("/benchmarks", params={"wait": "true"}, json=body)
    assert created.status_code == 200, created.text
    experiment = created.json()
    stored = experiment["decision"]
    default = stored["budget_matched"]["budget"]
    assert stored["budget_matched"]["source"] == "default" and stored["frontier"]

    again = client.get(f"/benchmarks/{experiment['id']}/decision", params={"budget": 7})
    assert again.status_code == 200, again.text
    decision = again.json()
    assert decision["budget_matched"]["budget"] == 7 and decision["budget_matched"]["source"] == "request"
    # The verdict is the one function's, on this Decision; the full-context figures are those stored.
    assert decision["verdict"] == verdict(decision)
    assert decision["means"] == stored["means"] and decision["frontier"] == stored["frontier"]
    # Nothing is stored: the Experiment keeps its Decision at the default budget.
    kept = client.get(f"/benchmarks/{experiment['id']}").json()["decision"]
    assert kept["budget_matched"]["budget"] == default

    assert client.get(f"/benchmarks/{experiment['id']}/decision", params={"budget": 0}).status_code == 422
    missing = client.get("/benchmarks/no-such-experiment/decision", params={"budget": 7})
    assert missing.status_code == 404

    # The CLI says the same: `bench show ID --budget 7` shows the Decision made again at 7 tokens.
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    try:
        shown = CliRunner().invoke(cli_app, ["bench", "show", experiment["id"], "--budget", "7", "--json"])
    finally:
        get_settings.cache_clear()
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["decision"]["verdict"] == decision["verdict"]


def test_the_decision_board_decides_again_at_the_budget_typed(page, live_server) -> None:
    """In a real browser: the Decision Board's budget control asks the server, and shows its verdict at that budget;
    the benchmark form sends a budget with its request."""
    import httpx
    import pytest

    expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect
    with httpx.Client(base_url=live_server, timeout=300) as http:
        document_id = processed_handbook(http)
        body = {"document_id": document_id, "questions": QUESTIONS, "name": "budgeted"}
        experiment = http.post("/benchmarks", params={"wait": "true"}, json=body).json()
        expected = http.get(f"/benchmarks/{experiment['id']}/decision", params={"budget": 7}).json()["verdict"]
    page.goto("/app#decision")
    card = page.get_by_test_id("verdict")
    expect(card).to_have_count(1)
    control = card.get_by_test_id("budget-control")
    expect(control.get_by_test_id("budget-input")).to_have_value(
        str(experiment["decision"]["budget_matched"]["budget"])
    )
    control.get_by_test_id("budget-input").fill("7")
    control.get_by_role("button", name="Decide").click()
    expect(card.get_by_test_id("budget-verdict")).to_have_text(f"At 7 tokens: {expected}")
    # The stored verdict stays above it, unchanged.
    expect(card.get_by_test_id("decision-verdict")).to_have_text(experiment["decision"]["verdict"])

    # The benchmark form sends the budget typed in its advanced options with the request (here: its dry run).
    with httpx.Client(base_url=live_server, timeout=60) as http:
        uploaded = http.post(
            "/admin/questions", files={"file": ("handbook.json", json.dumps({"questions": QUESTIONS}).encode())}
        )
        assert uploaded.status_code in (200, 201), uploaded.text
    page.goto("/app#benchmarks")
    form = page.locator("#panel-benchmarks").get_by_role("region", name="New benchmark")
    expect(form.get_by_role("combobox", name="Question file", exact=True)).to_have_value("handbook.json")
    advanced = form.get_by_test_id("advanced-options")
    advanced.locator("summary").click()
    advanced.get_by_test_id("budget-field").fill("7")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/benchmarks")) as sent:
        form.get_by_role("button", name="Dry run").click()
    assert json.loads(sent.value.post_data)["budget"] == 7
