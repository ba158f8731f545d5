"""Python warnings from libraries never reach the CLI's output: they go to the log at DEBUG."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import chunkbench
from chunkbench.observability.logs import route_warnings_to_log

# Long enough that no "</html" falls in its first 500 characters, where BeautifulSoup looks before it warns.
XHTML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
    '<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">\n'
    "<head><title>Claims handbook</title></head>\n<body><h1>Claims</h1>\n"
    + "".join(f"<p>Rule {n}: claims are paid within 30 days of the report.</p>\n" for n in range(12))
    + "</body>\n</html>\n"
)


@pytest.mark.slow
def test_an_xhtml_page_and_a_noisy_plugin_leave_the_cli_output_clean(tmp_path: Path, database_url: str) -> None:
    page = tmp_path / "handbook.html"
    page.write_text(XHTML, encoding="utf-8")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    # A warning raised while the CLI runs, as a library's would be.
    (plugins / "noisy.py").write_text('import warnings\nwarnings.warn("mind the gap, says a library")\n')
    environment = {
        **os.environ,
        "CHUNKBENCH_DATA_DIR": str(tmp_path / "data"),
        "CHUNKBENCH_PLUGINS_DIR": str(plugins),
        "PYTHONPATH": str(Path(chunkbench.__file__).parents[1]),  # the code under test, wherever pytest runs
    }
    completed = subprocess.run(
        [sys.executable, "-m", "chunkbench", "ingest", str(page), "--json"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "XMLParsedAsHTMLWarning" not in output and "HTML parser to parse an XML document" not in output
    assert "mind the gap" not in output
    [row] = json.loads(completed.stdout)
    assert row["document"]["heading_count"] == 1 and row["warnings"] == []


def test_routed_warnings_are_logged_at_debug(monkeypatch: pytest.MonkeyPatch, caplog, capsys) -> None:
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # restored after the test
    route_warnings_to_log()
    with caplog.at_level(logging.DEBUG, logger="chunkbench.warnings"), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("mind the gap", UserWarning, stacklevel=1)
    [record] = [record for record in caplog.records if record.name == "chunkbench.warnings"]
    assert record.levelno == logging.DEBUG
    assert record.getMessage().startswith("UserWarning: mind the gap (")
    assert "mind the gap" not in capsys.readouterr().err
