"""The layers point one way, as docs/architecture.md draws them: read from the import statements of src/chunkbench.

The page's "Layers" block is the rule: one row per line, bottom first; each name is a package or a top-level module
of chunkbench. Every module is placed in a row (a face, on the last row, by its file name), and imports only from
its own row and the rows above; packages import each other without a cycle. The reading fails loudly when it finds
no imports or a module the page does not place, so the test cannot pass vacuously or drift from the page.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "chunkbench"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
FACE_FILES = {"routes.py", "commands.py", "console.py", "dependencies.py", "app.py", "cli.py", "__main__.py",
              "workspace.py"}  # fmt: skip


def _module(path: Path) -> str:
    return ".".join(("chunkbench", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")


def _is_face(module: str) -> bool:
    if module == "chunkbench":  # the package itself: the Python API's front door
        return True
    parts = module.split(".")
    leaf = parts[-1] + ".py"
    return leaf in FACE_FILES or parts[-1].endswith("_commands") or parts[1:2] == ["web"]


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "chunkbench"


def _imports() -> dict[str, set[str]]:
    """module → the chunkbench modules it imports (at module level or inside functions)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        module = _module(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chunkbench"):
                if node.module == "chunkbench":
                    found[module] |= {f"chunkbench.{alias.name}" for alias in node.names}
                else:
                    found[module].add(node.module)
                    found[module] |= {f"{node.module}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                found[module] |= {alias.name for alias in node.names if alias.name.startswith("chunkbench.")}
    modules = {_module(path) for path in SRC.rglob("*.py")}
    # "from chunkbench.x import name" names a module only when x.name is one.
    return {source: {target for target in targets if target in modules} for source, targets in found.items()}


IMPORTS = _imports()


def _package_graph(*, faces: bool) -> dict[str, set[str]]:
    """package → the packages its modules import (``faces=False``: from core modules only)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for source, targets in IMPORTS.items():
        if _is_face(source) and not faces:
            continue
        for target in targets:
            if _package(target) != _package(source):
                graph[_package(source)].add(_package(target))
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one package (Tarjan), as sorted lists."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_core_module_imports_a_face() -> None:
    wrong = sorted(
        f"{source} imports {target}"
        for source, targets in IMPORTS.items()
        if not _is_face(source)
        for target in targets
        if _is_face(target)
    )
    assert wrong == []


def test_packages_import_each_other_without_a_cycle() -> None:
    # Faces included: a route or command module sits in its domain package, so a package may hold both.
    assert _cycles(_package_graph(faces=True)) == []


def _layers() -> list[set[str]]:
    """The rows of the page's Layers block, bottom first: the names on each line, commentary in parentheses dropped;
    the faces row (``faces: …``) is the top one and holds no names (faces are told by their file names)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = re.search(r"^## Layers\n.*?^```\n(.*?)^```", text, flags=re.S | re.M)
    assert block is not None, "docs/architecture.md has no Layers block to read"
    rows: list[set[str]] = []
    for line in block.group(1).splitlines():
        if line.startswith("faces:"):
            continue
        names = {name.strip() for name in re.sub(r"\([^)]*\)", "", line).split("·")}
        rows.append({name for name in names if name})
    return rows


LAYERS = _layers()


def _row(module: str) -> int:
    """The row of a module: a face is the top row; otherwise its package's (``chunkbench.indexing.processing`` →
    ``indexing``) or, for a top-level module, its own name's."""
    if _is_face(module):
        return len(LAYERS)
    name = _package(module)
    for position, row in enumerate(LAYERS):
        if name in row:
            return position
    raise AssertionError(f"{module} is in no row of the Layers block of docs/architecture.md: add {name!r} to one")


def test_the_reading_sees_the_code_and_the_page() -> None:
    modules = {_module(path) for path in SRC.rglob("*.py")}
    edges = sum(len(targets) for targets in IMPORTS.values())
    assert len(modules) > 100 and edges > 300, f"read {len(modules)} modules and {edges} imports: the reader is broken"
    assert len(LAYERS) >= 5 and all(LAYERS), LAYERS


def test_every_module_has_a_row() -> None:
    for path in SRC.rglob("*.py"):
        _row(_module(path))


def _upward(imports: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{source} (row {_row(source) + 1}) imports {target} (row {_row(target) + 1})"
        for source, targets in imports.items()
        for target in targets
        if _row(target) > _row(source)
    )


def test_no_module_imports_from_a_higher_row() -> None:
    assert _upward(IMPORTS) == []


def test_an_upward_import_is_seen() -> None:
    assert _upward({"chunkbench.indexing.processing": {"chunkbench.jobs.execution", "chunkbench.storage.db"}}) == [
        "chunkbench.indexing.processing (row 4) imports chunkbench.jobs.execution (row 6)"
    ]
    assert _upward({"chunkbench.llm.client": {"chunkbench.observability.readiness"}}) != []
    assert (
        _upward({"chunkbench.cli": {"chunkbench.text.tokens"}, "chunkbench.chunking.base": {"chunkbench.errors"}}) == []
    )


def test_the_check_sees_a_cycle_when_there_is_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
