"""Admission webhooks served on this machine, installed in a cluster as the release installs them.

The sandbox runs the operator in its own process, beside the embedded API server, and the
operator's webhooks must be called exactly as on a cluster. :func:`install_webhooks` writes the
webhook objects of the release (:mod:`etctl.cli._render_webhooks`: the empty certificate Secret,
the Service, the mutating and validating configurations pointing at it) into the operator's
namespace, and :func:`publish_endpoint` points the Service at the webhook server's loopback port
with an Endpoints object, as one points a Service at an address outside a cluster. The operator
then provisions its certificate for the Service's names and injects its CA, as it does in a
cluster. Writes are create-or-replace, so both are idempotent.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from etctl.cli._manifest_docs import OPERATOR_NAME, labels, meta
from etctl.cli._render_webhooks import (
    WEBHOOK_PORT_NAME,
    webhook_configuration_documents,
    webhook_secret,
    webhook_service,
)
from etctl.cli._webhook_settings import DEFAULT_WEBHOOK_SERVICE
from etctl.common import JobPlugin
from etctl.errors import AlreadyExists
from etctl.runtime import (
    ENDPOINTS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    SECRETS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Client,
    KubeObject,
    Resource,
)

__all__ = ["install_webhooks", "publish_endpoint"]

_KINDS = {
    "Secret": SECRETS,
    "Service": SERVICES,
    "MutatingWebhookConfiguration": MUTATING_WEBHOOK_CONFIGURATIONS,
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATIONS,
}


async def _put(client: Client, resource: Resource, obj: KubeObject) -> None:
    """Create ``obj``, or replace what has its name."""
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    try:
        await client.create(resource, obj, namespace=namespace)
    except AlreadyExists:
        current = await client.get(resource, obj["metadata"]["name"], namespace=namespace)
        version = current["metadata"]["resourceVersion"]
        replaced = {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}
        await client.replace(resource, replaced, namespace=namespace)


async def install_webhooks(
    client: Client, plugins: Sequence[JobPlugin[Any]], namespace: str
) -> None:
    """Write the release's webhook objects for ``plugins`` into ``namespace`` (made if missing).

    The Service has no selector here: its endpoint is the webhook server's address on this
    machine (:func:`publish_endpoint`).
    """
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"metadata": {"name": namespace, "labels": labels()}})
    service = webhook_service(namespace, meta(OPERATOR_NAME), {})
    del service["spec"]["selector"]
    documents = [
        webhook_secret(namespace, meta(OPERATOR_NAME)),
        service,
        *webhook_configuration_documents(plugins, namespace, labels()),
    ]
    for document in documents:
        await _put(client, _KINDS[document["kind"]], document)


async def publish_endpoint(client: Client, namespace: str, port: int) -> None:
    """Point the webhook Service at ``127.0.0.1:port``, where the webhook server listens."""
    endpoints: KubeObject = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            **meta(OPERATOR_NAME),
            "name": DEFAULT_WEBHOOK_SERVICE,
            "namespace": namespace,
        },
        "subsets": [
            {
                "addresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": WEBHOOK_PORT_NAME, "port": port, "protocol": "TCP"}],
            }
        ],
    }
    await _put(client, ENDPOINTS, endpoints)
