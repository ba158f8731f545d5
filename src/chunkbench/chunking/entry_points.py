"""Strategies from installed packages: the ``chunkbench.strategies`` entry-point group.

Any package registers a strategy by declaring, in its ``pyproject.toml``::

    [project.entry-points."chunkbench.strategies"]
    my_chunker = "my_package.chunking:MyChunker"

where the name is the strategy's ``name`` and the value a :class:`~chunkbench.chunking.base.ChunkingStrategy`
subclass. chunkbench's own library adapters (``chunking/adapters/``) are registered the same way, by chunkbench's
``pyproject.toml``; ``CHUNKBENCH_PLUGINS_DIR``'s files register into the same registry (``plugins.py``). The group is
read once per process, the first time a strategy is looked up; a broken entry point stops that lookup with a
:class:`~chunkbench.errors.PluginError` naming the package and the entry point.
"""

from __future__ import annotations

import threading
from importlib import metadata

from chunkbench.chunking.base import ChunkingStrategy, check_strategy, register_strategy, registered
from chunkbench.errors import PluginError

GROUP = "chunkbench.strategies"
# Which entry point registered each strategy name, for "already registered by …" messages.
ORIGINS: dict[str, str] = {}
_LOCK = threading.RLock()
_loaded = False


def load() -> list[str]:
    """Register every strategy of the group not registered yet (once per process); the names registered now."""
    global _loaded
    with _LOCK:
        if _loaded:
            return []
        _loaded = True
        names: list[str] = []
        try:
            for entry in sorted(metadata.entry_points(group=GROUP), key=lambda e: (e.name, e.value)):
                names.append(_load_one(entry))
        except BaseException:
            _loaded = False
            raise
        return names


def _load_one(entry: metadata.EntryPoint) -> str:
    where = f"entry point {entry.name} = {entry.value!r}" + (f" of {entry.dist.name}" if entry.dist else "")
    try:
        cls = entry.load()
    except Exception as exc:
        raise PluginError(
            f"The strategy {where} failed to import: {type(exc).__name__}: {exc}", entry_point=entry.value
        ) from exc
    try:
        check_strategy(cls)
    except PluginError as exc:
        raise PluginError(f"The strategy {where}: {exc.message}", entry_point=entry.value) from exc
    if cls.name != entry.name:
        raise PluginError(f"The strategy {where} is named '{cls.name}'; the entry point's name must be the same.")
    existing = registered(cls.name)
    if existing is not None:
        if existing is cls:
            return str(cls.name)
        by = ORIGINS.get(cls.name, "chunkbench (built-in)")
        raise PluginError(f"The strategy {where} is named '{cls.name}', already registered by {by}.")
    register_strategy(cls)
    ORIGINS[str(cls.name)] = where
    return str(cls.name)


__all__ = ["GROUP", "ORIGINS", "ChunkingStrategy", "load"]
