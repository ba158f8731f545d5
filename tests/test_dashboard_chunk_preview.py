"""Chunk Preview in a real browser: chunk tones told apart without hue, contextual retrieval's prefixes, a size
histogram per strategy, and two strategies side by side on the same text, scrolled together."""

from __future__ import annotations

import itertools
import re

import httpx
import pytest

from conftest import ARTIFACTS

TOPICS = ["Revenue", "Staffing", "Travel", "Security", "Training", "Facilities", "Purchasing", "Archives"]
MARKDOWN = (
    "# Operations Handbook\n\n"
    + "\n\n".join(
        f"## {topic}\n\n"
        + "\n\n".join(
            f"{topic} rule {n}: the team reviews item {n} every {n + 2} weeks, records the outcome in the ledger and "
            f"tells the owner of budget line {n * 7} before the next quarterly meeting."
            for n in range(1, 7)
        )
        for topic in TOPICS
    )
    + "\n"
)


@pytest.fixture
def watched(page):
    """The page, failing the test on any request that fails or answers with an error (beyond console errors)."""
    failures: list[str] = []
    page.on("requestfailed", lambda request: failures.append(f"{request.url}: {request.failure}"))
    page.on(
        "response",
        lambda response: failures.append(f"{response.url}: {response.status}") if response.status >= 400 else None,
    )
    yield page
    assert failures == [], f"failed requests: {failures}"


def _document(live_server: str, strategies: list[str], params: dict | None = None) -> str:
    body = httpx.post(f"{live_server}/documents", files={"file": ("handbook.md", MARKDOWN.encode())}).json()
    document_id = body["document"]["id"]
    processed = httpx.post(
        f"{live_server}/documents/{document_id}/process",
        params={"wait": "true"},
        json={"strategies": strategies, "params": params or {}},
        timeout=300,
    )
    assert processed.status_code == 200 and processed.json()["failed"] == [], processed.text
    return document_id


def _open(page, strategy: str):
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_role("button", name="handbook.md", exact=True).click()
    preview = documents.get_by_role("region", name="Chunk Preview")
    preview.get_by_label("Chunk Preview strategy").select_option(label=f"{strategy} · all-MiniLM-L6-v2")
    return preview


def _preview(live_server: str, document_id: str, strategy: str, **params) -> dict:
    return httpx.get(
        f"{live_server}/admin/chunks/{document_id}", params={"strategy": strategy, "limit": 1000, **params}
    ).json()


def _shoot(region, name: str) -> None:
    """A screenshot of the Chunk Preview alone, beside the suite's other screenshots (taken from the page scrolled
    to the top, so the sticky header does not cover it)."""
    region.page.evaluate("window.scrollTo(0, 0)")
    box = region.bounding_box()
    path = ARTIFACTS / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    region.page.screenshot(path=str(path), full_page=True, clip=box)


def _luminance(rgb: str) -> float:
    """WCAG relative luminance of a CSS ``rgb(r, g, b)`` colour."""
    channels = [int(v) / 255 for v in re.findall(r"\d+", rgb)[:3]]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(first: str, second: str) -> float:
    high, low = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


PIECES = """pane => [...pane.querySelectorAll('[data-at]')].map((el) => {
  const style = getComputedStyle(el);
  return { cls: el.className, background: style.backgroundColor, image: style.backgroundImage,
           line: style.borderBottomStyle, color: style.color, text: el.textContent };
})"""


def test_neighbouring_chunks_differ_in_brightness_and_line_and_overlaps_are_striped(watched, live_server):
    document_id = _document(live_server, ["fixed_size"], {"fixed_size": {"chunk_size": 80, "chunk_overlap": 20}})
    chunks = _preview(live_server, document_id, "fixed_size")["chunks"]
    preview = _open(watched, "fixed_size")
    pane = preview.get_by_label("Document text with chunk boundaries")
    pane.locator("[data-chunk]").nth(len(chunks) - 1).wait_for()

    pieces = pane.evaluate(PIECES)
    singles = [p for p in pieces if p["cls"] in ("chunk-a", "chunk-b")]
    overlaps = [p for p in pieces if p["cls"] == "chunk-overlap"]
    assert len(overlaps) == len(chunks) - 1 and len(singles) == len(chunks)
    # In text order each chunk's own text is followed by its overlap with the next, then the next chunk's.
    kinds = [p["cls"] for p in pieces]
    assert (
        kinds
        == [kind for i in range(len(chunks)) for kind in ("chunk-a" if i % 2 == 0 else "chunk-b", "chunk-overlap")][:-1]
    )
    for first, second in itertools.pairwise(singles):
        assert first["cls"] != second["cls"]
        assert _contrast(first["background"], second["background"]) >= 1.5  # brightness, not only hue
        assert first["line"] != second["line"]  # solid under one, dotted under the next
    for piece in singles:
        assert _contrast(piece["color"], piece["background"]) >= 4.5 and piece["image"] == "none"
    for piece in overlaps:
        assert piece["image"].startswith("repeating-linear-gradient") and piece["line"] == "double"

    # One numbering: chunk indices from 0, the same in the markers and in the range above them.
    markers = pane.locator("[data-chunk]").all_inner_texts()
    assert markers == [f"⟦{i}" for i in range(len(chunks))]
    assert (
        preview.get_by_test_id("chunk-range")
        .inner_text()
        .startswith(f"Chunks 0–{len(chunks) - 1} · {len(chunks)} on this page")
    )
    _shoot(preview, "chunk-preview-tones")


def test_contextual_retrieval_shows_its_prefix_and_mode(watched, live_server):
    document_id = _document(
        live_server, ["contextual_retrieval", "recursive"], {"contextual_retrieval": {"chunk_size": 60}}
    )
    api = _preview(live_server, document_id, "contextual_retrieval")
    assert api["prefix_mode"] == "deterministic"
    preview = _open(watched, "contextual_retrieval")
    pane = preview.get_by_label("Document text with chunk boundaries")
    pane.locator("[data-prefix]").nth(len(api["chunks"]) - 1).wait_for()

    note = preview.get_by_test_id("prefix-mode").inner_text()
    assert "Context prefixes: deterministic" in note and "CHUNKBENCH_LLM_BASE_URL" in note
    # Each chunk's prefix, as the API gives it, right after the marker of that chunk's start.
    drawn = pane.locator("[data-prefix]").evaluate_all(
        "els => els.map((el) => [Number(el.dataset.prefix), el.textContent, el.previousElementSibling.dataset.chunk])"
    )
    assert drawn == [[c["chunk_index"], c["context_prefix"], str(c["chunk_index"])] for c in api["chunks"]]
    assert 'section "Travel"' in pane.inner_text()
    # Without the prefixes the pane is the document again.
    preview.get_by_label("Show the context prefixes").uncheck()
    assert pane.locator("[data-prefix]").count() == 0
    text = re.sub(r"⟦\d+|⟧", "", pane.inner_text())
    markdown = httpx.get(f"{live_server}/documents/{document_id}/markdown").text
    assert text.strip() == markdown.strip()
    preview.get_by_label("Show the context prefixes").check()
    _shoot(preview, "chunk-preview-contextual")

    # recursive embeds its chunks as they are: no note, no prefix.
    preview.get_by_label("Chunk Preview strategy").select_option(label="recursive · all-MiniLM-L6-v2")
    preview.get_by_label("Diagnostics of recursive").wait_for()
    pane.locator("[data-chunk]").first.wait_for()
    assert preview.get_by_test_id("prefix-mode").count() == 0 and pane.locator("[data-prefix]").count() == 0


def test_size_histograms_and_two_strategies_side_by_side(watched, live_server):
    document_id = _document(
        live_server,
        ["fixed_size", "recursive", "semantic_parent_child"],
        {"fixed_size": {"chunk_size": 30, "chunk_overlap": 0}, "recursive": {"chunk_size": 90}},
    )
    sizes = httpx.get(f"{live_server}/admin/chunks/{document_id}/sizes").json()
    preview = _open(watched, "fixed_size")
    histograms = preview.get_by_role("region", name="Chunk sizes")
    histograms.locator("figure[data-strategy='semantic_parent_child']").wait_for()

    # A histogram per strategy, on the server's shared bins, counting every searchable chunk once.
    for run in sizes["runs"]:
        figure = histograms.locator(f"figure[data-strategy='{run['strategy']}']")
        bars = figure.locator("rect").evaluate_all(
            "els => els.map((el) => [Number(el.dataset.from), Number(el.dataset.count)])"
        )
        assert bars == [[i * sizes["bin_tokens"], count] for i, count in enumerate(run["counts"])]
        assert sum(count for _, count in bars) == run["chunk_count"] > 0
        assert f"{run['chunk_count']} chunks" in figure.inner_text()
    assert "shown" in histograms.locator("figure[data-strategy='fixed_size']").get_attribute("class")
    assert "parents not counted" in histograms.locator("figure[data-strategy='semantic_parent_child']").inner_text()

    # recursive beside fixed_size: its chunks over exactly the stretch of text of fixed_size's first page.
    preview.get_by_label("Chunk Preview second strategy").select_option(label="recursive · all-MiniLM-L6-v2")
    left = preview.get_by_label("Text with the chunks of fixed_size")
    right = preview.get_by_label("Text with the chunks of recursive")
    right.locator("[data-chunk]").first.wait_for()
    page_chunks = _preview(live_server, document_id, "fixed_size", limit=50)["chunks"]
    start, end = page_chunks[0]["start_index"], max(c["end_index"] for c in page_chunks)
    over = _preview(live_server, document_id, "recursive", start=start, end=end)["chunks"]
    assert right.locator("[data-chunk]").evaluate_all("els => els.map((el) => Number(el.dataset.chunk))") == [
        c["chunk_index"] for c in over
    ]
    assert left.locator("[data-at]").first.get_attribute("data-at") == right.locator("[data-at]").first.get_attribute(
        "data-at"
    )
    assert "shown" in histograms.locator("figure[data-strategy='recursive']").get_attribute("class")

    # Scrolling the left pane brings the same place of the text to the top of the right one.
    top = """pane => { const edge = pane.getBoundingClientRect().top;
      const piece = [...pane.querySelectorAll('[data-at]')].find((el) => el.getBoundingClientRect().bottom > edge + 1);
      return [Number(piece.dataset.at), Number(piece.dataset.at) + Number(piece.dataset.len)]; }"""
    assert left.evaluate("pane => pane.scrollHeight > pane.clientHeight * 2")
    left.evaluate("pane => { pane.scrollTop = pane.scrollHeight / 2; }")
    watched.wait_for_function("pane => pane.scrollTop > 0", arg=right.element_handle())
    left_span, right_span = left.evaluate(top), right.evaluate(top)
    assert left_span[0] < right_span[1] and right_span[0] < left_span[1]  # the two top pieces share text
    _shoot(preview, "chunk-preview-side-by-side")

    # Unticked, the panes scroll on their own.
    preview.get_by_label("Scroll both panes together").uncheck()
    before = right.evaluate("pane => pane.scrollTop")
    left.evaluate("pane => { pane.scrollTop = 0; }")
    watched.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert right.evaluate("pane => pane.scrollTop") == before
