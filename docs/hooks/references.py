"""MkDocs hook: the configuration, CLI and API references, generated from the code at every build.

A page holds a marker line (``<!-- generated: settings -->``, ``<!-- generated: cli -->``, ``<!-- generated: api -->``)
and the hook replaces it with the reference read from ``chunkbench.config.Settings``, the Typer app
(``chunkbench.cli:app``) and the app's OpenAPI schema. Nothing is kept by hand, so a new setting, command or route
is documented by the next build; tests/test_docs_site.py checks that every one of them appears.
"""

from __future__ import annotations

import ast
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The worktree's own source first: the references describe the code being built, not an installed copy.
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

# Filled by _settings_comments: the Path defaults as config.py writes them.
PATH_DEFAULTS: dict[str, str] = {}

MARKERS = {
    "<!-- generated: settings -->": "settings_reference",
    "<!-- generated: cli -->": "cli_reference",
    "<!-- generated: api -->": "api_reference",
}


def _cell(text: object) -> str:
    """One Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


# --- configuration -------------------------------------------------------------------------------------------------


def _settings_comments() -> dict[str, str]:
    """Each Settings field's comment, read from config.py's source.

    The fields carry comments rather than ``description=``: a comment block above a field describes it and the
    fields right after it (no blank line between: one group, e.g. the Text-layer Gate's thresholds), which point to
    the group's first field; a comment on the field's own line is added to that.
    """
    import chunkbench.config as config

    source = Path(config.__file__).read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    settings = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    prefix = config.Settings.model_config.get("env_prefix", "")
    comments: dict[str, str] = {}
    group, head = "", ""
    previous_end = settings.lineno
    for node in settings.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            previous_end = node.end_lineno or node.lineno
            continue
        between = lines[previous_end : node.lineno - 1]
        block: list[str] = []
        for line in reversed(between):
            stripped = line.strip()
            if not stripped.startswith("#"):
                break
            block.insert(0, stripped.lstrip("#").strip())
        if block:
            group, head = " ".join(block), node.target.id
        elif any(not line.strip() for line in between):
            group, head = "", node.target.id
        own = lines[node.lineno - 1]
        inline = own.split("  # ", 1)[1].strip() if "  # " in own else ""
        # The group's comment is written once, on its first field; the others point to it.
        shared = group if head == node.target.id else f"With `{(prefix + head).upper()}` (above)." if group else ""
        comments[node.target.id] = " ".join(part for part in (shared, inline) if part)
        value = node.value
        # Path("./data") reads back as "data": show the default as it is written, the way an env var would hold it.
        is_path = isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Path" and value.args
        if is_path and isinstance(value.args[0], ast.Constant):
            PATH_DEFAULTS[node.target.id] = str(value.args[0].value)
        previous_end = node.end_lineno or node.lineno
    return comments


def _default(name: str, field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if name in PATH_DEFAULTS:
        return f"`{PATH_DEFAULTS[name]}`"
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "*(required)*"
    else:
        value = field.default
    if value in ("", None):
        return "*(empty)*"
    return f"`{value!s}`" if not isinstance(value, (dict, list)) or value else f"`{value!r}`"


def _constraints(field: Any) -> str:
    parts = []
    for meta in field.metadata:
        for name, symbol in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if (bound := getattr(meta, name, None)) is not None:
                parts.append(f"{symbol} {bound}")
        if (pattern := getattr(meta, "pattern", None)) is not None:
            parts.append(f"pattern `{pattern}`")
    return ", ".join(parts)


def settings_reference() -> str:
    from chunkbench.config import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    comments = _settings_comments()
    rows = [
        "| variable | type | default | constraints | description |",
        "|---|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        # Plain classes by name (`int`, `Path`); generics and unions as written, `|` as "or" (a table cell).
        text = str(field.annotation).replace("typing.", "").replace("pathlib.", "")
        generic = "[" in text or "|" in text
        annotation = text.replace(" | ", " or ") if generic else field.annotation.__name__
        description = field.description or comments.get(name, "")
        rows.append(
            f"| `{(prefix + name).upper()}` | `{_cell(annotation)}` | {_cell(_default(name, field))} | "
            f"{_cell(_constraints(field))} | {_cell(description)} |"
        )
    return (
        f"{len(Settings.model_fields)} settings, generated from `chunkbench.config.Settings` at build time "
        "(descriptions are the comments beside the fields in `src/chunkbench/config.py`).\n\n" + "\n".join(rows) + "\n"
    )


# --- CLI -----------------------------------------------------------------------------------------------------------


def cli_commands() -> list[tuple[str, Any]]:
    """Every command of the Typer app as (``chunkbench sub command``, click command), groups included."""
    import typer

    from chunkbench.cli import app

    found: list[tuple[str, Any]] = []

    def walk(command: Any, path: str) -> None:
        found.append((path, command))
        # Typer vendors its own click: test for a group by its commands, not by click's class.
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if not getattr(sub, "hidden", False):
                walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "chunkbench")
    return found


def _option_row(param: Any) -> str:
    if param.param_type_name == "argument":
        name = f"`{param.human_readable_name}`"
        kind = "argument"
    else:
        names = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
        name = names
        kind = "flag" if getattr(param, "is_flag", False) else "option"
    default = param.default
    shown = "" if default in (None, (), [], False) or callable(default) else f"`{default}`"
    required = "yes" if param.required else ""
    return f"| {name} | {kind} | {required} | {_cell(shown)} | {_cell(getattr(param, 'help', '') or '')} |"


def cli_reference() -> str:
    out: list[str] = ["Generated from the Typer app (`chunkbench.cli:app`) at build time.", ""]
    for path, command in cli_commands():
        out += [f"### `{path}`", ""]
        help_text = (command.help or "").strip()
        if help_text:
            out += [help_text.split("\f")[0].strip(), ""]
        subs = sorted(getattr(command, "commands", {}))
        if subs:
            out += ["Commands: " + ", ".join(f"`{path} {sub}`" for sub in subs) + ".", ""]
        params = [p for p in command.params if not getattr(p, "hidden", False)]
        if params:
            out += ["| name | kind | required | default | help |", "|---|---|---|---|---|"]
            out += [_option_row(p) for p in params]
            out.append("")
    return "\n".join(out)


# --- API -----------------------------------------------------------------------------------------------------------


def openapi_schema() -> dict[str, Any]:
    from chunkbench.app import create_app
    from chunkbench.config import Settings

    # The schema does not depend on the data: building the app opens nothing (the lifespan does, and it is not run).
    with tempfile.TemporaryDirectory() as data_dir:
        return create_app(Settings(_env_file=None, data_dir=Path(data_dir))).openapi()


def _schema_name(schema: dict[str, Any] | None) -> str:
    if not schema:
        return ""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(name for name in (_schema_name(s) for s in schema[key]) if name)
    if schema.get("type") == "array":
        return f"array of {_schema_name(schema.get('items')) or 'any'}"
    return str(schema.get("type", ""))


HTTP_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")


def api_operations(schema: dict[str, Any] | None = None) -> list[tuple[str, str, dict[str, Any]]]:
    schema = schema or openapi_schema()
    return [
        (method.upper(), path, op)
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if method in HTTP_METHODS
    ]


def api_reference() -> str:
    schema = openapi_schema()
    info = schema.get("info", {})
    out = [
        f"Generated from the app's OpenAPI schema ({info.get('title', '')} {info.get('version', '')}) at build "
        "time; the running server serves the same schema at `/openapi.json` and an interactive view at `/docs`.",
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for method, path, op in api_operations(schema):
        by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    for tag, operations in by_tag.items():
        out += [f"## {tag}", ""]
        for method, path, op in operations:
            out += [f"### `{method} {path}`", ""]
            if summary := op.get("summary"):
                out += [f"**{summary}**", ""]
            if description := op.get("description"):
                out += [description.strip(), ""]
            if params := op.get("parameters"):
                out += ["| parameter | in | required | type | description |", "|---|---|---|---|---|"]
                for p in params:
                    out.append(
                        f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else ''} | "
                        f"{_cell(_schema_name(p.get('schema')))} | {_cell(p.get('description', ''))} |"
                    )
                out.append("")
            if body := op.get("requestBody"):
                kinds = ", ".join(
                    f"`{content_type}` `{_schema_name(media.get('schema')) or 'any'}`"
                    for content_type, media in body.get("content", {}).items()
                )
                out += [f"Request body{' (required)' if body.get('required') else ''}: {kinds}", ""]
            out += ["| status | description | body |", "|---|---|---|"]
            for status, response in op.get("responses", {}).items():
                bodies = ", ".join(
                    f"`{_schema_name(media.get('schema'))}`"
                    for media in response.get("content", {}).values()
                    if _schema_name(media.get("schema"))
                )
                out.append(f"| {status} | {_cell(response.get('description', ''))} | {_cell(bodies)} |")
            out.append("")
    return "\n".join(out)


# --- MkDocs hook ---------------------------------------------------------------------------------------------------


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker, generator in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, globals()[generator]())
    return markdown
