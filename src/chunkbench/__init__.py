"""chunkbench: a RAG chunking benchmarker.

For notebooks and scripts: ``from chunkbench import Workspace`` (``chunkbench.workspace``; docs/python-api.md). The
server is :func:`chunkbench.app.create_app`; the CLI is ``chunkbench``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Experiment", "Workspace", "__version__"]

if TYPE_CHECKING:
    from chunkbench.workspace import Experiment, Workspace


def __getattr__(name: str) -> Any:
    # Imported on first use: ``import chunkbench`` (every CLI command, every worker) stays as light as it was.
    if name in ("Workspace", "Experiment"):
        from chunkbench import workspace

        return getattr(workspace, name)
    raise AttributeError(f"module 'chunkbench' has no attribute {name!r}")
