"""Seeded API chaos for end-to-end operator tests, and the ledger that judges what the operator did.

A :class:`Chaos` draws, from one seeded :class:`random.Random`, bursts of faults on the requests an
operator makes (500, 503 and 429 with ``Retry-After`` on creates, patches, status writes and
deletes; 409 on status patches), cuts the running watches and arms their resumes to be dropped
again or answered 410 Gone, and holds the whole server for a few virtual seconds. Every fault is
answered before the request is handled, so a failed request never had an effect: whatever the
operator does twice, it did twice on purpose.

Which request a fault lands on depends on how the operator's requests interleave, so a seed fixes
the schedule, not the exact trace; the invariants the tests assert must hold for every trace.

Time is virtual: :meth:`Chaos.converge` waits (bounded, in real time) until the server and the
operator are idle, then moves the :class:`FakeClock` by one second, so work requeued with backoff
after a failure comes back, and repeats until the wanted state is reached. The client's own retry
sleeps return at once (see :func:`tests.runtime._realtime.client_of`).

The :class:`Ledger` subscribes to the server's commits and keeps, per pod name, how often it was
created and deleted, and which objects the test placed as bystanders: names the operator must
never write to.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from etctl.runtime import FakeClock, KubeObject, Manager, objects
from etctl.runtime import _metrics as metrics
from etctl.testing import ApiServer, Fault, eventually, wait_idle
from etctl.testing._apiserver.store import Event

__all__ = ["Chaos", "Ledger", "Target", "crashes"]

_TRANSIENT = (500, 503, 429)
_WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class Target:
    """A kind of request faults may land on: ``verb`` on ``resource`` (``subresource``)."""

    verb: str
    resource: str
    subresource: str = ""
    conflicts: bool = False
    """Whether 409 Conflict is a fault this request can meet (guarded status writes)."""


@dataclass
class Chaos:
    """A seeded fault schedule on one server, and the driver that lets the operator converge.

    Attributes:
        server: the embedded API server (on the test's event loop).
        clock: the clock of the server and the operator.
        managers: the operators under test.
        targets: the requests faults may land on.
        watched: the resources (``plural`` or ``plural.group``) whose watches may be cut.
        seed: seeds every draw.
    """

    server: ApiServer
    clock: FakeClock
    managers: Sequence[Manager]
    targets: Sequence[Target]
    watched: Sequence[str]
    seed: int
    injected: list[Fault] = field(default_factory=list)
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- faults

    def storm(self, size: int = 6) -> None:
        """Inject ``size`` faults drawn from the targets.

        Each fails 1 to 6 requests in a row: from 5 on, the client's retries run out and the
        failure reaches the reconciler, which must requeue and converge.
        """
        for _ in range(size):
            target = self.rng.choice(self.targets)
            conflict = target.conflicts and self.rng.random() < 0.4
            status = 409 if conflict else self.rng.choice(_TRANSIENT)
            times = self.rng.randint(1, 3) if conflict else self.rng.randint(1, 6)
            self._inject(
                Fault(
                    verb=target.verb,
                    resource=target.resource,
                    subresource=target.subresource,
                    status=status,
                    times=times,
                )
            )

    def cut_watches(self, count: int = 2) -> None:
        """End ``count`` resources' watch streams now; their resumes are dropped or expire."""
        for resource in self.rng.sample(list(self.watched), min(count, len(self.watched))):
            expire = self.rng.random() < 0.5
            self._inject(
                Fault(verb="watch", resource=resource, expire_watch=expire, drop_watch=not expire)
            )
            plural, _, group = resource.partition(".")
            self.server.store.close_sinks((group, plural), reason="cut by the chaos schedule")

    async def hold(self, seconds: float) -> None:
        """Pause the server until a request is held, let ``seconds`` pass, then resume it.

        The caller makes sure the operator has something to ask the server (a change it just made
        through the storage, which the pause does not hold).
        """
        before = len(self.server.requests)
        self.server.pause()
        try:
            await eventually(lambda: len(self.server.requests) > before, what="a request held")
            await self.clock.advance(seconds)
        finally:
            self.server.resume()

    def _inject(self, fault: Fault) -> None:
        self.injected.append(self.server.inject(fault))

    @property
    def fired(self) -> int:
        """How many requests the injected faults have failed or cut so far."""
        return sum(fault.fired for fault in self.injected)

    def calm(self) -> None:
        """Remove the faults that have not fired yet (the server answers normally again)."""
        self.server.faults.clear()

    # -- time

    async def converge(
        self, condition: Callable[[], object], *, step: float = 1.0, timeout: float = 20.0
    ) -> None:
        """Let virtual time pass, one idle step at a time, until ``condition()`` holds.

        It returns with the operator idle, so what the caller reads next is not a write in
        flight.

        Raises:
            AssertionError: not reached within ``timeout`` real seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            await wait_idle(self.server, *self.managers)
            if condition():
                return
            if loop.time() > deadline:
                msg = "the operator did not converge in time"
                raise AssertionError(msg)
            await self.clock.advance(step)

    async def settle(self, seconds: float = 30.0, *, step: float = 1.0) -> None:
        """Let ``seconds`` of virtual time pass in idle steps.

        Retries backed off by a fault (short, in this schedule) fire, so the state read next is
        the one the operator leaves.
        """
        for _ in range(round(seconds / step)):
            await wait_idle(self.server, *self.managers)
            await self.clock.advance(step)
        await wait_idle(self.server, *self.managers)


@dataclass
class Ledger:
    """What was committed to pods, and which objects the operator must leave alone."""

    server: ApiServer
    namespace: str
    created: Counter[str] = field(default_factory=Counter)
    deleted: Counter[str] = field(default_factory=Counter)
    order: list[str] = field(default_factory=list)
    bystanders: dict[tuple[str, str], dict[str, object]] = field(default_factory=dict)
    """The metadata each bystander had when it was placed, by (plural, name)."""

    def __post_init__(self) -> None:
        self.unsubscribe = self.server.subscribe(self._commit)

    def _commit(self, event: Event) -> None:
        if event.resource != ("", "pods"):
            return
        name = event.key.partition("/")[2]
        if event.type == "ADDED":
            self.created[name] += 1
            self.order.append(name)
        elif event.type == "DELETED":
            self.deleted[name] += 1

    def bystander(self, plural: str, obj: KubeObject) -> None:
        """Remember an object the test made that no operator may touch."""
        self.bystanders[(plural, objects.name(obj))] = _ownership(obj)

    def changed_bystanders(self) -> list[str]:
        """Bystanders gone, or whose labels, annotations, owners or finalizers changed."""
        changed = []
        for (plural, name), before in self.bystanders.items():
            now = self.server.store.get(("", plural), f"{self.namespace}/{name}")
            if now is None or _ownership(now) != before:
                changed.append(f"{plural}/{name}")
        return changed

    def touched_bystanders(self) -> list[str]:
        """Write requests (even failed ones) that named a bystander."""
        return [
            f"{record.verb} {record.resource}/{record.name}"
            for record in self.server.requests
            if record.verb in _WRITE_VERBS and (record.resource, record.name) in self.bystanders
        ]

    def recreated(self) -> list[str]:
        """Pod names created more often than they were deleted before the last creation."""
        return [name for name, count in self.created.items() if count > self.deleted[name] + 1]


def _ownership(obj: KubeObject) -> dict[str, object]:
    meta = objects.meta(obj)
    keys = ("labels", "annotations", "ownerReferences", "finalizers", "deletionTimestamp")
    return {key: meta.get(key) for key in keys}


def crashes(controllers: Sequence[str]) -> float:
    """Reconcile panics recorded so far by the named controllers (a process-wide counter)."""
    total = 0.0
    for name in controllers:
        value = metrics.REGISTRY.get_sample_value(
            "controller_runtime_reconcile_panics_total", {"controller": name}
        )
        total += value or 0.0
    return total
