"""Bytes per cached pod: etctl's informer cache against kubernetes_asyncio models and raw JSON.

Every variant starts from the same JSON (a realistic running pod of about 5 KiB, with
managedFields, two containers, env, probes, volumes including the per-pod service account token
volume, and a status with conditions and container statuses) and keeps every pod in memory keyed
by ``namespace/name``, as an informer cache does. Memory is what tracemalloc sees still allocated
once the cache is built (Python allocations only), divided by the number of pods:

* (a) etctl, as the cache keeps them: pods listed by a real :class:`Informer` (the default
  transform and compaction, the compactor's tables included) into its indexed store; and, to
  show what each step buys, stores of plain dicts decoded by the standard library, decoded by
  orjson as the client does (one string per distinct key), without managedFields (what an
  informer with ``compact=False`` keeps);
* (b) kubernetes_asyncio ``V1Pod`` models, deserialized through its ``ApiClient``;
* (c) the JSON bytes themselves.

Two populations: ``jobs`` (pods of 20 training jobs of 250 workers, which share their template, as
workers do) and ``distinct`` (every pod from its own template: the worst case for sharing). The CPU
figures are per pod, best of three runs: decoding, stripping, and compacting a pod seen for the
first time and an update of a cached pod (its status changed), as the informer does.

    .venv/bin/python bench/cache_memory.py [--pods N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import orjson
from kubernetes_asyncio.client import ApiClient

from _report import figure, header
from etctl.runtime import (
    PODS,
    KubeObject,
    ObjectList,
    RealClock,
    Resource,
    WatchEvent,
    strip_managed_fields,
)
from etctl.runtime._compact import Compactor
from etctl.runtime._informer import Informer
from etctl.runtime._store import Store

JOB_SIZE = 250


def _stamp(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1767225600 + seconds))


def _suffix(index: int, length: int = 5) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    out = []
    for _ in range(length):
        index, digit = divmod(index * 7919 + 13, len(alphabet))
        out.append(alphabet[digit])
    return "".join(out)


def _managed_fields(created: int, labels: dict[str, str]) -> list[dict[str, Any]]:
    container_fields: dict[str, Any] = {
        "f:args": {},
        "f:command": {},
        "f:env": {'k:{"name":"RANK"}': {".": {}, "f:name": {}, "f:valueFrom": {}}},
        "f:image": {},
        "f:imagePullPolicy": {},
        "f:name": {},
        "f:ports": {'k:{"containerPort":2222,"protocol":"TCP"}': {".": {}, "f:name": {}}},
        "f:resources": {"f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}},
        "f:volumeMounts": {'k:{"mountPath":"/data"}': {".": {}, "f:mountPath": {}}},
    }
    return [
        {
            "manager": "etctl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _stamp(created),
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:labels": {f"f:{k}": {} for k in labels},
                    "f:ownerReferences": {".": {}, 'k:{"uid":"owner"}': {}},
                },
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"worker"}': container_fields,
                        'k:{"name":"sidecar"}': {"f:image": {}, "f:name": {}, "f:args": {}},
                    },
                    "f:restartPolicy": {},
                    "f:volumes": {'k:{"name":"data"}': {".": {}, "f:emptyDir": {}}},
                },
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _stamp(created + 10),
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {
                        f'k:{{"type":"{t}"}}': {"f:lastTransitionTime": {}, "f:status": {}}
                        for t in ("ContainersReady", "Ready")
                    },
                    "f:containerStatuses": {},
                    "f:hostIP": {},
                    "f:phase": {},
                    "f:podIP": {},
                    "f:startTime": {},
                }
            },
        },
    ]


def sample_pod(index: int, *, template: int | None = None) -> dict[str, Any]:
    """A running training pod as the API server returns it (about 5 KiB of JSON).

    Pods of one template (a job's workers) share their containers' spec; every pod has its own
    name, uid, node, IPs, token volume, container ids and times. ``template`` defaults to the
    job of ``index`` (``index // 250``).
    """
    job_index = index // JOB_SIZE if template is None else template
    job = f"job-{job_index}"
    name = f"{job}-worker-{index % JOB_SIZE}"
    created = index * 3
    token_volume = f"kube-api-access-{_suffix(index)}"
    labels = {
        "app": "training",
        "job-name": job,
        "replica-type": "worker",
        "replica-index": str(index % JOB_SIZE),
        "controller-uid": f"11111111-2222-4333-8444-{job_index:012d}",
    }
    mounts = [
        {"name": "data", "mountPath": "/data"},
        {"name": "dshm", "mountPath": "/dev/shm"},
        {
            "name": token_volume,
            "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        },
    ]
    env: list[dict[str, Any]] = [
        {"name": f"TRAIN_VAR_{i}", "value": f"{job}-value-{i}"} for i in range(3)
    ]
    env += [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NCCL_DEBUG", "value": "INFO"},
    ]
    container = {
        "name": "worker",
        "image": f"registry.example.com/train/{job}:0.28.1-py3.11",
        "command": ["python", "/workspace/train.py"],
        "args": ["--epochs", "90", "--batch-size", "256"],
        "env": env,
        "ports": [{"containerPort": 2222, "name": "ssh", "protocol": "TCP"}],
        "resources": {
            "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
            "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
        },
        "readinessProbe": {
            "tcpSocket": {"port": 2222},
            "initialDelaySeconds": 5,
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "volumeMounts": mounts,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    sidecar = {
        **container,
        "name": "sidecar",
        "image": "registry.example.com/infra/log-shipper:2.4",
        "command": ["/bin/shipper"],
        "args": ["--path", "/data/logs"],
        "env": env[-2:],
        "ports": [],
        "resources": {"limits": {"cpu": "100m", "memory": "128Mi"}},
        "readinessProbe": None,
    }
    del sidecar["readinessProbe"]
    statuses = [
        {
            "name": c["name"],
            "ready": True,
            "restartCount": 0,
            "image": c["image"],
            "imageID": f"{c['image']}@sha256:{'ab' * 32}",
            "containerID": f"containerd://{index:032x}{index:032x}",
            "started": True,
            "state": {"running": {"startedAt": _stamp(created + 9)}},
            "lastState": {},
        }
        for c in (container, sidecar)
    ]
    pod_ip = f"10.1.{index // 250 % 256}.{index % 250}"
    host_ip = f"10.0.0.{index % 50 + 1}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "training",
            "uid": f"7c5a9a3e-0000-4000-8000-{index:012d}",
            "resourceVersion": str(100000 + index),
            "creationTimestamp": _stamp(created),
            "labels": labels,
            "annotations": {
                "kubectl.kubernetes.io/default-container": "worker",
                "etctl.io/restart-generation": "0",
            },
            "ownerReferences": [
                {
                    "apiVersion": "kai.alibabacloud.com/v1alpha1",
                    "kind": "TrainingJob",
                    "name": job,
                    "uid": labels["controller-uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": _managed_fields(created, labels),
        },
        "spec": {
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
                {
                    "name": token_volume,
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                        "defaultMode": 420,
                    },
                },
            ],
            "containers": [container, sidecar],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": f"gpu-node-{index % 50}",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{reason}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for reason in ("not-ready", "unreachable")
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": _stamp(created + offset),
                }
                for t, offset in (
                    ("PodReadyToStartContainers", 8),
                    ("Initialized", 1),
                    ("Ready", 10),
                    ("ContainersReady", 10),
                    ("PodScheduled", 0),
                )
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": _stamp(created + 1),
            "containerStatuses": statuses,
            "qosClass": "Burstable",
        },
    }


# -- what is measured


def measure(build: Callable[[list[bytes]], object], payloads: list[bytes]) -> float:
    """Bytes allocated and still held per pod once ``build`` returns its cache."""
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    kept = build(payloads)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    del kept
    return used / len(payloads)


def json_bytes(payloads: list[bytes]) -> object:
    return {f"training/{i}": bytes(memoryview(raw)) for i, raw in enumerate(payloads)}


def kubernetes_asyncio_models(payloads: list[bytes]) -> object:
    class Response:
        def __init__(self, data: bytes) -> None:
            self.data = data

    async def build() -> dict[str, object]:
        async with ApiClient() as api:
            cache: dict[str, object] = {}
            for raw in payloads:
                pod = api.deserialize(Response(raw), "V1Pod")
                cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
            return cache

    return asyncio.run(build())


def store_of(
    decode: Callable[[bytes], KubeObject],
    transform: Callable[[KubeObject], KubeObject] | None = None,
) -> Callable[[list[bytes]], object]:
    def build(payloads: list[bytes]) -> object:
        store = Store()
        for raw in payloads:
            obj = decode(raw)
            store.add(transform(obj) if transform else obj)
        return store

    return build


class _ListOnly:
    """A lister serving one list of pre-encoded pods, then a watch on which nothing happens."""

    def __init__(self, payloads: list[bytes]) -> None:
        self._payloads = payloads

    async def pages(self, res: Resource, **_: Any) -> AsyncIterator[ObjectList]:
        yield ObjectList([orjson.loads(raw) for raw in self._payloads], "1")

    def watch(
        self, res: Resource, **_: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        return _quiet_watch()


@asynccontextmanager
async def _quiet_watch() -> AsyncIterator[AsyncIterator[WatchEvent]]:
    async def nothing() -> AsyncIterator[WatchEvent]:
        await asyncio.Event().wait()  # the benchmark cancels the informer before anything comes
        nothing_at_all: list[WatchEvent] = []
        for event in nothing_at_all:
            yield event

    yield nothing()


async def _informer_cache(payloads: list[bytes]) -> Informer:
    informer = Informer(_ListOnly(payloads), PODS, clock=RealClock())
    async with asyncio.TaskGroup() as group:
        task = group.create_task(informer.run(), name="bench:informer")
        await informer.wait_for_sync(60)
        task.cancel()
    return informer


def etctl_informer(payloads: list[bytes]) -> object:
    """The cache as etctl keeps it: an Informer's store, default transform and compaction."""
    return asyncio.run(_informer_cache(payloads))


def cpu_per_pod(
    step: Callable[[], Callable[[bytes], object]], payloads: list[bytes], *, runs: int = 3
) -> float:
    """Microseconds per pod of ``step()`` applied to every payload, best of ``runs``.

    ``step`` makes a fresh pipeline for each run (a new compactor learns from scratch). The
    collector is paused: what it costs depends on the whole process, not on the step.
    """
    best = float("inf")
    for _ in range(runs):
        apply = step()
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            for raw in payloads:
                apply(raw)
            best = min(best, time.perf_counter() - started)
        finally:
            gc.enable()
    return best / len(payloads) * 1e6


def _decoding(decode: Callable[[bytes], object]) -> Callable[[], Callable[[bytes], object]]:
    return lambda: decode


def _stripping() -> Callable[[bytes], object]:
    return lambda raw: strip_managed_fields(orjson.loads(raw))


def _compacting() -> Callable[[bytes], object]:
    compactor = Compactor()
    return lambda raw: compactor(strip_managed_fields(orjson.loads(raw)))


def _updating(payloads: list[bytes]) -> Callable[[], Callable[[bytes], object]]:
    """Each pod compacted against its cached previous version (status changed since)."""

    def step() -> Callable[[bytes], object]:
        compactor = Compactor()
        cached = {raw: compactor(strip_managed_fields(orjson.loads(raw))) for raw in payloads}
        updates = {raw: _with_new_status(raw) for raw in payloads}

        def apply(raw: bytes) -> object:
            return compactor(strip_managed_fields(orjson.loads(updates[raw])), cached[raw])

        return apply

    return step


def _with_new_status(raw: bytes) -> bytes:
    pod = orjson.loads(raw)
    status = pod["status"]
    status["conditions"][2]["lastTransitionTime"] = "2026-02-01T00:00:00Z"
    for container in status["containerStatuses"]:
        container["restartCount"] = 1
        container["state"] = {"running": {"startedAt": "2026-02-01T00:00:00Z"}}
    pod["metadata"]["resourceVersion"] += "1"
    return orjson.dumps(pod)


def population(kind: str, count: int) -> list[bytes]:
    if kind == "jobs":
        pods = [sample_pod(i) for i in range(count)]
    else:
        pods = [sample_pod(i, template=i) for i in range(count)]
    return [json.dumps(pod, separators=(",", ":")).encode() for pod in pods]


def report(kind: str, payloads: list[bytes]) -> None:
    header(f"cache memory: {len(payloads)} pods, population {kind!r}")
    figure("JSON size per pod", sum(map(len, payloads)) / len(payloads), "bytes")
    models = measure(kubernetes_asyncio_models, payloads)
    figure("(b) kubernetes_asyncio V1Pod models", models, "bytes/pod")
    figure("(c) JSON bytes", measure(json_bytes, payloads), "bytes/pod")
    steps: list[tuple[str, Callable[[list[bytes]], object]]] = [
        ("(a) Store of dicts decoded by json", store_of(json.loads)),
        ("(a) Store of dicts decoded by orjson", store_of(orjson.loads)),
        (
            "(a)  + managedFields stripped (compact=False)",
            store_of(orjson.loads, strip_managed_fields),
        ),
        ("(a)  + Compactor = the Informer's cache", etctl_informer),
    ]
    for label, build in steps:
        used = measure(build, payloads)
        figure(label, used, "bytes/pod", compare=f"{models / used:.1f}x smaller than (b)")
    cpu: list[tuple[str, Callable[[], Callable[[bytes], object]]]] = [
        ("decode (json)", _decoding(json.loads)),
        ("decode (orjson)", _decoding(orjson.loads)),
        ("decode + strip managedFields", _stripping),
        ("decode + strip + compact, first sight", _compacting),
        ("decode + strip + compact, an update", _updating(payloads)),
    ]
    for label, step in cpu:
        figure(f"CPU: {label}", cpu_per_pod(step, payloads), "us/pod")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=5000)
    args = parser.parse_args()
    for kind in ("jobs", "distinct"):
        report(kind, population(kind, args.pods))


if __name__ == "__main__":
    main()
