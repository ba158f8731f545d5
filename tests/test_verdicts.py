"""The verdict: one text per Decision kind, pinned word for word, that never contradicts its details; the same words
in the Experiment JSON, both reports and the CLI; and the dashboard's charts, drawn by the reports' chart code."""

from __future__ import annotations

import json

import numpy as np
import pytest
from lxml import etree
from lxml import html as lxml_html
from typer.testing import CliRunner

from chunkbench.benchmarking.decision import decide
from chunkbench.benchmarking.decision_ranking import Decision
from chunkbench.benchmarking.verdicts import verdict, with_verdict
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from test_benchmarks import QUESTIONS, processed_handbook
from test_decision import _budget_decision, tie_scores

# Three configurations whose means are all 0.5 (A and B swap 0.6 and 0.4 question by question, C is constant).
TIED = {**tie_scores(), "C": [0.5] * 30}
# Per-question differences of A over B alternate 0.05 ± 0.3 (test_decision: 278 more questions would separate them).
SMALL_LEAD = [0.05 + (0.3 if i % 2 == 0 else -0.3) for i in range(20)]


def _decisions() -> dict[str, Decision]:
    """A Decision of every kind ``decide`` makes, on synthetic scores."""
    rng = np.random.default_rng(0)
    base = list(rng.uniform(0.2, 0.8, 20))
    leads = [0.1, 0.1, 0.1, 0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.1, 0.1, -0.1]
    ceiling = {f"c{i}": [1.0] * 12 for i in range(3)} | {"weak": [1.0, 0.5] * 6}
    return {
        "winner": decide(
            {"A": [0.9] * 10, "B": [0.5] * 10, "C": [0.4] * 10}, {"A": 1200, "B": 300, "C": 250}, metric="recall"
        ),
        "winner_by_probability": decide(
            {"A": [0.5 + d for d in leads], "B": [0.5] * 12}, {"A": 800, "B": 700}, metric="mrr"
        ),
        "tie_broken_by_cost": decide(TIED, {"A": 1000, "B": 400, "C": 2541}, metric="recall"),
        "tie_not_broken": decide(TIED, {"A": 600, "B": 564, "C": 2541}, metric="recall"),
        "tie_cost_unknown": decide(tie_scores(), {"A": 1000}, metric="recall"),
        "ceiling": decide(ceiling, {"c0": 900, "c1": 880, "c2": 1500, "weak": 100}, metric="recall"),
        "too_few_questions": decide(
            {"A": [0.5 + d for d in SMALL_LEAD], "B": [0.5] * 20}, {"A": 300, "B": 320}, metric="precision_omega"
        ),
        "noise_within_margin": decide(
            {"A": [b + 0.01 for b in base], "B": base}, {"A": 1000, "B": 1000}, metric="recall", practical_margin=0.05
        ),
        "equal_budget_withdrawal": _budget_decision(wide_evidence_rank=3),
        "one_configuration": decide({"A": [0.5] * 10}, {"A": 10}, metric="recall"),
        "too_few_scored": decide({"A": [1, 1, 1], "B": [0, 0, 0]}, {}, metric="recall"),
        "failed_cells": decide({"A": [1, 1, 1, 1, None, 1], "B": [0, 0, 0, 0, 0, None]}, {}, metric="recall"),
    }


DECISIONS = _decisions()
VERDICTS = {
    "winner": (
        "winner",
        "Use A: it is the best configuration on recall over 10 questions, mean 0.900 against 0.500 for B, best in 100% "
        "of the bootstrap resamples, every other configuration ruled out at 95% confidence; it sends 1,200 context "
        "tokens per question.",
    ),
    "winner_by_probability": (
        "winner",
        "Use A: it is the best configuration on MRR over 12 questions, mean 0.550 against 0.500 for B, best in 97% of "
        "the bootstrap resamples, though B cannot be ruled out at 95% confidence; it sends 800 context tokens per "
        "question.",
    ),
    "tie_broken_by_cost": (
        "tie_broken_by_cost",
        "Use B: the data cannot tell it from A and C on recall over 30 questions (it leads, but is best in only 46% of "
        "the bootstrap resamples), and it needs the least context, 400 tokens per question against 1,000 for A "
        "and 2,541 for C: at least 10% less than every other contender.",
    ),
    # The case: contenders from 564 to 2,541 tokens, the two cheapest within 10% of each other.
    "tie_not_broken": (
        "cannot_tell",
        "The benchmark cannot tell B from A on recall: they have the same mean; harder questions, a smaller k or a "
        "larger corpus would separate them. If a choice is needed now, B is the cheapest contender, but the tie is not "
        "broken by context cost: B needs 564 tokens per question, only 6% less than the 600 of A, the next cheapest, "
        "and a tie is broken only when one contender needs at least 10% less than every other.",
    ),
    "tie_cost_unknown": (
        "cannot_tell",
        "The benchmark cannot tell A from B on recall: they have the same mean; harder questions, a smaller k or a "
        "larger corpus would separate them.",
    ),
    "ceiling": (
        "cannot_tell",
        "The benchmark cannot tell 3 configurations apart on recall: c1, c0 and c2 all reach its ceiling of 1.000 on "
        "the 12 questions; harder questions, a smaller k or a larger corpus would separate them. If a choice is needed "
        "now, c1 is the cheapest of the 3, but the tie is not broken by context cost: c1 needs 880 tokens per "
        "question, only 2% less than the 900 of c0, the next cheapest, and a tie is broken only when one contender "
        "needs at least 10% less than every other.",
    ),
    "too_few_questions": (
        "cannot_tell",
        "The benchmark cannot tell A from B on precision Ω with 20 questions (0.050 apart on average): about 278 more "
        "questions (298 in all) would likely separate them. If a choice is needed now, A is the cheapest contender, "
        "but the tie is not broken by context cost: A needs 300 tokens per question, only 6% less than the 320 of B, "
        "and a tie is broken only when one contender needs at least 10% less than every other.",
    ),
    "noise_within_margin": (
        "cannot_tell",
        "The benchmark cannot tell A from B on recall: they differ by 0.010 on average, within the practical margin of "
        "0.050; harder questions, a smaller k or a larger corpus would separate them. If a choice is needed now, "
        "context cost does not settle it: A and B need the same context (1,000 tokens per question).",
    ),
    "equal_budget_withdrawal": (
        "cannot_tell",
        "At 200 context tokens per question, lean leads on recall (0.800); with the full context, wide leads (1.000 at "
        "500 tokens). The benchmark cannot tell whether wide is better on recall: it leads only by sending more "
        "context (500 tokens "
        "per question against 200 for lean), and with both cut to 200 tokens lean scores 0.800 against 0.000; compare "
        "them at equal budget, or rerun wide with a smaller k.",
    ),
    "one_configuration": (
        "insufficient_data",
        "Nothing to compare: a decision needs at least 2 configurations (only 'A' given).",
    ),
    "too_few_scored": (
        "insufficient_data",
        "Only 3 questions scored for every configuration; a decision on recall needs at least 5. Add questions and "
        "run again.",
    ),
    "failed_cells": (
        "insufficient_data",
        "Only 4 questions scored for every configuration (2 left out because a configuration has no score for them); "
        "a decision on recall needs at least 5. Fix the failed cells, or add questions, and run again.",
    ),
}


@pytest.mark.parametrize("kind", list(VERDICTS))
def test_each_kind_of_decision_has_its_verdict(kind: str) -> None:
    decision = DECISIONS[kind]
    status, expected = VERDICTS[kind]
    assert decision.status == status
    assert decision.verdict == expected
    # The verdict is a function of the stored Decision: read back from JSON, it is the same words.
    stored = json.loads(json.dumps(decision.to_dict()))
    assert verdict(stored) == with_verdict(stored)["verdict"] == expected


def test_the_kinds_cover_every_cause_of_cannot_tell() -> None:
    causes = {d.cannot_tell["cause"] for d in DECISIONS.values() if d.status == "cannot_tell"}
    assert causes == {"ceiling", "too_few_questions", "noise", "context"}


@pytest.mark.parametrize("kind", list(VERDICTS))
def test_a_verdict_and_its_details_never_contradict_each_other(kind: str) -> None:
    decision = DECISIONS[kind]
    text = " ".join([decision.verdict, *decision.reasons])
    assert "cannot yet say" not in text
    more_would = "would likely separate" in text
    more_would_not = "unlikely to separate" in text or "would not change the decision" in text
    assert not (more_would and more_would_not), text
    # The tie-break rule is stated as computed: never "within 10%" of contenders that are not.
    assert "too close" not in text and "within 10%" not in text


def test_the_tie_break_reason_says_the_rule_as_the_verdict_does() -> None:
    decision = DECISIONS["tie_not_broken"]
    [reason] = [r for r in decision.reasons if "the tie is not broken by context cost" in r]
    clause = decision.verdict.split("but ", 1)[1].rstrip(".")
    assert reason.endswith(f"; {clause}.")


def test_a_lead_within_the_margin_is_not_called_too_rarely_best() -> None:
    reason = DECISIONS["noise_within_margin"].reasons[0]
    assert reason.startswith("A leads on recall with mean 0.517, best in 100% of resamples, but by no more than the "
                             "practical margin of 0.050 over B;")  # fmt: skip


def test_decisions_stored_before_cannot_tell_read_as_their_cause() -> None:
    legacy = {
        "metric": "recall", "status": "no_clear_winner", "best": None, "leader": "A", "contenders": ["A", "B"],
        "means": {"A": 0.6, "B": 0.5}, "prob_best": {"A": 0.7, "B": 0.3}, "n_questions": 12,
        "costs": {"A": 900.0, "B": 300.0}, "reasons": ["old words"], "summary": "old words",
    }  # fmt: skip
    assert verdict({**legacy, "questions_needed": 30}) == (
        "The benchmark cannot tell A from B on recall with 12 questions (0.100 apart on average): about 30 more "
        "questions (42 in all) would likely separate them. If a choice is needed now, B is the cheapest contender "
        "(300 tokens per question against 900 for A)."
    )
    view = with_verdict({**legacy, "questions_needed": None})
    assert "summary" not in view and view["verdict"] == (
        "The benchmark cannot tell A from B on recall: they differ by 0.100 on average, less than the noise between "
        "the 12 questions; harder questions, a smaller k or a larger corpus would separate them. If a choice is "
        "needed now, B is the cheapest contender (300 tokens per question against 900 for A)."
    )
    # An old insufficient-data Decision (no stored minimum) keeps its own first reason.
    old = {"metric": "recall", "status": "insufficient_data", "contenders": ["A", "B"], "reasons": ["Only 2 scored."]}
    assert verdict(old) == "Only 2 scored."


# ---------------------------------------------------------------------------------------------- every face


@pytest.fixture
def experiment(client) -> dict:
    """A completed benchmark of the handbook: fixed_size and recursive, dense, k 5, five questions."""
    document_id = processed_handbook(client)
    ran = client.post("/benchmarks", params={"wait": "true"}, json={"document_id": document_id, "questions": QUESTIONS})
    assert ran.status_code == 200, ran.text
    return ran.json()


@pytest.mark.model
def test_the_json_both_reports_and_the_cli_say_the_same_verdict(client, experiment, settings, monkeypatch) -> None:
    said = experiment["decision"]["verdict"]
    assert said == verdict(experiment["decision"]) and "summary" not in experiment["decision"]
    assert client.get(f"/benchmarks/{experiment['id']}").json()["decision"]["verdict"] == said
    for view in ("managerial", "technical"):
        page = client.get(f"/benchmarks/{experiment['id']}/report", params={"view": view}).text
        tree = lxml_html.document_fromstring(page)
        assert tree.get_element_by_id("decision-sentence").text_content() == said
        assert tree.get_element_by_id("decision-details").tag == "details"

    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    try:
        shown = CliRunner().invoke(cli_app, ["bench", "show", experiment["id"]])
    finally:
        get_settings.cache_clear()
    assert shown.exit_code == 0, shown.output
    # rich wraps long lines: compare the words.
    words = " ".join(shown.stdout.split())
    assert f"verdict ({experiment['decision']['status']}): {' '.join(said.split())}" in words
    assert words.index("verdict (") < words.index("details:")


def _svg(client, url: str):
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("image/svg+xml")
    return etree.fromstring(response.content)


SVG = {"s": "http://www.w3.org/2000/svg"}


@pytest.mark.model
def test_the_charts_are_the_reports_charts_as_svg(client, experiment) -> None:
    eid, keys = experiment["id"], [c["key"] for c in experiment["configurations"]]
    charts = client.get(f"/benchmarks/{eid}/charts").json()
    names = [c["name"] for c in charts]
    assert names[0] == "bars-recall" and {"bars-tok_at_k", "curve-recall", "heatmap-recall"} <= set(names)
    assert all(c["url"] == f"/benchmarks/{eid}/charts/{c['name']}" for c in charts)

    # Metric bars: a whisker (the 95% interval) per configuration, each row titled with the server's figures.
    bars = _svg(client, f"/benchmarks/{eid}/charts/bars-recall")
    assert bars.get("data-chart") == "bars-recall" and bars.xpath("s:style", namespaces=SVG)
    whiskers = bars.xpath("//s:line[@class='whisker' and @data-config]", namespaces=SVG)
    assert [w.get("data-config") for w in whiskers] == keys
    for key in keys:
        stat = experiment["aggregate"][key]["metrics"]["recall"]
        [title] = bars.xpath(f"//s:g[@data-config='{key}']/s:title", namespaces=SVG)
        assert title.text == (f"{key}: Recall {stat['mean']:.2f} (95% CI {stat['ci_low']:.2f}–{stat['ci_high']:.2f})")
    # The same SVG as the managerial report's recall chart: one chart code for both.
    report = lxml_html.document_fromstring(client.get(f"/benchmarks/{eid}/report").text)
    [in_report] = report.xpath("//figure[@data-chart='recall']/svg")
    [alone] = bars.xpath("s:g/s:svg", namespaces=SVG)

    def elements(svg) -> list[tuple[str, dict[str, str], str]]:
        # The HTML parser drops the namespace and lower-cases attribute names; compare what both say.
        return [
            (e.tag.split("}")[-1], {k.lower(): v for k, v in e.attrib.items() if k != "xmlns"}, (e.text or "").strip())
            for e in svg.iter()
            if isinstance(e.tag, str)
        ]

    assert elements(alone) == elements(in_report)

    # Recall against context tokens: a line per configuration.
    curve = _svg(client, f"/benchmarks/{eid}/charts/curve-recall")
    assert sorted(g.get("data-config") for g in curve.xpath("//s:g[@class='curve-line']", namespaces=SVG)) == sorted(
        keys
    )
    assert len(curve.xpath("//s:polyline", namespaces=SVG)) == len(keys)

    # The heatmap: a cell per question × configuration, each titled with its own score.
    heat = _svg(client, f"/benchmarks/{eid}/charts/heatmap-recall")
    cells = heat.xpath("//s:rect[contains(@class, 'hm-cell') and @data-question]", namespaces=SVG)
    assert len(cells) == len(QUESTIONS) * len(keys)
    by_cell = {(c["question_id"], c["config_key"]): c for c in experiment["cells"]}
    for rect in cells:
        recall = by_cell[(rect.get("data-question"), rect.get("data-config"))]["metrics"]["recall"]
        assert rect.xpath("s:title", namespaces=SVG)[0].text.endswith(f"Recall {recall:.2f}")


@pytest.mark.model
def test_an_unknown_chart_is_a_404_that_lists_the_charts(client, experiment) -> None:
    missing = client.get(f"/benchmarks/{experiment['id']}/charts/bars-judge_faithfulness")
    assert missing.status_code == 404
    body = missing.json()
    assert body["error"] == "not_found" and "bars-recall" in body["message"] and "curve-recall" in body["message"]
    assert "bars-recall" in body["details"]["charts"]
    assert client.get("/benchmarks/nope/charts").status_code == 404
    assert client.get("/benchmarks/nope/charts/bars-recall").status_code == 404
