"""Read your own writes: what an informer does with this process's writes before its watch has them.

A write this process made through its client (:mod:`etctl.runtime._writes`) reaches the informers
that hold the object as soon as the server answers: the answer (the object as stored) goes into
the store and to the handlers, as a watch event would. The watch's own event for that change,
when it arrives, is recognised and dropped, so handlers see each change once, in order, and a
reconcile never reads an object older than this process's last successful write of it. A
successful delete hides the object, or shows it terminating, as the answer says (the object with
finalizers left or a grace period to run is still there; anything else is gone).

What is relied on, and nothing else (resourceVersions are opaque strings to a client: only
equality is used, never order):

* **One watch stream's order.** A watch delivers the events of one object in the order the server
  committed them. So while the store holds our write of version ``X``, every event of that object
  that arrives before the event ``X`` was committed before ``X``: superseded, it is dropped.
* **What arrived during the write.** An event ``X`` that arrived while the write was in flight
  (the watch beat the answer) means the stream is past ``X``: the answer is not applied. Nor is an
  answer equal to what the store held when the write began (a write that changed nothing).
* **A consistent list.** A relist while writes are awaited lists at ``""``: a consistent read,
  which holds every write answered before it was sent, so it replaces them outright.

Where those give no answer the ledger errs on the side of the stream, never of going back in
time: a write whose answer arrives while a relist is in flight, or that overlapped another write
of the same object whose echo is still awaited, is not applied (the watch brings it, as without
this); after a relist that may not hold a write applied just before it, the write stays and its
echo is awaited. An awaited echo that has not come within ``ttl`` seconds (a server that
never sends it) stops being awaited, and the newest event dropped meanwhile is applied then: the
cache is never stuck.

Writes the cache cannot place are left to the watch: writes before the informer synced, and an
answer outside the informer's namespace and selectors, unless the store held the object, in which
case the write took it out of scope and it leaves the store (the watch then says DELETED).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from etctl.runtime import _objects as objects
from etctl.runtime._objects import KubeObject, ObjectView
from etctl.runtime._selectors import FieldSelector, LabelSelector

__all__ = [
    "DEFAULT_TTL",
    "Expected",
    "Flight",
    "OwnWrites",
    "Scope",
    "WriteToken",
    "answer_is_gone",
    "deleted_uid",
]

DEFAULT_TTL = 60.0
"""Seconds an applied write waits for its watch event before the newest dropped one is applied."""

EventKind = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(slots=True, eq=False)
class Flight:
    """The writes of one object in flight; writes that overlap share one.

    Attributes:
        count: writes of the object in flight.
        seen: resourceVersions of the object's events delivered since the first write began,
            and ``uid:<uid>`` for each deletion among them.
        relisted: a relist was delivered meanwhile (the answer's place in the stream is unknown).
    """

    count: int = 0
    seen: set[str] = field(default_factory=set)
    relisted: bool = False


@dataclass(slots=True, eq=False)
class WriteToken:
    """One write in flight: its object's key, its flight, the stored version when it began."""

    key: str
    flight: Flight
    start_rv: str


@dataclass(slots=True, eq=False)
class Expected:
    """The watch event an applied write awaits.

    Attributes:
        present: the store holds the write's answer (else it hid the object).
        rv: the event that shows the change (``""`` for a deletion: its version is unknown).
        uid: for a deletion, the deleted object's uid.
        deadline: on the informer's clock, when the event stops being awaited.
        generation: the ledger's count when it was made (relists tell what they cover by it).
        flight: the flight that applied it, while that flight lasts (overlapping writes).
        dropped: the newest event dropped while awaiting, applied should the event never come.
    """

    present: bool
    rv: str
    uid: str
    deadline: float
    generation: int
    flight: Flight | None
    dropped: tuple[EventKind, ObjectView] | None = None


def answer_is_gone(answer: ObjectView | None) -> bool:
    """Whether a successful delete's answer says the object no longer exists.

    A ``Status`` (or no answer) says it is gone. An object that is not marked for deletion is
    its last state before removal. A marked one is still there while finalizers hold it
    (``metadata.finalizers``, or a namespace's ``spec.finalizers``) or a grace period runs
    (``deletionGracePeriodSeconds`` above 0, a pod the kubelet has to stop).
    """
    if answer is None or answer.get("kind") == "Status":
        return True
    meta = objects.meta(answer)
    if not meta.get("deletionTimestamp"):
        return True
    if meta.get("finalizers"):
        return False
    spec = answer.get("spec")
    if isinstance(spec, Mapping) and spec.get("finalizers"):
        return False
    grace = meta.get("deletionGracePeriodSeconds")
    return not (isinstance(grace, int) and grace > 0)


def deleted_uid(answer: ObjectView | None) -> str:
    """The uid of what a delete removed, from its answer (``""`` when the answer has none)."""
    if answer is None:
        return ""
    if answer.get("kind") == "Status":
        details = answer.get("details")
        uid = details.get("uid") if isinstance(details, Mapping) else None
        return uid if isinstance(uid, str) else ""
    return objects.uid(answer)


def _field_value(obj: ObjectView, path: str) -> str:
    """A field selector's value of ``path`` (dotted) in ``obj``: ``""`` when absent."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


class Scope:
    """What an informer holds: a namespace (or all) and label and field selectors.

    Args:
        namespace: the one namespace, or ``None`` for all (and cluster-scoped resources).
        label_selector: the informer's label selector, if any.
        field_selector: the informer's field selector, if any.
    """

    __slots__ = ("_fields", "_labels", "namespace")

    def __init__(
        self, namespace: str | None, label_selector: str | None, field_selector: str | None
    ) -> None:
        self.namespace = namespace
        self._labels = LabelSelector.parse(label_selector) if label_selector else None
        self._fields = FieldSelector.parse(field_selector) if field_selector else None

    def holds(self, obj: ObjectView) -> bool:
        """Whether an informer of this scope would hold ``obj``."""
        if self.namespace is not None and objects.namespace(obj) != self.namespace:
            return False
        if self._labels is not None and not self._labels.matches(objects.labels(obj)):
            return False
        fields = self._fields
        if fields is None:
            return True
        return fields.matches({name: _field_value(obj, name) for name in fields.fields})


class OwnWrites:
    """One informer's ledger of its process's writes (see the module docstring).

    It decides; the informer changes its store and calls its handlers.

    Args:
        ttl: seconds an applied write waits for its watch event.
    """

    __slots__ = ("_covered", "_generation", "_next_check", "expected", "flights", "ttl")

    def __init__(self, *, ttl: float = DEFAULT_TTL) -> None:
        self.ttl = ttl
        self.flights: dict[str, Flight] = {}
        self.expected: dict[str, Expected] = {}
        self._generation = 0
        self._covered = -1
        self._next_check = math.inf

    # -- writes

    def begin(self, key: str, stored: ObjectView | None) -> WriteToken:
        """A write of ``key`` is about to be sent (``stored``: what the store holds now)."""
        flight = self.flights.get(key)
        if flight is None:
            flight = self.flights[key] = Flight()
        flight.count += 1
        return WriteToken(key, flight, objects.resource_version(stored) if stored else "")

    def end(self, token: WriteToken) -> None:
        """A write's answer (or failure) has arrived: it is no longer in flight."""
        flight = token.flight
        flight.count -= 1
        if flight.count <= 0 and self.flights.get(token.key) is flight:
            del self.flights[token.key]
            # Only the key's own awaited event can name the flight (both are the key's).
            expected = self.expected.get(token.key)
            if expected is not None and expected.flight is flight:
                expected.flight = None

    def _clear(self, token: WriteToken) -> bool:
        """Whether nothing seen so far contradicts applying a write's answer."""
        if token.flight.relisted:
            return False
        expected = self.expected.get(token.key)
        # Another write of the object overlapped this one and its echo is still awaited: which
        # of the two the server committed last is unknown.
        return expected is None or expected.flight is not token.flight

    def may_apply(self, token: WriteToken, rv: str, stored: ObjectView | None) -> bool:
        """Whether the answer ``rv`` of a write (not a completed delete) may go into the store."""
        if not rv or rv == token.start_rv or rv in token.flight.seen:
            return False
        if stored is not None and objects.resource_version(stored) == rv:
            return False
        return self._clear(token)

    def may_hide(self, token: WriteToken, uid: str) -> bool:
        """Whether a completed delete of ``uid`` may take the object out of the store."""
        return f"uid:{uid}" not in token.flight.seen and self._clear(token)

    def expect(self, token: WriteToken, *, present: bool, rv: str, uid: str, now: float) -> None:
        """Await the watch event of a write the informer just applied."""
        self._generation += 1
        deadline = now + self.ttl
        self.expected[token.key] = Expected(
            present=present,
            rv=rv,
            uid=uid,
            deadline=deadline,
            generation=self._generation,
            flight=token.flight,
        )
        self._next_check = min(self._next_check, deadline)

    # -- the watch

    def on_event(self, kind: EventKind, key: str, obj: KubeObject, rv: str) -> bool:
        """Note a watch event; True when it must be dropped (an echo, or superseded)."""
        flight = self.flights.get(key)
        if flight is not None:
            flight.seen.add(rv)
            if kind == "DELETED":
                flight.seen.add(f"uid:{objects.uid(obj)}")
        expected = self.expected.get(key)
        if expected is None:
            return False
        if expected.rv:
            if rv == expected.rv:
                del self.expected[key]
                # The echo: dropped when it says what the store shows already.
                return expected.present == (kind != "DELETED")
        elif kind == "DELETED" and objects.uid(obj) == expected.uid:
            del self.expected[key]
            return True
        expected.dropped = (kind, obj)
        return True

    def expired(self, now: float) -> list[tuple[str, Expected]]:
        """Take out the awaited events whose time is up (their dropped event is to be applied).

        Cheap when nothing is due: the earliest deadline is kept, and only passing it scans.
        """
        if now < self._next_check:
            return []
        late = [(key, e) for key, e in self.expected.items() if e.deadline <= now]
        for key, _ in late:
            del self.expected[key]
        self._next_check = min((e.deadline for e in self.expected.values()), default=math.inf)
        return late

    # -- lists

    def list_starting(self) -> bool:
        """A list is about to be sent; True when it must be a consistent read (writes awaited)."""
        if not self.expected:
            self._covered = -1
            return False
        self._covered = self._generation
        return True

    def on_list(
        self, content: dict[str, ObjectView], stored: Callable[[str], ObjectView | None], now: float
    ) -> None:
        """Reconcile a relist's ``content`` (by key) with the writes awaited; edits it in place.

        Writes the list covers (answered before a consistent list was sent) are settled by it.
        For the others the list may be older or newer: the store keeps what the write put there
        and the echo is still awaited, with the listed state as the event to fall back on.
        """
        for flight in self.flights.values():
            flight.relisted = True
        covered, self._covered = self._covered, -1
        for key, expected in list(self.expected.items()):
            listed = content.get(key)
            if expected.generation <= covered or (
                expected.present
                and listed is not None
                and objects.resource_version(listed) == expected.rv
            ):
                del self.expected[key]
                continue
            held = stored(key)
            if listed is not None:
                expected.dropped = ("MODIFIED", listed)
            elif held is not None:
                expected.dropped = ("DELETED", held)
            if expected.present and held is not None:
                content[key] = held
            elif not expected.present:
                content.pop(key, None)
            expected.deadline = max(expected.deadline, now + self.ttl)
            self._next_check = min(self._next_check, expected.deadline)
