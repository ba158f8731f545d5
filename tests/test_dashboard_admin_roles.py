"""The Admin tab for the two roles (CHUNKBENCH_AUTH=on), in a real browser on the real app (MiniLM, embedded Qdrant):
a tenant admin is not shown the deployment-wide controls (model roles, thresholds, dropping a collection, the shared
embedding cache, the consistency report) and never calls their routes; the operator is shown and uses them."""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import expect

from chunkbench.storage.db import Database
from chunkbench.tenants import accounts
from conftest import screenshot
from test_queries import HANDBOOK

FIXED = "fixed_size__all-MiniLM-L6-v2_collection"
RECURSIVE = "recursive__all-MiniLM-L6-v2_collection"
OPERATOR_ONLY = ("/admin/embedding-cache", "/admin/consistency")


@pytest.fixture
def keys(settings) -> dict[str, str]:
    """Auth on (before the live server starts): a tenant admin key of ``acme`` and an operator key."""
    settings.auth = True
    database = Database.from_settings(settings)
    with database.session() as session:
        accounts.create_tenant(session, "Acme", tenant_id="acme")
        admin = accounts.create_key(session, "acme", admin=True)[1]
        operator = accounts.create_key(session, "default", operator=True)[1]
    database.dispose()
    return {"admin": admin, "operator": operator}


def _ingest(base: str, key: str, name: str, strategy: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    document = httpx.post(f"{base}/documents", headers=headers, files={"file": (name, HANDBOOK.encode())})
    assert document.status_code == 201, document.text
    processed = httpx.post(
        f"{base}/documents/{document.json()['document']['id']}/process", headers=headers, params={"wait": "true"},
        json={"strategies": [strategy]}, timeout=120,
    )  # fmt: skip
    assert processed.status_code == 200, processed.text


def _use_key(page, key: str) -> None:
    """The key the dashboard sends (kept in the browser, as its API-key prompt keeps it), the Admin tab reloaded."""
    page.evaluate("key => localStorage.setItem('chunkbench.apiKey', key)", key)
    page.reload()


def test_a_tenant_admin_is_not_shown_the_operators_controls_and_the_operator_is(keys, page, live_server):
    # acme's handbook in fixed_size; the default tenant's in recursive: a collection acme has no point in.
    _ingest(live_server, keys["admin"], "acme.md", "fixed_size")
    _ingest(live_server, keys["operator"], "ops.md", "recursive")
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    # Before any script runs, so no call goes out without the key (a 401 would be a console error).
    first = json.dumps(keys["admin"])
    page.context.add_init_script(
        f"localStorage.getItem('chunkbench.apiKey') || localStorage.setItem('chunkbench.apiKey', {first})"
    )
    page.goto("/app#admin")

    role = page.get_by_test_id("admin-role")
    expect(role).to_have_attribute("data-role", "admin")
    expect(role).to_contain_text("acme")
    health = page.get_by_test_id("admin-health")
    expect(health).to_contain_text("1 collection holds your tenant's")
    # The roles are shown, not offered; thresholds read only, with who may change them.
    roles = page.get_by_test_id("model-roles")
    expect(roles).to_contain_text("Corpus model (embeds chunks and questions): MiniLM L6 v2")
    expect(page.get_by_text("An operator key (made on the server's machine")).to_be_visible()
    assert page.get_by_test_id("corpus-role").count() == 0 and page.get_by_test_id("boundary-role").count() == 0
    expect(page.get_by_test_id("admin-models")).to_contain_text("0.3")
    assert page.get_by_role("button", name="Save the threshold of all-MiniLM-L6-v2").count() == 0
    # Its own collection, its own wipe; no drop; the other tenant's collection is not listed.
    collections = page.get_by_test_id("admin-collections")
    expect(collections.locator("tbody tr")).to_have_count(1)
    expect(page.get_by_role("button", name=f"Wipe {FIXED}")).to_be_visible()
    assert page.get_by_role("button", name=f"Delete {FIXED}").count() == 0
    assert collections.locator(f"tr[data-collection='{RECURSIVE}']").count() == 0
    page.get_by_role("button", name=f"Wipe {FIXED}").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Your tenant's")
    expect(dialog).to_contain_text("other tenants' points and the collection stay")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    # No embedding cache, no consistency report: not drawn, and their routes were never called.
    assert page.locator("section[aria-label='Embedding cache']").count() == 0
    assert page.locator("section[aria-label='Consistency']").count() == 0
    assert not [url for url in asked if any(path in url for path in OPERATOR_ONLY)], asked
    page.evaluate("window.scrollTo(0, 0)")  # from the top: the sticky header is drawn where the last scroll left it
    screenshot(page, "admin-tenant-admin")

    _use_key(page, keys["operator"])
    role = page.get_by_test_id("admin-role")
    expect(role).to_have_attribute("data-role", "operator")
    expect(page.get_by_test_id("admin-health")).to_contain_text("2 collections")
    expect(page.get_by_test_id("corpus-role")).to_be_visible()
    expect(page.get_by_role("button", name="Save the threshold of all-MiniLM-L6-v2")).to_be_visible()
    for name in (FIXED, RECURSIVE):
        expect(page.get_by_role("button", name=f"Delete {name}")).to_be_visible()
    expect(page.get_by_test_id("consistency")).to_have_text(
        "2 tenant(s), 2 document(s), 2 indexed run(s), 4 point(s) compared. The two stores agree."
    )
    cache = page.get_by_test_id("embedding-cache")
    expect(cache).to_contain_text("embeddings")
    headers = {"Authorization": f"Bearer {keys['operator']}"}
    entries = httpx.get(f"{live_server}/admin/embedding-cache", headers=headers).json()["entries"]
    assert entries > 0
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "admin-operator")
    panel = page.locator("section[aria-label='Embedding cache']")
    panel.get_by_role("button", name="Clear").click()
    dialog = page.get_by_role("dialog").filter(has_text="Clear the embedding cache?")
    expect(dialog).to_contain_text(f"All {entries} cached embeddings, every tenant's")
    dialog.get_by_role("button", name="Clear").click()
    expect(panel.get_by_role("status")).to_have_text(f"{entries} cached embeddings removed.")
    assert httpx.get(f"{live_server}/admin/embedding-cache", headers=headers).json()["entries"] == 0
    expect(cache).to_contain_text("0 embeddings")
