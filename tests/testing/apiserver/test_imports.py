"""The embedded API server's modules import each other in one direction only (no cycles).

The graph counts every import, those under ``TYPE_CHECKING`` included: a cycle that only the type
checker follows still ties the modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import etctl.testing._apiserver as package

PACKAGE = package.__name__
ROOT = Path(package.__file__).parent


def _modules() -> dict[str, Path]:
    return {f"{PACKAGE}.{path.stem}": path for path in ROOT.glob("*.py") if path.stem != "__init__"}


def _imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports (``from pkg import module`` included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found & known


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
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
            if len(component) > 1 or node in graph[node]:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_graph_sees_the_imports_of_the_facade() -> None:
    modules = _modules()
    storage = _imports(modules[f"{PACKAGE}.storage"], set(modules))
    assert {f"{PACKAGE}.writes", f"{PACKAGE}.patching", f"{PACKAGE}.state"} <= storage


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_of_the_api_server_imports_itself_back() -> None:
    modules = _modules()
    graph = {name: _imports(path, set(modules)) - {name} for name, path in modules.items()}
    assert _cycles(graph) == []
