"""A cluster named by a kubeconfig, reached the way tests reach the embedded server.

Tests that need only API-server semantics run on the embedded :class:`ApiServer` by default and on
a real cluster when ``ETCTL_TEST_KUBECONFIG`` names one (see :mod:`etctl.testing.pytest_plugin`).
:class:`RealCluster` is that cluster's side:

* a private event loop on a daemon thread with one :class:`~etctl.runtime.Client`, so code on any
  loop (a test's, or none) can make a request and wait for its answer: :meth:`RealCluster.call`
  blocks the caller, :meth:`RealCluster.acall` awaits it;
* :attr:`RealCluster.storage`, a :class:`RemoteStorage` with the synchronous verbs of the embedded
  server's :class:`~etctl.testing.Storage` that tests use to arrange and read state (``create``,
  ``get``, ``list``, ``update``, ``patch``, ``delete``), each one HTTP request to the cluster;
* namespaces of its own for each test (:meth:`RealCluster.create_namespace`, labelled
  :data:`TEST_LABEL`, ready once the cluster's own per-namespace objects are in, deleted by
  :meth:`RealCluster.delete_namespace` or at :meth:`close`);
* CRDs installed idempotently (:meth:`RealCluster.install_crds`: server-side apply, then wait
  until each is established and its resource served);
* :meth:`RealCluster.has_nodes`: whether a kubelet runs pods there (a node is ``Ready``).

Invariants: every request goes over the network to the cluster (nothing is answered locally);
every request has a timeout (the client's); :meth:`call` must not be made from the helper thread
itself (it would wait for itself), which it refuses.
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import contextlib
import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TypeVar

from etctl.errors import ApiError, NotFound
from etctl.runtime import (
    CONFIGMAPS,
    CRDS,
    NAMESPACES,
    NODES,
    SERVICEACCOUNTS,
    Client,
    ClientOptions,
    KubeObject,
    ObjectList,
    PatchType,
    Resource,
    objects,
)
from etctl.testing._loopthread import LoopThread

__all__ = ["TEST_LABEL", "RealCluster", "RemoteStorage"]

T = TypeVar("T")

TEST_LABEL = "etctl.io/test-namespace"
"""The label on every namespace a :class:`RealCluster` creates (value: the session's id)."""

FIELD_MANAGER = "etctl-tests"
"""The field manager of the CRDs the tests apply."""


class RemoteStorage:
    """The embedded server's synchronous storage verbs, as requests to a real cluster.

    Each call blocks its caller until the cluster answered (the request runs on the
    :class:`RealCluster`'s own loop), and raises the same :mod:`etctl.errors` classes as the
    embedded :class:`~etctl.testing.Storage`. Objects returned are fresh copies.
    """

    def __init__(self, cluster: RealCluster) -> None:
        self._cluster = cluster

    def get(self, resource: Resource, name: str, *, namespace: str = "") -> KubeObject:
        """One object."""
        return self._cluster.call(lambda c: c.get(resource, name, namespace=namespace or None))

    def list(
        self,
        resource: Resource,
        *,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        """Every selected object (every namespace when ``namespace`` is empty)."""
        return self._cluster.call(
            lambda c: c.list(
                resource,
                namespace=namespace or None,
                label_selector=label_selector,
                field_selector=field_selector,
            )
        )

    def create(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str = ""
    ) -> KubeObject:
        """Create an object; returns it as stored."""
        return self._cluster.call(lambda c: c.create(resource, obj, namespace=namespace or None))

    def update(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str = "",
        subresource: str = "",
    ) -> KubeObject:
        """Replace an object, or its ``status`` subresource."""
        if subresource == "status":
            return self._cluster.call(
                lambda c: c.replace_status(resource, obj, namespace=namespace or None)
            )
        if subresource:
            msg = f"replacing the {subresource} subresource is not supported here"
            raise ValueError(msg)
        return self._cluster.call(lambda c: c.replace(resource, obj, namespace=namespace or None))

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        patch_type: str,
        namespace: str = "",
        subresource: str = "",
        force: bool = False,
    ) -> KubeObject:
        """Patch an object or a subresource (``patch_type`` is the media type)."""
        return self._cluster.call(
            lambda c: c.patch(
                resource,
                name,
                patch,
                namespace=namespace or None,
                patch_type=PatchType(patch_type),
                subresource=subresource or None,
                force=force or None,
            )
        )

    def delete(
        self, resource: Resource, name: str, *, namespace: str = ""
    ) -> tuple[KubeObject, bool]:
        """Delete an object; returns what the cluster answered and whether it is gone.

        ``gone`` is False while the deletion waits (finalizers, a pod's grace period).
        """

        async def delete(client: Client) -> tuple[KubeObject, bool]:
            answer = await client.delete(resource, name, namespace=namespace or None)
            body: KubeObject = dict(answer or {})
            try:
                await client.get(resource, name, namespace=namespace or None)
            except NotFound:
                return body, True
            return body, False

        return self._cluster.call(delete)


class RealCluster:
    """A cluster named by a kubeconfig, with a client on a helper thread (see the module doc).

    Args:
        kubeconfig: the kubeconfig file (its current context).
        request_timeout: seconds per request of the helper client.
        ready_timeout: seconds to wait for a CRD to be served.
    """

    def __init__(
        self, kubeconfig: Path, *, request_timeout: float = 30.0, ready_timeout: float = 60.0
    ) -> None:
        self.kubeconfig = kubeconfig
        self.session = uuid.uuid4().hex[:8]
        """Names this run's namespaces (``etctl-<session>-<n>``) and labels them."""
        self.storage = RemoteStorage(self)
        self._request_timeout = request_timeout
        self._ready_timeout = ready_timeout
        self._helper = LoopThread("etctl-real-cluster", "the real cluster's client", self._connect)
        self._crds: dict[str, str] = {}
        self._nodes: bool | None = None
        self._namespaces: dict[str, None] = {}
        self._presets: tuple[tuple[Resource, str], ...] | None = None
        self._counter = 0
        self.namespaces_created = 0
        """How many namespaces this object created (and deleted, or will at close)."""

    # -- lifecycle

    def start(self, timeout: float = 30.0) -> RealCluster:
        """Start the helper thread and connect (no request is made yet).

        Raises:
            RuntimeError: the client could not be built (the cause is chained).
        """
        if not self._helper.started:
            self._helper.start(timeout, f"cannot connect to the cluster of {self.kubeconfig}")
        return self

    def close(self, timeout: float = 60.0) -> None:
        """Delete the namespaces still held, then stop the helper thread."""
        if not self._helper.running:
            return
        for name in list(self._namespaces):
            # Best effort at the end of a run: the label names whatever is left.
            with contextlib.suppress(ApiError, TimeoutError, concurrent.futures.TimeoutError):
                self.delete_namespace(name)
        self._helper.stop(timeout)

    def __enter__(self) -> RealCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> AbstractAsyncContextManager[Client]:
        options = ClientOptions(
            request_timeout=self._request_timeout,
            user_agent="etctl-tests",
            field_manager=FIELD_MANAGER,
        )
        return _connected(self.kubeconfig, options)

    # -- requests

    def call(self, fn: Callable[[Client], Awaitable[T]], *, timeout: float | None = None) -> T:
        """Run ``fn(client)`` on the helper loop and return its result (blocks the caller).

        Raises:
            RuntimeError: called from the helper thread, or the cluster object is not started.
        """
        future = self._submit(fn)
        return future.result(timeout if timeout is not None else 2 * self._request_timeout)

    async def acall(self, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run ``fn(client)`` on the helper loop; the caller's loop goes on meanwhile."""
        return await asyncio.wrap_future(self._submit(fn))

    def _submit(self, fn: Callable[[Client], Awaitable[T]]) -> concurrent.futures.Future[T]:
        self.start()
        return self._helper.submit(fn)

    # -- namespaces

    def create_namespace(self, prefix: str = "etctl") -> str:
        """Create a namespace of this run's own (see :meth:`acreate_namespace`); blocks."""
        name = self._next_name(prefix)
        self.call(lambda c: self._create_namespace(c, name))
        return name

    async def acreate_namespace(self, prefix: str = "etctl") -> str:
        """Create a namespace of this run's own, labelled :data:`TEST_LABEL`; returns its name.

        It returns once the objects the cluster puts in every new namespace are there (its
        ``default`` ServiceAccount, without which no pod is admitted, and the
        ``kube-root-ca.crt`` ConfigMap), when the cluster makes them at all.
        """
        name = self._next_name(prefix)
        await self.acall(lambda c: self._create_namespace(c, name))
        return name

    def _next_name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self.session}-{self._counter}"[:63].rstrip("-")

    async def _create_namespace(self, client: Client, name: str) -> None:
        body = {"metadata": {"name": name, "labels": {TEST_LABEL: self.session}}}
        await client.create(NAMESPACES, body)
        self._namespaces[name] = None
        self.namespaces_created += 1
        if self._presets is None:
            self._presets = await _presets(client)
        async with asyncio.timeout(self._ready_timeout):
            for res, preset in self._presets:
                while True:
                    try:
                        await client.get(res, preset, namespace=name)
                        break
                    except NotFound:
                        await asyncio.sleep(0.05)  # made by the cluster's controllers, soon

    def presets(self) -> builtins.list[tuple[Resource, str]]:
        """The objects the cluster puts in every namespace (known once one was created)."""
        return list(self._presets or ())

    def delete_namespace(self, name: str) -> None:
        """Start deleting a namespace (the cluster finishes it; nothing waits for that)."""
        self._namespaces.pop(name, None)
        with contextlib.suppress(NotFound):
            self.call(lambda c: c.delete(NAMESPACES, name))

    async def adelete_namespace(self, name: str) -> None:
        """:meth:`delete_namespace`, awaited on the caller's loop."""
        self._namespaces.pop(name, None)
        with contextlib.suppress(NotFound):
            await self.acall(lambda c: c.delete(NAMESPACES, name))

    # -- CRDs

    async def install_crds(self, manifests: Iterable[Mapping[str, Any]]) -> None:
        """Apply each CRD (server-side, forced) unless this run applied it unchanged already.

        Returns once every CRD is ``Established`` and its resource answers a list, so a test can
        create objects at once. A CRD another run installed with the same content is left as it
        is (the apply changes nothing).

        Raises:
            TimeoutError: a CRD was not served within ``ready_timeout`` seconds.
        """
        pending = []
        for manifest in manifests:
            name = str(manifest["metadata"]["name"])
            digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()
            if self._crds.get(name) == digest:
                continue
            await self.acall(_applier(name, manifest))
            pending.append((name, digest, manifest))
        for name, digest, manifest in pending:
            await self._wait_served(manifest)
            self._crds[name] = digest

    async def _wait_served(self, manifest: Mapping[str, Any]) -> None:
        spec = manifest["spec"]
        names = spec["names"]
        namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        served = [v["name"] for v in spec["versions"] if v.get("served", True)]
        resources = [
            Resource(spec["group"], version, names["plural"], names["kind"], namespaced=namespaced)
            for version in served
        ]
        name = str(manifest["metadata"]["name"])

        async def ready(client: Client) -> bool:
            if not _condition_true(await client.get(CRDS, name), "Established"):
                return False
            try:
                for res in resources:
                    await client.list(res, limit=1)
            except NotFound:
                return False
            return True

        # Polled: a CRD becoming served is a change on the cluster, with no event to wait on here.
        async with asyncio.timeout(self._ready_timeout):
            while not await self.acall(ready):  # noqa: ASYNC110
                await asyncio.sleep(0.05)

    # -- nodes

    def has_nodes(self) -> bool:
        """Whether at least one node is ``Ready`` (so a kubelet runs pods); asked once."""
        if self._nodes is None:
            listed = self.call(lambda c: c.list(NODES))
            self._nodes = any(_ready(node) for node in listed.items)
        return self._nodes

    def namespaces(self) -> builtins.list[str]:
        """The namespaces this object created and has not deleted yet."""
        return list(self._namespaces)


@contextlib.asynccontextmanager
async def _connected(kubeconfig: Path, options: ClientOptions) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(kubeconfig, options=options) as client:
        yield client


def _applier(name: str, manifest: Mapping[str, Any]) -> Callable[[Client], Awaitable[KubeObject]]:
    body = {**manifest, "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}

    async def apply(client: Client) -> KubeObject:
        return await client.patch(
            CRDS, name, body, patch_type=PatchType.APPLY, field_manager=FIELD_MANAGER, force=True
        )

    return apply


async def _presets(client: Client) -> tuple[tuple[Resource, str], ...]:
    """What the cluster's controllers put in every namespace, judged by ``default``'s."""
    found = []
    for res, name in ((SERVICEACCOUNTS, "default"), (CONFIGMAPS, "kube-root-ca.crt")):
        try:
            await client.get(res, name, namespace="default")
        except NotFound:
            continue
        found.append((res, name))
    return tuple(found)


def _condition_true(obj: KubeObject, kind: str) -> bool:
    """Whether ``obj``'s ``status.conditions`` hold ``kind`` with status ``True``."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _ready(node: KubeObject) -> bool:
    return _condition_true(node, "Ready") and not objects.is_terminating(node)
