"""Helpers for webhook tests: certificates on disk, a webhook server, and reviews to send it.

Tests speak to the webhook server as the API server does: HTTPS with the CA the webhook
configuration would carry, a POST of a real ``AdmissionReview`` or ``ConversionReview``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import socket
import ssl
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from etctl._certificates import KeyPair, issue_serving_certificate, new_ca
from etctl.runtime import AdmissionRequest, KubeObject, WebhookServer, WebhookServerOptions
from etctl.runtime._clock import Clock, RealClock
from etctl.testing import eventually

__all__ = [
    "Accepting",
    "CertFiles",
    "WebhookClient",
    "admission_review",
    "conversion_review",
    "free_port",
    "make_certs",
    "server_on",
    "serving",
]


class Accepting:
    """A validator and defaulter that accepts everything as it is: subclass what a test judges."""

    async def default(self, obj: KubeObject, request: AdmissionRequest) -> KubeObject:
        return obj

    async def validate_create(self, obj: KubeObject, request: AdmissionRequest) -> Sequence[str]:
        return []

    async def validate_update(
        self, old: KubeObject, new: KubeObject, request: AdmissionRequest
    ) -> Sequence[str]:
        return []

    async def validate_delete(self, obj: KubeObject, request: AdmissionRequest) -> Sequence[str]:
        return []


def free_port() -> int:
    """A loopback TCP port nothing listens on now (for a URL the API server is told first)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class CertFiles:
    """A CA and the serving certificate it signed, written into ``directory``."""

    directory: Path
    ca: KeyPair
    serving: KeyPair

    def client_context(self) -> ssl.SSLContext:
        """A client TLS context trusting this CA (as a caBundle does)."""
        return ssl.create_default_context(cadata=self.ca.cert_pem.decode())

    def rotate(self, *, new_ca_too: bool = False) -> None:
        """Issue and write a new serving certificate (from a new CA when asked)."""
        if new_ca_too:
            self.ca = _ca()
        self.serving = _serving(self.ca)
        self.write()

    def write(self) -> None:
        """Write the serving pair into the directory."""
        (self.directory / "tls.key").write_bytes(self.serving.key_pem)
        (self.directory / "tls.crt").write_bytes(self.serving.cert_pem)


def _ca() -> KeyPair:
    now = datetime.datetime.now(datetime.UTC)
    return new_ca("test-ca", now=now, validity=datetime.timedelta(days=2))


def _serving(ca: KeyPair) -> KeyPair:
    now = datetime.datetime.now(datetime.UTC)
    return issue_serving_certificate(
        ca,
        dns_names=["localhost"],
        ip_addresses=["127.0.0.1"],
        now=now,
        validity=datetime.timedelta(days=1),
    )


def make_certs(directory: Path, *, write: bool = True) -> CertFiles:
    """A fresh CA and serving certificate for 127.0.0.1, written unless ``write`` is False."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca()
    files = CertFiles(directory, ca, _serving(ca))
    if write:
        files.write()
    return files


def admission_review(
    operation: str,
    obj: Mapping[str, Any] | None,
    *,
    old: Mapping[str, Any] | None = None,
    group: str = "example.etctl.dev",
    version: str = "v1",
    kind: str = "Greeting",
    plural: str = "greetings",
    api_version: str = "admission.k8s.io/v1",
) -> dict[str, Any]:
    """An ``AdmissionReview`` as kube-apiserver sends it."""
    source = obj if obj is not None else old or {}
    metadata = source.get("metadata") or {}
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": plural},
        "name": metadata.get("name", ""),
        "namespace": metadata.get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": None,
    }
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def conversion_review(desired: str, *objects: Mapping[str, Any]) -> dict[str, Any]:
    """A ``ConversionReview`` as kube-apiserver sends it."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "desiredAPIVersion": desired,
            "objects": list(objects),
        },
    }


@dataclass
class WebhookClient:
    """Posts to a webhook server over HTTPS, trusting the test CA."""

    session: aiohttp.ClientSession
    address: tuple[str, int]
    certs: CertFiles

    async def post(
        self,
        path: str,
        body: object,
        *,
        content_type: str = "application/json",
        context: ssl.SSLContext | None = None,
    ) -> tuple[int, Any]:
        """POST ``body`` (JSON-encoded unless bytes); the status and the decoded answer."""
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        host, port = self.address
        async with self.session.post(
            f"https://{host}:{port}{path}",
            data=data,
            headers={"Content-Type": content_type},
            ssl=context or self.certs.client_context(),
        ) as response:
            raw = await response.read()
        try:
            return response.status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return response.status, raw.decode(errors="replace")


@asynccontextmanager
async def serving(server: WebhookServer, certs: CertFiles) -> AsyncIterator[WebhookClient]:
    """Run ``server`` (its options naming ``certs``' directory) and a client for it."""
    async with aiohttp.ClientSession() as session:
        task = asyncio.get_running_loop().create_task(server.run(), name="test:webhook-server")
        try:
            await eventually(lambda: server.address is not None or task.done())
            if task.done():
                task.result()
            assert server.address is not None
            yield WebhookClient(session, server.address, certs)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def server_on(directory: Path, *, clock: Clock | None = None, **options: Any) -> WebhookServer:
    """A webhook server on a free loopback port, reading its certificate from ``directory``."""
    return WebhookServer(
        WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=directory, **options),
        clock=clock or RealClock(),
    )
