"""The layering and the public surfaces, as decisions the suite makes visible.

* The import contracts in ``pyproject.toml`` (``[tool.importlinter]``) hold: layers, front doors,
  independent plugins, no embedded server in the product, kubernetes_asyncio only in the client,
  no import cycles.
* Each front door exports exactly what ``tests/surfaces/<package>.txt`` lists, sorted, and every
  name resolves. Changing a public surface means changing that file in the same commit.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SURFACES = Path(__file__).resolve().parent / "surfaces"
FRONT_DOORS = sorted(path.stem for path in SURFACES.glob("*.txt"))


def test_the_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_layer_has_a_pinned_front_door() -> None:
    assert {"etctl.runtime", "etctl.common", "etctl.testing"} <= set(FRONT_DOORS)
    plugins = sorted(
        f"etctl.jobs.{path.name}"
        for path in (ROOT / "etctl" / "jobs").iterdir()
        if (path / "__init__.py").exists()
    )
    assert set(plugins) <= set(FRONT_DOORS)


@pytest.mark.parametrize("package", FRONT_DOORS)
def test_the_front_door_exports_what_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    exported: list[str] = list(module.__all__)
    assert exported == sorted(exported), f"{package}.__all__ is not sorted"
    pinned = (SURFACES / f"{package}.txt").read_text(encoding="utf-8").split()
    assert exported == pinned, f"{package}'s public surface changed: update tests/surfaces/"
    missing = [name for name in exported if not hasattr(module, name)]
    assert missing == []
