"""Authentication with CHUNKBENCH_AUTH=on: Bearer keys on every route (new routers included), 401/403 bodies,
revocation within the cache bound, keys stored as hashes only, the admin CLI and the loopback-only bind."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from chunkbench.dependencies import TenantDep
from chunkbench.errors import InsecureBindError
from chunkbench.storage.schema import ApiKeyRow, DocumentRow
from chunkbench.tenants import accounts
from chunkbench.tenants.auth import PUBLIC_PATHS, Authenticator, check_bind


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def auth_client(settings):
    settings.auth = True
    with TestClient(create_app(settings)) as client:
        yield client


def _keys(client, tenant: str, *, admin: bool = False) -> dict[str, str]:
    """A new tenant (if needed) and a key of it, as request headers."""
    with client.app.state.database.session() as session:
        if session.get(accounts.TenantRow, tenant) is None:
            accounts.create_tenant(session, tenant.title(), tenant_id=tenant)
        _row, key = accounts.create_key(session, tenant, admin=admin)
    return {"Authorization": f"Bearer {key}"}


def _operator_key(client) -> str:
    """An operator key (of the default tenant), as `chunkbench admin key create --operator` makes it."""
    with client.app.state.database.session() as session:
        return accounts.create_key(session, "default", operator=True)[1]


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token cb_0123456789ab_x", "Bearer not-a-key",
     "Bearer cb_0123456789ab_" + "A" * 43],
)  # fmt: skip
def test_missing_malformed_or_unknown_keys_are_401_with_www_authenticate(auth_client, header):
    headers = {} if header is None else {"Authorization": header}
    response = auth_client.get("/documents", headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert response.json()["error"] == "unauthorized"
    assert "Bearer" in response.json()["message"] or "unknown or revoked" in response.json()["message"]


def test_a_key_gives_its_tenant_and_the_admin_scope_gates_admin_routes(auth_client):
    tenant_a = _keys(auth_client, "acme")
    upload = auth_client.post("/documents", headers=tenant_a, files={"file": ("a.md", b"# A\n\nAcme text.")})
    assert upload.status_code == 201, upload.text
    with auth_client.app.state.database.session() as session:
        assert session.get(DocumentRow, upload.json()["document"]["id"]).tenant_id == "acme"

    # /admin/* needs the admin scope: 403 names the command that makes such a key.
    for path in ("/admin/embedding-models", "/admin/questions", "/admin/health", "/admin/serving", "/metrics"):
        denied = auth_client.get(path, headers=tenant_a)
        assert denied.status_code == 403, path
        assert denied.json()["error"] == "forbidden"
        assert ("--operator" if path == "/metrics" else "--admin") in denied.json()["message"]
    admin_a = _keys(auth_client, "acme", admin=True)
    assert auth_client.get("/admin/embedding-models", headers=admin_a).status_code == 200
    assert auth_client.get("/admin/questions", headers=admin_a).json() == []
    # Every tenant's traffic is in the metrics: a tenant admin may not read them, an operator's key does.
    refused = auth_client.get("/metrics", headers=admin_a)
    assert refused.status_code == 403 and "--operator" in refused.json()["message"]
    operator = {"Authorization": f"Bearer {_operator_key(auth_client)}"}
    assert "chunkbench_http_requests_total" in auth_client.get("/metrics", headers=operator).text
    # An admin key is still its tenant's: the document list is acme's.
    assert auth_client.get("/documents", headers=admin_a).json()["total"] == 1


def test_public_routes_and_the_dashboard_files_need_no_key(auth_client):
    for path in ("/health", "/app", "/app/static/app.js", "/app/static/api.js", "/openapi.json", "/docs"):
        assert auth_client.get(path).status_code == 200, path
    assert auth_client.get("/", follow_redirects=False).status_code in (302, 307)


def test_every_route_but_the_public_ones_needs_a_key_including_routers_added_later(auth_client):
    # Another slice's router, included the ordinary way after the app was built.
    late = APIRouter(prefix="/late")

    @late.post("/probe")
    def late_query(tenant_id: TenantDep) -> dict[str, str]:
        return {"tenant": tenant_id}

    auth_client.app.include_router(late)
    auth_client.app.openapi_schema = None
    operations = [
        (method.upper(), path)
        for path, item in auth_client.app.openapi()["paths"].items()
        for method in item
        if path not in PUBLIC_PATHS
    ]
    assert {("POST", "/late/probe"), ("POST", "/v1/query")} <= set(operations) and len(operations) > 40
    for method, path in operations:
        response = auth_client.request(method, re.sub(r"\{[^}]+\}", "x", path))
        assert response.status_code == 401, f"{method} {path} answered {response.status_code} without a key"
    assert auth_client.post("/late/probe", headers=_keys(auth_client, "acme")).json() == {"tenant": "acme"}


def test_revoked_keys_stop_working_within_the_cache_ttl(settings):
    settings.auth = True
    settings.auth_cache_ttl_s = 5
    clock = Clock()
    with TestClient(create_app(settings)) as client:
        client.app.state.authenticator = Authenticator(settings, clock=clock)
        headers = _keys(client, "acme")
        assert client.get("/documents", headers=headers).status_code == 200
        with client.app.state.database.session() as session:
            key = session.scalar(select(ApiKeyRow))
            # Revoked by another process (the CLI, another replica): this one trusts its cached lookup...
            accounts.revoke_key(session, key.prefix)
        clock.now += 4.9
        assert client.get("/documents", headers=headers).status_code == 200
        # ...for at most auth_cache_ttl_s.
        clock.now += 0.1
        refused = client.get("/documents", headers=headers)
        assert refused.status_code == 401
        assert refused.json()["message"] == "The API key is unknown or revoked."


def test_a_cached_unknown_key_does_not_reach_the_database_again(settings):
    settings.auth = True
    clock = Clock()
    with TestClient(create_app(settings)) as client:
        authenticator = client.app.state.authenticator = Authenticator(settings, clock=clock)
        calls = []
        load = authenticator.load
        authenticator.load = lambda *args: calls.append(args) or load(*args)
        headers = _keys(client, "acme")
        bad = {"Authorization": "Bearer cb_0123456789ab_" + "B" * 43}
        for _ in range(3):
            assert client.get("/documents", headers=headers).status_code == 200
            assert client.get("/documents", headers=bad).status_code == 401
        assert len(calls) == 2  # one lookup per distinct key within the TTL
        clock.now += settings.auth_cache_ttl_s
        client.get("/documents", headers=headers)
        assert len(calls) == 3


def test_keys_are_stored_as_sha256_only_and_last_use_is_recorded(auth_client):
    headers = _keys(auth_client, "acme")
    key = headers["Authorization"].removeprefix("Bearer ")
    assert re.fullmatch(r"cb_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", key)
    assert auth_client.get("/documents", headers=headers).status_code == 200
    with auth_client.app.state.database.session() as session:
        row = session.scalar(select(ApiKeyRow))
        assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
        assert key not in repr({c.name: getattr(row, c.name) for c in ApiKeyRow.__table__.columns})
        assert row.prefix == key.split("_")[1]
        assert row.last_used_at is not None
        assert row.scopes == ["query"]


def test_auth_off_serves_the_default_tenant_without_a_key(client):
    upload = client.post("/documents", files={"file": ("a.md", b"# A\n\nLocal text.")})
    assert upload.status_code == 201
    with client.app.state.database.session() as session:
        assert session.get(DocumentRow, upload.json()["document"]["id"]).tenant_id == "default"
    assert client.get("/admin/embedding-models").status_code == 200


# ------------------------------------------------------------------------------------------ the admin CLI


@pytest.fixture
def cli(settings, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(settings.data_dir))
    # The CLI and the test's server share one metadata store (SQLite under data_dir, or the test's PostgreSQL).
    monkeypatch.setenv("CHUNKBENCH_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


def test_admin_cli_creates_tenants_and_keys_that_the_server_accepts_until_revoked(cli, settings):
    created = cli.invoke(cli_app, ["admin", "tenant", "create", "Acme Corp", "--rate-limit-per-minute", "120"])
    assert created.exit_code == 0, created.output
    assert "acme-corp" in created.output
    assert cli.invoke(cli_app, ["admin", "tenant", "create", "Acme Corp"]).exit_code == 1  # 409: exists
    tenants = cli.invoke(cli_app, ["admin", "tenant", "list", "--json"])
    assert [(t["id"], t["rate_limit_per_minute"]) for t in json.loads(tenants.stdout)] == [
        ("default", None),
        ("acme-corp", 120.0),
    ]
    made = cli.invoke(
        cli_app, ["admin", "key", "create", "--tenant", "acme-corp", "--admin", "--name", "ops", "--json"]
    )
    assert made.exit_code == 0, made.output
    key = json.loads(made.stdout)
    assert key["scopes"] == ["query", "admin"] and key["key"].startswith(f"cb_{key['prefix']}_")
    listed = cli.invoke(cli_app, ["admin", "key", "list", "--json"])
    assert "key" not in json.loads(listed.stdout)[0]  # the secret is shown once only
    assert key["key"] not in listed.stdout

    settings.auth = True
    settings.auth_cache_ttl_s = 0
    with TestClient(create_app(settings)) as client:
        headers = {"Authorization": f"Bearer {key['key']}"}
        assert client.get("/admin/embedding-models", headers=headers).status_code == 200
        revoked = cli.invoke(cli_app, ["admin", "key", "revoke", key["id"]])
        assert revoked.exit_code == 0, revoked.output
        assert client.get("/admin/embedding-models", headers=headers).status_code == 401
    assert cli.invoke(cli_app, ["admin", "key", "revoke", "nope"]).exit_code == 1
    assert cli.invoke(cli_app, ["admin", "key", "create", "--tenant", "nope"]).exit_code == 1


# ------------------------------------------------------------------------------- loopback-only without auth


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_binds_are_allowed_with_auth_off(settings, host):
    check_bind(host, settings)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_other_binds_need_auth_or_an_explicit_allowance(settings, host):
    with pytest.raises(InsecureBindError):
        check_bind(host, settings)
    check_bind(host, settings, allow_insecure=True)
    check_bind(host, settings.model_copy(update={"allow_insecure_bind": True}))
    check_bind(host, settings.model_copy(update={"auth": True}))


def test_serve_refuses_a_public_bind_with_auth_off(cli):
    result = cli.invoke(cli_app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "Refusing to listen on 0.0.0.0 with authentication off" in " ".join(result.output.split())
    assert "--allow-insecure-bind" in result.output
