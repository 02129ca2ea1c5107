"""The event recorder: core/v1 Events, aggregated like client-go's correlator."""

from __future__ import annotations

from etctl.runtime import EVENTS, PODS, FakeClock
from etctl.testing import ApiServer
from etctl.testing._kubelet.events import EventRecorder, Source


async def test_repeats_bump_the_count_of_one_event(server: ApiServer, clock: FakeClock) -> None:
    pod = server.storage.create(
        PODS,
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        namespace="default",
    )
    recorder = EventRecorder(server.storage, clock)
    source = Source("kubelet", "node-0")
    recorder.record(
        pod, "Warning", "BackOff", "again", source=source, field_path="spec.containers{c}"
    )
    await clock.advance(5)
    recorder.record(
        pod, "Warning", "BackOff", "again", source=source, field_path="spec.containers{c}"
    )
    recorder.record(pod, "Normal", "Started", "once", source=source)
    events = sorted(
        server.storage.list(EVENTS, namespace="default").items, key=lambda e: e["reason"]
    )
    backoff, started = events
    assert backoff["count"] == 2
    assert backoff["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert backoff["lastTimestamp"] == "2026-01-01T00:00:05Z"
    assert backoff["involvedObject"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": pod["metadata"]["uid"],
        "apiVersion": "v1",
        "resourceVersion": pod["metadata"]["resourceVersion"],
        "fieldPath": "spec.containers{c}",
    }
    assert backoff["source"] == {"component": "kubelet", "host": "node-0"}
    assert backoff["reportingComponent"] == "kubelet"
    assert backoff["reportingInstance"] == "node-0"
    assert backoff["metadata"]["name"].startswith("p.")
    assert started["count"] == 1


async def test_an_event_deleted_meanwhile_is_recreated(server: ApiServer, clock: FakeClock) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "uid": "u"}}
    recorder = EventRecorder(server.storage, clock)
    recorder.record(node, "Normal", "NodeReady", "ready", source=Source("kubelet", "n"))
    (first,) = server.storage.list(EVENTS, namespace="default").items
    server.storage.delete(EVENTS, first["metadata"]["name"], namespace="default")
    recorder.record(node, "Normal", "NodeReady", "ready", source=Source("kubelet", "n"))
    (second,) = server.storage.list(EVENTS, namespace="default").items
    assert second["count"] == 1
    assert "namespace" not in second["involvedObject"]
