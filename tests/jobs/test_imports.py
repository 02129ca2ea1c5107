"""The import rules of the jobs layer, checked on the source.

* a job plugin (``etctl.jobs.<kind>``) never imports another plugin;
* the launcher/worker layer (``etctl.jobs.launcher``) imports no plugin;
* code outside a package of ``etctl.jobs`` imports only its front door (``etctl.jobs.launcher``,
  never ``etctl.jobs.launcher._pusher``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import etctl

ROOT = Path(etctl.__file__).parent
JOBS = ROOT / "jobs"
SHARED = "launcher"


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """The absolute etctl modules ``path`` imports (``from a import b`` counts as ``a.b`` too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "etctl"}


def package_of(module: str) -> str | None:
    """The package of ``etctl.jobs`` a module belongs to (``trainingjob``, ``launcher``...)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["etctl", "jobs"] else None


def is_module(name: str) -> bool:
    """``name`` is a module or package of etctl (not a name imported from one)."""
    relative = Path(*name.split("."))
    return (ROOT.parent / relative).with_suffix(".py").exists() or (
        ROOT.parent / relative / "__init__.py"
    ).exists()


def sources() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_plugins_never_import_each_other_and_the_shared_layer_imports_none() -> None:
    wrong = []
    for path in sources():
        here = package_of(module_of(path))
        for name in imported(path):
            there = package_of(name)
            if there is None or there == here or not is_module(name):
                continue
            if there == SHARED and here != SHARED:
                continue  # every plugin may use the shared layer (through its front door)
            if here is not None:
                wrong.append(f"{module_of(path)} imports {name}")
    assert wrong == []


def test_the_jobs_packages_are_entered_through_their_front_doors() -> None:
    wrong = []
    for path in sources():
        here = package_of(module_of(path))
        for name in imported(path):
            there = package_of(name)
            parts = name.split(".")
            if there is None or there == here or len(parts) < 4 or not is_module(name):
                continue
            if parts[3].startswith("_"):
                wrong.append(f"{module_of(path)} imports {name}")
    assert wrong == []


def test_the_rules_see_the_packages() -> None:
    packages = {p.name for p in JOBS.iterdir() if (p / "__init__.py").exists()}
    assert {SHARED, "trainingjob", "tfjob"} <= packages
    uses = imported(JOBS / "trainingjob" / "_plugin.py")
    assert "etctl.jobs.launcher" in uses
