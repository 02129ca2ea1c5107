"""Greeter: a complete operator on ``etctl.runtime`` alone (``docs/runtime.md`` walks through it).

For every ``Greeting`` (``example.etctl.dev/v1``, see ``crd.yaml``) it keeps a ConfigMap
``<name>-greeting`` holding ``"<greeting>, <spec.name>!"``, owned by the Greeting (so deleting the
Greeting deletes it), repairs the ConfigMap when someone edits it, refuses to touch a ConfigMap of
that name it does not own, and reports in the Greeting's status. With ``--webhook-url`` it also
checks Greetings at the door: blanks trimmed and the greeting capitalised (a defaulter), a
multi-line or blank name refused, a name never changed (a validator). Run it against any
cluster::

    kubectl apply -f examples/operator/crd.yaml
    python examples/operator/greeter.py [--kubeconfig PATH] [--webhook-url https://HOST:PORT]
    kubectl apply -f examples/operator/greeting.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from etctl import log
from etctl.errors import AlreadyExists
from etctl.runtime import (
    CONFIGMAPS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    AdmissionRequest,
    CertRotation,
    Client,
    FieldError,
    GenerationChanged,
    KubeObject,
    Manager,
    ManagerOptions,
    ObjectView,
    Request,
    Resource,
    Result,
    WebhookClientConfig,
    WebhookServerOptions,
    invalid,
    objects,
    webhook_configurations,
)

GREETINGS = Resource("example.etctl.dev", "v1", "greetings", "Greeting")
CERTIFICATES = "greeter-webhook-cert"  # the Secret the webhook server's certificates are kept in


def configmap_name(greeting: ObjectView) -> str:
    """The ConfigMap a Greeting owns: deterministic, so every reconcile finds the same one."""
    return f"{objects.name(greeting)}-greeting"


def desired_configmap(greeting: ObjectView) -> KubeObject:
    """The ConfigMap ``greeting`` should have, from its spec alone."""
    spec = greeting.get("spec") or {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(greeting),
            "namespace": objects.namespace(greeting),
            "labels": {"example.etctl.dev/greeting": objects.name(greeting)},
            "ownerReferences": [objects.make_controller_ref(greeting, GREETINGS)],
        },
        "data": {"message": f"{spec.get('greeting', 'Hello')}, {spec.get('name', '')}!"},
    }


class Greeter:
    """The reconciler: reads the cache, converges the ConfigMap, writes status once."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.cache = manager.cache
        self.events = manager.recorder("greeter")

    async def __call__(self, request: Request) -> Result:
        """Converge one Greeting's ConfigMap and status; safe to run any number of times."""
        greeting = self.cache.get(GREETINGS, request.name, namespace=request.namespace)
        if greeting is None or objects.is_terminating(greeting):
            return Result()  # gone: the garbage collector deletes what it owned
        want = desired_configmap(greeting)
        have = self.cache.get(CONFIGMAPS, configmap_name(greeting), namespace=request.namespace)
        ready = "True", "Reconciled", f"ConfigMap {configmap_name(greeting)} holds the greeting"
        if have is None:
            try:
                await self.client.create(CONFIGMAPS, want)
            except AlreadyExists:
                return Result()  # the cache is behind a create of ours: its event comes next
            self.events.event(greeting, "Normal", "Created", f"created {configmap_name(greeting)}")
        elif not objects.is_controlled_by(have, greeting):
            # Never take over (or delete) what someone else created: say so and wait.
            message = (
                f"ConfigMap {configmap_name(greeting)} exists and is not owned by this Greeting"
            )
            ready = "False", "NameTaken", message
            self.events.event(greeting, "Warning", "NameTaken", message)
        elif have.get("data") != want["data"]:
            await self.client.patch(
                CONFIGMAPS, objects.name(have), {"data": want["data"]}, namespace=request.namespace
            )
        status = {
            "configMap": configmap_name(greeting),
            "observedGeneration": objects.generation(greeting),
            "conditions": [
                {"type": "Ready", "status": ready[0], "reason": ready[1], "message": ready[2]}
            ],
        }
        if greeting.get("status") != status:  # one status write per change, none when converged
            await self.client.patch_status(
                GREETINGS, request.name, {"status": status}, namespace=request.namespace
            )
        return Result()


class GreetingDefaults:
    """The defaulter: blanks around the name and greeting trimmed, the greeting capitalised."""

    async def default(self, obj: KubeObject, request: AdmissionRequest) -> KubeObject:
        """``obj`` with its spec tidied (the webhook answers with the patch to it)."""
        spec = obj.setdefault("spec", {})
        if isinstance(spec.get("name"), str):
            spec["name"] = spec["name"].strip()
        if isinstance(spec.get("greeting"), str):
            greeting = spec["greeting"].strip()
            spec["greeting"] = greeting[:1].upper() + greeting[1:]
        return obj


class GreetingRules:
    """The validator: a one-line name and greeting; a name never changes; long greetings warned."""

    def _check(self, obj: KubeObject) -> list[str]:
        spec = obj.get("spec") or {}
        errors = [
            FieldError(f"spec.{field}", "must be one line: the greeting is a one-line message")
            for field in ("name", "greeting")
            if "\n" in str(spec.get(field, ""))
        ]
        if not str(spec.get("name", "")).strip():
            errors.append(FieldError("spec.name", "Required value", "FieldValueRequired"))
        if errors:
            raise invalid("Greeting", objects.name(obj), errors, group=GREETINGS.group)
        greeting = str(spec.get("greeting", ""))
        if len(greeting) > 20:
            return [f"spec.greeting: {len(greeting)} characters is long for a greeting"]
        return []

    async def validate_create(self, obj: KubeObject, request: AdmissionRequest) -> list[str]:
        """Warnings about a new Greeting; raises to refuse it."""
        return self._check(obj)

    async def validate_update(
        self, old: KubeObject, new: KubeObject, request: AdmissionRequest
    ) -> list[str]:
        """A Greeting greets one name for good: greeting someone else is another Greeting."""
        if (old.get("spec") or {}).get("name") != (new.get("spec") or {}).get("name"):
            rule = FieldError(
                "spec.name", "may not change; create another Greeting", "FieldValueForbidden"
            )
            raise invalid("Greeting", objects.name(new), [rule], group=GREETINGS.group)
        return self._check(new)

    async def validate_delete(self, obj: KubeObject, request: AdmissionRequest) -> list[str]:
        """Deleting is always allowed (the webhook is not even called for it)."""
        return []


def setup(manager: Manager, *, webhooks: bool = False) -> None:
    """Wire the Greeter into ``manager``: Greetings (spec changes only) and their ConfigMaps.

    With ``webhooks``, also the defaulter and validator, served by ``manager.webhook_server``.
    """
    manager.controller("greeter", Greeter(manager)).for_(GREETINGS, GenerationChanged()).owns(
        CONFIGMAPS
    ).build()
    if webhooks:
        manager.webhook(GREETINGS).with_defaulter(GreetingDefaults()).with_validator(
            GreetingRules()
        ).build()


async def register(manager: Manager, url: str) -> None:
    """Install the webhook configurations pointing the API server at ``url`` (create or replace).

    The certificate rotation (see :func:`options`) injects its CA into them.
    """
    client = manager.client
    documents = webhook_configurations(
        manager.webhook_server.specs,
        WebhookClientConfig(url=url),
        mutating_name="greeter",
        validating_name="greeter",
    )
    for document in documents:
        kind = document["kind"]
        res = (
            VALIDATING_WEBHOOK_CONFIGURATIONS
            if "Validating" in kind
            else MUTATING_WEBHOOK_CONFIGURATIONS
        )
        try:
            await client.create(res, document)
        except AlreadyExists:
            current = await client.get(res, "greeter")
            document["metadata"]["resourceVersion"] = objects.resource_version(current)
            await client.replace(res, document)


def options(probes: str, url: str | None, namespace: str) -> ManagerOptions:
    """The manager's options: probes, and with ``url`` a webhook server on its port.

    The webhook server's certificate is the manager's to keep: a CA and a certificate for the
    URL's host, in the Secret :data:`CERTIFICATES` of ``namespace``, the CA injected into the
    ``greeter`` webhook configurations, both rotated before they expire.
    """
    if url is None:
        return ManagerOptions(health_probe_bind_address=probes)
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        ipaddress.ip_address(host)
        address = True
    except ValueError:
        address = False  # a DNS name
    return ManagerOptions(
        health_probe_bind_address=probes,
        webhook=WebhookServerOptions(
            port=parts.port or 443,
            cert_dir=Path(tempfile.gettempdir()) / f"greeter-{parts.port}-certs",
        ),
        cert_rotation=CertRotation(
            secret_name=CERTIFICATES,
            namespace=namespace,
            dns_names=() if address else (host,),
            ip_addresses=(host,) if address else (),
            validating_webhooks=("greeter",),
            mutating_webhooks=("greeter",),
        ),
    )


async def run(kubeconfig: str | None, options: ManagerOptions, url: str | None = None) -> None:
    """Connect, set up and run until SIGTERM or Ctrl-C (serving webhooks at ``url`` if given)."""
    async with Client.connect(kubeconfig) as client:
        manager = Manager(client, options=options)
        setup(manager, webhooks=url is not None)
        if url is not None:
            await register(manager, url)
        await manager.run(handle_signals=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``greeter.py [--kubeconfig PATH] [--probes ADDR] [--webhook-url URL]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="default: in-cluster, else $KUBECONFIG")
    parser.add_argument("--probes", default="0", help="serve /healthz and /readyz here")
    parser.add_argument("--webhook-url", help="serve the webhooks at https://HOST:PORT")
    parser.add_argument("--namespace", default="default", help="of the webhook certificate")
    args = parser.parse_args(argv)
    log.configure()
    opts = options(args.probes, args.webhook_url, args.namespace)
    asyncio.run(run(args.kubeconfig, opts, args.webhook_url))
    return 0


if __name__ == "__main__":
    sys.exit(main())
