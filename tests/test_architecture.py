"""The layers point one way (docs/architecture.md): read from the import statements of src/chunkbench itself.

Faces (routes, CLI commands, the console and FastAPI dependencies they share, the app, the dashboard) sit on
top and may import anything; the domain code under them ("cores": every other module) never imports a face,
packages (faces included) import each other without a cycle, and the lower layers know nothing of the higher.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "chunkbench"
FACE_FILES = {"routes.py", "commands.py", "console.py", "dependencies.py", "app.py", "cli.py", "__main__.py"}


def _module(path: Path) -> str:
    return ".".join(("chunkbench", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")


def _is_face(module: str) -> bool:
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


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("text", {"storage", "chunking", "documents", "embedding", "llm", "retrieval", "indexing", "evaluation"}),
        ("storage", {"chunking", "retrieval", "indexing", "benchmarking", "evaluation", "rag", "documents"}),
        ("chunking", {"storage", "jobs", "guard", "observability", "llm", "retrieval", "indexing", "embedding"}),
        ("llm", {"chunking", "retrieval", "indexing", "benchmarking", "evaluation"}),
        ("retrieval", {"indexing", "benchmarking", "evaluation", "rag", "documents"}),
        ("indexing", {"retrieval", "benchmarking", "evaluation", "rag"}),
    ],
)
def test_lower_layers_know_nothing_of_higher_ones(package: str, forbidden: set[str]) -> None:
    assert _package_graph(faces=False).get(package, set()) & forbidden == set()


def test_the_check_sees_a_cycle_when_there_is_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
