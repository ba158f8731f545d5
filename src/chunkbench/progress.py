"""How long work reports progress and learns it was cancelled: two callables every layer may take.

In the bottom layer (stdlib only) so the work itself (indexing, benchmarks, evaluation) takes them without importing
the job machinery above it (``jobs`` passes its own, the CLI and ``?wait=true`` theirs).
"""

from __future__ import annotations

from collections.abc import Callable

# A progress callback: fraction done in [0, 1] and a short message ("embedding semantic chunks").
Progress = Callable[[float, str], None]
# Whether the job was cancelled: long work asks it at its safe points (between cells, documents, strategies,
# embedding batches) and then raises JobCancelledError, keeping what it finished.
StopCheck = Callable[[], bool]


def never_stop() -> bool:
    """The stop check of work no one can cancel (run inline, with ``?wait=true``; the CLI stops on Ctrl-C)."""
    return False


def no_progress(_fraction: float, _message: str) -> None:
    """The progress callback of work whose progress no one shows (run inline, a repair, the chatbot's indexing)."""
