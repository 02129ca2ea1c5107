"""Greeter: a complete operator on ``etctl.runtime`` alone (``docs/runtime.md`` walks through it).

For every ``Greeting`` (``example.etctl.dev/v1``, see ``crd.yaml``) it keeps a ConfigMap
``<name>-greeting`` holding ``"<greeting>, <spec.name>!"``, owned by the Greeting (so deleting the
Greeting deletes it), repairs the ConfigMap when someone edits it, refuses to touch a ConfigMap of
that name it does not own, and reports in the Greeting's status. Run it against any cluster::

    kubectl apply -f examples/operator/crd.yaml
    python examples/operator/greeter.py [--kubeconfig PATH]
    kubectl apply -f examples/operator/greeting.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from etctl import log
from etctl.runtime import (
    CONFIGMAPS,
    AlreadyExists,
    Client,
    GenerationChanged,
    KubeObject,
    Manager,
    ManagerOptions,
    ObjectView,
    Request,
    Resource,
    Result,
    objects,
)

GREETINGS = Resource("example.etctl.dev", "v1", "greetings", "Greeting")


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


def setup(manager: Manager) -> None:
    """Wire the Greeter into ``manager``: Greetings (spec changes only) and their ConfigMaps."""
    manager.controller("greeter", Greeter(manager)).for_(GREETINGS, GenerationChanged()).owns(
        CONFIGMAPS
    ).build()


async def run(kubeconfig: str | None, options: ManagerOptions) -> None:
    """Connect, set up and run until SIGTERM or Ctrl-C."""
    async with Client.connect(kubeconfig) as client:
        manager = Manager(client, options=options)
        setup(manager)
        await manager.run(handle_signals=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``greeter.py [--kubeconfig PATH] [--probes HOST:PORT]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="default: in-cluster, else $KUBECONFIG")
    parser.add_argument("--probes", default="0", help="serve /healthz and /readyz here")
    args = parser.parse_args(argv)
    log.configure()
    asyncio.run(run(args.kubeconfig, ManagerOptions(health_probe_bind_address=args.probes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
