"""The dashboard with CHUNKBENCH_AUTH=on, in a real browser: a 401 opens the API-key prompt, the key (kept in the
browser) then goes with every call and upload."""

from __future__ import annotations

import pytest

from chunkbench.storage.db import Database
from chunkbench.tenants import accounts
from conftest import screenshot


@pytest.fixture
def key(settings) -> str:
    """Auth on (before the live server starts) and an API key of tenant ``acme`` with one document."""
    settings.auth = True
    database = Database.from_settings(settings)
    with database.session() as session:
        accounts.create_tenant(session, "Acme")
        _row, token = accounts.create_key(session, "acme")
    database.dispose()
    return token


def test_a_401_asks_for_the_key_and_the_key_goes_with_every_call(key, page, tmp_path):
    page.goto("/app")
    form = page.get_by_test_id("api-key-form")
    form.wait_for()
    # The form shows at the first 401; the page's other first calls may still be on their way: let every one answer
    # before the expected errors are cleared, or a late 401 is logged after the clear and fails the teardown.
    page.wait_for_load_state("networkidle")
    # The browser logs each refused call as a console error: those are expected here, nothing else is.
    assert page.errors and all("401" in error for error in page.errors)
    page.errors.clear()
    field = page.get_by_label("API key")
    assert field.evaluate("element => element === document.activeElement")  # keyboard first
    screenshot(page, "auth-prompt")
    field.fill(key)
    field.press("Enter")  # reloads with the key
    page.get_by_test_id("api-key-button").wait_for()
    assert page.evaluate("localStorage.getItem('chunkbench.apiKey')") == key
    # An upload (XMLHttpRequest) carries the key too and lands in the key's tenant.
    document = tmp_path / "notes.md"
    document.write_text("# Notes\n\nSomething worth chunking.\n", encoding="utf-8")
    panel = page.locator("#panel-documents")
    panel.get_by_label("Choose files to upload").set_input_files(str(document))
    panel.get_by_text("added").first.wait_for()
    status = page.evaluate(
        """async (key) => (await fetch('/documents', {headers: {authorization: `Bearer ${key}`}})).json()""", key
    )
    assert [item["filename"] for item in status["items"]] == ["notes.md"]
    assert page.get_by_test_id("api-key-form").count() == 0
    # A report link cannot send a header: with a key set, a click fetches it with the key and opens the result.
    with page.expect_popup() as popup:
        page.evaluate(
            """async () => {
              const { withKey } = await import('/app/static/api.js');
              const link = Object.assign(document.createElement('a'), {href: '/documents', target: '_blank'});
              link.addEventListener('click', withKey);
              document.body.append(link);
              link.click();
            }"""
        )
    popup.value.wait_for_function("document.body && document.body.innerText.includes('notes.md')")
