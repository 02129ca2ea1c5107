"""The event recorder and its correlator, in virtual time, against an in-memory sink."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from etctl.errors import AlreadyExists, Forbidden, Invalid, NotFound, TransportError
from etctl.runtime import FakeClock, KubeObject
from etctl.runtime._recorder import (
    MAX_MESSAGE_LENGTH,
    CorrelatorOptions,
    EventRecorder,
    EventSink,
)
from tests.runtime.scripted import InstantClock

POD: KubeObject = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "job-worker-0", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}


class MemorySink:
    """Stores events like the API server would, with scriptable failures."""

    def __init__(self) -> None:
        self.events: dict[str, KubeObject] = {}
        self.calls: list[tuple[str, str]] = []
        self.failures: list[Exception] = []
        self._rv = 0

    def _fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    async def create(self, event: KubeObject) -> KubeObject:
        name = event["metadata"]["name"]
        self.calls.append(("create", name))
        self._fail()
        assert "resourceVersion" not in event["metadata"]
        if name in self.events:
            raise AlreadyExists(f'events "{name}" already exists', reason="AlreadyExists")
        self._rv += 1
        stored = {**event, "metadata": {**event["metadata"], "resourceVersion": str(self._rv)}}
        self.events[name] = stored
        return stored

    async def patch(self, event: KubeObject, patch: Mapping[str, Any]) -> KubeObject:
        name = event["metadata"]["name"]
        self.calls.append(("patch", name))
        self._fail()
        if name not in self.events:
            raise NotFound(f'events "{name}" not found', reason="NotFound")
        self._rv += 1
        stored = {**self.events[name], **patch}
        stored["metadata"] = {**stored["metadata"], "resourceVersion": str(self._rv)}
        self.events[name] = stored
        return stored

    def only(self) -> KubeObject:
        assert len(self.events) == 1, self.events
        return next(iter(self.events.values()))


@asynccontextmanager
async def running(recorder: EventRecorder) -> AsyncIterator[None]:
    async with asyncio.TaskGroup() as group:
        task = group.create_task(recorder.run(), name="event-recorder")
        try:
            yield
        finally:
            task.cancel()


def recorder_for(sink: EventSink, clock: FakeClock, **kwargs: Any) -> EventRecorder:
    return EventRecorder(
        sink, component="trainingjob-controller", instance="op-0", clock=clock, **kwargs
    )


def test_the_sink_protocol_is_satisfied() -> None:
    assert isinstance(MemorySink(), EventSink)


async def test_an_event_as_client_go_writes_it() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        recorder.event(POD, "Warning", "FailedCreate", "quota exceeded")
        await recorder.flush()
    event = sink.only()
    name = event["metadata"]["name"]
    assert name.startswith("job-worker-0.")
    assert int(name.split(".")[1], 16) == int(clock.now().timestamp() * 1e9)
    assert event["metadata"]["namespace"] == "ns"
    assert event["involvedObject"] == {
        "kind": "Pod",
        "namespace": "ns",
        "name": "job-worker-0",
        "uid": "u-1",
        "apiVersion": "v1",
        "resourceVersion": "7",
    }
    assert event["source"] == {"component": "trainingjob-controller", "host": "op-0"}
    assert event["reportingComponent"] == "trainingjob-controller"
    assert event["reportingInstance"] == "op-0"
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "FailedCreate",
        "quota exceeded",
    )
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["count"] == 1


async def test_identical_events_become_count_patches() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        recorder.event(POD, "Normal", "Scaled", "scaled to 4")
        await recorder.flush()
        await clock.advance(30)
        recorder.event(POD, "Normal", "Scaled", "scaled to 4")
        recorder.event(POD, "Normal", "Scaled", "scaled to 4")
        await recorder.flush()
    event = sink.only()
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-01-01T00:00:30Z"
    assert [c[0] for c in sink.calls] == ["create", "patch", "patch"]


async def test_ten_similar_events_are_aggregated() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        for i in range(12):
            recorder.event(POD, "Warning", "BackOff", f"restart {i}")
            await clock.advance(50)  # 550 s in all: within the 600 s window between events
        await recorder.flush()
        messages = sorted(e["message"] for e in sink.events.values())
        assert len(sink.events) == 10  # nine individual events and one aggregate
        combined = [e for e in sink.events.values() if e["message"].startswith("(combined")]
        assert combined[0]["message"] == "(combined from similar events): restart 11"
        assert combined[0]["count"] == 3  # the 10th, 11th and 12th events
        assert "restart 8" in messages
        # After a quiet period longer than the window, messages are new again.
        await clock.advance(601)
        recorder.event(POD, "Warning", "BackOff", "restart 12")
        await recorder.flush()
    assert any(e["message"] == "restart 12" for e in sink.events.values())


async def test_spam_filter_lets_25_through_then_one_per_five_minutes() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        for _ in range(1000):
            recorder.event(POD, "Warning", "Unhealthy", "probe failed")
            await recorder.flush()
        event = sink.only()
        assert len(sink.calls) == 25  # one create, 24 count patches; 975 throttled
        assert event["count"] == 25
        await clock.advance(300)
        recorder.event(POD, "Warning", "Unhealthy", "probe failed")
        await recorder.flush()
        # The throttled events were still counted, so the next patch carries the true count.
        assert sink.only()["count"] == 1001
        assert len(sink.calls) == 26
        recorder.event(POD, "Warning", "Unhealthy", "probe failed")
        await recorder.flush()
        assert len(sink.calls) == 26


async def test_distinct_objects_have_separate_spam_budgets() -> None:
    sink, clock = MemorySink(), FakeClock()
    # client-go's key (source and object): 25 per object whatever the reason.
    recorder = recorder_for(sink, clock, options=CorrelatorOptions(spam_by_reason=False))
    other = {**POD, "metadata": {**POD["metadata"], "name": "job-worker-1", "uid": "u-2"}}
    async with running(recorder):
        for i in range(30):
            recorder.event(POD, "Normal", f"Reason{i}", "m")
            recorder.event(other, "Normal", f"Reason{i}", "m")
        await recorder.flush()
    assert len(sink.events) == 50


async def test_a_flood_of_one_reason_does_not_silence_another() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        for i in range(100):
            recorder.event(POD, "Normal", "SuccessfulCreatePod", f"Created pod: job-worker-{i}")
        recorder.event(POD, "Normal", "TrainingJobSucceeded", "TrainingJob job succeeded.")
        await recorder.flush()
    reasons = [e["reason"] for e in sink.events.values()]
    assert "TrainingJobSucceeded" in reasons
    # The flood itself is still throttled: 25 sends (creates and aggregate patches) at most.
    assert (
        sum(
            1
            for _, name in sink.calls
            if name in {n for n, e in sink.events.items() if e["reason"] == "SuccessfulCreatePod"}
        )
        == 25
    )


async def test_recording_never_blocks_and_drops_beyond_the_queue() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock, queue_size=5)
    for i in range(8):  # nothing drains the queue: run() is not started
        recorder.event(POD, "Normal", "R", f"m{i}")
    assert recorder.pending == 5
    assert recorder.dropped == 3
    recorder.event(POD, "Critical", "R", "m")  # type: ignore[arg-type]
    assert recorder.dropped == 4
    recorder.event({"metadata": "not a mapping"}, "Normal", "R", "m")
    assert recorder.dropped == 5


async def test_transport_errors_are_retried_ten_seconds_apart_with_a_random_first_delay() -> None:
    sink, clock = MemorySink(), InstantClock()
    sink.failures = [TransportError("refused")] * 3
    recorder = recorder_for(sink, clock, rng=random.Random(7))
    expected_first = 10.0 * random.Random(7).random()
    async with running(recorder):
        recorder.event(POD, "Normal", "Created", "created pod")
        await recorder.flush()
    assert clock.slept == [expected_first, 10.0, 10.0]
    assert len(sink.calls) == 4
    assert sink.only()["reason"] == "Created"


async def test_writes_give_up_after_twelve_tries() -> None:
    sink, clock = MemorySink(), InstantClock()
    sink.failures = [TransportError("refused")] * 12
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        recorder.event(POD, "Normal", "Lost", "never written")
        recorder.event(POD, "Normal", "Kept", "written")
        await recorder.flush()
    assert len(clock.slept) == 11
    assert [e["reason"] for e in sink.events.values()] == ["Kept"]


async def test_api_rejections_are_not_retried() -> None:
    sink, clock = MemorySink(), InstantClock()
    terminating = Forbidden(
        "unable to create new content in namespace ns because it is being terminated",
        reason="Forbidden",
        details={
            "causes": [{"reason": "NamespaceTerminating", "message": "namespace ns is terminating"}]
        },
    )
    invalid = Invalid("Event is invalid", reason="Invalid")
    sink.failures = [AlreadyExists("exists", reason="AlreadyExists"), terminating, invalid]
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        recorder.event(POD, "Normal", "A", "a")
        recorder.event(POD, "Normal", "B", "b")
        recorder.event(POD, "Normal", "C", "c")
        await recorder.flush()
    assert clock.slept == []
    assert len(sink.calls) == 3
    assert sink.events == {}


async def test_a_patch_of_an_expired_event_recreates_it() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock)
    async with running(recorder):
        recorder.event(POD, "Normal", "Synced", "ok")
        await recorder.flush()
        sink.events.clear()  # the server's event TTL removed it
        recorder.event(POD, "Normal", "Synced", "ok")
        await recorder.flush()
    assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
    assert sink.only()["count"] == 2


async def test_messages_are_truncated_and_formatted() -> None:
    sink, clock = MemorySink(), FakeClock()
    recorder = recorder_for(sink, clock)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "n"}}
    async with running(recorder):
        recorder.event(POD, "Normal", "Long", "x" * 5000)
        recorder.eventf(POD, "Normal", "Fmt", "scaled %s from %d to %d", "workers", 2, 4)
        recorder.eventf(POD, "Normal", "BadFmt", "%d workers", "many")
        recorder.event(node, "Normal", "NodeEvent", "on a cluster-scoped object")
        await recorder.flush()
    by_reason = {e["reason"]: e for e in sink.events.values()}
    long_message = by_reason["Long"]["message"]
    assert len(long_message) == MAX_MESSAGE_LENGTH
    assert long_message.endswith(" ...")
    assert by_reason["Fmt"]["message"] == "scaled workers from 2 to 4"
    assert by_reason["BadFmt"]["message"] == "%d workers ('many',)"
    assert by_reason["NodeEvent"]["metadata"]["namespace"] == "default"
    assert "namespace" not in by_reason["NodeEvent"]["involvedObject"]
    names = [
        e["metadata"]["name"]
        for e in sink.events.values()
        if e["involvedObject"]["name"] == "job-worker-0"
    ]
    assert len(set(names)) == 3  # same clock tick, distinct names


async def test_two_recorders_on_one_clock_never_name_events_alike() -> None:
    clock = FakeClock()
    sink = MemorySink()
    recorders = [EventRecorder(sink, component=c, clock=clock) for c in ("a", "b")]
    for recorder in recorders:
        async with running(recorder):
            for reason in ("One", "Two", "Three"):
                recorder.event(POD, "Normal", reason, "the same instant")
            await recorder.flush()
    assert len(sink.events) == 6
    assert [call for call, _ in sink.calls] == ["create"] * 6
