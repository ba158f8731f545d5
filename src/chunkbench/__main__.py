"""``python -m chunkbench`` is the ``chunkbench`` command."""

from chunkbench.cli import app

app(prog_name="chunkbench")
