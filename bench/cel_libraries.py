"""The CEL libraries on the registry, compared on Kubernetes-style validation rules.

Run: ``.venv/bin/python bench/cel_libraries.py [--evals N]``

The embedded API server evaluates CRD validation rules with cel-expr-python (Google's C++ CEL
runtime); cel-python (a pure-Python interpreter) was the other candidate. For each library
installed, the benchmark prints how many of the rules below it compiles and evaluates to the
result kube-apiserver gives, the time to import it, to compile a rule and to evaluate one, and
which rules it gets wrong. cel-python is not a dependency: install it beside etctl
(``pip install cel-python``) to see its side; the figures are then compared.

The rules are the kinds of rules CRDs carry: field comparisons, ``has()``, ``oldSelf``
transitions, map and list macros, string functions of the ``strings`` extension, regular
expressions, optionals (``optionalOldSelf``) and evaluation errors. The Kubernetes libraries
(``quantity``, lists) are in neither library; etctl adds the list functions itself.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import _report

_ERROR = "error"
CASES: list[tuple[str, Any, Any, Any]] = [
    # (rule, self, oldSelf or None, expected: a value, or "error")
    ("self.minReplicas <= self.maxReplicas", {"minReplicas": 1, "maxReplicas": 3}, None, True),
    ("self.minReplicas <= self.maxReplicas", {"minReplicas": 4, "maxReplicas": 3}, None, False),
    (
        "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
        {"maxReplicas": 3},
        None,
        True,
    ),
    ("self.filter(k, k == 'Launcher').size() == 1", {"Launcher": {}, "Worker": {}}, None, True),
    (
        "'Launcher' in self && self['Launcher'].replicas == 1",
        {"Launcher": {"replicas": 1}},
        None,
        True,
    ),
    ("self.all(k, k in ['Launcher', 'Worker'])", {"Launcher": {}, "worker": {}}, None, False),
    ("self.exists_one(k, k == 'Chief')", {"Chief": {}, "Worker": {}}, None, True),
    ("self == oldSelf", "kueue.x-k8s.io/multikueue", "kueue.x-k8s.io/multikueue", True),
    ("self == oldSelf", "a", "b", False),
    ("size(self) <= 63", "x" * 70, None, False),
    ("self.size() <= 63", "abc", None, True),
    ("self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", "good-name", None, True),
    ("self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", "Bad_Name", None, False),
    ("self.startsWith('kubeflow.org/') || self.contains('/')", "kubeflow.org/x", None, True),
    ("self.lowerAscii() == 'worker'", "Worker", None, True),
    ("self.split('/').size() == 2", "a/b", None, True),
    ("self.replicas.all(r, r >= 0)", {"replicas": [1, 2, 0]}, None, True),
    ("self.replicas.exists(r, r > 1)", {"replicas": [1, 2, 0]}, None, True),
    ("has(self.spec) ? self.spec.x > 0 : true", {"spec": {"x": 1}}, None, True),
    ("self.x + 1 == 3 && self.y == 2.5", {"x": 2, "y": 2.5}, None, True),
    ("int(self.x) > 0", {"x": 2}, None, True),
    ("self.names.map(n, n + '!').size() == 2", {"names": ["a", "b"]}, None, True),
    ("self.jobName != ''", {"jobName": ""}, None, False),
    ("self.count >= 1 && self.count <= 100", {"count": 5}, None, True),
    (
        "oldSelf.phase != 'Running' || self.image == oldSelf.image",
        {"image": "a", "phase": "Running"},
        {"image": "b", "phase": "Running"},
        False,
    ),
    ("self.?foo.orValue('x') == 'x'", {}, None, True),
    ("self.m.all(k, self.m[k] > 0)", {"m": {"a": 1, "b": 2}}, None, True),
    ("quantity(self).isGreaterThan(quantity('1Gi'))", "2Gi", None, True),
    ("self.items.map(i, i.name).isSorted()", {"items": [{"name": "a"}, {"name": "b"}]}, None, True),
    ("self.a.b.c == 1", {"a": {"b": {}}}, None, _ERROR),
]
_SPEED_RULE = (
    "self.minReplicas <= self.maxReplicas && self.replicaSpecs.all(k, k in ['Launcher', 'Worker'])"
)
_SPEED_SELF = {"minReplicas": 1, "maxReplicas": 3, "replicaSpecs": {"Launcher": {}, "Worker": {}}}


class _CelExprPython:
    name = "cel-expr-python (C++ runtime)"
    module = "cel_expr_python"
    loads = "cel_expr_python.cel"
    package = "cel-expr-python"

    def __init__(self) -> None:
        from cel_expr_python import cel  # noqa: PLC0415
        from cel_expr_python.ext import ext_optional, ext_strings  # noqa: PLC0415

        self._cel = cel
        self._env = cel.NewEnv(
            variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN},
            extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
        )

    def compile(self, rule: str) -> Any:
        return self._env.compile(rule)

    def run(self, program: Any, data: dict[str, Any]) -> Any:
        result = program.eval(data=data)
        return _ERROR if result.type() == self._cel.Type.ERROR else result.value()


class _CelPython:
    name = "cel-python (pure Python)"
    module = "celpy"
    loads = "celpy"
    package = "cel-python"

    def __init__(self) -> None:
        self._celpy = importlib.import_module("celpy")
        self._env = self._celpy.Environment()

    def compile(self, rule: str) -> Any:
        return self._env.program(self._env.compile(rule))

    def run(self, program: Any, data: dict[str, Any]) -> Any:
        result = program.evaluate({k: self._celpy.json_to_cel(v) for k, v in data.items()})
        if isinstance(result, Exception):
            return _ERROR
        return bool(result) if type(result).__name__ == "BoolType" else result


def _import_ms(module: str) -> float:
    """The time a fresh interpreter takes to import ``module``."""
    code = (
        "import time; start = time.perf_counter(); "
        f"import {module}; print((time.perf_counter() - start) * 1e3)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def _score(library: Any) -> tuple[int, list[str]]:
    right, wrong = 0, []
    for rule, value, old, expected in CASES:
        data = {"self": value} if old is None else {"self": value, "oldSelf": old}
        try:
            program = library.compile(rule)
        except Exception as error:  # a rule the library cannot compile is a wrong answer
            wrong.append(f"{rule}  (does not compile: {str(error).splitlines()[0][:60]})")
            continue
        try:
            got = library.run(program, data)
        except Exception as error:  # an exception is an evaluation error...
            # ...unless the library lacks a function the rule calls.
            text = str(error)
            got = _ERROR if "undeclared reference" not in text else f"no such function: {text[:60]}"
        if got == expected:
            right += 1
        else:
            wrong.append(f"{rule}  (got {got!r})")
    return right, wrong


def _per_call_us(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def _speed(library: _CelExprPython | _CelPython, evals: int) -> tuple[float, float]:
    """Microseconds to compile the speed rule, and to evaluate it once compiled."""
    program = library.compile(_SPEED_RULE)
    data = {"self": _SPEED_SELF}

    def compile_once() -> object:
        return library.compile(_SPEED_RULE)

    def evaluate_once() -> object:
        return library.run(program, data)

    return _per_call_us(compile_once, max(evals // 40, 5)), _per_call_us(evaluate_once, evals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evals", type=int, default=2000, help="evaluations timed per library")
    evals = parser.parse_args().evals
    _report.header("CEL libraries on Kubernetes-style validation rules")
    for kind in (_CelExprPython, _CelPython):
        if importlib.util.find_spec(kind.module) is None:
            print(f"   {kind.name}: not installed (pip install {kind.package})")
            continue
        imported = _import_ms(kind.loads)
        library = kind()
        right, wrong = _score(library)
        compile_us, eval_us = _speed(library, evals)
        print(f"   {kind.name}")
        _report.figure("rules answered as kube-apiserver does", right, f"of {len(CASES)}")
        _report.figure("import", imported, "ms")
        _report.figure("compile one rule", compile_us, "us")
        _report.figure("evaluate one rule", eval_us, "us", compare="budget: 1,000 us per write")
        for line in wrong:
            print(f"     wrong: {line}")


if __name__ == "__main__":
    main()
