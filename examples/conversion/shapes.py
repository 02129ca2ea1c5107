"""Shapes: a CRD's two versions converted by a webhook on ``etctl.runtime`` (hub and spoke).

A ``Shape`` (``example.etctl.dev``, see ``crd.yaml``) is stored at ``v2``, the hub, and served at
``v1`` too, which says the same thing differently::

    v1: {sides: 4, size: "10cm"}
    v2: {polygon: {sides: 4}, size: {value: 10, unit: cm}, color: red}

The API server sends every object it must turn into the other version to this program's
conversion webhook. ``v2``'s ``color``, which ``v1`` has no field for, travels in an annotation at
``v1``, so a round trip through ``v1`` loses nothing. A ``v1`` size in a unit ``v2`` does not
know (``3furlong``) fails the conversion, and the client's request with it. Run it::

    kubectl apply -f examples/conversion/crd.yaml
    python examples/conversion/shapes.py --webhook-url https://HOST:PORT [--kubeconfig PATH]
    kubectl apply -f examples/conversion/shape-v1.yaml
    kubectl get shapes.v2.example.etctl.dev square -o yaml

It keeps its own certificate (a CA and a certificate for ``HOST``, in the Secret
``shapes-webhook-cert``) and points the CRD's ``spec.conversion`` at itself, its CA injected.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from etctl import log
from etctl.runtime import (
    CRDS,
    CertRotation,
    Client,
    ConversionError,
    HubAndSpoke,
    KubeObject,
    Manager,
    ManagerOptions,
    Resource,
    Spoke,
    WebhookServerOptions,
)

GROUP = "example.etctl.dev"
SHAPES = Resource(GROUP, "v2", "shapes", "Shape")
"""Shapes at the hub version, where they are stored."""
CRD = f"shapes.{GROUP}"
COLOR = f"shapes.{GROUP}/color"
"""The annotation that carries ``v2``'s color through ``v1``."""
CERTIFICATES = "shapes-webhook-cert"  # the Secret the webhook server's certificates are kept in
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(mm|cm|m)\s*")


def v1_to_v2(shape: KubeObject) -> KubeObject:
    """A ``v1`` Shape at ``v2``: the size parsed, the color taken back from its annotation."""
    spec = shape.get("spec") or {}
    size = str(spec.get("size", ""))
    parsed = _SIZE.fullmatch(size)
    if parsed is None:
        msg = f"spec.size: {size!r} is not a length in mm, cm or m (10cm, 1.5m)"
        raise ConversionError(msg)
    hub: dict[str, object] = {
        "polygon": {"sides": spec.get("sides")},
        "size": {"value": float(parsed[1]), "unit": parsed[2]},
    }
    annotations = shape.get("metadata", {}).get("annotations") or {}
    if COLOR in annotations:
        hub["color"] = annotations.pop(COLOR)
    shape["spec"] = hub
    return shape


def v2_to_v1(shape: KubeObject) -> KubeObject:
    """A ``v2`` Shape at ``v1``: the size written out, the color kept in an annotation."""
    spec = shape.get("spec") or {}
    size = spec.get("size") or {}
    shape["spec"] = {
        "sides": (spec.get("polygon") or {}).get("sides"),
        "size": f"{size.get('value', 0):g}{size.get('unit', '')}",
    }
    if "color" in spec:
        annotations = shape.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[COLOR] = spec["color"]
    return shape


CONVERTER = HubAndSpoke(
    group=GROUP, kind="Shape", hub="v2", spokes={"v1": Spoke(to_hub=v1_to_v2, from_hub=v2_to_v1)}
)


def setup(manager: Manager) -> None:
    """Serve the conversion webhook of Shapes (``/convert``) from ``manager``."""
    manager.webhook(SHAPES).with_converter(CONVERTER).build()


async def register(client: Client, url: str) -> None:
    """Point the CRD's conversion at ``url``; the certificate rotation injects its CA there."""
    crd = await client.get(CRDS, CRD)
    current = crd["spec"].get("conversion") or {}
    bundle = ((current.get("webhook") or {}).get("clientConfig") or {}).get("caBundle")
    client_config: dict[str, str] = {"url": url.rstrip("/") + "/convert"}
    if bundle:  # a restart keeps the CA it injected before
        client_config["caBundle"] = bundle
    crd["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": client_config},
    }
    await client.replace(CRDS, crd)


def options(url: str, namespace: str) -> ManagerOptions:
    """A webhook server on the URL's port, with a certificate for its host, kept by the manager."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    addresses: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    try:
        addresses = (str(ipaddress.ip_address(host)),)
    except ValueError:
        names = (host,)  # a DNS name
    return ManagerOptions(
        webhook=WebhookServerOptions(
            port=parts.port or 443,
            cert_dir=Path(tempfile.gettempdir()) / f"shapes-{parts.port}-certs",
        ),
        cert_rotation=CertRotation(
            secret_name=CERTIFICATES,
            namespace=namespace,
            dns_names=names,
            ip_addresses=addresses,
            conversion_crds=(CRD,),
        ),
    )


async def run(kubeconfig: str | None, url: str, namespace: str) -> None:
    """Connect, serve the conversion webhook, point the CRD at it; until SIGTERM or Ctrl-C."""
    async with Client.connect(kubeconfig) as client:
        manager = Manager(client, options=options(url, namespace))
        setup(manager)
        await register(client, url)
        await manager.run(handle_signals=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``shapes.py --webhook-url URL [--kubeconfig PATH] [--namespace NS]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="default: in-cluster, else $KUBECONFIG")
    parser.add_argument("--webhook-url", required=True, help="serve at https://HOST:PORT")
    parser.add_argument("--namespace", default="default", help="of the webhook certificate")
    args = parser.parse_args(argv)
    log.configure()
    asyncio.run(run(args.kubeconfig, args.webhook_url, args.namespace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
