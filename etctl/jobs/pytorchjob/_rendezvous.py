"""The rendezvous endpoint of an elastic PyTorchJob, and the Service that keeps it alive.

**What torchrun does.** With the ``c10d`` backend (the default), torchrun's rendezvous state lives
in a TCP store (``torch.distributed.TCPStore``) that one member's torchrun hosts, in its own
process, on the endpoint's port. Which member hosts it is decided once, when torchrun starts
(``c10d_rendezvous_backend._create_tcp_store``): the ``is_host`` option of ``--rdzv-conf`` if
given, else whether the endpoint's host name resolves to one of the machine's own addresses
(``_matches_machine_hostname``: ``localhost``, the machine's host name, or an IP address of the
name that is also one of the machine's). Every other member connects to it as a client. When the
host's process goes (its pod deleted, evicted, its node lost), the store goes with it and
everything it held: the rendezvous round, who joined, whether the rendezvous was closed. Each
other member's torchrun then fails on its next store call (its monitor loop asks the store every
few seconds how many nodes wait to join) with ``RendezvousConnectionError`` and exits non-zero;
with restartPolicy ``OnFailure`` (a PyTorchJob's default) the kubelet restarts its container in
place, and the new torchrun finds the store again at the endpoint, or hosts it.

**training-operator** points every member at ``<job>-worker-0:<port>``: worker-0's torchrun hosts
the store (its own host name matches). When worker-0 goes, every member restarts and waits for a
new pod named ``<job>-worker-0`` (training-operator recreates pods under their names), and until
it runs nobody can host. etctl replaces a failed worker under a *new* name (never reusing one), so
that name would never come back.

**etctl** points every member at ``<job>-rdzv:<port>``, a headless Service (no cluster IP, so the
name resolves to the selected pod's own IP, which the host recognises as one of its addresses)
that publishes not-ready addresses (the name resolves as soon as the pod has an IP, before any
readiness probe passes) and selects exactly one member, the *rendezvous host*, by its
``replica-index`` label:

* the host stays the one the Service selects while its pod lives (Pending or Running, not
  finished, not being deleted), so the store is not moved under running members;
* when it goes, the lowest-index *Running* member becomes the host: its torchrun restarts (the
  store went) and finds that the name now resolves to itself; the others restart and connect.
  Nobody waits for a replacement pod to be scheduled, which may stay Pending for long;
* with no member running, the lowest-index live member (at the start, ``<job>-worker-0``).

So the endpoint is a name every member resolves, the host included, that never dies with one
pod, and losing any member other than the host restarts no container: each survivor's torchrun
restarts its training processes and re-forms the group among the survivors (within
``minReplicas``), as torchrun is built to. Scale-in removes the highest indices, never
the host; a ScaleIn that names the host moves it, as its loss would.

With ``elasticPolicy.rdzvHost`` set, the endpoint is that host (an etcd server, a store of your
own) and no Service is made, as in training-operator. The port is ``rdzvPort``, else the Worker's
``pytorchjob-port`` (23456 by default).

Invariants: pure functions; the choice of host depends only on the observed pods and the
Service's current selector, so every reconcile of the same world chooses the same host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from etctl.common import REPLICA_INDEX, job_selector, replica_labels
from etctl.jobs.pytorchjob._api import PyTorchJob, PyTorchReplicaType
from etctl.jobs.pytorchjob._env import replica_port
from etctl.jobs.pytorchjob._names import rendezvous_service_name, worker_prefix
from etctl.runtime import KubeObject, ObjectView, objects, podview

__all__ = [
    "RENDEZVOUS_PORT_NAME",
    "choose_host",
    "endpoint",
    "owns_endpoint",
    "rendezvous_port",
    "rendezvous_service",
    "selected_index",
]

RENDEZVOUS_PORT_NAME = "rdzv"
"""The name of the rendezvous Service's port."""
_WORKER = PyTorchReplicaType.WORKER.value


def owns_endpoint(job: PyTorchJob) -> bool:
    """Whether etctl chooses the endpoint (an elastic job without ``rdzvHost``)."""
    policy = job.spec.elastic_policy
    return policy is not None and policy.rdzv_host is None


def rendezvous_port(job: PyTorchJob) -> int:
    """``rdzvPort``, else the Worker's ``pytorchjob-port`` (23456 when it declares none)."""
    policy = job.spec.elastic_policy
    if policy is not None and policy.rdzv_port is not None:
        return policy.rdzv_port
    return replica_port(job.spec.replicas(PyTorchReplicaType.WORKER))


def endpoint(job: PyTorchJob) -> str:
    """``PET_RDZV_ENDPOINT``: ``<rdzvHost or <job>-rdzv>:<port>``."""
    policy = job.spec.elastic_policy
    host = policy.rdzv_host if policy is not None and policy.rdzv_host else None
    return f"{host or rendezvous_service_name(job.metadata.name)}:{rendezvous_port(job)}"


def _index_of(name: str, prefix: str) -> int | None:
    suffix = name[len(prefix) :] if name.startswith(prefix) else ""
    return int(suffix) if suffix.isdigit() else None


def _live(pod: ObjectView) -> bool:
    return podview.phase(pod) not in ("Succeeded", "Failed") and not objects.is_terminating(pod)


def selected_index(service: ObjectView | None) -> int | None:
    """The worker index the rendezvous Service selects now (None: no Service, or another)."""
    if service is None:
        return None
    spec = service.get("spec")
    selector = spec.get("selector") if isinstance(spec, Mapping) else None
    value = selector.get(REPLICA_INDEX) if isinstance(selector, Mapping) else None
    return int(value) if isinstance(value, str) and value.isdigit() else None


def choose_host(
    job_name: str,
    workers: Sequence[ObjectView],
    targets: Sequence[str],
    current: int | None,
) -> int:
    """The index of the worker that hosts the rendezvous (see the module docstring).

    Args:
        job_name: the job's name (workers are ``<job>-worker-<index>``).
        workers: the job's worker pods (controlled by it).
        targets: the workers the job should have, by name (its recorded membership).
        current: the index the rendezvous Service selects now, if any.
    """
    prefix = worker_prefix(job_name)
    live: dict[int, ObjectView] = {}
    for pod in workers:
        index = _index_of(objects.name(pod), prefix)
        if index is not None and _live(pod):
            live[index] = pod
    if current is not None and current in live:
        return current
    running = sorted(i for i, pod in live.items() if podview.phase(pod) == "Running")
    if running:
        return running[0]
    if live:
        return min(live)
    indices = sorted(i for i in (_index_of(t, prefix) for t in targets) if i is not None)
    return indices[0] if indices else 0


def rendezvous_service(job: PyTorchJob, host: int, *, operator_name: str) -> KubeObject:
    """The headless Service ``<job>-rdzv`` selecting the worker of index ``host``."""
    name = job.metadata.name
    port = rendezvous_port(job)
    labels = job_selector(name, operator_name)
    selector = replica_labels(name, operator_name, _WORKER, host)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": rendezvous_service_name(name),
            "namespace": job.metadata.namespace,
            "labels": labels,
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector,
            "ports": [
                {"name": RENDEZVOUS_PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}
            ],
        },
    }
