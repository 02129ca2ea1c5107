"""Who hears of the client's writes: the seam through which a cache reads its own writes.

A :class:`~etctl.runtime.Client` tells every registered :class:`WriteObserver` about each write
it sends (create, replace, patch, delete, with their ``status`` forms): when the request goes out
(:meth:`WriteObserver.write_started`, which may return a :class:`WriteFlight` to follow it) and
how it ended (:meth:`WriteFlight.succeeded` with the answer, or :meth:`WriteFlight.failed`). The
:class:`~etctl.runtime.Cache` is the observer that matters: it puts what a write returned into
the informers that hold the object, so reads never show an object older than this process's own
last successful write of it (:mod:`etctl.runtime._ownwrites`).

Rules:

* dry runs, ``generateName`` creates (the name is unknown until the answer), subresources other
  than ``status`` (a ``scale`` answer is not the object) and collection deletes are not
  observed;
* an observer is told synchronously and must not block: the write's caller is waiting;
* the answer is handed over as a function that decodes the answer's body anew, so each observer
  owns what it keeps and the caller owns what the client returns to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from etctl.runtime._objects import KubeObject
from etctl.runtime._resources import Resource

__all__ = ["Answer", "WriteFlight", "WriteObserver", "WriteObservers", "WriteSource"]

Answer = Callable[[], KubeObject]
"""Decodes a successful write's answer anew: the object as stored, or a ``Status``."""


class WriteFlight(Protocol):
    """One observed write in flight: told exactly once how it ended."""

    def succeeded(self, answer: Answer | None) -> None:
        """The server accepted the write; ``None`` when a delete found the object already gone."""
        ...

    def failed(self) -> None:
        """The write failed (or its outcome is unknown): nothing is known of its effect."""
        ...


class WriteObserver(Protocol):
    """Hears of every observed write of a client (see the module docstring)."""

    def write_started(
        self, res: Resource, namespace: str, name: str, *, delete: bool
    ) -> WriteFlight | None:
        """A write of one object is about to be sent; return a flight to hear how it ends."""
        ...


@runtime_checkable
class WriteSource(Protocol):
    """A client whose writes can be observed (:class:`~etctl.runtime.Client` is one)."""

    def observe_writes(self, observer: WriteObserver) -> Callable[[], None]:
        """Tell ``observer`` of every write from now on; returns a function that stops it."""
        ...


class _Flights:
    """The flights of several observers, told together."""

    __slots__ = ("_flights",)

    def __init__(self, flights: list[WriteFlight]) -> None:
        self._flights = flights

    def succeeded(self, answer: Answer | None) -> None:
        for flight in self._flights:
            flight.succeeded(answer)

    def failed(self) -> None:
        for flight in self._flights:
            flight.failed()


class WriteObservers:
    """A client's observers (usually one: its manager's cache)."""

    __slots__ = ("_observers",)

    def __init__(self) -> None:
        self._observers: tuple[WriteObserver, ...] = ()

    def add(self, observer: WriteObserver) -> Callable[[], None]:
        """Tell ``observer`` of every write from now on; returns a function that stops it."""
        self._observers = (*self._observers, observer)

        def remove() -> None:
            self._observers = tuple(o for o in self._observers if o is not observer)

        return remove

    def start(
        self, res: Resource, namespace: str | None, name: str, *, delete: bool = False
    ) -> WriteFlight | None:
        """The flight of a write about to be sent, or ``None`` when nobody follows it."""
        observers = self._observers
        if not observers or not name:
            return None
        ns = namespace or ""
        if len(observers) == 1:
            return observers[0].write_started(res, ns, name, delete=delete)
        flights = [
            flight
            for observer in observers
            if (flight := observer.write_started(res, ns, name, delete=delete)) is not None
        ]
        return _Flights(flights) if flights else None
