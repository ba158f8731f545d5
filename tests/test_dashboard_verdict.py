"""The verdict and the charts in the dashboard, in a real browser on the real app (MiniLM, embedded Qdrant): the
verdict first in the server's words with its details collapsed, in the Experiment view and on the Decision Board;
the reports' SVG charts inline (bars with 95% intervals, recall against context tokens, the per-question heatmap);
and a wide, long aggregates table that scrolls in its frame under a sticky header with its first column fixed."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from conftest import screenshot
from test_benchmarks import QUESTIONS, processed_handbook

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

# The screenshots, kept outside the repository.
SCREENS = Path("/work/screens16")
WIDE = {"width": 1440, "height": 900}


def _experiment(base: str, name: str, **fields) -> dict:
    """The handbook processed with fixed_size and recursive, then benchmarked on the five questions."""
    with httpx.Client(base_url=base, timeout=300) as http:
        document_id = processed_handbook(http)
        body = {"document_id": document_id, "questions": QUESTIONS, "name": name, **fields}
        ran = http.post("/benchmarks", params={"wait": "true"}, json=body)
        assert ran.status_code == 200, ran.text
        return ran.json()


def _failed_requests(page) -> list[str]:
    """Every request of the page that fails or answers an error, as it happens."""
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(f"{request.method} {request.url}: {request.failure}"))
    page.on("response", lambda response: failed.append(f"{response.status} {response.url}") if response.status >= 400
            else None)  # fmt: skip
    return failed


def _save(locator, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    locator.screenshot(path=str(SCREENS / f"{name}.png"))


def _box(locator) -> dict:
    box = locator.bounding_box()
    assert box is not None
    return box


def test_the_experiment_view_says_the_verdict_first_and_draws_the_reports_charts(page, live_server):
    # 2 strategies × 3 retrievers × 2 k: twelve configurations, a table longer and wider than its column.
    stored = _experiment(live_server, "grid", retrievers=["dense", "bm25", "hybrid"], top_k=[1, 3])
    keys = [c["key"] for c in stored["configurations"]]
    assert len(keys) == 12
    failed = _failed_requests(page)
    page.set_viewport_size(WIDE)
    page.goto("/app#benchmarks")
    panel = page.locator("#panel-benchmarks")
    panel.get_by_role("button", name=re.compile(r"^grid: open the Experiment")).click()
    experiment = panel.get_by_role("region", name="Experiment", exact=True)

    # The verdict first, the server's words exactly; the reasons beneath it, collapsed until asked for.
    decision = experiment.get_by_role("region", name="Decision")
    expect(decision.get_by_test_id("decision-verdict")).to_have_text(stored["decision"]["verdict"])
    details = decision.get_by_test_id("decision-details")
    expect(details).not_to_have_attribute("open", "")
    expect(details.get_by_text(stored["decision"]["reasons"][0], exact=True)).to_be_hidden()
    details.locator("summary").click()
    expect(details.get_by_text(stored["decision"]["reasons"][0], exact=True)).to_be_visible()
    _save(decision, "verdict-experiment")

    # The aggregates table never clips. At 1440×900 its twelve rows all show and it scrolls sideways in its frame;
    # in a shorter window it scrolls down too. Scrolled to the far corner, the last row and the last column header
    # are in view, the header row still on top and the configuration column still at the left.
    table = experiment.get_by_role("table", name="Aggregates")
    expect(table.locator("tbody tr")).to_have_count(12)
    frame = table.locator("xpath=..")
    assert frame.evaluate("f => f.scrollWidth > f.clientWidth && f.scrollHeight <= f.clientHeight")
    page.set_viewport_size({"width": 1440, "height": 560})
    assert frame.evaluate("f => f.scrollHeight > f.clientHeight")
    frame.evaluate("f => { f.scrollTop = f.scrollHeight; f.scrollLeft = f.scrollWidth; }")
    inside = _box(frame)
    last_header = _box(table.locator("thead th").last)
    last_row = _box(table.locator("tbody tr").last.locator("td").first)
    first_header = _box(table.locator("thead th").first)
    for box in (last_header, last_row):
        assert inside["x"] - 1 <= box["x"] and box["x"] + box["width"] <= inside["x"] + inside["width"] + 1
        assert inside["y"] - 1 <= box["y"] and box["y"] + box["height"] <= inside["y"] + inside["height"] + 1
    assert abs(first_header["y"] - inside["y"]) <= 2 and abs(first_header["x"] - inside["x"]) <= 2
    assert abs(last_row["x"] - inside["x"]) <= 2
    expect(table.locator("tbody tr").last.locator("td").first).to_contain_text(keys[-1])
    _save(frame, "table-frame-scrolled")
    page.set_viewport_size(WIDE)

    # The charts: the reports' SVG inline; the bars of the primary metric first, with a whisker per configuration.
    charts = experiment.get_by_test_id("charts")
    bars = charts.locator("[data-chart='bars-recall'] svg.cb-standalone")
    expect(bars.locator("line.whisker[data-config]")).to_have_count(12)
    stat = stored["aggregate"][keys[0]]["metrics"]["recall"]
    expect(bars.locator(f"g[data-config='{keys[0]}'] > title")).to_have_text(
        f"{keys[0]}: Recall {stat['mean']:.2f} (95% CI {stat['ci_low']:.2f}–{stat['ci_high']:.2f})"
    )
    # Another metric's bars, picked by name.
    charts.get_by_label("Mean with its 95% interval: metric").select_option(label="Context tokens")
    expect(charts.locator("[data-chart='bars-tok_at_k'] line.whisker[data-config]")).to_have_count(12)
    # Recall against context tokens: one line per configuration.
    expect(charts.locator("[data-chart='curve-recall'] g.curve-line polyline")).to_have_count(12)
    # The per-question heatmap: a cell per question × configuration, each titled with its score.
    heat = charts.locator("[data-chart='heatmap-recall'] rect.hm-cell[data-question]")
    expect(heat).to_have_count(len(QUESTIONS) * 12)
    cell = next(c for c in stored["cells"] if c["config_key"] == keys[0] and c["question_id"] == "ticket")
    titled = charts.locator(f"[data-chart='heatmap-recall'] rect[data-question='ticket'][data-config='{keys[0]}']")
    expect(titled.locator("title")).to_have_text(f"ticket · {keys[0]}: Recall {cell['metrics']['recall']:.2f}")
    # Each chart is the server's own SVG: one chart code for the dashboard and the reports.
    served = httpx.get(f"{live_server}/benchmarks/{stored['id']}/charts/curve-recall").text
    assert served.count("<polyline") == 12
    _save(charts, "charts-experiment")
    screenshot(page, "verdict-experiment")
    assert failed == []


def test_the_decision_board_says_the_same_verdict_with_the_charts(page, live_server):
    stored = _experiment(live_server, "pair")
    failed = _failed_requests(page)
    page.set_viewport_size(WIDE)
    page.goto("/app#decision")
    card = page.get_by_test_id("verdict")
    expect(card).to_have_count(1)
    expect(card.get_by_test_id("decision-verdict")).to_have_text(stored["decision"]["verdict"])
    # The details are collapsed beneath the verdict and the charts.
    details = card.get_by_test_id("decision-details")
    expect(details).not_to_have_attribute("open", "")
    expect(details.get_by_role("table", name="Standing of each configuration")).to_be_hidden()
    keys = [c["key"] for c in stored["configurations"]]
    charts = card.get_by_test_id("charts")
    expect(charts.locator("[data-chart='bars-recall'] line.whisker[data-config]")).to_have_count(len(keys))
    expect(charts.locator("[data-chart='curve-recall'] polyline")).to_have_count(len(keys))
    # The heatmap waits behind its disclosure: drawn only once opened.
    expect(charts.locator("[data-chart^='heatmap']")).to_have_count(0)
    charts.locator("details.charts-more > summary").click()
    expect(charts.locator("[data-chart='heatmap-recall'] rect.hm-cell[data-question]")).to_have_count(
        len(QUESTIONS) * len(keys)
    )
    _save(card, "verdict-decision-board")
    screenshot(page, "verdict-decision-board")
    assert failed == []
