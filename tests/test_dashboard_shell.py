"""The dashboard shell in a real browser: served offline from the app, tabs that keep their state, keyboard use."""

from __future__ import annotations

import json

import httpx

from chunkbench import limits
from conftest import screenshot

TAB_NAMES = ["Documents", "PDF", "Query", "Questions", "Benchmarks", "Decision Board", "Admin"]


def test_the_page_and_its_assets_are_served_by_the_app(live_server):
    page = httpx.get(f"{live_server}/app")
    assert page.status_code == 200 and 'type="module"' in page.text
    assert "http://" not in page.text.replace("http://127.0.0.1", "") and "https://" not in page.text
    assert httpx.get(f"{live_server}/", follow_redirects=False).headers["location"] == "/app"
    script = httpx.get(f"{live_server}/app/static/vendor/htm-preact-standalone.module.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]


def test_the_forms_read_the_api_bounds_from_the_page(live_server, page):
    # The bounds are written once (chunkbench.limits); the page carries them and the forms' inputs use them.
    body = httpx.get(f"{live_server}/app").text
    carried = json.loads(body.split('id="chunkbench-limits">')[1].split("</script>")[0])
    assert carried == {
        "max_top_k": limits.MAX_TOP_K, "max_candidate_k": limits.MAX_CANDIDATE_K,
        "max_neighbors": limits.MAX_NEIGHBORS, "max_question_chars": limits.MAX_QUESTION_CHARS,
    }  # fmt: skip
    page.goto("/app#query")
    assert page.locator("#panel-query input[type=number]").first.get_attribute("max") == str(limits.MAX_TOP_K)


def test_tabs_switch_keep_their_state_and_work_from_the_keyboard(page):
    page.goto("/app")
    tabs = page.get_by_role("tab")
    assert tabs.all_inner_texts() == TAB_NAMES
    assert "server ok" in page.get_by_test_id("health").inner_text()
    assert page.get_by_role("tab", name="Documents").get_attribute("aria-selected") == "true"

    page.get_by_role("tab", name="Admin").click()
    assert page.locator("#panel-admin").is_visible() and page.locator("#panel-documents").is_hidden()
    assert page.url.endswith("#admin")
    # The panel opened first stays mounted (hidden): coming back finds it as it was.
    assert page.locator("#panel-documents").count() == 1

    page.get_by_role("tab", name="Admin").focus()
    page.keyboard.press("ArrowLeft")
    assert page.get_by_role("tab", name="Decision Board").get_attribute("aria-selected") == "true"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.get_by_role("tab", name="Documents").get_attribute("aria-selected") == "true"

    page.goto("/app#query")
    assert page.get_by_role("tab", name="Query").get_attribute("aria-selected") == "true"
    screenshot(page, "shell")
