"""Strategy variants: a registered strategy under its own name with some parameters pinned.

One Experiment compares strategies; a document holds one current run per strategy and Corpus model. To compare
``fixed_size`` at 250 and at 800 tokens in one Experiment (Chroma's table is two chunkers at three sizes each),
each size must be a strategy of its own: a variant. ``fixed_size_250_125 = fixed_size {chunk_size: 250,
chunk_overlap: 125}`` is a subclass of the base strategy whose parameter defaults are the pinned values, so it has
its own runs, chunk ids, Qdrant collection and configuration keys, and the base's capabilities — nothing else in
the product needs to know it is a variant.

Variants are declared in the variants file (``CHUNKBENCH_STRATEGIES_FILE``, default ``{data_dir}/strategies.toml``),
read at every start (server and CLI, after the plugins, so a variant may derive from a plugin's strategy) and
written by ``chunkbench strategies add|remove``. The file is plain TOML a team can keep under version control:

    [variants.fixed_size_250_125]
    base = "fixed_size"
    chunk_size = 250
    chunk_overlap = 125

Variants are never in a default strategy list ("all", or no ``strategies`` given): they are named explicitly.
"""

from __future__ import annotations

import copy
import json
import threading
import tomllib
from pathlib import Path
from typing import Any

from pydantic import create_model

from chunkbench.chunking.base import (
    ChunkingStrategy,
    StrategyParams,
    Variant,
    defaults_from_settings,
    register_strategy,
    strategy_class,
    validate_params,
)
from chunkbench.config import Settings
from chunkbench.errors import ChunkingError
from chunkbench.models import StrategyName

_LOCK = threading.Lock()


def define(variant: Variant, settings: Settings) -> type[ChunkingStrategy]:
    """Register ``variant`` in this process (idempotent for the same declaration) and return its class.

    ChunkingError (400) for a malformed or taken name, an unknown base, a base that is itself a variant, or
    parameters the base refuses (checked with the base's other defaults, so ``chunk_overlap`` must stay below the
    size it will be used with).
    """
    base = strategy_class(variant.base)
    if base.variant is not None:
        raise ChunkingError(
            f"Variant '{variant.name}': its base '{variant.base}' is itself a variant; derive from "
            f"'{base.variant.base}' and pin every parameter there."
        )
    if not variant.params:
        raise ChunkingError(f"Variant '{variant.name}' pins no parameter: it would be '{variant.base}' itself.")
    unknown = sorted(set(variant.params) - set(base.params_model.model_fields))
    if unknown:
        known = ", ".join(base.params_model.model_fields)
        raise ChunkingError(f"Variant '{variant.name}': '{variant.base}' has no parameter {unknown} (it has: {known}).")
    validated = validate_params(base.name, {**defaults_from_settings(base.name, settings), **variant.params})
    pinned = {key: getattr(validated, key) for key in variant.params}
    with _LOCK:
        existing = _registered(variant.name)
        if existing is not None:
            declared = existing.variant
            if declared is not None and declared.base == base.name.value and dict(declared.params) == pinned:
                return existing
            raise ChunkingError(
                f"A strategy called '{variant.name}' already exists"
                + (f" (a variant of '{declared.base}' pinning {declared.describe()})." if declared else ".")
                + " Choose another name, or remove the variant first (chunkbench strategies remove)."
            )
        try:
            StrategyName.add(variant.name)  # validates the name before anything else is registered
        except ValueError as exc:
            raise ChunkingError(f"Variant name '{variant.name}': {exc}") from None
        cls = _variant_class(base, Variant(variant.name, base.name.value, pinned))
        return register_strategy(cls)


def _registered(name: str) -> type[ChunkingStrategy] | None:
    try:
        return strategy_class(name)
    except ChunkingError:
        return None


def _variant_class(base: type[ChunkingStrategy], variant: Variant) -> type[ChunkingStrategy]:
    # The pinned values become the defaults of a params model derived from the base's: constraints and validators
    # stay, a request may still set another value (it is then recorded with the run, as for any strategy).
    fields: dict[str, Any] = {}
    for key, value in variant.params.items():
        info = copy.copy(base.params_model.model_fields[key])
        info.default = value
        info.default_factory = None
        fields[key] = (info.annotation, info)
    params_model: type[StrategyParams] = create_model(  # type: ignore[call-overload]
        f"{base.params_model.__name__}_{variant.name}", __base__=base.params_model, **fields
    )
    namespace = {
        "__module__": __name__,
        "name": variant.name,
        "description": f"{base.description} Variant of {base.name.value}: {variant.describe()}.",
        "params_model": params_model,
        # A pinned parameter no longer takes its default from Settings (CHUNKBENCH_CHUNK_SIZE…).
        "settings_defaults": {k: v for k, v in base.settings_defaults.items() if k not in variant.params},
        "variant": variant,
        "in_default_set": False,
    }
    return type(f"{base.__name__}_{variant.name}", (base,), namespace)


# --------------------------------------------------------------------------- the variants file


def read_file(path: Path) -> list[Variant]:
    """The variants declared in ``path`` (none when it does not exist); ChunkingError naming the file if malformed."""
    if not path.is_file():
        return []
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ChunkingError(f"The variants file {path} is not valid TOML: {exc}. Fix or delete it.") from None
    unknown = sorted(set(table) - {"variants"})
    entries = table.get("variants", {})
    if unknown or not isinstance(entries, dict):
        raise ChunkingError(f"The variants file {path} may hold only [variants.NAME] tables; found {unknown}.")
    variants = []
    for name, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("base"), str):
            raise ChunkingError(f'The variants file {path}: [variants.{name}] needs base = "<strategy>".')
        params = {key: value for key, value in entry.items() if key != "base"}
        variants.append(Variant(name, entry["base"], params))
    return variants


def load(settings: Settings) -> list[type[ChunkingStrategy]]:
    """Register every variant of the variants file (the start of the server and of every CLI command)."""
    path = settings.resolved_strategies_file
    try:
        return [define(variant, settings) for variant in read_file(path)]
    except ChunkingError as exc:
        raise ChunkingError(f"{exc} (in {path})") from None


def add(settings: Settings, variant: Variant) -> type[ChunkingStrategy]:
    """Define ``variant`` and record it in the variants file (unchanged when it is already there, the same)."""
    cls = define(variant, settings)
    declared = cls.variant
    assert declared is not None
    path = settings.resolved_strategies_file
    with _LOCK:
        variants = {v.name: v for v in read_file(path)}
        if variants.get(declared.name) != declared:
            variants[declared.name] = declared
            _write(path, list(variants.values()))
    return cls


def remove(settings: Settings, name: str) -> Variant:
    """Drop ``name`` from the variants file. Its runs and Experiments stay readable as history (as a removed
    plugin's do); processing or querying it fails as an unknown strategy from the next start."""
    path = settings.resolved_strategies_file
    with _LOCK:
        variants = {v.name: v for v in read_file(path)}
        if name not in variants:
            known = ", ".join(variants) or "none"
            raise ChunkingError(f"No variant '{name}' in {path} (variants: {known}).")
        removed = variants.pop(name)
        _write(path, list(variants.values()))
    return removed


def _write(path: Path, variants: list[Variant]) -> None:
    # JSON scalars and lists of them are valid TOML values, so json.dumps writes each value; the file is replaced
    # in one rename, never left half-written.
    lines = ["# chunkbench strategy variants (chunkbench strategies add|remove); see chunking/variants.py", ""]
    for variant in variants:
        lines.append(f"[variants.{variant.name}]")
        lines.append(f"base = {json.dumps(variant.base)}")
        lines += [f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in variant.params.items()]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".toml.partial")
    partial.write_text("\n".join(lines), encoding="utf-8")
    partial.replace(path)
