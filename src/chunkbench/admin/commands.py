"""`chunkbench models …` (embedding roles and thresholds) and `chunkbench collections …` (Qdrant collections)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from chunkbench.config import get_settings
from chunkbench.console import (
    JsonOption,
    err,
    fail,
    open_database,
    out,
    print_json,
    vector_store,
)
from chunkbench.errors import ChunkbenchError

models_app = typer.Typer(help="Embedding models: Corpus/Boundary roles and semantic thresholds.", no_args_is_help=True)
collections_app = typer.Typer(help="Qdrant collections: list, wipe, delete, migrate.", no_args_is_help=True)
cache_app = typer.Typer(help="The embedding cache: every text embedded once per model.", no_args_is_help=True)


@models_app.command("list")
def models_list(as_json: JsonOption = False) -> None:
    """Registered embedding models, the role defaults and effective thresholds."""
    from chunkbench.embedding import roles

    _settings, database = open_database()
    with database.session() as session:
        listing = roles.list_models(session)
    if as_json:
        print_json(listing)
        return
    table = Table("model", "provider", "dim", "languages", "roles", "threshold", "available")
    for model in listing["models"]:
        held = ", ".join(role for role in ("corpus", "boundary") if model[f"is_{role}_default"])
        available = {True: "yes", False: "no", None: "not probed"}[model["available"]]
        if model.get("availability_note"):
            available += f" ({model['availability_note']})"
        threshold = f"{model['semantic_threshold']:g}" + (" (override)" if model["threshold_overridden"] else "")
        dimension, languages = str(model["dimension"]), model["languages_label"]
        table.add_row(model["id"], model["provider"], dimension, languages, held, threshold, available)
    out.print(table)


def _set_role(role: str, model_id: str, as_json: bool) -> None:
    from chunkbench.embedding import roles

    _settings, database = open_database()
    try:
        with database.session() as session:
            roles.set_role_model(session, role, model_id)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json({role: model_id})
    else:
        out.print(f"{role} model: {model_id}")


@models_app.command("corpus")
def models_corpus(model_id: str, as_json: JsonOption = False) -> None:
    """Set the default Corpus model (embeds chunks and queries)."""
    _set_role("corpus", model_id, as_json)


@models_app.command("boundary")
def models_boundary(model_id: str, as_json: JsonOption = False) -> None:
    """Set the default Boundary model (finds semantic cuts)."""
    _set_role("boundary", model_id, as_json)


@models_app.command("threshold")
def models_threshold(model_id: str, value: float, as_json: JsonOption = False) -> None:
    """Override a model's semantic threshold, in (0, 1]."""
    from chunkbench.embedding import roles

    _settings, database = open_database()
    try:
        with database.session() as session:
            roles.set_semantic_threshold(session, model_id, value)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json({"model_id": model_id, "semantic_threshold": value})
    else:
        out.print(f"semantic threshold of {model_id}: {value:g}")


@collections_app.command("list")
def collections_list(as_json: JsonOption = False) -> None:
    """Qdrant collections with their point counts."""
    try:
        collections = vector_store(get_settings()).list_collections()
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(collections)
        return
    table = Table("collection", "points", "dimension")
    for info in collections:
        table.add_row(info["name"], str(info["points"]), str(info.get("dimension") or ""))
    out.print(table)


def _collection_op(name: str, operation: str, yes: bool, as_json: bool) -> None:
    if not yes:
        if as_json:
            raise fail(ChunkbenchError(f"Add --yes to {operation} without a confirmation prompt."), as_json)
        typer.confirm(f"{operation.capitalize()} collection {name}?", abort=True)
    from chunkbench.admin.operations import clear_collection

    settings, database = open_database()
    store = vector_store(settings)
    try:
        # The CLI runs on the server's machine, as the operator: every tenant's points.
        clear_collection(database, store, name, delete=operation == "delete")
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json({operation: name})
    else:
        out.print(f"{operation}d {name}" if operation == "wipe" else f"deleted {name}")


@collections_app.command("wipe")
def collections_wipe(
    name: str, yes: Annotated[bool, typer.Option("--yes", "-y")] = False, as_json: JsonOption = False
) -> None:
    """Delete every point of a collection, keep the collection."""
    _collection_op(name, "wipe", yes, as_json)


@collections_app.command("delete")
def collections_delete(
    name: str, yes: Annotated[bool, typer.Option("--yes", "-y")] = False, as_json: JsonOption = False
) -> None:
    """Delete a collection and all its points."""
    _collection_op(name, "delete", yes, as_json)


@cache_app.command("stats")
def cache_stats(as_json: JsonOption = False) -> None:
    """Entries per model, bytes used and the bound of this data directory's embedding cache."""
    from chunkbench.admin import operations

    stats = operations.embedding_cache_stats(get_settings())
    if as_json:
        print_json(stats.model_dump())
        return
    table = Table("model", "entries")
    for model, count in stats.models.items():
        table.add_row(model, f"{count:,}")
    out.print(table)
    state = "" if stats.enabled else " (off: CHUNKBENCH_EMBEDDING_CACHE_ENABLED=false)"
    used, bound = stats.bytes / 2**20, stats.max_bytes / 2**20
    out.print(f"{stats.entries:,} vectors, {used:.1f} of {bound:.0f} MB in {stats.path}{state}")


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option("--model", help="Only this model's vectors")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask")] = False,
    as_json: JsonOption = False,
) -> None:
    """Forget cached embeddings; they are computed again when next needed."""
    from chunkbench.admin import operations

    what = f"the cached embeddings of {model}" if model else "every cached embedding"
    if not yes and not typer.confirm(f"Forget {what}?"):
        raise typer.Exit(code=1)
    try:
        cleared = operations.clear_embedding_cache(get_settings(), model)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(cleared.model_dump())
    else:
        out.print(f"{cleared.removed:,} cached embeddings removed.")


@collections_app.command("migrate")
def collections_migrate(as_json: JsonOption = False) -> None:
    """Move old embedded data ({data_dir}/qdrant, qdrant-client's local mode) into Qdrant Edge, with a progress bar.

    Any command that opens the store (and the server at start) does the same when it finds old data; an
    interrupted migration resumes where it stopped, and the old folder is kept as qdrant.local-mode-backup.
    """
    from chunkbench.storage.migration import legacy_pending

    settings = get_settings()
    if settings.qdrant_url:
        raise fail(
            ChunkbenchError(
                f"CHUNKBENCH_QDRANT_URL is set: the embedded store ({settings.qdrant_path}) is not in use."
            ),
            as_json,
        )
    pending = legacy_pending(settings)
    try:
        report = vector_store(settings).engine.migration if pending else None
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    result = {
        "source": str(settings.qdrant_legacy_path),
        "target": str(settings.qdrant_path),
        "migrated": report is not None,
        "collections": report.collections if report else {},
        "already_done": report.already_done if report else [],
        "backup": report.backup if report else None,
    }
    if as_json:
        print_json(result)
    elif report is None:
        out.print(f"Nothing to migrate: no old embedded data in {settings.qdrant_legacy_path}.")
    else:
        for name, points in report.collections.items():
            out.print(f"migrated {name}: {points} points")
        out.print(f"The old folder is kept as {report.backup}: delete it once you are satisfied.")


def doctor(
    repair: Annotated[
        bool, typer.Option("--repair", help="Delete orphan points; process again the runs whose points are gone")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Compare the metadata store with the vector store (every tenant, document, strategy and Corpus model) and
    report every difference; exit 1 when one remains."""
    from chunkbench.admin import consistency

    settings, database = open_database()
    try:
        store = vector_store(settings)
        if repair:
            report = consistency.repair(database, settings, store, progress=lambda message: err.print(message))
        else:
            report = consistency.check(database, store)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        _print_report(report)
    if not report.consistent:
        raise typer.Exit(code=1)


def _print_report(report) -> None:
    out.print(
        f"compared {report.tenants} tenant(s), {report.documents} document(s), {report.runs} indexed run(s), "
        f"{report.collections} collection(s), {report.points} point(s)"
    )
    if report.in_progress:
        out.print(f"{report.in_progress} document(s) a live process is processing now were left out: check again later")
    if report.findings:
        repaired = ["repair"] if report.repaired else []
        table = Table("tenant", "document", "strategy", "Corpus model", "finding", *repaired)
        for f in report.findings:
            row = [f.tenant_id, f.document_id, f.strategy or "", f.corpus_model_id or "", f"{f.kind}: {f.message}"]
            table.add_row(*row, *([f.repaired or ""] if report.repaired else []))
        out.print(table)
    if report.consistent:
        out.print("consistent: the metadata store and the vector store agree")
    else:
        out.print(f"{len(report.findings)} difference(s); `chunkbench doctor --repair` fixes them")
