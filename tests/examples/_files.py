"""The examples as files: where they are, their documents, where each is applied, what each needs.

An example that needs something first says so in its own comments, one ``# needs: <path>`` line
each (a path under ``examples/``, then why): a manifest to apply first, or a program to run
(``operator/greeter.py``). The tests that apply and run the examples read these lines, so what a
file says it needs is what makes it work.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from etctl.jobs.mpijob import MPIJOB, MPIJOBS
from etctl.jobs.pytorchjob import PYTORCHJOBS
from etctl.jobs.tfjob import TFJOBS
from etctl.jobs.trainingjob import SCALEINS, SCALEOUTS, TRAININGJOBS
from etctl.runtime import CONFIGMAPS, Resource

__all__ = [
    "CONVERSION",
    "CRD_DIR",
    "EXAMPLES",
    "FILES",
    "GREETINGS",
    "OPERATOR_CRD",
    "RESOURCES",
    "crds",
    "load",
    "needs",
    "resource_of",
]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CRD_DIR = ROOT / "manifests" / "base" / "crds"
OPERATOR_CRD = EXAMPLES / "operator" / "crd.yaml"
GREETINGS = Resource("example.etctl.dev", "v1", "greetings", "Greeting")
RESOURCES = {
    "MPIJob": MPIJOBS,
    "PyTorchJob": PYTORCHJOBS,
    "TFJob": TFJOBS,
    "TrainingJob": TRAININGJOBS,
    "ScaleIn": SCALEINS,
    "ScaleOut": SCALEOUTS,
    "Greeting": GREETINGS,
    "ConfigMap": CONFIGMAPS,
}
CONVERSION = EXAMPLES / "conversion"
"""The conversion example: its Shapes need its program pointing the CRD at itself, with a webhook
URL and certificate of its own, so ``tests/examples/test_conversion.py`` runs them with it."""
FILES = sorted(p for p in EXAMPLES.glob("*/*.yaml") if p != OPERATOR_CRD and p.parent != CONVERSION)

_NEEDS = re.compile(r"#\s*needs:\s*(\S+)")


def resource_of(doc: dict[str, Any]) -> Resource:
    """Where a document is applied: its kind, at its own version (MPIJob serves two)."""
    if doc["kind"] == "MPIJob":
        return MPIJOB.resource(doc["apiVersion"].rpartition("/")[2])
    return RESOURCES[doc["kind"]]


def load(path: Path) -> list[dict[str, Any]]:
    """The documents of a YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def crds() -> list[dict[str, Any]]:
    """The committed CRDs of every registered kind."""
    return [doc for path in sorted(CRD_DIR.glob("*.yaml")) for doc in load(path)]


def needs(path: Path) -> list[Path]:
    """What ``path`` says it needs first (its ``# needs:`` lines), in order, as paths."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _NEEDS.match(line.strip())
        if match:
            found.append(EXAMPLES / match.group(1))
    return found
