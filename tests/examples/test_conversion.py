"""The conversion example (examples/conversion/shapes.py): a CRD's two versions, one stored object.

Shapes are written and read at both versions through the embedded API server, which calls the
example's conversion webhook as kube-apiserver does; a color that only v2 has survives a round
trip through v1, and a size v2 cannot express fails the write with the converter's message.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from etctl.errors import ServerError
from etctl.runtime import Client, Manager, Resource
from etctl.testing import ApiServer, eventually
from tests.examples._load import load_example
from tests.runtime._webhooks import free_port

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "conversion"

pytestmark = pytest.mark.etctl_hooks("the API server calls a webhook on 127.0.0.1")


shapes = load_example(EXAMPLE / "shapes.py", "shapes_example")
V1 = Resource("example.etctl.dev", "v1", "shapes", "Shape")
V2 = shapes.SHAPES


def manifest(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((EXAMPLE / name).read_text(encoding="utf-8"))
    return document


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    """A client of a server with the Shape CRD and the example's webhook serving it."""
    async with ApiServer(crds=[manifest("crd.yaml")]) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        async with Client.connect(kubeconfig) as connected:
            url = f"https://127.0.0.1:{free_port()}"
            options = shapes.options(url, "default")
            options = dataclasses.replace(
                options, webhook=dataclasses.replace(options.webhook, cert_dir=tmp_path / "c")
            )
            manager = Manager(connected, options=options)
            shapes.setup(manager)
            await shapes.register(connected, url)
            async with asyncio.TaskGroup() as group:
                group.create_task(manager.run(), name="shapes")
                await manager.wait_started()
                rotator = manager.cert_rotator
                assert rotator is not None
                await eventually(lambda: rotator.check() is None)
                await eventually(lambda: not manager.readyz.failing())  # the webhook serves
                yield connected
                manager.stop()


async def test_a_shape_reads_at_either_version_and_keeps_what_v1_cannot_say(
    client: Client,
) -> None:
    created = await client.create(V1, manifest("shape-v1.yaml"), namespace="default")
    assert created["apiVersion"] == "example.etctl.dev/v1"
    assert created["spec"] == {"sides": 4, "size": "10cm"}
    stored = await client.get(V2, "square", namespace="default")
    assert stored["spec"] == {"polygon": {"sides": 4}, "size": {"value": 10, "unit": "cm"}}

    await client.create(V2, manifest("shape-v2.yaml"), namespace="default")
    at_v1 = await client.get(V1, "red-triangle", namespace="default")
    assert at_v1["spec"] == {"sides": 3, "size": "1.5m"}
    assert at_v1["metadata"]["annotations"] == {shapes.COLOR: "red"}
    # An edit through v1 (a bigger triangle) keeps the color v1 has no field for.
    at_v1["spec"]["size"] = "2m"
    await client.replace(V1, at_v1, namespace="default")
    back = await client.get(V2, "red-triangle", namespace="default")
    assert back["spec"] == {
        "polygon": {"sides": 3},
        "size": {"value": 2, "unit": "m"},
        "color": "red",
    }
    assert shapes.COLOR not in (back["metadata"].get("annotations") or {})
    listed = await client.list(V1, namespace="default")
    assert sorted(o["spec"]["size"] for o in listed.items) == ["10cm", "2m"]


async def test_a_conversion_that_fails_fails_the_write_with_its_message(client: Client) -> None:
    furlongs = manifest("shape-v1.yaml")
    furlongs["metadata"]["name"] = "far"
    furlongs["spec"]["size"] = "3furlong"
    with pytest.raises(ServerError) as failed:
        await client.create(V1, furlongs, namespace="default")
    assert "'3furlong' is not a length in mm, cm or m" in str(failed.value)
    listed = await client.list(V2, namespace="default")
    assert listed.items == []  # nothing half converted was stored
