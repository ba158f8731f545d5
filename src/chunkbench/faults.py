"""Fault points: a test hook to kill a real process at an exact step of its work (environment only, off by default).

``fault_point("after_upsert")`` in the write path does nothing unless ``CHUNKBENCH_FAULT_POINT`` names that point.
Then it touches the file ``CHUNKBENCH_FAULT_MARKER`` names (when set) and blocks for good, so a test that started a
``chunkbench`` process waits for the marker and sends SIGKILL with the process stopped exactly there: no sleeps, no
race with how fast the machine is. Off, a call costs one environment lookup; nothing is configured through
``Settings`` and no face exposes it, so a deployment cannot turn it on by accident short of setting the variable.

Stdlib only, importing nothing of chunkbench: any layer may import it (a bottom-layer module, like ``errors``).

Points (their names are what tests set; keep them stable):

- ``after_upsert``: a document's points were written to its collection (``indexing.pipeline.store_documents``, the
  one write path of single-document and corpus processing), before the metadata store records the run.
- ``after_cell``: a benchmark cell's result was written (``benchmarking.runner``), before the rest of its batch.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

POINT_VARIABLE = "CHUNKBENCH_FAULT_POINT"
MARKER_VARIABLE = "CHUNKBENCH_FAULT_MARKER"
# When set, the point blocks only until this file exists, then the work goes on (the test changes the world in
# between: it cuts the process off its database, say).
RELEASE_VARIABLE = "CHUNKBENCH_FAULT_RELEASE"


def fault_point(name: str) -> None:
    """Block here (after touching the marker file) when ``CHUNKBENCH_FAULT_POINT`` is ``name``: for good, or until
    the ``CHUNKBENCH_FAULT_RELEASE`` file exists."""
    if os.environ.get(POINT_VARIABLE) != name:
        return
    marker = os.environ.get(MARKER_VARIABLE)
    if marker:
        Path(marker).touch()
    release = os.environ.get(RELEASE_VARIABLE)
    while not (release and Path(release).exists()):  # without a release, the test's SIGKILL ends the process here
        time.sleep(0.05 if release else 1)
