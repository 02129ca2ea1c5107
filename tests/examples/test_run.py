"""Every example runs as shipped, on the sandbox a new user tries it on.

For each file of ``examples/``: a fresh sandbox (the embedded API server, the simulated kubelet,
the operator with every job kind, as ``etctl sandbox`` runs them), then what the file says it
needs first (its ``# needs:`` lines: manifests applied and seen to work, the example operator
started), then the file itself, each document created in the ``default`` namespace as ``kubectl
apply`` creates a new object. Every document must then work, within a bound:

* a job (TFJob, MPIJob, TrainingJob, PyTorchJob) runs (``Running`` or ``Succeeded``), never
  ``Failed``;
* a ScaleIn or ScaleOut finishes (``Done``) with ``ScaleSucceeded`` (its script, if any, ran);
* a Greeting is ``Ready``; a ConfigMap is stored.

A broken example (a script that is not there, an image no kubelet would pull, a scaler naming a
job it does not bring or need) fails here, with the object's last state.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from etctl.cli import Sandbox, run_sandbox
from etctl.cli._sandbox_options import SandboxOptions
from etctl.errors import NotFound
from etctl.runtime import CRDS, Client, ClientOptions, Manager
from tests.examples._files import FILES, load, needs, resource_of
from tests.runtime._realtime import run_manager

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)

NS = "default"
QUICK = SandboxOptions(pod_start_delay=0, metrics_bind_address="0")
BOUND = 60.0  # seconds of real time for a document to work: only turns a hang into a failure
_JOBS = ("TFJob", "MPIJob", "TrainingJob", "PyTorchJob")


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = (obj.get("status") or {}).get("conditions") or []
    return {c["type"]: c for c in found if c.get("status") == "True"}


def outcome(obj: dict[str, Any]) -> bool | None:
    """True once the object works, False once it cannot, None while it may still."""
    kind = obj["kind"]
    holds = _conditions(obj)
    if kind in _JOBS:
        if "Failed" in holds:
            return False
        return True if {"Running", "Succeeded"} & set(holds) else None
    if kind in ("ScaleIn", "ScaleOut"):
        if (obj.get("status") or {}).get("step") != "Done":
            return None
        last = obj["status"]["conditions"][-1]
        return bool(last["type"] == "ScaleSucceeded")
    if kind == "Greeting":
        return True if "Ready" in holds else None
    return True  # a ConfigMap works once stored


async def works(client: Client, doc: dict[str, Any]) -> None:
    """Wait until the stored ``doc`` works; fail with its last state if it cannot or does not."""
    name, kind = doc["metadata"]["name"], doc["kind"]
    last: dict[str, Any] = {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BOUND
    while True:
        try:
            last = dict(await client.get(resource_of(doc), name, namespace=NS))
        except NotFound:
            last = {}
        verdict = outcome(last) if last else None
        assert verdict is not False, f"{kind} {name} failed: {last.get('status')}"
        if verdict:
            return
        assert loop.time() < deadline, f"{kind} {name} did not work in time: {last.get('status')}"
        await asyncio.sleep(0.05)


async def apply(client: Client, path: Path) -> None:
    """Create every document of ``path`` (``kubectl apply`` of new objects), then see each work."""
    docs = load(path)
    for doc in docs:
        await client.create(resource_of(doc), doc, namespace=NS)
    for doc in docs:
        await works(client, doc)


async def established(client: Client, name: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BOUND
    while True:
        crd = await client.get(CRDS, name)
        conditions = crd.get("status", {}).get("conditions", [])
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        assert loop.time() < deadline, f"CRD {name} never established"
        await asyncio.sleep(0.05)


def _program(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@asynccontextmanager
async def running(client: Client, program: Path) -> AsyncIterator[None]:
    """An example program (an operator of ``etctl.runtime``) running, as ``python <program>``."""
    manager = Manager(client)
    _program(program).setup(manager)
    async with run_manager(manager):
        yield


async def needed(client: Client, stack: AsyncExitStack, need: Path) -> None:
    """Bring what an example needs: a CRD established, a manifest working, a program running."""
    if need.suffix == ".py":
        await stack.enter_async_context(running(client, need))
        return
    docs = load(need)
    if all(doc["kind"] == "CustomResourceDefinition" for doc in docs):
        for doc in docs:
            await client.create(CRDS, doc)
            await established(client, doc["metadata"]["name"])
        return
    await apply(client, need)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_the_example_works_as_shipped(path: Path) -> None:
    async def main(sandbox: Sandbox) -> None:
        options = ClientOptions(request_timeout=10)
        client = await Client.from_kubeconfig(sandbox.kubeconfig, options=options)
        async with client, AsyncExitStack() as stack:
            for need in needs(path):
                await needed(client, stack, need)
            await apply(client, path)

    await run_sandbox(QUICK, main)
