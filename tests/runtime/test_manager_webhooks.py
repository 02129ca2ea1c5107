"""A manager with webhooks: the server before the caches, its certificate provisioned, /readyz."""

from __future__ import annotations

import base64
import datetime
import ssl
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import orjson
import pytest

from etctl.runtime import (
    CONFIGMAPS,
    NAMESPACES,
    SECRETS,
    AdmissionRequest,
    CertRotation,
    FakeClock,
    FieldError,
    KubeObject,
    Manager,
    ManagerOptions,
    Request,
    Result,
    WebhookServerOptions,
    invalid,
)
from etctl.testing import ApiServer, Fault, eventually
from tests.runtime._realtime import client_of, run_manager
from tests.runtime._webhooks import admission_review

NAMESPACE = "etctl-system"
PATH = "/validate-core-v1-configmap"


class NoEmptyData:
    """Refuses a ConfigMap without data."""

    async def validate_create(self, obj: KubeObject, req: AdmissionRequest) -> Sequence[str]:
        if not obj.get("data"):
            raise invalid("ConfigMap", req.name, [FieldError("data", "Required value")])
        return []

    async def validate_update(
        self, old: KubeObject, new: KubeObject, req: AdmissionRequest
    ) -> Sequence[str]:
        return await self.validate_create(new, req)

    async def validate_delete(self, obj: KubeObject, req: AdmissionRequest) -> Sequence[str]:
        return []


async def noop(request: Request) -> Result:
    return Result()


@pytest.mark.etctl_hooks("fault injection: the caches cannot sync")
async def test_webhooks_serve_before_the_caches_sync_with_a_provisioned_certificate(
    tmp_path: Path,
) -> None:
    clock = FakeClock(start=datetime.datetime.now(datetime.UTC))
    async with ApiServer(clock=clock) as server:
        server.storage.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        listing = server.inject(Fault(verb="list", resource="configmaps", status=500, times=None))
        async with client_of(server, tmp_path) as client:
            manager = Manager(
                client,
                options=ManagerOptions(
                    health_probe_bind_address="127.0.0.1:0",
                    webhook=WebhookServerOptions(
                        host="127.0.0.1", port=0, cert_dir=tmp_path / "certs"
                    ),
                    cert_rotation=CertRotation(
                        secret_name="webhook-cert", namespace=NAMESPACE, ip_addresses=("127.0.0.1",)
                    ),
                ),
                clock=clock,
            )
            manager.controller("configmaps", noop).for_(CONFIGMAPS).build()
            manager.webhook(CONFIGMAPS).with_validator(NoEmptyData()).build()
            async with run_manager(manager), aiohttp.ClientSession() as http:
                await eventually(lambda: manager.webhook_server.address is not None)
                assert listing.fired > 0  # the cache is still failing to list, and yet:
                assert not manager.cache.has_synced()
                secret = await client.get(SECRETS, "webhook-cert", namespace=NAMESPACE)
                ca = base64.b64decode(secret["data"]["ca.crt"]).decode()
                host, port = manager.webhook_server.address or ("", 0)
                review = admission_review(
                    "CREATE",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
                    group="",
                    kind="ConfigMap",
                    plural="configmaps",
                )
                async with http.post(
                    f"https://{host}:{port}{PATH}",
                    data=orjson.dumps(review),
                    headers={"Content-Type": "application/json"},
                    ssl=ssl.create_default_context(cadata=ca),
                ) as response:
                    answer = await response.json()
                assert answer["response"]["allowed"] is False
                assert answer["response"]["status"]["code"] == 422
                probe_host, probe_port = manager.probe_address or ("", 0)
                async with http.get(f"http://{probe_host}:{probe_port}/readyz/webhook") as ready:
                    assert ready.status == 200
                async with http.get(f"http://{probe_host}:{probe_port}/readyz") as ready:
                    assert ready.status == 500  # the caches have not synced
                server.faults.remove(listing)
                await clock.advance(5)  # the reflector's backoff
                await eventually(manager.cache.has_synced)
                async with http.get(f"http://{probe_host}:{probe_port}/readyz") as ready:
                    assert ready.status == 200
            assert manager.webhook_server.address is None  # stopped with the manager


def test_an_operator_without_webhooks_loads_no_review_models() -> None:
    # The reviews are pydantic models; the runtime otherwise never needs pydantic's machinery.
    probe = (
        "import sys, etctl.runtime as r\n"
        "r.Manager, r.WebhookServer, r.CertRotation, r.HubAndSpoke\n"
        "print('pydantic.main' in sys.modules)\n"
        "r.AdmissionRequest\n"
        "print('pydantic.main' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.split() == ["False", "True"]
