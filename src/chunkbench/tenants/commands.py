"""``chunkbench admin``: tenants and their API keys (the server reads them with ``CHUNKBENCH_AUTH=on``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from chunkbench.console import JsonOption, err, fail, open_database, out, print_json
from chunkbench.errors import ChunkbenchError, InvalidRequestError

admin_app = typer.Typer(help="Administration: tenants and API keys.", no_args_is_help=True)
tenant_app = typer.Typer(help="Tenants: each has its own documents, keys and rate limit.", no_args_is_help=True)
key_app = typer.Typer(help="API keys (only their hashes are stored).", no_args_is_help=True)
admin_app.add_typer(tenant_app, name="tenant")
admin_app.add_typer(key_app, name="key")


def _when(moment) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else ""


@tenant_app.command("create")
def create_tenant(
    name: Annotated[str, typer.Argument(help="Display name; the id is its slug unless --id is given")],
    tenant_id: Annotated[str | None, typer.Option("--id", help="Tenant id (lowercase slug)")] = None,
    rate_limit_per_minute: Annotated[
        float | None, typer.Option(min=0, help="Requests per minute (default: CHUNKBENCH_RATE_LIMIT_PER_MINUTE)")
    ] = None,
    rate_limit_burst: Annotated[
        int | None, typer.Option(min=1, help="Burst size (default: CHUNKBENCH_RATE_LIMIT_BURST)")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a tenant."""
    from chunkbench.tenants import accounts
    from chunkbench.tenants.schemas import TenantOut

    _settings, database = open_database()
    try:
        with database.session() as session:
            tenant = TenantOut.model_validate(
                accounts.create_tenant(
                    session,
                    name,
                    tenant_id=tenant_id,
                    rate_limit_per_minute=rate_limit_per_minute,
                    rate_limit_burst=rate_limit_burst,
                )
            )
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from None
    finally:
        database.dispose()
    if as_json:
        print_json(tenant.model_dump(mode="json"))
    else:
        out.print(f"tenant [bold]{tenant.id}[/bold] created ({tenant.name})")


@tenant_app.command("list")
def list_tenants(as_json: JsonOption = False) -> None:
    """Every tenant with its rate limit and number of active keys."""
    from chunkbench.tenants import accounts
    from chunkbench.tenants.schemas import TenantOut

    _settings, database = open_database()
    with database.session() as session:
        tenants = [TenantOut.model_validate(row) for row in accounts.list_tenants(session)]
        active: dict[str, int] = {}
        for key in accounts.list_keys(session):
            active[key.tenant_id] = active.get(key.tenant_id, 0) + (key.revoked_at is None)
    database.dispose()
    if as_json:
        print_json([{**t.model_dump(mode="json"), "active_keys": active.get(t.id, 0)} for t in tenants])
        return
    table = Table("id", "name", "per minute", "burst", "active keys", "created")
    for t in tenants:
        table.add_row(
            t.id, t.name, "default" if t.rate_limit_per_minute is None else f"{t.rate_limit_per_minute:g}",
            "default" if t.rate_limit_burst is None else str(t.rate_limit_burst), str(active.get(t.id, 0)),
            _when(t.created_at),
        )  # fmt: skip
    out.print(table)


@key_app.command("create")
def create_key(
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="Tenant id (with --operator: default, the default tenant)")
    ] = None,
    admin: Annotated[bool, typer.Option("--admin", help="The tenant's admin: its own /admin/* configuration")] = False,
    operator: Annotated[
        bool,
        typer.Option("--operator", help="The deployment's operator: collections, the embedding cache, models, metrics"),
    ] = False,
    name: Annotated[str | None, typer.Option("--name", help="What the key is for")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key and print it once: it is not stored and cannot be shown again."""
    from chunkbench.storage.schema import DEFAULT_TENANT
    from chunkbench.tenants import accounts
    from chunkbench.tenants.schemas import ApiKeyCreated, ApiKeyOut

    if tenant is None and not operator:
        missing = InvalidRequestError("Name the key's tenant: --tenant T (only an --operator key defaults to it).")
        raise fail(missing, as_json)
    _settings, database = open_database()
    try:
        with database.session() as session:
            row, token = accounts.create_key(
                session, tenant or DEFAULT_TENANT, name=name, admin=admin, operator=operator
            )
            created = ApiKeyCreated(**ApiKeyOut.model_validate(row).model_dump(), key=token)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from None
    finally:
        database.dispose()
    if as_json:
        print_json(created.model_dump(mode="json"))
        return
    scopes = ", ".join(created.scopes)
    err.print(f"key {created.id} (prefix {created.prefix}) for tenant {created.tenant_id}, scopes {scopes}")
    err.print("Store it now: it cannot be shown again.")
    # The key alone on stdout, so `KEY=$(chunkbench admin key create --tenant t)` works.
    out.print(created.key, markup=False, highlight=False, soft_wrap=True)


@key_app.command("revoke")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="Key id or prefix")],
    as_json: JsonOption = False,
) -> None:
    """Revoke a key; every server stops accepting it within CHUNKBENCH_AUTH_CACHE_TTL_S seconds."""
    from chunkbench.tenants import accounts
    from chunkbench.tenants.schemas import ApiKeyOut

    settings, database = open_database()
    try:
        with database.session() as session:
            key = ApiKeyOut.model_validate(accounts.revoke_key(session, key_id))
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from None
    finally:
        database.dispose()
    if as_json:
        print_json(key.model_dump(mode="json"))
    else:
        out.print(
            f"key {key.id} (prefix {key.prefix}) of tenant {key.tenant_id} revoked; servers refuse it within "
            f"{settings.auth_cache_ttl_s:g} s"
        )


@key_app.command("list")
def list_keys(
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant's keys")] = None,
    as_json: JsonOption = False,
) -> None:
    """API keys (never their secrets): tenant, scopes, created, revoked, last used."""
    from chunkbench.tenants import accounts
    from chunkbench.tenants.schemas import ApiKeyOut

    _settings, database = open_database()
    with database.session() as session:
        keys = [ApiKeyOut.model_validate(row) for row in accounts.list_keys(session, tenant_id=tenant)]
    database.dispose()
    if as_json:
        print_json([key.model_dump(mode="json") for key in keys])
        return
    table = Table("id", "prefix", "tenant", "name", "scopes", "created", "revoked", "last used")
    for k in keys:
        table.add_row(
            k.id, k.prefix, k.tenant_id, k.name or "", ", ".join(k.scopes), _when(k.created_at), _when(k.revoked_at),
            _when(k.last_used_at),
        )  # fmt: skip
    out.print(table)
