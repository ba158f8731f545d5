"""What every chunkbench process loads before it names a strategy: the server, each CLI command, a worker, a
``Workspace``. One function, so they all run the same strategies (a worker's registry must equal the API's)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from chunkbench.config import Settings

if TYPE_CHECKING:
    from chunkbench.chunking.base import ChunkingStrategy


def load_extensions(settings: Settings) -> tuple[list[Path], list[type[ChunkingStrategy]]]:
    """The built-in strategies and the installed packages' (entry points: their classes, not their libraries), then
    the plugins of ``CHUNKBENCH_PLUGINS_DIR``, then the strategy variants of the variants file (a variant may derive
    from a plugin's strategy). Returns the plugin files and the variants loaded now; a broken one raises
    :class:`PluginError` or :class:`ChunkingError` naming its file or package. Without a plugins folder and a
    variants file nothing more is imported, so commands keep starting fast."""
    from chunkbench.chunking.base import load_strategies

    load_strategies()
    plugins: list[Path] = []
    if settings.plugins_dir is not None and settings.plugins_dir.exists():
        from chunkbench.plugins import load_plugins

        plugins = load_plugins(settings.plugins_dir)
    defined: list[type[ChunkingStrategy]] = []
    if settings.resolved_strategies_file.is_file():
        from chunkbench.chunking import variants

        defined = variants.load(settings)
    return plugins, defined
