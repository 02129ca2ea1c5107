"""The example operator of docs/runtime.md (examples/operator/greeter.py), run as a user runs it.

In process with a Manager, and as its own process against an API server it reaches through a
kubeconfig, on the cluster under test (the embedded API server with its garbage collector, or a
real cluster), in the test's namespace: the ConfigMap follows the
Greeting, drift is repaired, a foreign ConfigMap is left alone, status converges and is written
once, and deleting the Greeting deletes what it owned.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from etctl.errors import Invalid, NotFound
from etctl.runtime import CONFIGMAPS, Client, Manager, ManagerOptions, objects
from etctl.testing import ClusterTarget, cluster_target, eventually
from tests.examples._load import load_example
from tests.runtime._webhooks import free_port

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "operator"


greeter = load_example(EXAMPLE / "greeter.py", "greeter_example")
GREETINGS = greeter.GREETINGS


@pytest_asyncio.fixture
async def target(tmp_path: Path) -> AsyncIterator[ClusterTarget]:
    crd = yaml.safe_load((EXAMPLE / "crd.yaml").read_text(encoding="utf-8"))
    async with cluster_target(tmp_path, crds=[crd]) as found:
        yield found


@pytest.fixture
def ns(target: ClusterTarget) -> str:
    return target.namespace


@pytest_asyncio.fixture
async def client(target: ClusterTarget) -> AsyncIterator[Client]:
    async with Client.connect(target.kubeconfig) as connected:
        yield connected


def _greeting(name: str, who: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.etctl.dev/v1",
        "kind": "Greeting",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"name": who},
    }


async def _message(client: Client, name: str, ns: str) -> str | None:
    found = await client.list(CONFIGMAPS, namespace=ns)
    for cm in found.items:
        if objects.name(cm) == name:
            return str((cm.get("data") or {}).get("message"))
    return None


async def test_the_greeter_converges_repairs_and_cleans_up(client: Client, ns: str) -> None:
    manager = Manager(client, options=ManagerOptions())
    greeter.setup(manager)
    async with asyncio.TaskGroup() as group:
        group.create_task(manager.run(), name="greeter")
        await manager.wait_started()
        created = await client.create(GREETINGS, _greeting("world", "World", ns))

        async def says(text: str) -> bool:
            return await _message(client, "world-greeting", ns) == text

        await eventually(lambda: says("Hello, World!"), timeout=20)
        cm = await client.get(CONFIGMAPS, "world-greeting", namespace=ns)
        assert objects.controller_of(cm) is not None
        assert objects.is_controlled_by(cm, created)

        async def ready() -> bool:
            got = await client.get(GREETINGS, "world", namespace=ns)
            conditions = (got.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        await eventually(ready, timeout=20)

        # Drift is repaired; a spec change is followed.
        await client.patch(
            CONFIGMAPS, "world-greeting", {"data": {"message": "edited"}}, namespace=ns
        )
        await eventually(lambda: says("Hello, World!"), timeout=20)
        await client.patch(GREETINGS, "world", {"spec": {"greeting": "Hi"}}, namespace=ns)
        await eventually(lambda: says("Hi, World!"), timeout=20)

        # A ConfigMap of the wanted name that is not ours is left alone, and said so.
        foreign = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "taken-greeting", "namespace": ns},
            "data": {"message": "mine"},
        }
        await client.create(CONFIGMAPS, foreign)
        await client.create(GREETINGS, _greeting("taken", "Nobody", ns))

        async def refused() -> bool:
            got = await client.get(GREETINGS, "taken", namespace=ns)
            conditions = (got.get("status") or {}).get("conditions") or []
            return any(c["reason"] == "NameTaken" for c in conditions)

        await eventually(refused, timeout=20)
        assert await _message(client, "taken-greeting", ns) == "mine"

        # Deleting the Greeting deletes its ConfigMap (the garbage collector follows the owner).
        await client.delete(GREETINGS, "world", namespace=ns)
        await eventually(lambda: _absent(client, "world-greeting", ns), timeout=20)
        assert await _message(client, "taken-greeting", ns) == "mine"
        manager.stop()


async def _absent(client: Client, name: str, ns: str) -> bool:
    return await _message(client, name, ns) is None


async def test_the_example_runs_as_its_own_process(target: ClusterTarget, ns: str) -> None:
    kubeconfig = target.kubeconfig
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE / "greeter.py"),
        "--kubeconfig",
        str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with Client.connect(kubeconfig) as client:
            manifest = yaml.safe_load((EXAMPLE / "greeting.yaml").read_text(encoding="utf-8"))
            await client.create(GREETINGS, manifest, namespace=ns)

            async def greeted() -> bool:
                return await _message(client, "world-greeting", ns) == "Hello, World!"

            await eventually(greeted, timeout=60)
    finally:
        process.terminate()
        out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, err.decode()
    assert out == b""  # logs go to stderr, never stdout


def test_the_guide_shows_the_example_exactly() -> None:
    guide = (EXAMPLE.parents[1] / "docs" / "runtime.md").read_text(encoding="utf-8")
    source = (EXAMPLE / "greeter.py").read_text(encoding="utf-8")
    assert f"```python\n{source}```" in guide


@pytest.mark.etctl_hooks(
    "the API server calls webhooks on 127.0.0.1, which only a local one reaches"
)
async def test_the_greeter_defaults_and_validates_at_the_door(
    client: Client, ns: str, tmp_path: Path
) -> None:
    url = f"https://127.0.0.1:{free_port()}"
    options = greeter.options("0", url, ns)
    options = dataclasses.replace(
        options, webhook=dataclasses.replace(options.webhook, cert_dir=tmp_path / "certs")
    )
    manager = Manager(client, options=options)
    greeter.setup(manager, webhooks=True)
    await greeter.register(manager, url)
    async with asyncio.TaskGroup() as group:
        group.create_task(manager.run(), name="greeter")
        await manager.wait_started()
        assert manager.cert_rotator is not None
        rotator = manager.cert_rotator

        async def injected() -> bool:  # and served: /readyz passes
            return rotator.check() is None and not manager.readyz.failing()

        await eventually(injected, timeout=20)
        # Defaulted: blanks trimmed, the greeting capitalised; the operator greets accordingly.
        tidy = {**_greeting("ada", "  Ada  ", ns)}
        tidy["spec"]["greeting"] = " hey"
        created = await client.create(GREETINGS, tidy)
        assert created["spec"] == {"name": "Ada", "greeting": "Hey"}
        await eventually(lambda: _says(client, "ada-greeting", ns, "Hey, Ada!"), timeout=20)
        # Refused with the field and the reason, as the API server words a 422.
        with pytest.raises(Invalid) as refused:
            await client.create(GREETINGS, _greeting("two-lines", "Ada\nLovelace", ns))
        assert [c["field"] for c in refused.value.causes] == ["spec.name"]
        assert "must be one line" in str(refused.value)
        # An update is judged against the old object.
        with pytest.raises(Invalid) as renamed:
            await client.patch(GREETINGS, "ada", {"spec": {"name": "Grace"}}, namespace=ns)
        assert "may not change" in str(renamed.value)
        await client.patch(GREETINGS, "ada", {"spec": {"greeting": "hello"}}, namespace=ns)
        await eventually(lambda: _says(client, "ada-greeting", ns, "Hello, Ada!"), timeout=20)
        with pytest.raises(NotFound):
            await client.get(GREETINGS, "two-lines", namespace=ns)
        manager.stop()


async def _says(client: Client, name: str, ns: str, text: str) -> bool:
    return await _message(client, name, ns) == text
