"""``python -m chunkbench`` and the ``chunkbench`` command (pyproject's ``[project.scripts]``).

``main`` imports the CLI itself so that a Ctrl-C while its modules load (a second or two: torch, Qdrant, the parsers)
ends the command quietly instead of printing an import traceback; a Ctrl-C once a command runs is Click's ("Aborted!").
"""

import signal
import sys


def main() -> None:
    try:
        from chunkbench.cli import app
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)  # the shell's code for a command ended by Ctrl-C
    app(prog_name="chunkbench")


if __name__ == "__main__":
    main()
