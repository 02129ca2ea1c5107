"""A small HTTPS webhook server for the admission and conversion tests, and configurations for it.

The server answers every POST with what its ``answer`` function returns for the review it got
(and keeps the reviews), over TLS with a fresh certificate for ``127.0.0.1`` and
``hooks.webhooks.svc``, whose CA the configurations carry as ``caBundle``.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from etctl.testing._apiserver.tls import ServingCertificate, serving_certificate

SERVICE_HOST = "hooks.webhooks.svc"

Answer = Callable[[str, dict[str, Any]], Any]
"""``(path, review) -> response`` (a dict, or ``web.Response`` to answer something else)."""


def allow(review: dict[str, Any], **response: Any) -> dict[str, Any]:
    """An AdmissionReview v1 answer for ``review``: allowed, plus ``response`` fields."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": True, **response},
    }


def deny(review: dict[str, Any], message: str, **status: Any) -> dict[str, Any]:
    """A refusal with ``message`` (and other ``Status`` fields)."""
    answer = allow(review)
    answer["response"]["allowed"] = False
    answer["response"]["status"] = {"message": message, **status}
    return answer


def json_patch(review: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """An allowing answer with a JSON patch."""
    patch = base64.b64encode(json.dumps(operations).encode()).decode()
    return allow(review, patch=patch, patchType="JSONPatch")


@dataclass
class HookServer:
    """A running webhook server."""

    certificate: ServingCertificate
    port: int
    reviews: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: Answer = field(default=lambda path, review: allow(review))
    hold: asyncio.Event | None = None
    peers: set[Any] = field(default_factory=set)
    """The client ends (address, port) reviews arrived from: one per connection."""

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.certificate.ca_pem).decode()

    def url(self, path: str = "/validate") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        return [path for path, _ in self.reviews]

    def requests(self) -> list[dict[str, Any]]:
        return [review["request"] for _, review in self.reviews]


@asynccontextmanager
async def hook_server() -> AsyncIterator[HookServer]:
    """Serve webhooks on a free loopback port until the block ends."""
    certificate = serving_certificate("127.0.0.1", names=(SERVICE_HOST,))
    hooks = HookServer(certificate, 0)

    async def handle(request: web.Request) -> web.StreamResponse:
        review = await request.json()
        hooks.reviews.append((request.path_qs, review))
        if request.transport is not None:
            hooks.peers.add(request.transport.get_extra_info("peername"))
        if hooks.hold is not None:
            await hooks.hold.wait()
        answer = hooks.answer(request.path, review)
        if isinstance(answer, web.StreamResponse):
            return answer
        return web.json_response(answer)

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certificate.context)
    await site.start()
    hooks.port = int(runner.addresses[0][1])
    try:
        yield hooks
    finally:
        if hooks.hold is not None:
            hooks.hold.set()
        await runner.cleanup()


def webhook(
    name: str,
    client_config: dict[str, Any],
    *,
    operations: tuple[str, ...] = ("CREATE", "UPDATE"),
    groups: tuple[str, ...] = ("",),
    versions: tuple[str, ...] = ("v1",),
    resources: tuple[str, ...] = ("configmaps",),
    **fields: Any,
) -> dict[str, Any]:
    """One webhook of a configuration (``sideEffects: None``, review version v1)."""
    return {
        "name": name,
        "clientConfig": client_config,
        "rules": [
            {
                "operations": list(operations),
                "apiGroups": list(groups),
                "apiVersions": list(versions),
                "resources": list(resources),
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **fields,
    }


def configuration(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    """A ``ValidatingWebhookConfiguration`` or ``MutatingWebhookConfiguration``."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }


VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
