"""Test doubles for the controller side of the runtime: an in-memory event source and helpers."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Mapping
from typing import Any

from etctl.errors import CacheSyncError
from etctl.runtime import PODS, REGISTRY, Clock, Resource, wait_event
from etctl.runtime._objects import KubeObject, ObjectView, Tombstone, key_of
from etctl.runtime._source import HandlerRegistration, ResourceEventHandler

_rv = itertools.count(1)


def obj(
    name: str,
    namespace: str = "default",
    *,
    generation: int = 1,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    rv: str | None = None,
) -> KubeObject:
    """A minimal object with a fresh resourceVersion unless one is given."""
    metadata: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{namespace}-{name}",
        "resourceVersion": rv or str(next(_rv)),
        "generation": generation,
    }
    if namespace:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}


def owner_ref(
    kind: str, name: str, *, api_version: str = "kai.alibabacloud.com/v1alpha1", controller: bool
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": controller,
    }


class _Registration:
    def __init__(self) -> None:
        self.synced = False

    def has_synced(self) -> bool:
        return self.synced


class FakeSource:
    """An in-memory EventSource: tests drive it with create/update/delete calls.

    ``synced=False`` makes it a source that never syncs (an RBAC 403 on list, say): its
    ``wait_for_sync`` times out on the clock with a CacheSyncError naming the last error.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        resource: Resource = PODS,
        synced: bool = True,
        replay_pending: bool = False,
    ) -> None:
        self._clock = clock
        self._resource = resource
        self._synced = asyncio.Event()
        if synced:
            self._synced.set()
        self._replay_pending = replay_pending
        self.objects: dict[str, ObjectView] = {}
        self.handlers: list[ResourceEventHandler] = []
        self.registrations: list[_Registration] = []

    @property
    def resource(self) -> Resource:
        return self._resource

    def add_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        registration = _Registration()
        for current in list(self.objects.values()):
            handler.on_add(current, is_in_initial_list=True)
        registration.synced = self._synced.is_set() and not self._replay_pending
        self.handlers.append(handler)
        self.registrations.append(registration)
        return registration

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self, timeout: float) -> None:
        if not await wait_event(self._clock, self._synced, timeout):
            msg = f"{self._resource}: not synced: (403 Forbidden) pods is forbidden"
            raise CacheSyncError(msg)

    def finish_replay(self) -> None:
        for registration in self.registrations:
            registration.synced = True

    def create(self, new: ObjectView) -> None:
        self.objects[key_of(new)] = new
        for handler in self.handlers:
            handler.on_add(new, is_in_initial_list=False)

    def update(self, new: ObjectView) -> None:
        old = self.objects[key_of(new)]
        self.objects[key_of(new)] = new
        for handler in self.handlers:
            handler.on_update(old, new)

    def resync(self, key: str) -> None:
        current = self.objects[key]
        for handler in self.handlers:
            handler.on_update(current, current)

    def delete(self, key: str, *, missed: bool = False) -> None:
        last = self.objects.pop(key)
        for handler in self.handlers:
            handler.on_delete(Tombstone(key, last) if missed else last)


def unique_name(prefix: str = "test") -> str:
    """A controller or queue name no other test uses (metrics live on one shared registry)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def sample(metric: str, **labels: str) -> float:
    """Read one sample back from the runtime's registry (0 when the series does not exist)."""
    value = REGISTRY.get_sample_value(metric, labels)
    return 0.0 if value is None else value
