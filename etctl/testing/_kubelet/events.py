"""Events the simulated components record: core/v1 Events written through the storage API.

An :class:`EventRecorder` writes what ``kubectl describe`` shows under *Events*, shaped as the
real kubelet and scheduler write them: an ``involvedObject`` reference (with the container's
``fieldPath`` for container events), ``source`` and ``reportingComponent``/``reportingInstance``,
``firstTimestamp``/``lastTimestamp`` and a ``count``.

Like client-go's event correlator, a repeat of the same event (same object, field path, type,
reason, message and source) updates the existing Event's ``count`` and ``lastTimestamp`` instead
of creating another, so a crash-looping container produces one ``BackOff`` event with a growing
count. Recording never fails the caller: an event that cannot be written (the namespace is
terminating, say) is dropped, as the real recorder drops it.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from etctl.errors import AlreadyExists, ApiError
from etctl.log import get_logger
from etctl.runtime import EVENTS, Clock, ObjectView, objects
from etctl.testing._apiserver.storage import Storage

__all__ = ["EventRecorder", "Source"]

log = get_logger(__name__)

_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class Source:
    """Who records: ``component`` (``kubelet``, ``default-scheduler``) and ``host``."""

    component: str
    host: str = ""


class EventRecorder:
    """Records core/v1 Events about objects, aggregating repeats.

    Args:
        storage: the server's storage.
        clock: the clock of the timestamps.
    """

    def __init__(self, storage: Storage, clock: Clock) -> None:
        self._storage = storage
        self._clock = clock
        self._seq = itertools.count()
        self._recent: OrderedDict[tuple[str, ...], tuple[str, str]] = OrderedDict()

    def record(
        self,
        obj: ObjectView,
        event_type: str,
        reason: str,
        message: str,
        *,
        source: Source,
        field_path: str = "",
        action: str = "",
    ) -> None:
        """Record one event about ``obj`` (a pod, a node...).

        Args:
            obj: the involved object.
            event_type: ``Normal`` or ``Warning``.
            reason: the machine-readable reason (``Started``, ``BackOff``).
            message: the human-readable message.
            source: the recording component.
            field_path: the part of the object (``spec.containers{main}``).
            action: what was done (the scheduler's ``Binding``).
        """
        metadata = objects.meta(obj)
        obj_namespace = str(metadata.get("namespace") or "")
        event_namespace = obj_namespace or "default"
        key = (
            str(metadata.get("uid") or ""),
            field_path,
            event_type,
            reason,
            message,
            source.component,
            source.host,
        )
        now = self._storage.now()
        try:
            if self._bump(key, now):
                return
            created = self._create(
                obj=obj,
                event_namespace=event_namespace,
                event_type=event_type,
                reason=reason,
                message=message,
                source=source,
                field_path=field_path,
                action=action,
                now=now,
            )
        except ApiError as exc:
            log.debug("event dropped", reason=reason, error=str(exc))
            return
        self._recent[key] = (event_namespace, created)
        self._recent.move_to_end(key)
        while len(self._recent) > _CACHE_SIZE:
            self._recent.popitem(last=False)

    def _bump(self, key: tuple[str, ...], now: str) -> bool:
        """Count a repeat on the existing Event; False when there is none to count on."""
        found = self._recent.get(key)
        if found is None:
            return False
        event_namespace, event_name = found
        try:
            current = self._storage.get(EVENTS, event_name, namespace=event_namespace)
        except ApiError:
            del self._recent[key]
            return False
        updated = {**current, "count": int(current.get("count") or 1) + 1, "lastTimestamp": now}
        self._storage.update(EVENTS, updated, namespace=event_namespace)
        self._recent.move_to_end(key)
        return True

    def _create(
        self,
        *,
        obj: ObjectView,
        event_namespace: str,
        event_type: str,
        reason: str,
        message: str,
        source: Source,
        field_path: str,
        action: str,
        now: str,
    ) -> str:
        metadata = objects.meta(obj)
        involved = {
            "kind": obj.get("kind") or "",
            "namespace": metadata.get("namespace") or "",
            "name": metadata.get("name") or "",
            "uid": metadata.get("uid") or "",
            "apiVersion": obj.get("apiVersion") or "v1",
            "resourceVersion": metadata.get("resourceVersion") or "",
        }
        if not involved["namespace"]:
            del involved["namespace"]
        if field_path:
            involved["fieldPath"] = field_path
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": event_namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": {
                "component": source.component,
                **({"host": source.host} if source.host else {}),
            },
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": event_type,
            "eventTime": None,
            "reportingComponent": source.component,
            "reportingInstance": source.host or source.component,
        }
        if action:
            body["action"] = action
        base = int(self._clock.now().timestamp() * 1_000_000_000)
        while True:
            event_name = f"{metadata.get('name')}.{base + next(self._seq):x}"
            body["metadata"]["name"] = event_name
            try:
                self._storage.create(EVENTS, body, namespace=event_namespace)
            except AlreadyExists:
                continue
            return event_name
