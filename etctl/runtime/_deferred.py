"""Import a module without running the parts of its dependencies that it never uses.

A library's module often imports, at its top, things only one rarely used function needs (a
package ``__init__`` that loads a generated API, an HTTP client for one auth flow). Three tools
keep those out of the process until something really uses them, without any other code in the
process noticing:

* :func:`defer` registers a module or package in ``sys.modules`` unexecuted: the module object
  built from its real spec, whose code runs, in that same object, the first time anything reads a
  name from it (a PEP 562 ``__getattr__``). Submodules of a deferred package import as usual and
  do not run it.
* :func:`lent` makes a module's name resolve to a stand-in for the duration of a ``with`` block
  (one ``import`` statement that binds the name: ``from m import Name``).
* :class:`OnFirstCall` is such a stand-in for a class the importing module only calls: its first
  call imports the real class, puts it in the importing module's globals in its own place, and
  constructs through it.

Invariants:

* a deferred module is never replaced: the object in ``sys.modules`` (and bound on its parent
  package) is the one its code runs in, so every importer holds the same, complete-on-use module;
* reading any name a deferred module does not hold runs its code first, so nobody sees a partial
  module, with one exception: ``__path__`` of a plain (non-package) module is answered as the real
  module answers it, with ``AttributeError``, because the import system asks for it on every
  ``from module import name`` and that must not run the module;
* a lent name is visible only inside its ``with`` block (other threads importing the same name in
  that window would get the stand-in, which still constructs the real class), and is taken back
  only if it is still the stand-in: a module that ran meanwhile keeps its own binding;
* a stand-in lives on only in the globals of the module that imported it, until its first call.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

__all__ = ["OnFirstCall", "defer", "lent"]


def defer(name: str) -> ModuleType | None:
    """Register module or package ``name`` in ``sys.modules`` with its real spec, code not run yet.

    Args:
        name: the module's full name; it is looked for in its parent package's ``__path__``.

    Returns:
        the module in ``sys.modules`` (as it was, when already imported or deferred), or ``None``
        when it cannot be deferred (not found, or its parent package is not imported or deferred
        yet): then it imports the usual way.
    """
    if name in sys.modules:
        return sys.modules[name]
    parent, _, child = name.rpartition(".")
    path = None
    if parent:
        if parent not in sys.modules:
            return None
        path = vars(sys.modules[parent]).get("__path__")
        if path is None:
            return None  # the parent is no package
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.loader is None:
        return None
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    package = spec.submodule_search_locations is not None

    def complete(attribute: str) -> Any:
        if package:
            submodule = f"{name}.{attribute}"
            if importlib.machinery.PathFinder.find_spec(submodule, module.__path__) is not None:
                return importlib.import_module(submodule)
        elif attribute == "__path__":
            msg = f"module {name!r} has no attribute '__path__'"
            raise AttributeError(msg)
        delattr(module, "__getattr__")
        loader.exec_module(module)
        return getattr(module, attribute)

    setattr(module, "__getattr__", complete)  # noqa: B010 - a module's PEP 562 hook
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


@contextmanager
def lent(module: ModuleType, name: str, stand_in: object) -> Iterator[None]:
    """Within the block ``module.name`` is ``stand_in``, unless ``module`` binds ``name`` itself."""
    namespace = vars(module)
    if name in namespace:
        yield
        return
    namespace[name] = stand_in
    try:
        yield
    finally:
        if namespace.get(name) is stand_in:
            del namespace[name]


class OnFirstCall:
    """Stands in for class ``name`` of module ``home`` in the globals of module ``user``.

    The first call imports ``home``, rebinds ``name`` in ``user`` to the real class (if it is
    still this stand-in there) and returns what the real class returns; later calls from ``user``
    find the real class directly.
    """

    __slots__ = ("_home", "_name", "_user")

    def __init__(self, home: str, name: str, *, user: str) -> None:
        self._home = home
        self._name = name
        self._user = user

    def resolve(self) -> Any:
        """The real class, imported now if need be (and bound in ``user`` from now on)."""
        real = getattr(importlib.import_module(self._home), self._name)
        borrower = sys.modules.get(self._user)
        if borrower is not None and vars(borrower).get(self._name) is self:
            setattr(borrower, self._name, real)
        return real

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self._home}.{self._name}, imported at its first call>"
