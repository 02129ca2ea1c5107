import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable

from etctl.runtime import (
    CreateEvent,
    DeleteEvent,
    FakeClock,
    GenerationChanged,
    Predicate,
    PriorityFunc,
    Request,
    UpdateEvent,
    WorkQueue,
    predicate_func,
)
from etctl.runtime._handler import (
    EnqueueingHandler,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventHandler,
)
from etctl.runtime._objects import ObjectView, labels
from etctl.runtime._source import ResourceEventHandler
from etctl.runtime._workqueue import LOW_PRIORITY
from tests.runtime._fakes import FakeSource, obj, owner_ref

JOB = "TrainingJob"
GROUP = "kai.alibabacloud.com"


async def drain(queue: WorkQueue[Request]) -> list[Request]:
    """Everything queued right now, in order (each marked done)."""
    items = []
    while len(queue):
        item = await queue.get()
        queue.done(item)
        items.append(item)
    return items


def wire(handler: EventHandler, *predicates: Predicate) -> tuple[FakeSource, WorkQueue[Request]]:
    clock = FakeClock()
    source = FakeSource(clock)
    queue: WorkQueue[Request] = WorkQueue(clock=clock)
    adapter = EnqueueingHandler(handler, queue, predicates)
    assert isinstance(adapter, ResourceEventHandler)
    source.add_handler(adapter)
    return source, queue


async def test_for_object_enqueues_the_object_on_every_event() -> None:
    source, queue = wire(EnqueueRequestForObject())
    source.create(obj("p", "ns"))
    assert await drain(queue) == [Request("ns", "p")]
    source.update(obj("p", "ns", generation=2))
    assert await drain(queue) == [Request("ns", "p")]
    source.delete("ns/p")
    assert await drain(queue) == [Request("ns", "p")]


async def test_tombstones_unwrap_to_their_last_object() -> None:
    seen: list[DeleteEvent] = []

    def record(event: DeleteEvent) -> bool:
        seen.append(event)
        return True

    source, queue = wire(EnqueueRequestForObject(), predicate_func(delete=record))
    source.create(obj("gone", "ns"))
    await drain(queue)
    source.delete("ns/gone", missed=True)
    assert await drain(queue) == [Request("ns", "gone")]
    assert seen[0].state_unknown
    assert seen[0].obj["metadata"]["name"] == "gone"


async def test_objects_without_a_name_are_skipped() -> None:
    source, queue = wire(EnqueueRequestForObject())
    source.create({"metadata": {"namespace": "ns"}})
    assert len(queue) == 0


async def test_for_owner_enqueues_the_controller_of_the_right_group_and_kind() -> None:
    source, queue = wire(EnqueueRequestForOwner(GROUP, JOB))
    owners = [
        owner_ref(JOB, "not-controller", controller=False),
        owner_ref("ScaleOut", "wrong-kind", controller=False),
        owner_ref(JOB, "wrong-group", api_version="kubeflow.org/v1", controller=False),
        owner_ref(JOB, "job-a", controller=True),
    ]
    source.create(obj("worker-0", "team", owners=owners))
    assert await drain(queue) == [Request("team", "job-a")]


async def test_for_owner_can_enqueue_every_owner_of_the_kind() -> None:
    source, queue = wire(EnqueueRequestForOwner(GROUP, JOB, only_controller=False))
    owners = [owner_ref(JOB, "a", controller=False), owner_ref(JOB, "b", controller=True)]
    source.create(obj("worker-0", "team", owners=owners))
    assert await drain(queue) == [Request("team", "a"), Request("team", "b")]


async def test_for_owner_on_update_enqueues_the_old_and_the_new_owner() -> None:
    source, queue = wire(EnqueueRequestForOwner(GROUP, JOB))
    source.create(obj("worker-0", "team", owners=[owner_ref(JOB, "old-job", controller=True)]))
    await drain(queue)
    source.update(obj("worker-0", "team", owners=[owner_ref(JOB, "new-job", controller=True)]))
    assert await drain(queue) == [Request("team", "old-job"), Request("team", "new-job")]
    source.update(obj("worker-0", "team", owners=[owner_ref(JOB, "new-job", controller=True)]))
    assert await drain(queue) == [Request("team", "new-job")]  # the same owner once


async def test_for_owner_of_a_core_cluster_scoped_kind() -> None:
    handler = EnqueueRequestForOwner("", "Node", owner_namespaced=False)
    source, queue = wire(handler)
    source.create(
        obj("p", "ns", owners=[owner_ref("Node", "n1", api_version="v1", controller=True)])
    )
    assert await drain(queue) == [Request("", "n1")]
    source.delete("ns/p", missed=True)
    assert await drain(queue) == [Request("", "n1")]
    assert "Node" in repr(handler)


def job_of(pod: ObjectView) -> Iterable[Request]:
    job = labels(pod).get("job")
    return [Request("ns", job), Request("ns", job)] if job else []


async def test_map_func_maps_old_and_new_without_duplicates() -> None:
    source, queue = wire(EnqueueRequestsFromMapFunc(job_of))
    source.create(obj("p", "ns", labels={"job": "a"}))
    assert await drain(queue) == [Request("ns", "a")]
    source.update(obj("p", "ns", labels={"job": "b"}))
    assert await drain(queue) == [Request("ns", "a"), Request("ns", "b")]
    source.delete("ns/p")
    assert await drain(queue) == [Request("ns", "b")]


def test_handlers_map_events_without_a_queue() -> None:
    pod = obj("p", "ns", labels={"job": "a"})
    handler = EnqueueRequestsFromMapFunc(job_of)
    assert isinstance(handler, EventHandler)
    assert list(handler.create(CreateEvent(pod))) == [Request("ns", "a")]
    assert list(handler.update(UpdateEvent(pod, pod))) == [Request("ns", "a")]
    assert list(EnqueueRequestForObject().update(UpdateEvent(pod, pod))) == [Request("ns", "p")]


async def test_predicates_run_before_enqueueing_and_filter_resyncs() -> None:
    source, queue = wire(EnqueueRequestForObject(), GenerationChanged())
    source.create(obj("p", "ns", generation=1))
    assert await drain(queue) == [Request("ns", "p")]
    source.update(obj("p", "ns", generation=1))  # a status write
    source.resync("ns/p")
    assert len(queue) == 0
    source.update(obj("p", "ns", generation=2))
    assert await drain(queue) == [Request("ns", "p")]


async def test_without_predicates_a_resync_enqueues() -> None:
    source, queue = wire(EnqueueRequestForObject())
    source.create(obj("p", "ns"))
    await drain(queue)
    source.resync("ns/p")
    assert await drain(queue) == [Request("ns", "p")]


async def test_a_late_handler_receives_the_initial_objects() -> None:
    clock = FakeClock()
    source = FakeSource(clock)
    source.create(obj("a", "ns"))
    source.create(obj("b", "ns"))
    queue: WorkQueue[Request] = WorkQueue(clock=clock)
    only_initial = predicate_func(create=lambda e: e.is_in_initial_list)
    source.add_handler(EnqueueingHandler(EnqueueRequestForObject(), queue, [only_initial]))
    source.create(obj("c", "ns"))
    assert await drain(queue) == [Request("ns", "a"), Request("ns", "b")]


# -- priorities


def prioritised(
    handler: EventHandler, *, new_objects_low: bool = False, priority: PriorityFunc | None = None
) -> tuple[FakeSource, WorkQueue[Request]]:
    clock = FakeClock()
    source = FakeSource(clock)
    queue: WorkQueue[Request] = WorkQueue(clock=clock)
    adapter = EnqueueingHandler(handler, queue, new_objects_low=new_objects_low, priority=priority)
    source.create(obj("known", "ns"))  # in the initial list of the handler below
    source.add_handler(adapter)
    return source, queue


async def test_initial_lists_and_resyncs_are_low_priority_news_is_not() -> None:
    source, queue = prioritised(EnqueueRequestForObject())
    assert queue.priority_of(Request("ns", "known")) == LOW_PRIORITY
    source.create(obj("new", "ns"))
    assert queue.priority_of(Request("ns", "new")) == 0
    await drain(queue)
    source.resync("ns/known")
    assert queue.priority_of(Request("ns", "known")) == LOW_PRIORITY
    source.update(obj("known", "ns", generation=2))  # news raises it
    assert queue.priority_of(Request("ns", "known")) == 0
    await drain(queue)
    source.delete("ns/new")
    assert queue.priority_of(Request("ns", "new")) == 0


async def test_a_primary_watch_queues_new_objects_behind_the_follow_ups_of_known_ones() -> None:
    source, queue = prioritised(EnqueueRequestForObject(), new_objects_low=True)
    await drain(queue)
    source.create(obj("new-1", "ns"))
    source.create(obj("new-2", "ns"))
    source.update(obj("known", "ns", generation=2))
    assert await drain(queue) == [
        Request("ns", "known"),
        Request("ns", "new-1"),
        Request("ns", "new-2"),
    ]


async def test_a_priority_function_orders_keys_of_events_that_bring_news() -> None:
    urgent = {"b"}

    def priority(request: Request) -> int:
        return 10 if request.name in urgent else 0

    source, queue = prioritised(EnqueueRequestForObject(), priority=priority)
    source.create(obj("b", "ns"))  # urgent, but in no initial list: news
    source.create(obj("a", "ns"))
    assert queue.priority_of(Request("ns", "known")) == LOW_PRIORITY  # initial: low regardless
    assert await drain(queue) == [Request("ns", "b"), Request("ns", "a"), Request("ns", "known")]
    source.resync("ns/b")
    assert queue.priority_of(Request("ns", "b")) == LOW_PRIORITY


# -- batches


@contextlib.asynccontextmanager
async def batched(
    handler: EventHandler, batch: float, *, creations: bool = True
) -> AsyncIterator[tuple[FakeClock, FakeSource, WorkQueue[Request]]]:
    """A source with ``known`` in its initial list, feeding a running queue through ``batch``."""
    clock = FakeClock()
    source = FakeSource(clock)
    queue: WorkQueue[Request] = WorkQueue(clock=clock)
    source.create(obj("known", "ns"))
    source.add_handler(EnqueueingHandler(handler, queue, batch=batch, batch_creations=creations))
    async with asyncio.TaskGroup() as group:
        group.create_task(queue.run(), name="queue-run")
        try:
            yield clock, source, queue
        finally:
            queue.shut_down()


async def test_a_burst_of_changes_is_one_request_once_the_batch_period_ends() -> None:
    async with batched(EnqueueRequestForObject(), batch=1.0) as (clock, source, queue):
        assert await drain(queue) == [Request("ns", "known")]  # a list is never held back
        source.create(obj("new", "ns"))
        await clock.advance(0.6)
        source.update(obj("new", "ns", generation=2))
        source.update(obj("known", "ns", generation=2))
        assert len(queue) == 0
        assert queue.waiting == 2
        await clock.advance(0.4)  # the creation's period ends: it goes with its followers
        assert await drain(queue) == [Request("ns", "new")]
        source.delete("ns/new")
        await clock.advance(0.6)
        assert await drain(queue) == [Request("ns", "known")]
        await clock.advance(0.4)
        assert await drain(queue) == [Request("ns", "new")]  # deletes are held as updates are
        assert queue.waiting == 0


async def test_a_watch_may_take_up_creations_at_once_and_batch_the_rest() -> None:
    async with batched(EnqueueRequestForObject(), batch=1.0, creations=False) as (
        clock,
        source,
        queue,
    ):
        await drain(queue)
        source.create(obj("new", "ns"))
        assert await drain(queue) == [Request("ns", "new")]
        source.update(obj("new", "ns", generation=2))
        assert await drain(queue) == []
        await clock.advance(1.0)
        assert await drain(queue) == [Request("ns", "new")]


async def test_a_resync_is_never_held_back_by_a_batch() -> None:
    async with batched(EnqueueRequestForObject(), batch=5.0) as (_, source, queue):
        await drain(queue)
        source.resync("ns/known")
        assert await drain(queue) == [Request("ns", "known")]


async def test_a_batched_event_of_a_key_still_queued_joins_it() -> None:
    async with batched(EnqueueRequestForObject(), batch=1.0) as (clock, source, queue):
        source.update(obj("known", "ns", generation=2))  # "known" is queued from the list
        assert queue.waiting == 0
        assert await drain(queue) == [Request("ns", "known")]
        await clock.advance(1.0)
        assert await drain(queue) == []
