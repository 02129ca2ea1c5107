"""What reading its own writes costs the cache, per write.

Run: ``.venv/bin/python bench/own_writes.py [--writes N] [--rounds R]``

One informer of ConfigMaps (about 1 KiB of JSON each, with managedFields), synced, with a handler,
and N writes: each a create, then an update. Two ways, alternating, in one process, no network:

* **watch only** (as before, and as controller-runtime): each write's watch event is decoded and
  goes into the store and to the handler;
* **own writes**: each write is followed from its start; its answer is decoded a second time for
  the cache (the caller keeps its own), goes into the store and to the handler, and its watch event,
  decoded as ever, is recognised and dropped.

The figure is the difference per write: what the runtime adds to a write for its cache to read it
back at once. For scale, a write's round trip to an API server costs the client 100-150 µs of CPU
(``bench/fanout.py``).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from typing import Any

import orjson

from _report import figure, header
from etctl.runtime import CONFIGMAPS, KubeObject, ObjectView, Tombstone
from etctl.runtime._informer import Informer


class _Nothing:
    """A lister the informer never calls here (it is fed by hand)."""

    def pages(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError

    def watch(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError


class _Count:
    def __init__(self) -> None:
        self.events = 0

    def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
        self.events += 1

    def on_update(self, old: ObjectView, new: ObjectView) -> None:
        self.events += 1

    def on_delete(self, obj: ObjectView | Tombstone) -> None:
        self.events += 1


def _configmap(index: int, rv: int, value: str) -> bytes:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{index:05d}",
            "namespace": "bench",
            "uid": f"00000000-0000-0000-0000-{index:012d}",
            "resourceVersion": str(rv),
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {"app": "bench", "owner": f"parent-{index // 4:05d}"},
            "managedFields": [
                {
                    "manager": "etctl",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:value": {}}, "f:metadata": {"f:labels": {}}},
                }
            ],
        },
        "data": {"value": value, "index": str(index), "text": "x" * 600},
    }
    return orjson.dumps(obj)


def _informer() -> tuple[Informer, Any, _Count]:
    informer = Informer(_Nothing(), CONFIGMAPS, clock=_clock(), namespace="bench")
    sink = informer._Sink(informer)  # fed by hand: the reflector's side of the informer
    sink.on_list([], "1")
    counter = _Count()
    informer.add_handler(counter)
    return informer, sink, counter


def _clock() -> Any:
    from etctl.runtime import RealClock  # noqa: PLC0415 - kept beside its one use

    return RealClock()


def _decode(body: bytes) -> KubeObject:
    value: KubeObject = orjson.loads(body)
    return value


def watch_only(bodies: list[tuple[bytes, bytes]]) -> float:
    """Seconds of CPU for the writes' events into the cache (and the caller's decode)."""
    informer, sink, counter = _informer()
    started = time.process_time()
    rv = 0
    for created, updated in bodies:
        for kind, body in (("ADDED", created), ("MODIFIED", updated)):
            _decode(body)  # the caller's answer
            event = informer._reflector.transformed(_decode(body))
            sink.on_change(kind, event)
            rv += 1
    elapsed = time.process_time() - started
    assert counter.events == 2 * len(bodies)
    return elapsed


def own_writes(bodies: list[tuple[bytes, bytes]]) -> float:
    """Seconds of CPU for the same writes followed, applied from their answers, echoes dropped."""
    informer, sink, counter = _informer()
    started = time.process_time()
    for index, (created, updated) in enumerate(bodies):
        key = f"bench/cm-{index:05d}"
        for kind, body in (("ADDED", created), ("MODIFIED", updated)):
            token = informer.write_started(key)
            assert token is not None
            _decode(body)  # the caller's answer
            informer.write_succeeded(token, functools.partial(_decode, body), delete=False)
            event = informer._reflector.transformed(_decode(body))
            sink.on_change(kind, event)  # the echo: recognised and dropped
    elapsed = time.process_time() - started
    assert counter.events == 2 * len(bodies)
    assert not informer._own.expected
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=20_000, help="objects (2 writes each)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bodies = [
        (_configmap(i, 2 * i + 2, "a"), _configmap(i, 2 * i + 3, "b")) for i in range(args.writes)
    ]
    header(f"own writes: {2 * args.writes} writes into one informer, {args.rounds} rounds")
    plain, own = [], []
    for _ in range(args.rounds):
        plain.append(watch_only(bodies) / (2 * args.writes))
        own.append(own_writes(bodies) / (2 * args.writes))
    base = statistics.median(plain)
    mine = statistics.median(own)
    figure("watch only, per write", base * 1e6, "µs")
    figure("own writes, per write", mine * 1e6, "µs", compare=f"{mine / base:.2f}x")
    figure(
        "what reading its own writes adds, per write",
        (mine - base) * 1e6,
        "µs",
        compare="a write's round trip costs the client 100-150 µs",
    )


if __name__ == "__main__":
    main()
