"""The documentation site: its generated references cover every setting, CLI command and API route, and it builds.

The references are produced by the MkDocs hook (docs/hooks/references.py) from the code itself; these tests walk
the same code independently (Settings' fields, the Typer app's command tree, the OpenAPI schema) and check that
nothing is missing from the pages, then build the whole site with --strict (a warning or a broken link fails).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.config import Settings

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "docs" / "hooks" / "references.py"


def _hook():
    spec = importlib.util.spec_from_file_location("chunkbench_docs_references", HOOK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hook():
    return _hook()


def _section(page: str, heading: str) -> str:
    """The text under one `### heading` of a generated page, up to the next heading of the same level."""
    start = page.index(heading)
    following = page.find("\n### ", start + len(heading))
    return page[start : following if following != -1 else len(page)]


def test_every_setting_is_in_the_configuration_reference(hook) -> None:
    page = hook.settings_reference()
    rows = {line.split("|")[1].strip().strip("`"): line for line in page.splitlines() if line.startswith("| `")}
    for name, field in Settings.model_fields.items():
        row = rows.get(f"CHUNKBENCH_{name.upper()}")
        assert row is not None, f"setting {name} missing from the configuration reference"
        assert field.annotation is not None
    assert len(rows) == len(Settings.model_fields)
    # The descriptions come from config.py's comments: a group's comment is on its first field, the others point to it.
    assert "Text-layer Gate" in rows["CHUNKBENCH_PDF_MIN_TOTAL_CHARS"]
    assert "With `CHUNKBENCH_PDF_MIN_TOTAL_CHARS` (above)" in rows["CHUNKBENCH_PDF_MIN_MEDIAN_CHARS_PER_PAGE"]
    assert "zip bombs" in rows["CHUNKBENCH_MAX_DOCX_UNCOMPRESSED_MB"]
    assert "`./data`" in rows["CHUNKBENCH_DATA_DIR"]
    assert "≥ 1" in rows["CHUNKBENCH_DATABASE_POOL_SIZE"] and "≤ 200" in rows["CHUNKBENCH_DATABASE_POOL_SIZE"]


def _walk(command, path):
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not getattr(sub, "hidden", False):
            yield from _walk(sub, f"{path} {name}")


def test_every_cli_command_and_option_is_in_the_cli_reference(hook) -> None:
    page = hook.cli_reference()
    commands = list(_walk(typer.main.get_command(cli_app), "chunkbench"))
    # The app has groups (documents, corpora, bench, …) with commands of their own: all of them are walked.
    assert len(commands) > 40
    assert any(path.count(" ") == 2 for path, _ in commands)
    for path, command in commands:
        heading = f"### `{path}`"
        assert heading in page, f"command {path!r} missing from the CLI reference"
        section = _section(page, heading)
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names = param.opts if param.param_type_name == "option" else [param.human_readable_name]
            for name in names:
                assert f"`{name}`" in section, f"{path}: {name} missing from its section"
        if command.help:
            assert command.help.split("\f")[0].strip().splitlines()[0] in section


def test_every_api_route_is_in_the_api_reference(hook, tmp_path: Path) -> None:
    page = hook.api_reference()
    schema = create_app(Settings(_env_file=None, data_dir=tmp_path)).openapi()
    operations = [
        (method.upper(), path, op)
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]
    assert len(operations) > 50
    for method, path, op in operations:
        heading = f"### `{method} {path}`"
        assert heading in page, f"{method} {path} missing from the API reference"
        section = _section(page, heading)
        for status in op["responses"]:
            assert re.search(rf"^\| {re.escape(status)} \|", section, re.M), f"{method} {path}: response {status}"
        for parameter in op.get("parameters", []):
            assert f"`{parameter['name']}`" in section


def test_every_page_is_in_the_nav_and_the_references_have_their_markers() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r":\s*([\w-]+\.md)\s*$", config, re.M))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages == nav
    for page, marker in (("configuration.md", "settings"), ("cli.md", "cli"), ("api.md", "api")):
        assert f"<!-- generated: {marker} -->" in (ROOT / "docs" / page).read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_site_builds_strict_with_the_generated_references(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr
    configuration = (site / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "CHUNKBENCH_DATA_DIR" in configuration and "<!-- generated" not in configuration
    assert "chunkbench worker" in (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "/v1/query" in (site / "api" / "index.html").read_text(encoding="utf-8")
    assert (site / "screenshots" / "journey-1-pdf.png").is_file()
