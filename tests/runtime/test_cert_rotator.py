"""Self-provisioned webhook certificates on the embedded API server: made, injected, rotated."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from etctl._certificates import inspect, key_matches, signed_by, split_pem
from etctl.runtime import CRDS, NAMESPACES, SECRETS, CertRotation, CertRotator, Client, FakeClock
from etctl.testing import ApiServer, Fault, eventually
from tests._logs import captured_logs
from tests.runtime._realtime import client_of

NAMESPACE = "etctl-system"
DAY = 86400.0


def widget_crd() -> dict[str, Any]:
    """A CRD whose two versions are converted by webhook."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.etctl.dev"},
        "spec": {
            "group": "example.etctl.dev",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": False, "schema": schema},
                {"name": "v2", "served": True, "storage": True, "schema": schema},
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "service": {
                            "name": "etctl-webhook-service",
                            "namespace": NAMESPACE,
                            "path": "/convert",
                            "port": 443,
                        }
                    },
                },
            },
        },
    }


@dataclass
class Env:
    server: ApiServer
    client: Client
    clock: FakeClock
    cert_dir: Path

    async def secret(self) -> dict[str, bytes]:
        obj = await self.client.get(SECRETS, "etctl-webhook-cert", namespace=NAMESPACE)
        return {key: base64.b64decode(value) for key, value in obj["data"].items()}

    async def crd_bundle(self) -> bytes:
        crd = await self.client.get(CRDS, "widgets.example.etctl.dev")
        config = crd["spec"]["conversion"]["webhook"]["clientConfig"]
        return base64.b64decode(config.get("caBundle", ""))


@asynccontextmanager
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    clock = FakeClock(start=datetime.datetime.now(datetime.UTC))
    async with ApiServer(clock=clock, crds=[widget_crd()]) as server:
        server.storage.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        async with client_of(server, tmp_path) as client:
            yield Env(server, client, clock, tmp_path / "certs")


def rotation(**overrides: Any) -> CertRotation:
    values: dict[str, Any] = {
        "secret_name": "etctl-webhook-cert",
        "namespace": NAMESPACE,
        "dns_names": CertRotation.service_names("etctl-webhook-service", NAMESPACE),
        "ip_addresses": ("127.0.0.1",),
        "conversion_crds": ("widgets.example.etctl.dev",),
        **overrides,
    }
    return CertRotation(**values)


async def idle(rotator: CertRotator) -> None:
    """Wait until the rotator has converged and waits for its next pass (time may move then)."""
    await eventually(lambda: rotator.waiting_until is not None and not rotator._wake.is_set())


@asynccontextmanager
async def rotating(e: Env, rotator: CertRotator) -> AsyncIterator[CertRotator]:
    task = asyncio.create_task(rotator.run(), name="test:cert-rotator")
    try:
        yield rotator
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.parametrize("in_process", [False, True], ids=["planned in a child", "in process"])
async def test_a_first_pass_makes_the_secret_injects_the_ca_and_writes_the_files(
    tmp_path: Path, in_process: bool
) -> None:
    async with env(tmp_path) as e:
        rotator = CertRotator(
            e.client, rotation(), cert_dir=e.cert_dir, clock=e.clock, in_process=in_process
        )
        assert rotator.check() == "the webhook certificates are not provisioned yet"
        async with rotating(e, rotator):
            await eventually(lambda: rotator.passes >= 1)
            data = await e.secret()
            assert rotator.check() is None
        (ca,) = split_pem(data["ca.crt"])
        assert inspect(ca).is_ca
        assert key_matches(ca, data["ca.key"])
        assert signed_by(data["tls.crt"], ca)
        assert key_matches(data["tls.crt"], data["tls.key"])
        served = inspect(data["tls.crt"])
        assert served.covers(
            [
                "etctl-webhook-service.etctl-system.svc",
                "etctl-webhook-service.etctl-system.svc.cluster.local",
            ],
            ["127.0.0.1"],
        )
        assert await e.crd_bundle() == data["ca.crt"]
        assert (e.cert_dir / "tls.crt").read_bytes() == data["tls.crt"]
        assert (e.cert_dir / "tls.key").read_bytes() == data["tls.key"]
        assert (e.cert_dir / "tls.key").stat().st_mode & 0o077 == 0  # the key is private


async def test_the_serving_certificate_is_renewed_before_it_expires(tmp_path: Path) -> None:
    async with env(tmp_path) as e:
        short = rotation(cert_validity=10 * DAY, lookahead=2 * DAY, check_interval=DAY)
        rotator = CertRotator(e.client, short, cert_dir=e.cert_dir, clock=e.clock)
        async with rotating(e, rotator):
            await eventually(lambda: rotator.passes >= 1)
            first = await e.secret()
            await idle(rotator)
            passes = rotator.passes
            e.clock.jump(7 * DAY)  # a daily check: nothing due yet
            await eventually(lambda: rotator.passes > passes)
            await idle(rotator)
            assert (await e.secret())["tls.crt"] == first["tls.crt"]
            e.clock.jump(1.5 * DAY)  # within the lookahead now
            await eventually(lambda: (e.cert_dir / "tls.crt").read_bytes() != first["tls.crt"])
            renewed = await e.secret()
        assert renewed["ca.crt"] == first["ca.crt"]  # the CA lives on
        assert renewed["tls.crt"] != first["tls.crt"]
        assert signed_by(renewed["tls.crt"], first["ca.crt"])
        assert inspect(renewed["tls.crt"]).not_after > inspect(first["tls.crt"]).not_after


async def test_a_new_ca_is_trusted_before_any_certificate_it_signed_is_served(
    tmp_path: Path,
) -> None:
    async with env(tmp_path) as e:
        short = rotation(
            ca_validity=20 * DAY, cert_validity=20 * DAY, lookahead=5 * DAY, check_interval=30 * DAY
        )
        rotator = CertRotator(e.client, short, cert_dir=e.cert_dir, clock=e.clock)
        async with rotating(e, rotator):
            await eventually(lambda: rotator.passes >= 1)
            first = await e.secret()
            (old_ca,) = split_pem(first["ca.crt"])
            await idle(rotator)
            e.server.requests.clear()
            e.clock.jump(16 * DAY)  # both are within their lookahead from day 15
            await eventually(lambda: (e.cert_dir / "tls.crt").read_bytes() != first["tls.crt"])
            rotated = await e.secret()
            writes = [
                (record.resource, record.name)
                for record in e.server.requests.find(verb="update")
                if record.code == 200
            ]
        new_ca, kept = split_pem(rotated["ca.crt"])
        assert kept == old_ca  # both CAs are trusted while the new one takes over
        assert signed_by(rotated["tls.crt"], new_ca)
        assert await e.crd_bundle() == rotated["ca.crt"]
        # The order that refuses no request: the bundle with the new CA reaches the Secret, then
        # the CRD, and only then is a certificate of the new CA issued.
        assert writes[:3] == [
            ("secrets", "etctl-webhook-cert"),
            ("customresourcedefinitions", "widgets.example.etctl.dev"),
            ("secrets", "etctl-webhook-cert"),
        ]


async def test_a_damaged_secret_is_repaired_and_a_read_only_directory_left_alone(
    tmp_path: Path,
) -> None:
    async with env(tmp_path) as e:
        (tmp_path / "volume").write_text("")  # a directory no write can reach, even as root
        unwritable = tmp_path / "volume" / "certs"
        await e.client.create(
            SECRETS,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "etctl-webhook-cert", "namespace": NAMESPACE},
                "data": {"ca.crt": base64.b64encode(b"garbage").decode()},
            },
            namespace=NAMESPACE,
        )
        rotator = CertRotator(e.client, rotation(), cert_dir=unwritable, clock=e.clock)
        with captured_logs() as logs:
            async with rotating(e, rotator):
                await eventually(lambda: rotator.passes >= 2)
                data = await e.secret()
        assert inspect(split_pem(data["ca.crt"])[0]).is_ca
        assert signed_by(data["tls.crt"], data["ca.crt"])
        assert not unwritable.exists()
        unwritten = [line for line in logs if "not writable" in line["event"]]
        assert len(unwritten) == 1  # said once, not on every pass


@pytest.mark.etctl_hooks("fault injection: a conflict on the Secret's update")
async def test_a_conflicting_write_is_retried_after_reading_again(tmp_path: Path) -> None:
    async with env(tmp_path) as e:
        await CertRotator(e.client, rotation(), clock=e.clock).reconcile()
        made = await e.client.get(SECRETS, "etctl-webhook-cert", namespace=NAMESPACE)
        made["data"]["tls.crt"] = base64.b64encode(b"damaged").decode()
        await e.client.replace(SECRETS, made, namespace=NAMESPACE)
        conflict = e.server.inject(Fault(verb="update", resource="secrets", status=409, times=1))
        rotator = CertRotator(e.client, rotation(), clock=e.clock)
        with captured_logs(logging.WARNING) as logs:
            async with rotating(e, rotator):
                await eventually(lambda: conflict.fired == 1 and rotator.waiting_until is not None)
                await e.clock.advance(10)  # past the retry's backoff, unless a change woke it
                await eventually(lambda: rotator.passes >= 1)
        data = await e.secret()
        assert signed_by(data["tls.crt"], data["ca.crt"])
        assert key_matches(data["tls.crt"], data["tls.key"])
        retried = [line for line in logs if "retrying" in line["event"]]
        assert "Conflict" in retried[0]["error"] or "409" in retried[0]["error"]


async def test_a_bundle_removed_by_someone_else_is_injected_again(tmp_path: Path) -> None:
    async with env(tmp_path) as e:
        rotator = CertRotator(e.client, rotation(), clock=e.clock)
        async with rotating(e, rotator):
            await eventually(lambda: rotator.passes >= 1)
            bundle = await e.crd_bundle()
            await idle(rotator)
            passes = rotator.passes
            crd = await e.client.get(CRDS, "widgets.example.etctl.dev")
            crd["spec"]["conversion"]["webhook"]["clientConfig"].pop("caBundle")
            await e.client.replace(CRDS, crd)  # someone re-applied the CRD without its bundle
            await eventually(lambda: rotator.passes > passes)  # woken by the CRD's change
            await idle(rotator)
            assert await e.crd_bundle() == bundle


_PASS_IN_A_FRESH_PROCESS = """
import asyncio, sys, tempfile
from pathlib import Path
from etctl.runtime import NAMESPACES, SECRETS, CertRotation, CertRotator, Client
from etctl.testing import ApiServer

async def main() -> None:
    async with ApiServer() as server:
        server.storage.create(NAMESPACES, {"metadata": {"name": "etctl-system"}})
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            async with await Client.from_kubeconfig(kubeconfig) as client:
                rotation = CertRotation(
                    secret_name="cert", namespace="etctl-system", ip_addresses=("127.0.0.1",)
                )
                await CertRotator(client, rotation, cert_dir=Path(tmp) / "certs").reconcile()
                secret = await client.get(SECRETS, "cert", namespace="etctl-system")
    print(sorted(secret["data"]), "cryptography" in sys.modules)

asyncio.run(main())
"""


@pytest.mark.etctl_hooks("a fresh process with its own embedded server")
def test_a_pass_leaves_the_operator_without_cryptography() -> None:
    # About 11 MB of resident memory for good, a quarter of an idle operator: the plan that needs
    # the package is made in a child process.
    found = subprocess.run(
        [sys.executable, "-c", _PASS_IN_A_FRESH_PROCESS],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert found.stdout.split("]")[-1].strip() == "False", found.stdout
    assert "'tls.key'" in found.stdout
