"""The simulated kubelet: nodes, the scheduler and the pods they run, on one clock-driven loop.

A :class:`Kubelet` attaches to a running API server (anything offering the small
:class:`~etctl.testing._kubelet.host.KubeletHost` surface). It registers its nodes, binds pending
pods through the built-in scheduler, runs a :class:`~etctl.testing._kubelet.podworker.PodWorker`
per pod bound to one of its nodes (kept in a :class:`~etctl.testing._kubelet.podtable.PodTable`),
and serves ``pods/exec`` and ``pods/log``. What tests do inside a pod (exec, files, logs) comes
from :class:`~etctl.testing._kubelet.podaccess.PodAccess`.

How it stays deterministic: the store's change listener only *marks* work (pods to sync, a
scheduling pass to run) and wakes the loop; the loop does all the work synchronously in
:meth:`Kubelet.step`, then sleeps on the clock until the earliest timer (a container exit, a
back-off, a lease renewal, a delayed volume refresh) or the next wake-up. Under a FakeClock
nothing moves until the test advances time, and every transition happens when it is due.
(ConfigMap and Secret updates reach volumes inside the write that made them when the sync delay
is 0, so a test that updates a ConfigMap then execs ``cat`` sees the new content.)

A lost node (:meth:`Kubelet.fail_node`) freezes: its pods keep their last status (Ready turns
False, as the node lifecycle controller marks them), the ``unreachable`` taints are added, and
pods whose tolerations run out are deleted (taint eviction); they stay ``Terminating`` until the
node recovers, as on a real cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from etctl.errors import ApiError
from etctl.log import get_logger
from etctl.runtime import PODS, ObjectView, objects, wait_event
from etctl.testing._apiserver.store import Event
from etctl.testing._kubelet.admission import admit
from etctl.testing._kubelet.behaviour import Policy
from etctl.testing._kubelet.config import KubeletConfig
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.events import EventRecorder
from etctl.testing._kubelet.host import KubeletHost
from etctl.testing._kubelet.nodeloss import NodeLoss
from etctl.testing._kubelet.nodemanager import NodeManager
from etctl.testing._kubelet.nodes import SimNode
from etctl.testing._kubelet.podaccess import PodAccess
from etctl.testing._kubelet.podtable import PodTable
from etctl.testing._kubelet.podworker import InitResult, PodWorker, WorkerEnv
from etctl.testing._kubelet.routes import exec_handler, log_handler
from etctl.testing._kubelet.sandboxes import Sandboxes
from etctl.testing._kubelet.scheduler import Scheduler

__all__ = ["Kubelet"]

log = get_logger(__name__)

_PODS = ("", "pods")
_NODES = ("", "nodes")
_SOURCES = {("", "configmaps"): "configmap", ("", "secrets"): "secret"}


def _spec(obj: ObjectView) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


class Kubelet(PodAccess):
    """The simulated kubelet and scheduler of an API server.

    Args:
        host: the API server (started) to attach to.
        config: nodes and timings (one default node when None).
    """

    def __init__(self, host: KubeletHost, config: KubeletConfig | None = None) -> None:
        self.host = host
        self.config = config or KubeletConfig()
        self.storage = host.storage
        self.clock = host.clock
        self.nodes: dict[str, SimNode] = {
            c.name: SimNode(c, i, ip_prefix=self.config.node_ip_prefix)
            for i, c in enumerate(self.config.nodes)
        }
        self.recorder = EventRecorder(self.storage, self.clock)
        self.scheduler = Scheduler(
            self.storage, self.recorder, scheduler_names=self.config.scheduler_names
        )
        self.node_manager = NodeManager(
            self.storage,
            self.clock,
            self.recorder,
            self.nodes,
            lease_interval=self.config.lease_interval,
        )
        self.sandboxes = None
        self.policies: list[Policy] = []
        self.env = WorkerEnv(
            storage=self.storage,
            clock=self.clock,
            recorder=self.recorder,
            policies=self.policies,
            log_lines=self.config.log_lines,
            admit=self._admit,
            volumes_ready=self._volumes_ready,
            run_init=self._run_init,
            container_env=self._container_env,
        )
        self._pods = PodTable(self.storage.store)
        self._schedule = True
        self.node_loss = NodeLoss(self.storage, self.clock, self.recorder)
        self._wake = asyncio.Event()
        self._unsubscribe: Callable[[], None] | None = None
        self._task: asyncio.Task[Any] | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._task is not None

    @property
    def idle(self) -> bool:
        """True when nothing happens until the clock moves.

        No pod change or scheduling pass waits for the loop, and no pod, node or volume timer is
        due. A stopped kubelet is idle.
        """
        if self._task is None:
            return True
        if self._pods.marked or self._schedule:
            return False
        deadline = self.next_deadline()
        return deadline is None or deadline > self.clock.monotonic()

    def start(self) -> None:
        """Register the nodes, adopt pods already bound to them, serve exec/log, start the loop.

        Must run on the server's event loop, with the server started.
        """
        if self._task is not None:
            return
        self.sandboxes = Sandboxes(
            self.storage.store,
            self.clock,
            root=self.config.root,
            sync_delay=self.config.volume_sync_delay,
        )
        self.node_manager.register()
        self._unsubscribe = self.host.subscribe(self._observe)
        for pod in self.storage.list(PODS).items:
            self._track(pod)
        self.host.add_subresource("", "pods", "exec", exec_handler(self))
        self.host.add_subresource("", "pods", "log", log_handler(self))
        self._task = self.host.spawn(self._run(), name="kubelet")

    def stop(self) -> None:
        """Stop the loop, forget every pod and remove the sandboxes (objects stay as they are)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        for pod_uid in self._pods.uids:
            self._forget(pod_uid)
        if self.sandboxes is not None:
            self.sandboxes.close()

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            self.step()
            deadline = self.next_deadline()
            if deadline is None:
                await self._wake.wait()
                continue
            timeout = deadline - self.clock.monotonic()
            if timeout <= 0:
                await asyncio.sleep(0)
                continue
            await wait_event(self.clock, self._wake, timeout)

    # -- the step -------------------------------------------------------------------------------

    def step(self) -> None:
        """Do everything that is due now: scheduling, node upkeep, evictions, pod syncs.

        A failure in one part is logged and does not stop the others (or the kubelet): a bug
        simulating one pod must not take the server's task group down with it.
        """
        now = self.clock.monotonic()
        if self._schedule:
            self._schedule = False
            _guarded("scheduling pass", self.scheduler.schedule)
        _guarded("node upkeep", self.node_manager.upkeep)
        if self.sandboxes is not None:
            _guarded("volume refresh", self.sandboxes.due)
        _guarded("taint eviction", self.node_loss.due)
        for pod_uid in self._pods.take(now):
            if not _guarded("pod sync", partial(self._sync, pod_uid), pod_uid=pod_uid):
                self._pods.set_deadline(pod_uid, None)

    def next_deadline(self) -> float | None:
        """The earliest timer of any pod, node or delayed volume refresh."""
        timers = (
            self._pods.next_deadline(),
            self.node_manager.next_deadline(),
            self.node_loss.next_deadline(),
            self.sandboxes.next_deadline() if self.sandboxes is not None else None,
        )
        return min((t for t in timers if t is not None), default=None)

    def _sync(self, pod_uid: str) -> None:
        worker = self._pods.get(pod_uid)
        if worker is None or worker.node.failed:
            return
        pod = self.storage.store.get(_PODS, worker.key)
        if pod is None or objects.uid(pod) != pod_uid:
            self._forget(pod_uid)
            return
        self._pods.set_deadline(pod_uid, worker.sync(pod))
        if not worker.active:
            self._schedule = True

    # -- observing changes ----------------------------------------------------------------------

    def _observe(self, event: Event) -> None:
        if event.resource == _PODS:
            self._observe_pod(event)
        elif event.resource == _NODES:
            self._schedule = True
            self._wake.set()
        elif event.resource in _SOURCES:
            self._observe_source(_SOURCES[event.resource], event.object)

    def _observe_pod(self, event: Event) -> None:
        pod = event.object
        pod_uid = objects.uid(pod)
        if event.type == "DELETED":
            self._forget(pod_uid)
            self._schedule = True
            self._wake.set()
            return
        previous = event.previous
        if pod_uid in self._pods:
            if (
                previous is None
                or _spec(previous) != _spec(pod)
                or _watched(previous) != _watched(pod)
            ):
                self._pods.mark(pod_uid)
                self._wake.set()
                if self.sandboxes is not None and previous is not None:
                    self.sandboxes.pod_changed(pod)
            return
        if self._track(pod):
            return
        if previous is None or self.scheduler.serves(pod) or _spec(previous) != _spec(pod):
            self._schedule = True
            self._wake.set()

    def _observe_source(self, kind: str, obj: ObjectView) -> None:
        """A ConfigMap or Secret changed: refresh volumes, retry what was waiting for it."""
        metadata = objects.meta(obj)
        namespace = str(metadata.get("namespace") or "")
        name = str(metadata.get("name") or "")
        if self.sandboxes is None:
            return
        self.sandboxes.source_changed(kind, namespace, name)
        now = self.clock.monotonic()
        for worker in self._pods:
            if worker.namespace != namespace or not self.sandboxes.uses(worker, kind, name):
                continue
            for container in worker.all_containers():
                if container.blocked:
                    container.blocked = False
                    container.start_at = now
            self._pods.mark(worker.uid)
            self._wake.set()

    def _track(self, pod: ObjectView) -> bool:
        """Start a worker for a pod bound to one of our nodes; True when it is ours."""
        node = self.nodes.get(str(_spec(pod).get("nodeName") or ""))
        if node is None:
            return False
        pod_uid = objects.uid(pod)
        if pod_uid not in self._pods:
            self._pods.add(PodWorker(pod, node, self.env))
        self._pods.mark(pod_uid)
        self._wake.set()
        return True

    def _forget(self, pod_uid: str) -> None:
        self.node_loss.forget(pod_uid)
        if self._pods.remove(pod_uid) is not None and self.sandboxes is not None:
            self.sandboxes.remove(pod_uid)

    # -- what workers ask -----------------------------------------------------------------------

    def _admit(self, worker: PodWorker) -> tuple[str, str] | None:
        node = worker.node
        others = [w.spec for w in self._pods.on_node(node) if w.active and w is not worker]
        return admit(worker.spec, node.config, self.storage.store.get(_NODES, node.name), others)

    def _volumes_ready(self, worker: PodWorker) -> bool:
        return self.sandboxes is None or self.sandboxes.volumes_ready(worker)

    def _run_init(
        self, worker: PodWorker, container: ContainerRuntime, env: Mapping[str, str]
    ) -> InitResult | None:
        if self.sandboxes is None:
            return None
        return self.sandboxes.run_init(worker, container, env)

    def _container_env(self, worker: PodWorker, container: ContainerRuntime) -> dict[str, str]:
        return {} if self.sandboxes is None else self.sandboxes.container_env(worker, container)

    # -- public actions -------------------------------------------------------------------------

    def add_policy(self, policy: Policy) -> Callable[[], None]:
        """Register a behaviour policy (it wins over older ones); returns a remover.

        Policies decide the behaviour of container runs that start after registration.
        """
        self.policies.append(policy)

        def remove() -> None:
            if policy in self.policies:
                self.policies.remove(policy)

        return remove

    def sync(self, namespace: str, name: str) -> None:
        """Bring one pod up to date now (its status is written before this returns).

        Raises:
            LookupError: the pod is not on this kubelet.
        """
        worker = self._pods.require(namespace, name)
        self._sync(worker.uid)
        self._wake.set()

    def evict(self, namespace: str, name: str, *, message: str | None = None) -> None:
        """Evict a pod now (phase Failed, reason Evicted), as node-pressure eviction does.

        Raises:
            LookupError: the pod is not on this kubelet.
        """
        self._pods.require(namespace, name).evict(message)
        self.sync(namespace, name)

    def exit(
        self,
        namespace: str,
        name: str,
        code: int,
        *,
        container: str | None = None,
        reason: str | None = None,
        message: str = "",
    ) -> None:
        """Make a pod's running main containers (or one of them) exit now with ``code``.

        ``reason`` defaults to ``Completed`` (code 0) or ``Error``; ``message`` is the
        terminated state's message.

        Raises:
            LookupError: the pod is not on this kubelet, or no such container runs.
        """
        worker = self._pods.require(namespace, name)
        if worker.exit(code, container, reason=reason, message=message) == 0:
            which = f" {container}" if container else ""
            msg = f"no running container{which} in pod {namespace}/{name}"
            raise LookupError(msg)
        self.sync(namespace, name)

    # -- losing nodes ---------------------------------------------------------------------------

    def fail_node(self, name: str) -> None:
        """Lose a node: NotReady/Unknown, unreachable taints, pods frozen and marked unready."""
        if self.node_manager.fail(name):
            node = self.nodes[name]
            self.node_loss.lost(self._pods.on_node(node))
            self._wake.set()

    def recover_node(self, name: str) -> None:
        """Bring a lost node back: Ready again, taints removed, its pods resume."""
        if not self.node_manager.recover(name):
            return
        for worker in self._pods.on_node(self.nodes[name]):
            self.node_loss.forget(worker.uid)
            self._pods.mark(worker.uid)
        self._schedule = True
        self._wake.set()


def _guarded(what: str, step: Callable[[], object], **context: str) -> bool:
    """Run one part of a step; False (after logging) when it raised."""
    try:
        step()
    except ApiError as exc:
        log.warning("kubelet step failed", step=what, error=str(exc), **context)
        return False
    except Exception:
        log.exception("kubelet step failed", step=what, **context)
        return False
    return True


def _watched(pod: ObjectView) -> tuple[Any, ...]:
    """The metadata a pod worker reacts to (not resourceVersion or managedFields)."""
    metadata = objects.meta(pod)
    return (
        metadata.get("deletionTimestamp"),
        metadata.get("deletionGracePeriodSeconds"),
        metadata.get("annotations"),
        metadata.get("labels"),
    )
