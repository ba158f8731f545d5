"""HTML reports of a benchmark Experiment: self-contained, escaped, with the decision, charts and boundary view."""

from __future__ import annotations

import fnmatch
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html

from chunkbench.benchmarking.report import render as render_module
from chunkbench.benchmarking.report.boundaries import boundary_view
from chunkbench.benchmarking.report.charts import scale_colour
from chunkbench.benchmarking.report.formatting import fmt, pct
from chunkbench.benchmarking.report.prose import decision_sentence, recommendations
from chunkbench.benchmarking.report.render import experiment_json, render_report
from chunkbench.errors import InvalidRequestError
from report_fixtures import (
    FARSI_QUESTION,
    HOSTILE_QUESTION,
    N_QUESTIONS,
    STRATEGIES,
    document_text,
    key,
    make_experiment,
    make_failed,
    make_no_winner,
    make_running,
    make_tie,
    variants,
)

VIEWS = ("managerial", "technical")
VARIANTS = variants()
ROOT = Path(__file__).resolve().parents[1]


def render(exp: dict[str, Any], view: str = "technical", **kwargs: Any) -> tuple[str, Any]:
    page = render_report(exp, view=view, **kwargs)
    return page, lxml_html.document_fromstring(page)


def boundaries_for(text: str) -> dict[str, list[tuple[int, int]]]:
    # fixed_size: 300-character windows every 250 characters (50 overlap); recursive: three chunks with a gap.
    return {
        "fixed_size": [(i, min(i + 300, len(text))) for i in range(0, len(text), 250)],
        "recursive": [(0, 400), (400, 900), (950, len(text))],
    }


# ---------------------------------------------------------------------------------------------- self-contained


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_reports_are_self_contained_and_never_show_nan(variant: str, view: str) -> None:
    text = document_text()
    _, tree = render(VARIANTS[variant], view, document_text=text, boundaries=boundaries_for(text))
    for element in tree.iter():
        for attribute in ("src", "href", "action", "srcset", "poster", "data", "xlink:href", "formaction"):
            value = element.get(attribute)
            assert value is None or value.startswith("#"), (element.tag, attribute, value)
    assert not tree.xpath("//link | //img | //iframe | //object | //embed | //base | //script[@src]")
    styles = " ".join(tree.xpath("//style/text()") + tree.xpath("//@style"))
    assert "url(" not in styles and "@import" not in styles
    assert len(tree.xpath("//script")) == 1 and len(tree.xpath("//style")) == 1
    visible = " ".join(tree.xpath("//body//text()[not(ancestor::script)]"))
    assert not re.search(r"\b(nan|NaN|inf|Infinity|None|undefined)\b", visible)
    assert visible.count(VARIANTS[variant]["name"]) >= 1


# ---------------------------------------------------------------------------------------------- decision


def test_the_verdict_names_the_winner_with_its_confidence_and_cost() -> None:
    exp = make_experiment()
    expected = (
        "Use recursive/dense/k5: it is the best configuration on recall over 20 questions, mean 0.850 against 0.800 "
        "for contextual_retrieval/dense/k5, best in 93% of the bootstrap resamples, though "
        "contextual_retrieval/dense/k5 cannot be ruled out at 95% confidence; it sends 2,310 context tokens per "
        "question."
    )
    assert decision_sentence(exp) == expected
    for view in VIEWS:
        _, tree = render(exp, view)
        assert tree.get_element_by_id("decision-sentence").text_content() == expected
        # The details sit collapsed beneath it.
        details = tree.get_element_by_id("decision-details")
        assert details.get("open") is None and "ahead of every other configuration" in details.text_content()


def test_the_verdict_says_the_tie_was_broken_by_cost() -> None:
    # semantic's context: 900 + mean(i % 3) * 10 = 909.5 tokens; recursive's 2,309.5 (rounded half to even).
    expected = (
        "Use semantic/dense/k5: the data cannot tell it from recursive/dense/k5 on recall over 20 questions (the "
        "leader is best in only 55% of the bootstrap resamples), and it needs the least context, 910 tokens per "
        "question against 2,310 for recursive/dense/k5: at least 10% less than every other contender."
    )
    assert decision_sentence(make_tie()) == expected
    _, tree = render(make_tie(), "managerial")
    assert tree.get_element_by_id("decision-sentence").text_content() == expected
    verdicts = {r.get("data-config"): r.xpath("string(td[last()])").strip() for r in tree.xpath("//tbody/tr")}
    assert verdicts[key("semantic")] == "chosen: cheapest of the tie"
    # The recommendations do not say it again in other words.
    assert not [r for r in recommendations(make_tie()) if r.startswith(("Use ", "Do not pick", "If a choice"))]


def test_a_decision_stored_before_cannot_tell_reads_as_its_cause_with_the_cheapest_contender() -> None:
    expected = (
        "The benchmark cannot tell recursive/dense/k5 from contextual_retrieval/dense/k5 on recall with 20 questions "
        "(0.050 apart on average): about 40 more questions (60 in all) would likely separate them. If a choice is "
        "needed now, recursive/dense/k5 is the cheapest contender (2,310 tokens per question against 2,610 for "
        "contextual_retrieval/dense/k5)."
    )
    assert decision_sentence(make_no_winner()) == expected
    for view in VIEWS:
        page, tree = render(make_no_winner(), view)
        assert tree.get_element_by_id("decision-sentence").text_content() == expected
        # The cheapest contender, in both reports; never "the data cannot yet say how many".
        assert "is the cheapest contender" in tree.get_element_by_id("decision").text_content()
        assert "cannot yet say" not in page
    _, tree = render(make_no_winner(), "managerial")
    assert "winner" not in [v.text_content() for v in tree.find_class("verdict")]
    assert recommendations(make_no_winner())[0] == (
        "Drop semantic/dense/k5 and semantic_parent_child/dense/k5: below the leader on recall with 95% confidence."
    )


def test_insufficient_data_and_running_experiments_name_no_winner() -> None:
    assert decision_sentence(make_failed()) == (
        "No question scored for every configuration (20 left out because a configuration has no score for them); a "
        "decision on recall needs at least 5. Fix the failed cells, or add questions, and run again."
    )
    assert decision_sentence(make_running()) == "No decision yet: the experiment is still running."


def test_status_banner_for_running_and_failed_experiments() -> None:
    _, tree = render(make_running(), "managerial")
    # 7 of 20 questions × 5 configurations have results.
    assert tree.get_element_by_id("status-banner").text_content() == (
        "This experiment is still running: 35 of 100 question × configuration cells have results. "
        "The figures are partial and may change."
    )
    _, tree = render(make_failed(), "technical")
    banner = tree.get_element_by_id("status-banner").text_content()
    # 20 semantic_parent_child cells and 2 fixed_size cells failed: 78 of 100 have results.
    assert banner.startswith("This experiment failed: Qdrant timed out after 30 s. 78 of 100 question")
    _, tree = render(make_experiment(), "technical")
    assert not tree.xpath("//*[@id='status-banner']")


@pytest.mark.parametrize("view", VIEWS)
def test_a_bare_experiment_renders(view: str) -> None:
    _, tree = render({"status": "failed", "error": "boom"}, view, document_text="abc", boundaries={"s": [(0, 2)]})
    assert tree.get_element_by_id("status-banner").text_content() == "This experiment failed: boom. Nothing has run."
    assert tree.get_element_by_id("decision-sentence").text_content() == (
        "No decision: the experiment failed before one was made."
    )
    visible = " ".join(tree.xpath("//body//text()[not(ancestor::script)]"))
    assert not re.search(r"\b(nan|NaN|None|undefined)\b", visible)


def test_kpis_ranking_and_ruled_out() -> None:
    _, tree = render(make_experiment(), "managerial")
    cards = {c.find_class("label")[0].text_content(): c.find_class("value")[0].text_content()
             for c in tree.find_class("kpi")}  # fmt: skip
    # recursive: recall 0.85; answer similarity mean of 0.4 + 0.5 × recall = 0.825; context 2,309.5 tokens.
    assert cards["Best recall"] == "0.85"
    assert cards["Answer quality"] == "0.82"
    assert cards["Context tokens / question"] == "2,310"
    assert cards["Cost of this run"] == "$0"
    ranked = [r.get("data-config") for r in tree.xpath("//table[@id='ranking-table']/tbody/tr")]
    assert ranked == [key(s) for s in ("recursive", "contextual_retrieval", "fixed_size", "semantic",
                                       "semantic_parent_child")]  # fmt: skip
    ruled = tree.get_element_by_id("ruled-out").text_content()
    assert "fixed_size/dense/k5: 0.15 below the leader on recall" in ruled
    assert "semantic_parent_child/dense/k5: 0.40 below the leader" in ruled


def test_recommendations_are_derived_from_the_data() -> None:
    recs = recommendations(make_experiment())
    assert recs[0] == (
        "Drop fixed_size/dense/k5, semantic/dense/k5 and semantic_parent_child/dense/k5: below the leader on recall "
        "with 95% confidence."
    )
    assert any(
        r.startswith("Neighbor Expansion was not tested: fixed_size/dense/k5 reaches a recall of 0.70") for r in recs
    )
    # recursive: hit@k 1.0, MRR mean of (1, .5, 1, .33, .5) = 0.666: the evidence is found but often not first.
    assert any("the evidence is in the top k for 100% of questions but the MRR is 0.67" in r for r in recs)
    judged = recommendations(make_experiment(judge=True, neighbours=1))
    assert not any(r.startswith("Neighbor Expansion") for r in judged)  # neighbours were tested
    assert any(r.startswith("2 judge calls failed (semantic/dense/k5: 2)") for r in judged)
    # semantic_parent_child: recall < 0.5 on questions i % 5 in (1, 4) → 8 of 20 answers hallucinated.
    assert any(r.startswith("semantic_parent_child/dense/k5 hallucinated in 40% of judged answers") for r in judged)
    failed = recommendations(make_failed())
    assert any(r.startswith("22 question × configuration cells failed (fixed_size/dense/k5: 2, "
                            "semantic_parent_child/dense/k5: 20)") for r in failed)  # fmt: skip
    assert "20 questions were left out of the decision" in " ".join(failed)


# ---------------------------------------------------------------------------------------------- charts


def test_metric_bars_have_an_interval_whisker_per_configuration() -> None:
    exp = make_experiment()
    _, tree = render(exp, "managerial")
    charts = tree.xpath("//figure[@data-chart]")
    assert [c.get("data-chart") for c in charts] == ["recall", "answer_similarity", "tok_at_k"]
    for chart in charts:
        whiskers = chart.xpath(".//line[contains(@class, 'whisker') and @data-config]")
        assert sorted(w.get("data-config") for w in whiskers) == sorted(key(s) for s in STRATEGIES)
        for whisker in whiskers:
            bar = chart.xpath(f".//g[@data-config='{whisker.get('data-config')}']/rect")[0]
            end = float(bar.get("x")) + float(bar.get("width"))
            assert float(whisker.get("x1")) <= end <= float(whisker.get("x2"))
    # Recall bars: 360 px for 0 → 1, from x = 230; recursive's mean 0.85 → 306 px wide.
    recursive = charts[0].xpath(f".//g[@data-config='{key('recursive')}']/rect")[0]
    assert float(recursive.get("x")) == 230 and float(recursive.get("width")) == pytest.approx(306.0)


def test_heatmap_has_a_cell_per_question_and_configuration() -> None:
    _, tree = render(make_experiment(), "technical")
    cells = tree.xpath("//svg[@id='heatmap']/rect[contains(@class, 'hm-cell')]")
    assert len(cells) == N_QUESTIONS * len(STRATEGIES)
    assert {(c.get("data-question"), c.get("data-config")) for c in cells} == {
        (f"q{i + 1}", key(s)) for i in range(N_QUESTIONS) for s in STRATEGIES
    }
    by_pair = {(c.get("data-question"), c.get("data-config")): c for c in cells}
    # Coloured by recall on [0, 1]: recursive q1 has recall 1.0 (the best colour), q5 0.5 (the middle stop).
    assert by_pair[("q1", key("recursive"))].get("fill") == "#fde047"
    assert by_pair[("q5", key("recursive"))].get("fill") == "#b45309"
    assert by_pair[("q5", key("recursive"))].get("data-m-mrr") == "0.5"
    options = [o.get("value") for o in tree.xpath("//select[@id='hm-metric']/option")]
    assert options[0] == "recall" and "mrr" in options and "judge_faithfulness" not in options  # not measured
    assert tree.get_element_by_id("hm-worst").text == "0.00" and tree.get_element_by_id("hm-best").text == "1.00"
    _, failed = render(make_failed(), "technical")
    states = {c.get("data-state") for c in failed.xpath("//rect[@data-config='semantic_parent_child/dense/k5']")}
    assert states == {"failed"}


def test_a_large_experiment_shows_the_questions_the_configurations_differ_on_most(monkeypatch) -> None:
    # Every configuration scores 0.5 on every question, except: q2 and q4 split 0.5 / 1.0, q6 has a failed cell.
    experiment = make_experiment()
    first = experiment["cells"][0]["config_key"]
    for cell in experiment["cells"]:
        cell["metrics"]["recall"] = 1.0 if cell["question_id"] in ("q2", "q4") and cell["config_key"] == first else 0.5
        if cell["question_id"] == "q6" and cell["config_key"] == first:
            cell["status"] = "failed"
    widest = ["q2", "q4", "q6"]
    shown = render_module.questions_shown(experiment, primary="recall", limit=3)
    assert [q["id"] for q in shown["questions"]] == [q["id"] for q in experiment["questions"] if q["id"] in widest]
    assert {c["question_id"] for c in shown["cells"]} == set(widest)
    assert render_module.questions_shown(experiment, primary="recall", limit=N_QUESTIONS) is experiment

    monkeypatch.setattr(render_module, "REPORT_QUESTION_LIMIT", 3)
    _, tree = render(experiment, "technical")
    cells = tree.xpath("//svg[@id='heatmap']/rect[contains(@class, 'hm-cell')]")
    assert {c.get("data-question") for c in cells} == set(widest)
    note = tree.get_element_by_id("questions-hidden").text_content()
    assert f"Showing the 3 of {N_QUESTIONS} questions" in note and f"the other {N_QUESTIONS - 3} are" in note


def test_scale_colour_ends_and_middle() -> None:
    assert scale_colour(0.0) == "#1e1b4b"
    assert scale_colour(0.5) == "#b45309"
    assert scale_colour(1.0) == "#fde047"
    assert scale_colour(0.25) == "#69372a"  # halfway between #1e1b4b (30, 27, 75) and #b45309 (180, 83, 9)


# ---------------------------------------------------------------------------------------------- escaping, None


def test_hostile_text_is_escaped_everywhere() -> None:
    text = document_text()
    page, tree = render(make_experiment(judge=True), "technical", document_text=text, boundaries=boundaries_for(text))
    assert "__pwned" not in tree.xpath("string(//script)")
    assert not tree.xpath("//img | //b[@onclick] | //*[@onerror] | //*[@onclick]")
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert HOSTILE_QUESTION in tree.text_content()  # shown as text, not run
    assert '<b onclick="x()">bold</b>' in tree.text_content()


def test_missing_metrics_show_a_dash() -> None:
    assert [fmt(None), fmt(math.nan), fmt(math.inf), fmt("x"), pct(None)] == ["—"] * 5
    assert fmt(0.8461) == "0.85" and pct(0.996) == ">99%" and pct(0.004) == "<1%" and pct(0.5) == "50%"
    _, tree = render(make_failed(), "technical")
    row = tree.xpath("//table[@id='cells-table']/tbody/tr[@data-question='q1'][@data-config='"
                     "semantic_parent_child/dense/k5']")[0]  # fmt: skip
    cells = [td.text_content().strip() for td in row.xpath("td")]
    assert cells[2] == "failed" and cells[3:8] == ["—"] * 5
    assert cells[9] == "Qdrant timed out after 30 s <retry later>"
    ranking = tree.xpath("//table[@id='ranking-table']/tbody/tr[@data-config='semantic_parent_child/dense/k5']")[0]
    assert [td.text_content().strip() for td in ranking.xpath("td")][2:4] == ["—", "— – —"]
    failures = tree.xpath("//table[@id='failed-table']/tbody/tr")
    assert len(failures) == 22


def test_right_to_left_text_gets_its_own_direction() -> None:
    text = document_text()
    _, tree = render(make_experiment(), "technical", document_text=text, boundaries=boundaries_for(text))
    farsi = [e for e in tree.xpath("//*[@dir='auto']") if FARSI_QUESTION in e.text_content()]
    assert farsi, "the Farsi question sits in an element with dir=auto"
    assert all(view.get("dir") == "auto" for view in tree.find_class("doc"))


# ---------------------------------------------------------------------------------------------- boundary view


def marked_spans(view: Any) -> list[tuple[int, int]]:
    starts = {m.get("data-chunk"): int(m.get("data-offset")) for m in view.xpath(".//span[@class='bm start']")}
    ends = {m.get("data-chunk"): int(m.get("data-offset")) for m in view.xpath(".//span[@class='bm end']")}
    assert starts.keys() == ends.keys()
    return sorted((starts[c], ends[c]) for c in starts)


def test_boundary_view_marks_exactly_the_given_boundaries() -> None:
    text = document_text()
    given = boundaries_for(text)
    _, tree = render(make_experiment(), "technical", document_text=text, boundaries=given)
    views = {v.get("data-strategy"): v for v in tree.find_class("boundary-view")}
    assert set(views) == {"fixed_size", "recursive"}
    for strategy, spans in given.items():
        assert marked_spans(views[strategy]) == sorted(spans)
        doc = views[strategy].find_class("doc")[0]
        assert doc.text_content() == text  # every character once, none lost, markers add no text
    # fixed_size windows overlap by 50 characters: [250, 300) is in chunks 0 and 1.
    overlaps = views["fixed_size"].find_class("overlap")
    assert overlaps[0].text_content() == text[250:300] and overlaps[0].get("data-chunks") == "0 1"
    # recursive leaves [900, 950) out of every chunk.
    gaps = views["recursive"].find_class("gap")
    assert [g.text_content() for g in gaps] == [text[900:950]]
    classes = [s.get("class") for s in views["recursive"].xpath(".//span[@data-chunks]")]
    assert classes == ["c0", "c1", "gap", "c0"]


def test_boundary_view_cuts_a_long_document_at_a_chunk_end() -> None:
    text = ("word " * 20) * 500  # 50,000 characters
    spans = [(i, i + 1000) for i in range(0, len(text), 1000)]
    view = boundary_view(text, spans, strategy="fixed_size", max_chars=12_345)
    # The last chunk end at or before 12,345 is 12,000; chunks starting before it: 0 … 11.
    assert view["truncated"] and view["cut"] == 12_000 and view["length"] == 50_000
    assert view["shown_count"] == 12 and view["chunk_count"] == 50
    assert "".join(p["text"] for p in view["pieces"] if p["kind"] == "text") == text[:12_000]
    page = render_report(make_experiment(), view="technical", document_text=text, boundaries={"fixed_size": spans})
    assert "Showing the first 20,000 of 50,000 characters (20 of 50 chunks start there)" in page
    without = render_report(make_experiment(), view="technical")
    assert "The document text was not given to the report" in without


# ---------------------------------------------------------------------------------------------- technical parts


def _words(element: Any) -> str:
    return " ".join(element.text_content().split())


def _node(index: int, role: str = "hit", **fields: Any) -> dict[str, Any]:
    score = 0.9 - index / 10 if role == "hit" else None
    return {"chunk_index": index, "role": role, "start_index": 100 * index, "end_index": 100 * index + 90,
            "text": f"Text of chunk {index}.", "score": score, **fields}  # fmt: skip


@pytest.mark.parametrize("stored", ["ranked", "before ranks"])
def test_the_expansion_tree_lists_a_hit_under_another_by_its_rank_not_as_a_neighbour(stored: str) -> None:
    # Hits 1 and 2 (±1/1) each lie in the other's window. Cells stored before the tree said so list the other hit
    # with its text and no rank: the report draws both shapes the same way.
    ranked = stored == "ranked"

    def ref(index: int, rank: int) -> dict[str, Any]:  # a hit listed under another
        return {k: v for k, v in _node(index, rank=rank).items() if k != "text"} if ranked else _node(index)

    tree = [
        {**_node(1, **({"rank": 1} if ranked else {})), "neighbors_prev": [_node(0, "neighbor")],
         "neighbors_next": [ref(2, 2)]},
        {**_node(2, **({"rank": 2} if ranked else {})), "neighbors_prev": [ref(1, 1)],
         "neighbors_next": [_node(3, "neighbor")]},
    ]  # fmt: skip
    exp = make_experiment(neighbours=1)
    for cell in exp["cells"]:
        cell["expansion_tree"] = tree if cell["config_key"] == key("fixed_size") else None
    _, page = render(exp, "technical")
    first = page.get_element_by_id("tab-expansion").find_class("tree")[0]
    drawn = [[_words(n) for n in hit.find_class("tree-neighbor")] for hit in first.find_class("tree-hit")]
    assert drawn == [
        ["← neighbour #0 · chars 0–90 Text of chunk 0.", "→ hit #2 · rank 2, shown as its own hit"],
        ["← hit #1 · rank 1, shown as its own hit", "→ neighbour #3 · chars 300–390 Text of chunk 3."],
    ]
    assert first.text_content().count("Text of chunk 1.") == 1  # each hit's text once, in its own node


def test_technical_report_parts() -> None:
    exp = make_experiment(judge=True, neighbours=1)
    _, tree = render(exp, "technical")
    rows = tree.xpath("//table[@id='cells-table']/tbody/tr")
    assert len(rows) == N_QUESTIONS * len(STRATEGIES)
    assert [r.get("data-question") for r in rows[:6]] == ["q1"] * 5 + ["q2"]
    # Expansion Trees: fixed_size q2 has neighbours 1 and 3 around hit 2 (q1 has no chunk before it).
    samples = tree.get_element_by_id("tab-expansion")
    hits = samples.find_class("tree-hit")
    assert len(hits) == 3
    assert [n.text_content().split("·")[0].strip() for n in hits[1].find_class("tree-neighbor")] == [
        "← neighbour #0",
        "→ neighbour #2",
    ]
    assert hits[1].find_class("hit")[0].getparent().text_content().split("·")[0].strip() == "hit #1 rank 1"
    judge = tree.xpath("//table[@id='judge-table']/tbody/tr[@data-config='semantic/dense/k5']/td")
    assert [td.text_content() for td in judge] == ["semantic/dense/k5", "20", "62", "2", "0%"]
    first_judged = tree.xpath("//details[contains(@class, 'judged')]")[0]
    assert "judge-failed" in first_judged.get("class")  # failures are listed first
    stages = tree.xpath("//svg[@id='latency-bars']/g[@data-config='recursive/dense/k5']/rect/@data-stage")
    assert stages == ["embed", "search", "expand", "generate", "judge"]  # rerank took 0 ms
    versions = tree.get_element_by_id("versions-table").text_content()
    assert "qdrant-client" in versions and "1.15.0" in versions


def test_unknown_view_is_a_400() -> None:
    with pytest.raises(InvalidRequestError) as info:
        render_report(make_experiment(), view="executive")  # type: ignore[arg-type]
    assert info.value.status_code == 400 and "managerial, technical" in info.value.message


# ---------------------------------------------------------------------------------------------- JSON export


def test_json_export_round_trips_with_a_stable_key_order() -> None:
    exp = make_experiment(judge=True)
    text = experiment_json(exp)
    assert json.loads(text) == exp
    assert text.startswith('{\n  "aggregate": {')
    shuffled = dict(reversed(list(exp.items())))
    assert experiment_json(shuffled) == text
    odd = {"b": (1, 2), "a": math.nan, "c": {"z": math.inf, "y": "ماده ۵"}}
    assert json.loads(experiment_json(odd)) == {"a": None, "b": [1, 2], "c": {"y": "ماده ۵", "z": None}}
    assert "ماده ۵" in experiment_json(odd)


def test_templates_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["chunkbench"]
    folder = ROOT / "src" / "chunkbench" / "benchmarking" / "templates"
    files = [p.relative_to(ROOT / "src" / "chunkbench").as_posix() for p in folder.iterdir()]
    assert {"benchmarking/templates/managerial.html", "benchmarking/templates/report.js"} <= set(files)
    assert all(any(fnmatch.fnmatch(f, p) for p in patterns) for f in files)


# ---------------------------------------------------------------------------------------------- in a browser


def open_offline(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """The report from file:// with every non-file request aborted; console errors and requests recorded."""
    context = browser.new_context(offline=True)
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r: Any) -> None:
        requests.append(r.request.url)
        r.continue_() if r.request.url.startswith("file://") else r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    return page, errors, requests


def test_reports_work_offline_in_chromium(browser: Any, tmp_path: Path) -> None:
    text = document_text()
    for view in VIEWS:
        path = tmp_path / f"{view}.html"
        path.write_text(render_report(make_failed(), view=view, document_text=text, boundaries=boundaries_for(text)))
        page, errors, requests = open_offline(browser, path)
        assert errors == [] and requests == [path.as_uri()]
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("#decision-sentence").is_visible()
        page.context.close()


def test_inline_js_sorts_filters_switches_tabs_and_recolours(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "technical.html"
    text = document_text()
    path.write_text(render_report(make_experiment(), view="technical", document_text=text,
                                  boundaries=boundaries_for(text)))  # fmt: skip
    page, errors, _ = open_offline(browser, path)

    # Tabs: only the summary shows at first; a click shows the per-question panel.
    assert page.locator("#tab-summary").is_visible() and not page.locator("#tab-questions").is_visible()
    page.click("button[data-tab=tab-questions]")
    assert page.locator("#tab-questions").is_visible() and not page.locator("#tab-summary").is_visible()

    # Sorting: recall ascending puts a semantic_parent_child row with recall 0.25 first, descending a 1.00 first.
    header = page.locator("#cells-table th", has_text="recall")
    header.click()
    first = page.locator("#cells-table tbody tr").first
    assert first.locator("td").nth(3).inner_text() == "0.25"
    assert first.get_attribute("data-config") == key("semantic_parent_child")
    header.click()
    assert page.locator("#cells-table tbody tr").first.locator("td").nth(3).inner_text() == "1.00"

    # Filtering: a question id, then a configuration.
    page.fill("[data-filter-table=cells-table] input", "q17")
    assert page.locator("#cells-table tbody tr:visible").count() == len(STRATEGIES)
    page.fill("[data-filter-table=cells-table] input", "")
    page.select_option("[data-filter-table=cells-table] select", key("semantic"))
    assert page.locator("#cells-table tbody tr:visible").count() == N_QUESTIONS
    assert page.locator("[data-filter-table=cells-table] .count").inner_text() == "20 rows"

    # Heatmap: MRR recolours each cell; recursive q2 has MRR 0.5 → the middle colour, q1 1.0 → the best.
    page.select_option("#hm-metric", "mrr")
    cell = page.locator(f"#heatmap rect[data-question=q2][data-config='{key('recursive')}']")
    assert cell.get_attribute("fill") == scale_colour(0.5)
    assert page.locator(f"#heatmap rect[data-question=q1][data-config='{key('recursive')}']").get_attribute(
        "fill"
    ) == scale_colour(1.0)
    assert cell.get_attribute("data-tip") == "q2 · recursive/dense/k5: MRR 0.50"
    # tok@k: lower is better, so the legend runs from the largest (worst) to the smallest (best) count.
    page.select_option("#hm-metric", "tok_at_k")
    assert page.locator("#hm-worst").inner_text() == "2620" and page.locator("#hm-best").inner_text() == "400"

    # Tooltip follows the mouse over a heatmap cell.
    cell.hover()
    assert page.locator("#tip").is_visible() and "recursive/dense/k5" in page.locator("#tip").inner_text()

    # Boundary tabs: the second strategy's document shows after a click.
    page.click("button[data-tab=tab-boundaries]")
    assert page.locator("#bv-1").is_visible() and not page.locator("#bv-2").is_visible()
    page.click("button[data-tab=bv-2]")
    assert page.locator("#bv-2").is_visible()
    assert errors == []
    page.context.close()
