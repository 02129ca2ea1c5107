"""Deferred modules, lent names and first-call stand-ins, on a throwaway package."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from etctl.runtime._deferred import OnFirstCall, defer, lent


@pytest.fixture
def lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Package ``deferlib`` (whose ``__init__`` and ``heavy`` count their runs) and a user of it.

    ``deferlib.user`` imports ``Heavy`` from ``deferlib.heavy`` and only calls it.
    """
    root = tmp_path / "deferlib"
    root.mkdir()
    (tmp_path / "runs.py").write_text("init = 0\nheavy = 0\n")
    (root / "__init__.py").write_text(
        "import runs\nruns.init += 1\nfrom deferlib.light import Light\nVERSION = '1'\n"
    )
    (root / "light.py").write_text("class Light:\n    pass\n")
    (root / "heavy.py").write_text(
        "import runs\nruns.heavy += 1\n"
        "class Heavy:\n    def __init__(self, n):\n        self.n = n\n"
    )
    (root / "user.py").write_text(
        "from deferlib.heavy import Heavy\ndef make(n):\n    return Heavy(n)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "deferlib"
    for name in [m for m in sys.modules if m == "runs" or m.split(".")[0] == "deferlib"]:
        del sys.modules[name]


def imported(statement: str) -> dict[str, Any]:
    """What an import statement binds, run as a module runs it (the statement is what is tested:
    ``from m import name`` asks ``m`` for ``__path__``, then for ``name``)."""
    namespace: dict[str, Any] = {}
    exec(statement, namespace)
    return namespace


def bound(module: Any, name: str) -> Any:
    """What ``module`` binds ``name`` to now."""
    return vars(module)[name]


def runs() -> tuple[int, int]:
    counts = importlib.import_module("runs")
    return counts.init, counts.heavy


def test_a_deferred_package_runs_on_its_first_read_name_not_for_its_submodules(lib: str) -> None:
    package = defer(lib)
    assert package is sys.modules[lib]
    assert defer(lib) is package  # already registered: left as it is
    # A submodule imports without running the package.
    light = imported("from deferlib.light import Light")["Light"]
    assert runs() == (0, 0)
    deferlib = imported("import deferlib")["deferlib"]
    assert deferlib is package
    assert deferlib.light.Light is light  # a submodule is no reason to run it either
    assert runs() == (0, 0)
    assert deferlib.VERSION == "1"  # any other name runs it, once, in the same object
    assert runs() == (1, 0)
    assert deferlib.Light is light
    assert sys.modules[lib] is package
    assert "__getattr__" not in vars(package)


def test_a_deferred_module_answers_the_import_systems_question_without_running(lib: str) -> None:
    defer(lib)
    heavy = defer(f"{lib}.heavy")
    assert heavy is not None
    assert sys.modules[lib].heavy is heavy  # bound on its parent, as an import binds it
    with pytest.raises(AttributeError):
        _ = heavy.__path__  # a plain module: asked by every `from module import name`
    assert runs() == (0, 0)
    real = imported("from deferlib.heavy import Heavy")["Heavy"]
    assert runs() == (0, 1)
    assert real(3).n == 3
    assert defer("no_such_package_here") is None
    assert defer("absent_parent.child") is None


def test_a_stand_in_is_lent_for_one_import_and_calls_the_real_class(lib: str) -> None:
    defer(lib)
    heavy = defer(f"{lib}.heavy")
    assert heavy is not None
    stand_in = OnFirstCall(f"{lib}.heavy", "Heavy", user=f"{lib}.user")
    with lent(heavy, "Heavy", stand_in):
        user = imported("from deferlib import user")["user"]
    assert "Heavy" not in vars(heavy)  # taken back: the next reader gets the real class
    assert bound(user, "Heavy") is stand_in
    assert runs() == (0, 0)
    made = user.make(7)  # the first call imports the real class and rebinds the user's name
    assert runs() == (0, 1)
    real = imported("from deferlib.heavy import Heavy")["Heavy"]
    assert type(made) is real
    assert made.n == 7
    assert bound(user, "Heavy") is real
    assert stand_in.resolve() is real


def test_a_name_already_bound_is_not_lent_and_a_real_binding_is_kept(lib: str) -> None:
    heavy = importlib.import_module(f"{lib}.heavy")
    real = heavy.Heavy
    with lent(heavy, "Heavy", OnFirstCall(f"{lib}.heavy", "Heavy", user="nobody")):
        assert heavy.Heavy is real
    assert heavy.Heavy is real
    light = importlib.import_module(f"{lib}.light")
    stand_in = OnFirstCall(f"{lib}.light", "Later", user="nobody")
    with lent(light, "Later", stand_in):
        setattr(light, "Later", "bound by the module meanwhile")  # noqa: B010 - not a typed name
    assert vars(light)["Later"] == "bound by the module meanwhile"
