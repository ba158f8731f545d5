"""The process form in a real browser with library strategies: chunkbench's five are ticked, the others offered
unticked with their library and version; one whose library is missing is greyed out with its install command and
cannot be chosen; a library strategy chosen in the form is processed and its run names the library."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import metadata
from typing import ClassVar

import httpx
import pytest

from chunkbench.chunking.base import register_strategy
from chunkbench.plugins import isolated_registries
from conftest import screenshot
from test_library_strategies import _NotInstalled

expect = pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package").expect

DEFAULT = ["fixed_size", "recursive", "semantic", "contextual_retrieval", "semantic_parent_child"]


class _Missing(_NotInstalled):
    name = "acme_missing"
    modules: ClassVar[tuple[str, ...]] = ("acme_splitters_not_installed",)


@pytest.fixture
def missing_library() -> Iterator[None]:
    # Registered before the app starts (the live server runs in this process), undone after the test.
    with isolated_registries():
        register_strategy(_Missing)
        yield


def test_library_strategies_are_offered_unticked_and_a_missing_one_cannot_be_chosen(
    missing_library, page, live_server
) -> None:
    text = "# Notes\n\n" + "\n\n".join(f"Paragraph {i} says the harbour opened at dawn." for i in range(8))
    httpx.post(f"{live_server}/documents", files={"file": ("notes.md", text.encode())}).raise_for_status()
    page.goto("/app#documents")
    documents = page.locator("#panel-documents")
    documents.get_by_role("button", name="notes.md", exact=True).click()
    documents.get_by_label("fixed_size Chunk Size").wait_for()

    for name in DEFAULT:
        expect(documents.get_by_role("checkbox", name=name, exact=True)).to_be_checked()
    more = documents.get_by_role("group", name="More strategies, named explicitly")
    version = metadata.version("langchain-text-splitters")
    langchain = more.get_by_role("checkbox", name=f"langchain_recursive langchain-text-splitters {version}")
    expect(langchain).not_to_be_checked()
    expect(langchain).to_be_enabled()
    missing = more.get_by_role("checkbox", name="acme_missing acme-splitters · not installed")
    expect(missing).to_be_disabled()
    assert "Not installed: pip install 'chunkbench[acme]'" in missing.locator("xpath=..").get_attribute("title")
    screenshot(page, "process-library-strategies")

    # Only the library strategy: the five unticked, LangChain's ticked.
    for name in DEFAULT:
        documents.get_by_role("checkbox", name=name, exact=True).uncheck()
    langchain.check()
    documents.get_by_role("button", name="Run 1 strategy").click()
    outcome = documents.get_by_role("table", name="Strategy outcomes")
    expect(outcome.locator("tbody tr")).to_have_count(1, timeout=120_000)
    expect(outcome).to_contain_text("langchain_recursive")
    document_id = httpx.get(f"{live_server}/documents").json()["items"][0]["id"]
    [run] = httpx.get(f"{live_server}/documents/{document_id}/runs").json()
    assert run["strategy_name"] == "langchain_recursive" and run["status"] == "completed"
    assert run["details"]["library"] == "langchain-text-splitters" and run["details"]["library_version"] == version
