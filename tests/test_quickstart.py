"""The README's quickstart, run as a newcomer runs it (issue 27): every line of its one ``bash`` block between
``<!-- quickstart:begin -->`` and ``<!-- quickstart:end -->``, exactly as written, in a shell at the repository
root with ``chunkbench`` resolved to this virtualenv's entry point, on a fresh data directory; then the Decision
the README promises (the blockquote after the block) must be the verdict the last command printed.

The sentence is compared with its whitespace collapsed: the CLI wraps it to the terminal's width, the README keeps
it on one line. On the PostgreSQL pass the commands use this test's database (``CHUNKBENCH_DATABASE_URL``, which
the CLI reads like the server does).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- quickstart:begin -->", "<!-- quickstart:end -->"
# What the CLI prints after the verdict: the ranking at an equal budget, the pruned table, or the details.
VERDICT = re.compile(
    r"^verdict \((?P<status>\w+)\): (?P<sentence>.+?)\n(?=at an equal budget|pruned|details:)", re.M | re.S
)


def _words(text: str) -> str:
    return " ".join(text.split())


def quickstart(readme: str) -> tuple[list[str], str]:
    """The quickstart's command lines and the Decision sentence it promises, read from the README's text."""
    assert readme.count(BEGIN) == 1 and readme.count(END) == 1, f"README.md needs one {BEGIN} … {END} section"
    inside, after = readme.split(BEGIN, 1)[1].split(END, 1)
    blocks = re.findall(r"^```bash\n(.*?)^```$", inside, re.M | re.S)
    assert len(blocks) == 1, f"the quickstart section holds {len(blocks)} ```bash blocks; it must hold exactly one"
    commands = [line for line in blocks[0].splitlines() if line.strip() and not line.lstrip().startswith("#")]
    # The promise follows the block, before the end marker or right after it: the first blockquote there.
    following = inside.split(blocks[0], 1)[1] + "\n" + after
    quoted = re.search(r"^> .+(?:\n> .+)*", following, re.M)
    assert quoted, "the quickstart section must quote the Decision it reaches as a blockquote (> …) after its block"
    sentence = _words(" ".join(line.removeprefix("> ") for line in quoted.group(0).splitlines()))
    return commands, sentence


def test_the_quickstart_reads_its_commands_and_promise() -> None:
    commands, sentence = quickstart((ROOT / "README.md").read_text(encoding="utf-8"))
    assert 3 <= len(commands) <= 7, commands
    assert all(command.startswith("chunkbench ") for command in commands), commands
    assert commands[-1].startswith("chunkbench bench run "), "the last command must be the one printing the Decision"
    assert sentence.endswith(".") and "recall" in sentence, sentence


def test_the_examples_folder_tells_the_same_quickstart() -> None:
    """examples/quickstart/README.md repeats the commands and the promise (no markers there): the two never drift."""
    text = (ROOT / "examples" / "quickstart" / "README.md").read_text(encoding="utf-8")
    commands, sentence = quickstart((ROOT / "README.md").read_text(encoding="utf-8"))
    assert quickstart(f"{BEGIN}\n{text}\n{END}") == (commands, sentence)


@pytest.mark.model
@pytest.mark.slow
def test_the_readme_quickstart_reaches_the_decision_it_promises(tmp_path: Path, database_url: str) -> None:
    commands, promised = quickstart((ROOT / "README.md").read_text(encoding="utf-8"))
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "chunkbench").is_file(), f"no chunkbench entry point in {venv_bin}: run `make install`"
    # A developer's own CHUNKBENCH_* settings must not change what a newcomer sees; the test's database stays.
    environment = {key: value for key, value in os.environ.items() if not key.startswith("CHUNKBENCH_")}
    if database_url:
        environment["CHUNKBENCH_DATABASE_URL"] = database_url
    environment.update(
        PATH=os.pathsep.join([str(venv_bin), environment.get("PATH", "")]),
        # The entry point runs this checkout's code even where the installed package is another checkout's.
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), environment.get("PYTHONPATH")])),
        CHUNKBENCH_DATA_DIR=str(tmp_path / "data"),
        HF_HUB_OFFLINE="1",
    )
    assert shutil.which("chunkbench", path=environment["PATH"]) == str(venv_bin / "chunkbench")
    output = ""
    for command in commands:
        result = subprocess.run(
            command, shell=True, executable="/bin/bash", cwd=ROOT, env=environment, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        output = result.stdout
        tail = result.stderr[-3000:] + output[-3000:]
        assert result.returncode == 0, f"`{command}` exited {result.returncode}:\n{tail}"
    printed = VERDICT.search(output)
    assert printed, f"the last command printed no verdict:\n{output[-3000:]}"
    assert _words(printed.group("sentence")) == promised
