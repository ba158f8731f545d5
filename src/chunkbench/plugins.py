"""The plugin seam (docs/service.md): ``CHUNKBENCH_PLUGINS_DIR`` and the public functions plugins register through.

Every ``*.py`` in the directory is imported at start (the app's lifespan and every CLI invocation), in name
order, once per process. A plugin registers what it adds with :func:`register_strategy`,
:func:`register_parser`, :func:`register_embedder` or :func:`register_retriever`; a registered strategy,
parser, embedder or retriever is then usable everywhere a built-in one is. An unset or absent directory is a
no-op; a plugin that fails to import or registers something invalid or already taken stops the start with a
:class:`~chunkbench.errors.PluginError` naming its file, and nothing of that load stays registered.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from chunkbench.chunking import entry_points
from chunkbench.chunking.base import ChunkingStrategy, StrategyParams, check_strategy
from chunkbench.documents.parsers.base import DocumentParser
from chunkbench.embedding.providers import EmbeddingProvider
from chunkbench.embedding.registry import EmbeddingModelSpec
from chunkbench.errors import PluginError
from chunkbench.models import RetrieverName, StrategyName
from chunkbench.retrieval.search import Retriever

__all__ = [
    "ChunkingStrategy",
    "DocumentParser",
    "EmbeddingModelSpec",
    "EmbeddingProvider",
    "PluginError",
    "Retriever",
    "StrategyParams",
    "load_plugins",
    "register_embedder",
    "register_parser",
    "register_retriever",
    "register_strategy",
]

ProviderFactory = Callable[[EmbeddingModelSpec, Any], EmbeddingProvider]

_SUFFIX = re.compile(r"^\.[a-z0-9][a-z0-9._-]{0,15}$")
_LOCK = threading.RLock()
_LOADED_DIRS: set[Path] = set()
# What registered each name, for "already registered by …" messages: (kind, name) → plugin file.
_ORIGINS: dict[tuple[str, str], str] = {}
_current_plugin: list[str] = []


def _registries(*, load: bool = True) -> dict[str, Any]:
    """The live registry objects (built-ins imported first, so a plugin can never shadow one; ``load=False`` when
    they are only being put back)."""
    import chunkbench.documents.parsers  # noqa: F401  (registers the built-in parsers)
    from chunkbench.chunking.base import _STRATEGIES, all_strategies

    if load:
        all_strategies()  # the built-in strategies and the entry points' first: a plugin never shadows one
    from chunkbench.documents.parsers.base import _REGISTRY
    from chunkbench.embedding import providers, registry
    from chunkbench.retrieval import search

    return {
        "strategy_names": StrategyName._members,
        "retriever_names": RetrieverName._members,
        "strategies": _STRATEGIES,
        "parsers": _REGISTRY,
        "embedders": registry.REGISTRY,
        "embedder_factories": providers.PLUGIN_FACTORIES,
        "providers": providers._PROVIDERS,
        "retrievers": search._RETRIEVERS,
        "origins": _ORIGINS,
        "entry_point_origins": entry_points.ORIGINS,
    }


def _snapshot() -> dict[str, dict[Any, Any]]:
    return {key: dict(registry) for key, registry in _registries().items()}


def _restore(snapshot: dict[str, dict[Any, Any]]) -> None:
    for key, registry in _registries(load=False).items():
        registry.clear()
        registry.update(snapshot[key])


@contextmanager
def isolated_registries() -> Iterator[None]:
    """Everything registered inside the block (and the record of loaded directories) is undone on exit."""
    with _LOCK:
        snapshot, loaded, modules = _snapshot(), set(_LOADED_DIRS), set(sys.modules)
    try:
        yield
    finally:
        with _LOCK:
            _restore(snapshot)
            _LOADED_DIRS.clear()
            _LOADED_DIRS.update(loaded)
            for name in set(sys.modules) - modules:
                if name.startswith("chunkbench_plugin_"):
                    del sys.modules[name]


# --------------------------------------------------------------------------- loading


def load_plugins(directory: Path | None) -> list[Path]:
    """Import every ``*.py`` of ``directory`` (sorted by name), once per process; the files imported now.

    ``None`` or a missing directory: nothing. Any failure raises :class:`PluginError` naming the file, after
    undoing every registration this call made.
    """
    if directory is None:
        return []
    directory = Path(directory).expanduser()
    if not directory.exists():
        return []
    if not directory.is_dir():
        raise PluginError(f"CHUNKBENCH_PLUGINS_DIR={directory} is not a directory.", plugins_dir=str(directory))
    resolved = directory.resolve()
    with _LOCK:
        if resolved in _LOADED_DIRS:
            return []
        files = sorted(path for path in resolved.glob("*.py") if path.is_file())
        snapshot, modules = _snapshot(), set(sys.modules)
        try:
            for path in files:
                _import_plugin(path)
        except BaseException:
            # All or nothing: a half-loaded plugin set must not serve (and a retry starts clean).
            _restore(snapshot)
            for name in set(sys.modules) - modules:
                if name.startswith("chunkbench_plugin_"):
                    del sys.modules[name]
            raise
        _LOADED_DIRS.add(resolved)
    return files


def _module_name(path: Path) -> str:
    # Unique per file: two directories may both hold a "strategies.py".
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"chunkbench_plugin_{digest}_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}"


def _import_plugin(path: Path) -> None:
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"Plugin {path} cannot be imported as a Python module.", plugin=str(path))
    module = importlib.util.module_from_spec(spec)
    # In sys.modules while it runs, as for any import (dataclasses and pickling look the module up there).
    sys.modules[name] = module
    _current_plugin.append(str(path))
    try:
        spec.loader.exec_module(module)
    except PluginError as exc:
        raise PluginError(f"Plugin {path}: {exc.message}", plugin=str(path)) from exc
    except (Exception, SystemExit) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise PluginError(
            f"Plugin {path} failed to import{where}: {type(exc).__name__}: {exc}", plugin=str(path)
        ) from exc
    finally:
        _current_plugin.pop()


def _origin() -> str:
    return _current_plugin[-1] if _current_plugin else "Python code"


def _taken(kind: str, name: str) -> PluginError:
    by = _ORIGINS.get((kind, name)) or (entry_points.ORIGINS.get(name) if kind == "strategy" else None)
    by = by or "chunkbench (built-in)"
    return PluginError(f"The {kind} '{name}' is already registered (by {by}); pick another name.")


def _check_class(cls: Any, base: type, kind: str) -> None:
    if not (inspect.isclass(cls) and issubclass(cls, base)):
        raise PluginError(f"register_{kind} needs a {base.__name__} subclass; got {cls!r}.")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cast(Any, cls).__abstractmethods__))  # set by ABCMeta: isabstract said so
        raise PluginError(f"{kind.capitalize()} {cls.__name__} does not implement {missing}.")


def _register_named(kind: str, names: Any, name: str, register: Callable[[], object]) -> None:
    """Add ``name`` to an open name type (StrategyName, RetrieverName), then ``register`` the class under it."""
    with _LOCK:
        _registries()
        if name in names:
            raise _taken(kind, name)
        try:
            names.add(name)
        except ValueError as exc:
            raise PluginError(f"{kind.capitalize()} name: {exc}") from None
        register()
        _ORIGINS[(kind, name)] = _origin()


# --------------------------------------------------------------------------- public registration API


def register_strategy(cls: type[ChunkingStrategy]) -> type[ChunkingStrategy]:
    """Register a chunking strategy class (usable as a decorator).

    The class sets ``name`` (lowercase words joined by ``_``), ``description`` and ``params_model`` (a
    :class:`StrategyParams` subclass whose JSON Schema ``GET /strategies`` shows) and implements
    ``chunk(document) -> list[Chunk]`` (build chunks with :class:`chunkbench.chunking.base.ChunkFactory`).
    """
    check_strategy(cls)
    from chunkbench.chunking.base import register_strategy as register

    _register_named("strategy", StrategyName, cls.name, lambda: register(cls))
    return cls


def register_parser(cls: type[DocumentParser]) -> type[DocumentParser]:
    """Register a document parser class for its ``suffixes`` (usable as a decorator).

    The class sets ``suffixes`` (e.g. ``(".rst",)``), ``mime_type`` and ``label`` and implements
    ``sniff(head) -> bool`` and ``parse(path, settings) -> ParseResult`` (build it with
    ``chunkbench.documents.tree.build_parse_result`` from ``Block``s, as the built-in parsers do).
    """
    _check_class(cls, DocumentParser, "parser")
    suffixes = getattr(cls, "suffixes", None)
    if not isinstance(suffixes, tuple) or not suffixes:
        raise PluginError(f"Parser {cls.__name__} needs 'suffixes', a non-empty tuple such as ('.rst',).")
    for suffix in suffixes:
        if not isinstance(suffix, str) or not _SUFFIX.match(suffix):
            raise PluginError(f"Parser {cls.__name__}: suffix {suffix!r} must look like '.rst' (lowercase).")
    for attribute in ("mime_type", "label"):
        if not isinstance(getattr(cls, attribute, None), str):
            raise PluginError(f"Parser {cls.__name__} needs a '{attribute}' string.")
    with _LOCK:
        registries = _registries()
        for suffix in suffixes:
            if suffix in registries["parsers"]:
                raise _taken("parser for", suffix)
        from chunkbench.documents.parsers.base import register

        register(cls)
        for suffix in suffixes:
            _ORIGINS[("parser for", suffix)] = _origin()
    return cls


def register_embedder(spec: EmbeddingModelSpec, factory: ProviderFactory) -> EmbeddingModelSpec:
    """Register an embedding model: its spec (``provider="plugin"``) and ``factory(spec, settings)`` that
    builds its :class:`EmbeddingProvider` (called once, on first use; rows are checked and L2-normalised).

    The model is then a Corpus or Boundary model like any built-in (``corpus_model_id``, ``GET
    /admin/embedding-models``).
    """
    if not isinstance(spec, EmbeddingModelSpec):
        raise PluginError(f"register_embedder needs an EmbeddingModelSpec; got {spec!r}.")
    if spec.provider != "plugin":
        raise PluginError(f"Embedder '{spec.id}' must declare provider='plugin' (got '{spec.provider}').")
    if not callable(factory):
        raise PluginError(f"Embedder '{spec.id}' needs a factory(spec, settings) -> EmbeddingProvider.")
    if not spec.id or not isinstance(spec.dimension, int) or spec.dimension < 1 or spec.batch_size < 1:
        raise PluginError(f"Embedder '{spec.id}' needs a non-empty id and a positive dimension and batch size.")
    with _LOCK:
        registries = _registries()
        if spec.id in registries["embedders"]:
            raise _taken("embedding model", spec.id)
        registries["embedders"][spec.id] = spec
        registries["embedder_factories"][spec.id] = factory
        _ORIGINS[("embedding model", spec.id)] = _origin()
    return spec


def register_retriever(cls: type[Retriever]) -> type[Retriever]:
    """Register a retriever class (usable as a decorator).

    The class sets ``name`` (lowercase words joined by ``_``), ``needs_query_vector`` (embed the question
    with the Corpus model?) and ``uses_sparse``, and overrides ``search(store, request)``; it may call the
    built-ins through ``chunkbench.retrieval.search.get_retriever("dense" | "bm25" | "hybrid")``.
    """
    _check_class(cls, Retriever, "retriever")
    name = getattr(cls, "name", None)
    if not isinstance(name, str):
        raise PluginError(f"Retriever {cls.__name__} has no string 'name'.")
    if cls.search is Retriever.search:
        raise PluginError(f"Retriever '{name}' must override search(store, request).")
    from chunkbench.retrieval.search import register_retriever as register

    _register_named("retriever", RetrieverName, name, lambda: register(cls))
    return cls
