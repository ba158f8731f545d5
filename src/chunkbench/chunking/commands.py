"""``chunkbench strategies``: the registered strategies, and the variants of the variants file."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from chunkbench.config import get_settings
from chunkbench.console import JsonOption, fail, out, print_json, strategy_params
from chunkbench.errors import ChunkbenchError

strategies_app = typer.Typer(help="The chunking strategies, and the variants declared in the variants file.")


@strategies_app.callback(invoke_without_command=True)
def strategies(
    ctx: typer.Context,
    corpus_model: Annotated[
        str | None, typer.Option(help="The Corpus model the size defaults follow (default: the Admin Corpus role)")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The chunking strategies and their parameters (variants: the base and what they pin), with the size defaults
    of the Corpus model and the largest sizes it reads whole."""
    if ctx.invoked_subcommand is not None:
        return
    from chunkbench.chunking.base import all_strategies, readable_sizes, size_defaults
    from chunkbench.chunking.library_strategies import listing
    from chunkbench.embedding.registry import get_spec

    try:
        spec = get_spec(corpus_model or _corpus_role_model())
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    catalog = [
        {"name": cls.name.value, "description": cls.description, "needs_boundary_model": cls.needs_boundary,
         "params": {key: field.default for key, field in cls.params_model.model_fields.items()}
         | size_defaults(cls.name, spec.readable_chunk_tokens),
         "readable_sizes": readable_sizes(cls.name, spec.readable_chunk_tokens),
         "corpus_model_id": spec.id, "variant_of": cls.variant.base if cls.variant else None,
         "in_default_set": cls.in_default_set, **listing(cls)}
        for cls in all_strategies()
    ]  # fmt: skip
    if as_json:
        print_json(catalog)
        return
    table = Table("strategy", "library", "boundary model", f"parameters (defaults on {spec.id})", "description")
    for item in catalog:
        params = ", ".join(
            f"{k}={v}" + (f" (read whole up to {item['readable_sizes'][k]})" if k in item["readable_sizes"] else "")
            for k, v in item["params"].items()
        )
        boundary = "yes" if item["needs_boundary_model"] else ""
        table.add_row(item["name"], _library_cell(item), boundary, params, item["description"])
    out.print(table)
    if spec.readable_chunk_tokens is not None:
        out.print(
            f"Size defaults follow the Corpus model {spec.id}: it reads chunks of up to {spec.readable_chunk_tokens} "
            f"cl100k tokens of English prose whole (window {spec.max_input_tokens} of its own tokens; measured, "
            "perf/defaults.py). Other models: --corpus-model ID.",
            highlight=False,
        )


def _library_cell(item: dict) -> str:
    """chunkbench's own: blank; a library's: its name and version, or how to install it."""
    if "library" not in item:
        return ""
    if item["available"]:
        return f"{item['library']} {item['library_version']}"
    return f"{item['library']} (not installed: {item['install']})"


def _corpus_role_model() -> str:
    """The Admin Corpus role's model id (what processing embeds with by default)."""
    from chunkbench.console import open_database
    from chunkbench.embedding import roles

    _settings, database = open_database()
    try:
        with database.session() as session:
            return roles.get_role_model_id(session, roles.EmbeddingRole.CORPUS)
    finally:
        database.dispose()


@strategies_app.command("add")
def strategies_add(
    name: Annotated[str, typer.Argument(help="The variant's name, e.g. fixed_size_250_125")],
    base: Annotated[str, typer.Option(help="The strategy it derives from, e.g. fixed_size")],
    param: Annotated[
        list[str],
        typer.Option(
            help="A pinned parameter [STRATEGY.]KEY=VALUE, e.g. chunk_size=250 (repeatable); a STRATEGY. prefix "
            "must name the base"
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Declare a strategy variant in the variants file: a strategy of its own, with its own runs and collection."""
    from chunkbench.chunking import variants
    from chunkbench.chunking.base import Variant

    settings = get_settings()
    try:
        cls = variants.add(settings, Variant(name, base, strategy_params(param, [base]).get(base, {})))
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    declared = cls.variant
    assert declared is not None  # variants.add returns the class it made from this variant
    if as_json:
        print_json({"name": declared.name, "base": declared.base, "params": dict(declared.params)})
        return
    out.print(
        f"{declared.name}: {declared.base} with {declared.describe()} (in {settings.resolved_strategies_file}). "
        f"Process it by name: chunkbench process DOCUMENT --strategies {declared.name}",
        highlight=False,
    )


@strategies_app.command("remove")
def strategies_remove(
    name: Annotated[str, typer.Argument(help="The variant's name")], as_json: JsonOption = False
) -> None:
    """Remove a variant from the variants file; its runs and Experiments stay readable as history."""
    from chunkbench.chunking import variants

    settings = get_settings()
    try:
        removed = variants.remove(settings, name)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    if as_json:
        print_json({"removed": removed.name})
        return
    out.print(f"removed {removed.name} ({removed.base} with {removed.describe()})", highlight=False)
