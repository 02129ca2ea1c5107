"""The embedded API server: :class:`ApiServer` ties storage, HTTP, discovery and hooks together.

``async with ApiServer() as server:`` serves on ``127.0.0.1`` (a free port by default) until the
block ends. The server starts with the namespaces a cluster has (``default``, ``kube-system``,
``kube-public``, ``kube-node-lease``) and whatever CRDs it was given.

Beside HTTP it offers the hooks tests and in-process components need: :attr:`ApiServer.storage`
(the synchronous internal API), :meth:`ApiServer.subscribe` (committed changes, synchronously),
:meth:`ApiServer.spawn` (named background tasks owned by the server's task group),
:meth:`ApiServer.add_subresource` (serve ``pods/exec``, ``pods/log``...), :attr:`ApiServer.faults`
(fault injection and pause), :attr:`ApiServer.requests` (the request log) and an injectable
:class:`~etctl.runtime.Clock` behind every timestamp and timer.

Access control is opt-in: ``ApiServer(auth=AuthConfig())`` authenticates bearer tokens and
enforces RBAC (:mod:`~etctl.testing._apiserver.authorization`); identities come from
:meth:`ApiServer.add_token` and :meth:`ApiServer.service_account_token`, and the kubeconfig
:meth:`ApiServer.write_kubeconfig` writes by default is the administrator's (``system:masters``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from etctl.errors import AlreadyExists, ConfigError
from etctl.log import get_logger
from etctl.runtime import CRDS, NAMESPACES, Clock, KubeObject, RealClock, Resource
from etctl.testing._apiserver.authn import ADMIN_TOKEN, UserInfo
from etctl.testing._apiserver.authorization import AuthConfig, Guard, bootstrap_policy
from etctl.testing._apiserver.builtin import builtin_resources
from etctl.testing._apiserver.conversion import Converter
from etctl.testing._apiserver.crdcontroller import CRDController
from etctl.testing._apiserver.discovery import Discovery
from etctl.testing._apiserver.faults import Fault, FaultInjector
from etctl.testing._apiserver.history import History
from etctl.testing._apiserver.http import HttpApi, SubresourceHandler
from etctl.testing._apiserver.limits import DEFAULT_LIMITS, Limits
from etctl.testing._apiserver.openapi import OpenAPI
from etctl.testing._apiserver.propagation import INSTANT, WatchLatency
from etctl.testing._apiserver.registry import Registry
from etctl.testing._apiserver.requestlog import RequestLog
from etctl.testing._apiserver.reviews import review_handlers
from etctl.testing._apiserver.services import ClusterIPAllocator
from etctl.testing._apiserver.storage import Storage, WriteOptions
from etctl.testing._apiserver.store import Event, Store
from etctl.testing._apiserver.streaming import WatchSettings
from etctl.testing._apiserver.tls import ServingCertificate, serving_certificate
from etctl.testing._apiserver.versions import DEFAULT_VERSION, KubernetesVersion
from etctl.testing._apiserver.webhookclient import WebhookClient
from etctl.testing._apiserver.webhookdispatch import WebhookDispatcher
from etctl.testing._controllers import GarbageCollector, NamespaceController, WorkloadController
from etctl.testing._controllers.rootca import RootCAPublisher
from etctl.testing._kubelet import Kubelet, KubeletConfig

__all__ = ["ApiServer", "CRDSource", "crd_documents", "kubeconfig_document"]

log = get_logger(__name__)

CRDSource = str | Path | Mapping[str, Any]
"""A CRD to load: a YAML/JSON file, a directory of them, or the CRD as a mapping."""

DEFAULT_HISTORY = History()

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def kubeconfig_document(
    url: str,
    *,
    name: str = "etctl",
    namespace: str = "default",
    token: str = ADMIN_TOKEN,
    certificate_authority_data: str | None = None,
) -> dict[str, Any]:
    """A kubeconfig for ``url`` with a bearer token (the administrator's by default).

    ``certificate_authority_data`` (base64 PEM) is what an ``https://`` server is verified with.
    """
    cluster: dict[str, Any] = {"server": url}
    if certificate_authority_data is not None:
        cluster["certificate-authority-data"] = certificate_authority_data
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
        ],
        "current-context": name,
        "preferences": {},
    }


class ApiServer:
    """An in-process Kubernetes API server on loopback.

    Args:
        host: the address to bind (loopback by default).
        port: the port; 0 picks a free one.
        clock: the clock of every timestamp and timer (a FakeClock in tests).
        history: how long changes are remembered: each resource's watch cache (a watch from
            an older resourceVersion gets 410 Expired) and etcd's compaction (lists at an exact
            resourceVersion and continue tokens); a real server's by default.
        bookmark_interval: seconds between watch bookmarks (the real server: about 60).
        watch_timeout: seconds a watch lasts when the client sets no ``timeoutSeconds``.
        watch_buffer: events a watcher may fall behind before it is closed.
        request_log_size: requests the log keeps.
        crds: CRDs to serve from the start.
        service_cidr: the range Service cluster IPs come from.
        seed: seeds generated names and uids, for reproducible runs.
        kubelet: run the simulated kubelet and scheduler with this configuration (None: pods
            are stored but never scheduled or run); it is :attr:`kubelet` once started.
        controllers: run the garbage collector, the namespace controller, the Deployment
            and ReplicaSet controllers and the root CA publisher (a ``kube-root-ca.crt``
            ConfigMap in every namespace), as a cluster does; False leaves owner references,
            terminating namespaces and workloads alone and publishes nothing.
        limits: the size limits of request bodies, ConfigMap and Secret data and stored
            objects (a real cluster's by default; tests may lower them).
        auth: authenticate bearer tokens and enforce RBAC with these settings (None: every
            request is served, whoever sends it); :attr:`guard` once set. Such a server also
            answers TokenReviews and SubjectAccessReviews from them.
        tls: serve HTTPS with a certificate made at start (:attr:`certificate`), which the
            kubeconfigs the server writes carry; kubectl sends tokens only over TLS.
        kubernetes_version: the release it models (``1.24`` to ``1.32``): what ``/version``
            says and, where releases differ in ways a client sees, how it behaves
            (:mod:`~etctl.testing._apiserver.versions`: a release before 1.27 drops pod
            ``schedulingGates``).
        watch_latency: how late watch events arrive after their commit, as from a real
            server's watch cache (:class:`~etctl.testing.WatchLatency`; ``.realistic()`` for
            benchmarks and tests where timing matters); during the commit by default.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        history: History = DEFAULT_HISTORY,
        bookmark_interval: float = 60.0,
        watch_timeout: float = 1800.0,
        watch_buffer: int = 1000,
        request_log_size: int = 10_000,
        crds: Iterable[CRDSource] = (),
        service_cidr: str = "10.96.0.0/12",
        seed: int | None = None,
        kubelet: KubeletConfig | None = None,
        controllers: bool = True,
        limits: Limits = DEFAULT_LIMITS,
        auth: AuthConfig | None = None,
        tls: bool = False,
        watch_latency: WatchLatency = INSTANT,
        kubernetes_version: str = str(DEFAULT_VERSION),
    ) -> None:
        self.kubernetes_version = KubernetesVersion.parse(kubernetes_version)
        self.host = host
        self._tls = tls
        self.certificate: ServingCertificate | None = None
        self.limits = limits
        self.port = port
        self.clock: Clock = clock or RealClock()
        self.registry = Registry()
        self.store = Store(
            history=history,
            clock=self.clock,
            max_object_bytes=limits.max_object_bytes,
            latency=watch_latency,
        )
        self.storage = Storage(
            registry=self.registry, store=self.store, clock=self.clock, seed=seed
        )
        self.faults = FaultInjector()
        self.requests = RequestLog(request_log_size)
        allocator = ClusterIPAllocator(service_cidr)
        gates = self.kubernetes_version.has("PodSchedulingReadiness")
        for info in builtin_resources(allocator, limits=limits, scheduling_gates=gates):
            self.registry.register(info)
        self.store.subscribe(allocator.observe)
        self.store.subscribe(CRDController(self.storage).observe)
        self.http = HttpApi(
            storage=self.storage,
            discovery=Discovery(self.registry, lambda: f"{self.host}:{self.port}"),
            openapi=OpenAPI(
                self.registry, git_version=self.kubernetes_version.document()["gitVersion"]
            ),
            faults=self.faults,
            requests=self.requests,
            clock=self.clock,
            watch=WatchSettings(bookmark_interval, watch_timeout, watch_buffer),
            max_request_body_bytes=limits.max_request_body_bytes,
            version_document=self.kubernetes_version.document(),
        )
        self.webhook_client = WebhookClient(self.store, self.clock)
        self.storage.converter = Converter(self.store, self.webhook_client)
        self.webhooks = self.http.webhooks = WebhookDispatcher(
            self.store, self.webhook_client, self.storage.at_version
        )
        self._crds = list(crds)
        self._kubelet_config = kubelet
        self.kubelet: Kubelet | None = None
        self.controllers: list[GarbageCollector | NamespaceController | WorkloadController] = (
            [
                GarbageCollector(self.storage),
                NamespaceController(self.storage),
                WorkloadController(self.storage),
            ]
            if controllers
            else []
        )
        self._runner: web.AppRunner | None = None
        self._group: asyncio.TaskGroup | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._root_ca: RootCAPublisher | None = None
        if controllers:
            self._root_ca = RootCAPublisher(self.storage, self._ca_bundle)
            self.store.subscribe(self._root_ca.observe)
        for name in INITIAL_NAMESPACES:
            self.storage.create(NAMESPACES, {"metadata": {"name": name}})
        self.guard: Guard | None = None
        if auth is not None:
            self.guard = self.http.guard = Guard(self.store, auth)
            self.http.reviews.update(review_handlers(self.guard))
            if auth.bootstrap_policy:
                for obj in bootstrap_policy():
                    self.apply_object(_RBAC_KINDS[obj["kind"]], obj)

    def _ca_bundle(self) -> str:
        return self.certificate.ca_pem.decode() if self.certificate is not None else ""

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http(s)://127.0.0.1:<port>`` (valid once started)."""
        scheme = "https" if self._tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._runner is not None

    async def start(self) -> None:
        """Load the CRDs given at construction and start serving."""
        if self._runner is not None:
            return
        self.load_crds(*self._crds)
        group = asyncio.TaskGroup()
        await group.__aenter__()
        self._group = group
        runner = web.AppRunner(
            self.http.application(),
            handler_cancellation=True,
            access_log=None,
            shutdown_timeout=1.0,
        )
        await runner.setup()
        if self._tls and self.certificate is None:
            self.certificate = serving_certificate(self.host)
            if self._root_ca is not None:
                self._root_ca.refresh()
        site = web.TCPSite(
            runner,
            self.host,
            self.port,
            reuse_address=True,
            ssl_context=self.certificate.context if self.certificate is not None else None,
        )
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            await group.__aexit__(None, None, None)
            self._group = None
            raise
        self._runner = runner
        self.store.begin_serving()
        address = runner.addresses[0]
        self.port = int(address[1])
        for controller in self.controllers:
            controller.start(self)
        if self._kubelet_config is not None:
            self.kubelet = Kubelet(self, self._kubelet_config)
            self.kubelet.start()
        log.debug("embedded api server listening", url=self.url)

    async def stop(self) -> None:
        """End every watch, stop serving and cancel the background tasks."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        if self.kubelet is not None:
            self.kubelet.stop()
        for controller in self.controllers:
            controller.stop()
        self.faults.resume()
        self.store.close_sinks(reason="server stopped")
        await runner.cleanup()
        await self.webhook_client.close()
        for task in self._tasks:
            task.cancel()
        group, self._group = self._group, None
        if group is not None:
            await group.__aexit__(None, None, None)
        self._tasks.clear()

    async def __aenter__(self) -> ApiServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- hooks ----------------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run ``coro`` as a named task of the server's task group (cancelled on stop).

        Raises:
            RuntimeError: the server is not running.
        """
        if self._group is None:
            coro.close()
            msg = "the server is not running"
            raise RuntimeError(msg)
        task = self._group.create_task(coro, name=name)
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)
        return task

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener`` synchronously with every committed change; returns an unsubscriber.

        A listener may write through :attr:`storage`; its writes are delivered to every listener
        after the event being handled.
        """
        return self.store.subscribe(listener)

    def add_subresource(
        self, group: str, plural: str, subresource: str, handler: SubresourceHandler
    ) -> None:
        """Serve ``<plural>/<name>/<subresource>`` of a resource with ``handler`` (any method)."""
        self.http.add_subresource(group, plural, subresource, handler)

    def inject(self, fault: Fault) -> Fault:
        """Add a fault (shorthand for ``server.faults.add``)."""
        return self.faults.add(fault)

    def hold_watch_events(self, resource: Resource) -> None:
        """Keep ``resource``'s watch events from every watcher until :meth:`release_watch_events`.

        Writes proceed and their answers are sent; only the watches lag, as a busy watch cache
        of that resource would (a test forces an order of events with it).
        """
        self.store.dispatcher.hold((resource.group, resource.plural))

    def release_watch_events(self, resource: Resource) -> None:
        """Let ``resource``'s held watch events go, in order."""
        self.store.dispatcher.release((resource.group, resource.plural))

    def pause(self) -> None:
        """Hold every request until :meth:`resume`."""
        self.faults.pause()

    def resume(self) -> None:
        """Release held requests."""
        self.faults.resume()

    # -- configuration --------------------------------------------------------------------------

    def kubeconfig(self, *, namespace: str = "default", token: str = ADMIN_TOKEN) -> dict[str, Any]:
        """A kubeconfig document for this server (as the administrator unless ``token``)."""
        return kubeconfig_document(
            self.url,
            namespace=namespace,
            token=token,
            certificate_authority_data=self.certificate.ca_data if self.certificate else None,
        )

    def write_kubeconfig(
        self, path: str | Path, *, namespace: str = "default", token: str = ADMIN_TOKEN
    ) -> Path:
        """Write a kubeconfig for this server (kubectl and kubernetes_asyncio accept it).

        Args:
            path: where to write it.
            namespace: the context's namespace.
            token: the bearer token (the administrator's, in ``system:masters``, by default).
        """
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        document = self.kubeconfig(namespace=namespace, token=token)
        target.write_text(yaml.safe_dump(document, sort_keys=False))
        return target

    # -- identities (they matter once the server enforces RBAC) ---------------------------------

    def _authenticator(self) -> Guard:
        if self.guard is None:
            msg = "the server does not authenticate: start it with auth=AuthConfig()"
            raise ConfigError(msg)
        return self.guard

    def add_token(
        self, token: str, *, user: str, groups: Iterable[str] = (), uid: str = ""
    ) -> UserInfo:
        """Accept ``token`` as ``user`` in ``groups`` (plus ``system:authenticated``).

        Raises:
            etctl.errors.ConfigError: the server was started without ``auth``.
            ValueError: the token is empty or issued already.
        """
        guard = self._authenticator()
        return guard.authenticator.add_token(token, user=user, groups=groups, uid=uid)

    def service_account_token(self, namespace: str, name: str) -> str:
        """A token of ServiceAccount ``namespace/name`` (which must exist), bound to its uid.

        It authenticates as ``system:serviceaccount:<namespace>:<name>`` in
        ``system:serviceaccounts``, ``system:serviceaccounts:<namespace>`` and
        ``system:authenticated``, until the ServiceAccount is deleted.

        Raises:
            etctl.errors.ConfigError: the server was started without ``auth``.
            LookupError: the ServiceAccount does not exist.
        """
        return self._authenticator().authenticator.service_account_token(namespace, name)

    def write_service_account_kubeconfig(
        self, path: str | Path, *, namespace: str, name: str
    ) -> Path:
        """Write a kubeconfig that authenticates as ServiceAccount ``namespace/name``.

        Its context's namespace is the ServiceAccount's, as in the account's own pods.
        """
        token = self.service_account_token(namespace, name)
        return self.write_kubeconfig(path, namespace=namespace, token=token)

    def load_crds(self, *sources: CRDSource) -> list[KubeObject]:
        """Create (or update) CRDs from files, directories or mappings; returns them as stored.

        Their resources are served as soon as this returns.

        Raises:
            etctl.errors.ConfigError: a file holds something other than CRDs, or does not parse.
            etctl.errors.Invalid: a CRD is invalid (a non-structural schema, say).
        """
        return [self.apply_object(CRDS, doc) for doc in crd_documents(sources)]

    def apply_object(self, resource: Resource, obj: Mapping[str, Any]) -> KubeObject:
        """Create ``obj``, or replace the existing object of that name (keeping its status)."""
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        try:
            return self.storage.create(resource, obj, namespace=namespace)
        except AlreadyExists:
            current = self.storage.get(resource, str(meta.get("name")), namespace=namespace)
            updated = {
                **obj,
                "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]},
            }
            return self.storage.update(
                resource, updated, namespace=namespace, options=WriteOptions()
            )


_RBAC_KINDS = {
    "ClusterRole": Resource(
        "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
    ),
    "ClusterRoleBinding": Resource(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        namespaced=False,
    ),
}


def crd_documents(sources: Iterable[CRDSource]) -> list[Mapping[str, Any]]:
    """The CRD manifests of files, directories (their YAML and JSON files) and mappings.

    Raises:
        ConfigError: a file cannot be read, or holds something other than a CRD.
    """
    docs: list[Mapping[str, Any]] = []
    for source in sources:
        if isinstance(source, Mapping):
            docs.append(source)
            continue
        path = Path(source)
        files = (
            sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
            if path.is_dir()
            else [path]
        )
        for file in files:
            try:
                found = [d for d in yaml.safe_load_all(file.read_text()) if d]
            except (OSError, yaml.YAMLError) as exc:
                msg = f"cannot read CRDs from {file}: {exc}"
                raise ConfigError(msg) from exc
            for doc in found:
                if not isinstance(doc, Mapping) or doc.get("kind") != "CustomResourceDefinition":
                    kind = doc.get("kind") if isinstance(doc, Mapping) else type(doc).__name__
                    msg = f"{file} holds a {kind}, not a CustomResourceDefinition"
                    raise ConfigError(msg)
                docs.append(doc)
    return docs
