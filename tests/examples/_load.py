"""Loading an example program the way a user runs it: a file, not a package module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["load_example"]


def load_example(path: Path, name: str) -> ModuleType:
    """The module of the example file ``path``, loaded under ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
