"""Where a test runs: a fresh embedded API server, or a namespace of the real cluster under test.

A test written against a :class:`ClusterTarget` runs unchanged in both modes of the suite:

* by default, :func:`cluster_target` starts a fresh :class:`~etctl.testing.ApiServer` (with the
  options given, CRDs loaded) on the test's loop and creates the test's namespace on it;
  ``target.server`` is that server, with every hook (storage, faults, request log, clock);
* with ``ETCTL_TEST_KUBECONFIG`` set, it creates a namespace of the test's own on that cluster,
  installs the CRDs idempotently, and deletes the namespace when the block ends;
  ``target.server`` is None and ``target.hooks`` raises :class:`HooksUnavailable`.

Either way ``target.kubeconfig`` reaches the cluster, ``target.namespace`` is the test's
namespace, ``target.storage`` has the synchronous verbs tests arrange and read state with (the
embedded :class:`~etctl.testing.Storage`, or a :class:`RemoteStorage` whose every call is a
request to the cluster), and ``target.idle`` is what :func:`~etctl.testing.wait_idle` takes.

Options of the embedded server (``clock``, ``history_size``, ``kubelet``...) do not apply to a
real cluster; a test whose outcome depends on them needs the embedded server and is marked
``etctl_hooks`` (it is skipped on a real cluster). The real cluster is one per process
(:func:`real_cluster`), shared by every test and closed at exit.
"""

from __future__ import annotations

import atexit
import os
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from etctl.runtime import NAMESPACES, KubeObject, Resource
from etctl.testing._apiserver.server import ApiServer, CRDSource, crd_documents
from etctl.testing._realcluster import RealCluster

__all__ = [
    "ClusterTarget",
    "ENV_KUBECONFIG",
    "HooksUnavailable",
    "StorageVerbs",
    "TARGET_NAMESPACE",
    "close_real_cluster",
    "cluster_target",
    "real_cluster",
    "real_cluster_kubeconfig",
    "started_real_clusters",
]

ENV_KUBECONFIG = "ETCTL_TEST_KUBECONFIG"
"""Names a kubeconfig: run the suite against that cluster instead of the embedded server."""

TARGET_NAMESPACE = "etctl-test"
"""The test's namespace on a fresh embedded server (a real cluster's get unique names)."""


class HooksUnavailable(RuntimeError):
    """A test reached for the embedded server's hooks while running on a real cluster.

    Mark such a test ``etctl_hooks("...")`` so that it is skipped there, with the reason.
    """


class Listing(Protocol):
    """What a list answers: the objects, and the resourceVersion they were read at."""

    @property
    def items(self) -> Sequence[KubeObject]: ...

    @property
    def resource_version(self) -> str: ...


class StorageVerbs(Protocol):
    """The synchronous verbs of :class:`~etctl.testing.Storage` and :class:`RemoteStorage`."""

    def get(self, resource: Resource, name: str, *, namespace: str = "") -> KubeObject: ...

    def list(
        self,
        resource: Resource,
        *,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Listing: ...

    def create(
        self, resource: Resource, obj: Mapping[str, Any], *, namespace: str = ""
    ) -> KubeObject: ...

    def update(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str = "",
        subresource: str = "",
    ) -> KubeObject: ...

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
    ) -> KubeObject: ...

    def delete(
        self, resource: Resource, name: str, *, namespace: str = ""
    ) -> tuple[KubeObject, bool]: ...


def real_cluster_kubeconfig() -> Path | None:
    """The kubeconfig of the real cluster under test, if ``ETCTL_TEST_KUBECONFIG`` names one."""
    value = os.environ.get(ENV_KUBECONFIG, "").strip()
    return Path(value) if value else None


_shared: dict[Path, RealCluster] = {}


def real_cluster() -> RealCluster | None:
    """The real cluster under test (one per process, started on first use), or None."""
    kubeconfig = real_cluster_kubeconfig()
    if kubeconfig is None:
        return None
    found = _shared.get(kubeconfig)
    if found is None:
        found = _shared[kubeconfig] = RealCluster(kubeconfig).start()
    return found


def started_real_clusters() -> dict[Path, RealCluster]:
    """The real clusters :func:`real_cluster` has started so far, by kubeconfig."""
    return dict(_shared)


def close_real_cluster(kubeconfig: Path | None = None) -> None:
    """Delete the namespaces the tests left and disconnect (every cluster, by default)."""
    for path in [kubeconfig] if kubeconfig is not None else list(_shared):
        cluster = _shared.pop(path, None)
        if cluster is not None:
            cluster.close()


atexit.register(close_real_cluster)


@dataclass
class ClusterTarget:
    """The cluster a test runs on (see the module docstring).

    Attributes:
        kubeconfig: a kubeconfig for the cluster (the administrator's on the embedded server).
        namespace: the test's own namespace.
        server: the embedded server, or None on a real cluster.
        cluster: the real cluster, or None on the embedded server.
    """

    kubeconfig: Path
    namespace: str
    server: ApiServer | None = None
    cluster: RealCluster | None = None

    @property
    def embedded(self) -> bool:
        """True on the embedded server."""
        return self.server is not None

    @property
    def hooks(self) -> ApiServer:
        """The embedded server, for its hooks (faults, request log, clock, kubelet).

        Raises:
            HooksUnavailable: on a real cluster.
        """
        if self.server is None:
            msg = (
                "this needs the embedded API server's hooks; on a real cluster mark the test "
                "etctl_hooks(reason) so that it is skipped"
            )
            raise HooksUnavailable(msg)
        return self.server

    @property
    def storage(self) -> StorageVerbs:
        """Synchronous verbs on the cluster: the embedded storage, or requests to the cluster."""
        if self.server is not None:
            return self.server.storage
        assert self.cluster is not None
        return self.cluster.storage

    @property
    def idle(self) -> ApiServer | RealCluster:
        """What :func:`~etctl.testing.wait_idle` compares the operators' caches with."""
        if self.server is not None:
            return self.server
        assert self.cluster is not None
        return self.cluster

    @property
    def has_nodes(self) -> bool:
        """Whether a kubelet runs pods: the embedded server's, or a ``Ready`` node's."""
        if self.server is not None:
            return self.server.kubelet is not None
        assert self.cluster is not None
        return self.cluster.has_nodes()


@asynccontextmanager
async def cluster_target(
    directory: Path,
    *,
    crds: Iterable[CRDSource] = (),
    namespace: str = TARGET_NAMESPACE,
    **server_options: Any,
) -> AsyncIterator[ClusterTarget]:
    """A cluster_target for one test: a fresh embedded server, or a namespace of the real cluster.

    Args:
        directory: where to write the embedded server's kubeconfig (a test's ``tmp_path``).
        crds: CRD files, directories or mappings to serve (installed idempotently on a real
            cluster, where they stay: other runs may use them).
        namespace: the namespace to create on the embedded server (a real cluster's is
            ``<namespace>-<session>-<n>``, unique in the run).
        server_options: keyword arguments for :class:`ApiServer`, unused on a real cluster.
    """
    sources = list(crds)
    cluster = real_cluster()
    if cluster is None:
        async with ApiServer(crds=sources, **server_options) as server:
            if namespace not in ("default", "kube-system"):
                server.storage.create(NAMESPACES, {"metadata": {"name": namespace}})
            path = Path(directory) / f"kubeconfig-{uuid.uuid4().hex[:8]}"
            server.write_kubeconfig(path, namespace=namespace)
            yield ClusterTarget(path, namespace, server=server)
        return
    await cluster.install_crds(crd_documents(sources))
    name = await cluster.acreate_namespace(namespace)
    try:
        yield ClusterTarget(cluster.kubeconfig, name, cluster=cluster)
    finally:
        await cluster.adelete_namespace(name)
