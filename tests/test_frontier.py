"""The recall–tokens frontier: the configurations best for some budget (none other reaches as much at no more
context tokens), computed, drawn in both reports with its sentence, served by the charts route and shown in the
dashboard's Experiment view and Decision Board."""

from __future__ import annotations

import itertools
import re
from statistics import median

import httpx
import pytest
from lxml import etree
from lxml import html as lxml_html

from chunkbench.benchmarking import context_budget
from chunkbench.benchmarking.report.render import chart_index, render_chart, render_report
from chunkbench.errors import NotFoundError
from conftest import screenshot
from report_fixtures import key, make_experiment, make_failed
from test_benchmarks import QUESTIONS, processed_handbook

SVG = {"s": "http://www.w3.org/2000/svg"}
# The fixture's frontier (report_fixtures: median tok@k is base + 10): recall 0.45 at 410, 0.60 at 910, 0.85 at
# 2,310; fixed_size (0.70 at 2,570) and contextual_retrieval (0.80 at 2,610) are dominated by recursive.
FRONTIER = [key("semantic_parent_child"), key("semantic"), key("recursive")]
DOMINATED = sorted([key("contextual_retrieval"), key("fixed_size")])
SENTENCE = (
    "Best for some budget: semantic_parent_child/dense/k5 (recall 0.45 at 410 tokens) up to 910 tokens, then "
    "semantic/dense/k5 (recall 0.60 at 910 tokens) up to 2,310 tokens, then recursive/dense/k5 (recall 0.85 at "
    "2,310 tokens) beyond."
)


# ---------------------------------------------------------------------------------------------- the computation


def test_dominated_configurations_are_left_off_the_frontier() -> None:
    points = {"A": (100.0, 0.5), "B": (200.0, 0.7), "C": (300.0, 0.6), "D": (400.0, 0.9), "E": (150.0, 0.4)}
    # C is beaten by B with fewer tokens, E by A; D costs most but is best, so it is best for the largest budgets.
    assert context_budget.frontier(points) == ["A", "B", "D"]


def test_an_equal_metric_at_more_tokens_is_dominated_and_exact_ties_keep_the_first_given() -> None:
    points = {"B": (200.0, 0.7), "A": (100.0, 0.5), "cheap": (180.0, 0.7), "twin": (100.0, 0.5)}
    # B ties "cheap" on the metric at more tokens: the cheaper one stays. A and twin are equal in both: A, given
    # first, stays.
    assert context_budget.frontier(points) == ["A", "cheap"]
    # Whatever the order, the same shape: the first given of the two twins, then cheap.
    for order in itertools.permutations(points):
        first_twin = next(k for k in order if k in ("A", "twin"))
        assert context_budget.frontier({k: points[k] for k in order}) == [first_twin, "cheap"]


def test_configurations_without_tokens_or_a_metric_are_left_out_and_lower_can_be_better() -> None:
    points = {"A": (100.0, 0.5), "B": (None, 0.9), "C": (50.0, None), "D": (300.0, 0.2)}
    assert context_budget.frontier(points) == ["A"]
    # A metric where lower is better (a latency, say): D reaches 0.2 for 300 tokens, better than A's 0.5.
    assert context_budget.frontier(points, higher_is_better=False) == ["A", "D"]
    assert context_budget.frontier({}) == []


# ---------------------------------------------------------------------------------------------- both reports


def _frontier_svg(tree) -> tuple[list[str], list[str]]:
    """The configurations drawn on and off the frontier in a report's frontier chart."""
    [svg] = tree.xpath("//section[@id='frontier']//svg[contains(@class, 'cb-frontier')]")
    on = [g.get("data-config") for g in svg.xpath(".//g[@data-frontier='yes']")]
    off = sorted(g.get("data-config") for g in svg.xpath(".//g[@data-frontier='no']"))
    return on, off


@pytest.mark.parametrize("view", ["managerial", "technical"])
def test_both_reports_draw_the_frontier_with_its_points_labelled_and_say_it_in_words(view: str) -> None:
    tree = lxml_html.document_fromstring(render_report(make_experiment(), view=view))
    on, off = _frontier_svg(tree)
    assert on == FRONTIER and off == DOMINATED
    [svg] = tree.xpath("//section[@id='frontier']//svg[contains(@class, 'cb-frontier')]")
    # Only the frontier's points are labelled, each with its configuration.
    assert [t.text for t in svg.xpath(".//text[@class='frontier-label']")] == FRONTIER
    # The step line rises once per frontier point after the first, then runs on to the right edge.
    [step] = svg.xpath(".//path[@class='frontier-step']")
    assert step.get("d").count(" V") == len(FRONTIER) - 1
    # The Decision's budget (none stored: the smallest median context, 410 of the axis's 3,000) as a vertical line.
    [mark] = svg.xpath(".//line[@class='budget-mark']")
    assert mark.get("x1") == mark.get("x2") and float(mark.get("x1")) == round(48 + 520 * 410 / 3000, 1)
    assert "best for some budget" in svg.get("aria-label")
    assert tree.xpath("//p[@id='frontier-sentence']")[0].text_content() == SENTENCE
    assert tree.xpath("//p[@id='frontier-dominated']")[0].text_content().endswith(", ".join(DOMINATED) + ".")
    tips = {g.get("data-config"): g.xpath("title")[0].text for g in svg.xpath(".//g[@data-config]")}
    assert tips[key("fixed_size")] == (
        "fixed_size/dense/k5: Recall 0.70 at 2,570 context tokens (dominated: another reaches as much with no more "
        "tokens)"
    )


def test_the_decisions_stored_frontier_is_the_one_drawn_and_said() -> None:
    # A Decision that stores its frontier (decision.frontier): the report draws that one, at its own figures.
    exp = make_experiment()
    exp["decision"]["frontier"] = [
        {"config": key("semantic"), "context": 900.0, "mean": 0.6, "from_budget": 900.0, "to_budget": 2300.0},
        {"config": key("recursive"), "context": 2300.0, "mean": 0.85, "from_budget": 2300.0, "to_budget": None},
    ]
    tree = lxml_html.document_fromstring(render_report(exp, view="technical"))
    on, off = _frontier_svg(tree)
    assert on == [key("semantic"), key("recursive")] and key("semantic_parent_child") in off
    assert tree.xpath("//p[@id='frontier-sentence']")[0].text_content() == (
        "Best for some budget: semantic/dense/k5 (recall 0.60 at 900 tokens) up to 2,300 tokens, then "
        "recursive/dense/k5 (recall 0.85 at 2,300 tokens) beyond."
    )


def test_without_a_decision_the_frontier_is_recomputed_from_the_cells() -> None:
    # A running Experiment has no Decision yet: each configuration's median tok@k and its aggregate mean.
    exp = make_experiment()
    exp["decision"] = None
    tree = lxml_html.document_fromstring(render_report(exp, view="managerial"))
    assert _frontier_svg(tree) == (FRONTIER, DOMINATED)
    assert tree.xpath("//p[@id='frontier-sentence']")[0].text_content() == SENTENCE


def test_the_frontier_marks_the_budget_the_decision_compared_at() -> None:
    exp = make_experiment()
    exp["decision"]["budget_matched"] = {"budget": 1500, "metric": "recall"}
    tree = lxml_html.document_fromstring(render_report(exp, view="managerial"))
    [svg] = tree.xpath("//section[@id='frontier']//svg[contains(@class, 'cb-frontier')]")
    [label] = [t for t in svg.xpath(".//text") if (t.text or "").startswith("budget ")]
    assert label.text == "budget 1,500"
    # 1,500 of the axis's 3,000 tokens: half way along the plot.
    [mark] = svg.xpath(".//line[@class='budget-mark']")
    assert float(mark.get("x1")) == 48 + 520 / 2


def test_a_configuration_with_no_result_is_not_drawn_and_one_point_is_no_frontier() -> None:
    # semantic_parent_child failed on every question: semantic is now the cheapest on the frontier.
    on, off = _frontier_svg(lxml_html.document_fromstring(render_report(make_failed(), view="technical")))
    assert on == [key("semantic"), key("recursive")] and key("semantic_parent_child") not in on + off
    lone = make_experiment()
    lone["aggregate"] = {key("recursive"): lone["aggregate"][key("recursive")]}
    lone["configurations"] = [c for c in lone["configurations"] if c["key"] == key("recursive")]
    lone["cells"] = [c for c in lone["cells"] if c["config_key"] == key("recursive")]
    tree = lxml_html.document_fromstring(render_report(lone, view="managerial"))
    assert tree.xpath("//section[@id='frontier']") == []
    assert "frontier-recall" not in [c["name"] for c in chart_index(lone)]


def test_the_frontier_served_alone_carries_its_sentence() -> None:
    svg = etree.fromstring(render_chart(make_experiment(), "frontier-recall").encode())
    assert svg.get("data-chart") == "frontier-recall"
    words = " ".join(
        t.text for t in svg.xpath("//s:text[contains(@class, 'frontier-sentence')]/s:tspan", namespaces=SVG)
    )
    assert words == SENTENCE


# ---------------------------------------------------------------------------------------------- the charts route


def test_a_frontier_the_decision_cannot_draw_is_a_404_naming_why() -> None:
    # The aggregates have two configurations, but the Decision's means only one: no frontier to draw.
    exp = make_experiment()
    exp["decision"]["means"] = {key("recursive"): 0.85}
    assert "frontier-recall" in [c["name"] for c in chart_index(exp)]
    with pytest.raises(NotFoundError, match="needs two configurations with both context tokens and recall"):
        render_chart(exp, "frontier-recall")


def _expected_frontier(experiment: dict) -> list[str]:
    """The frontier from the Experiment's own figures: median tok@k of its cells (the context the Decision's budget
    cuts to) and mean recall."""
    points = {}
    for config in experiment["configurations"]:
        tokens = [c["metrics"]["tok_at_k"] for c in experiment["cells"] if c["config_key"] == config["key"]
                  and c["status"] == "ok"]  # fmt: skip
        points[config["key"]] = (median(tokens), experiment["aggregate"][config["key"]]["metrics"]["recall"]["mean"])
    return context_budget.frontier(points)


@pytest.mark.model
def test_the_charts_route_serves_the_frontier_of_a_real_benchmark(client) -> None:
    document_id = processed_handbook(client)
    body = {"document_id": document_id, "questions": QUESTIONS, "retrievers": ["dense", "bm25"]}
    ran = client.post("/benchmarks", params={"wait": "true"}, json=body)
    assert ran.status_code == 200, ran.text
    experiment = ran.json()
    listed = {c["name"]: c for c in client.get(f"/benchmarks/{experiment['id']}/charts").json()}
    assert listed["frontier-recall"]["kind"] == "frontier"
    response = client.get(listed["frontier-recall"]["url"])
    assert response.status_code == 200 and response.headers["content-type"].startswith("image/svg+xml")
    svg = etree.fromstring(response.content)
    on = [g.get("data-config") for g in svg.xpath("//s:g[@data-frontier='yes']", namespaces=SVG)]
    drawn = svg.xpath("//s:g[@data-frontier]", namespaces=SVG)
    assert on == _expected_frontier(experiment) and on
    assert sorted(g.get("data-config") for g in drawn) == sorted(c["key"] for c in experiment["configurations"])
    # The managerial report names the same frontier.
    report = lxml_html.document_fromstring(client.get(f"/benchmarks/{experiment['id']}/report").text)
    assert _frontier_svg(report)[0] == on


# ---------------------------------------------------------------------------------------------- the dashboard


def test_the_frontier_chart_renders_in_the_experiment_view_and_on_the_decision_board(page, live_server) -> None:
    expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect
    with httpx.Client(base_url=live_server, timeout=300) as http:
        document_id = processed_handbook(http)
        body = {"document_id": document_id, "questions": QUESTIONS, "name": "frontier", "retrievers": ["dense", "bm25"]}
        ran = http.post("/benchmarks", params={"wait": "true"}, json=body)
    assert ran.status_code == 200, ran.text
    experiment = ran.json()
    keys, frontier = [c["key"] for c in experiment["configurations"]], _expected_frontier(experiment)

    page.goto("/app#benchmarks")
    panel = page.locator("#panel-benchmarks")
    panel.get_by_role("button", name=re.compile(r"^frontier: open the Experiment")).click()
    view = panel.get_by_role("region", name="Experiment", exact=True)
    chart = view.get_by_role("figure", name="Best for some budget: Recall")
    drawn = chart.locator("svg.cb-frontier g[data-frontier]")
    expect(drawn).to_have_count(len(keys))
    labels = chart.locator("svg.cb-frontier text.frontier-label")
    expect(labels).to_have_text(frontier)
    # Drawn, not only present: the frontier's points are visible dots of the accent colour.
    first = chart.locator(f"g[data-config='{frontier[0]}'] circle")
    expect(first).to_be_visible()
    assert first.evaluate("c => getComputedStyle(c).fill") != "none"
    expect(chart.locator("text.frontier-sentence")).to_contain_text("Best")
    chart.scroll_into_view_if_needed()
    screenshot(page, "frontier-experiment")

    page.goto("/app#decision")
    card = page.get_by_test_id("verdict")
    board = card.get_by_test_id("charts").get_by_role("figure", name="Best for some budget: Recall")
    expect(board.locator("svg.cb-frontier text.frontier-label")).to_have_text(frontier)
    expect(board.locator("svg.cb-frontier g[data-frontier]")).to_have_count(len(keys))
    board.scroll_into_view_if_needed()
    screenshot(page, "frontier-decision-board")
