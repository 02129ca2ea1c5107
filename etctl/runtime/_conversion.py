"""``ConversionReview`` v1 and hub-and-spoke converters: a CRD's versions, converted by webhook.

A CRD that serves versions whose schemas differ declares ``conversion: {strategy: Webhook}``, and
the API server sends every object it must turn into another version to the webhook. On
controller-runtime's model, each kind has one *hub* version and *spokes*: a spoke knows how to go
to the hub and back (:class:`Spoke`), and any version reaches any other through the hub
(:class:`HubAndSpoke`), so N versions need N - 1 pairs of functions, not N².

Invariants of :meth:`HubAndSpoke.convert` (and so of every answer):

* A converter gets a copy and returns the converted object; the framework sets ``apiVersion`` at
  every step, so converters set fields only.
* An object already in the desired version is returned as it is.
* A conversion changes nothing of the object's ``metadata`` but its labels and annotations (the
  API server refuses anything else; here it fails the conversion with a message naming the field).
* All or nothing: when one object of a review fails (a converter raises, a version is unknown, a
  kind has no converter), the answer is ``Failure`` with that message and no object, never a list
  half converted. The API server then fails the client's request with the message.

:class:`~etctl.runtime._conversion_review.ConversionEndpoint` is the HTTP side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import orjson

from etctl.errors import EtctlError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._objects import KubeObject

__all__ = ["ConversionError", "ConvertFunc", "HubAndSpoke", "Spoke", "split_api_version"]

log = get_logger(__name__)

ConvertFunc = Callable[[KubeObject], KubeObject]
"""Converts one object (a copy: change it freely) and returns it; raises to fail."""

_KEPT_FREE = ("labels", "annotations")  # the only metadata a conversion may change


class ConversionError(ValueError):
    """An object cannot be converted; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Spoke:
    """How one version reaches the hub and comes back from it."""

    to_hub: ConvertFunc
    from_hub: ConvertFunc


def split_api_version(api_version: str) -> tuple[str, str]:
    """``(group, version)`` of an ``apiVersion`` (the group empty for the core group)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _copy(obj: KubeObject) -> KubeObject:
    copied: KubeObject = orjson.loads(orjson.dumps(obj))
    return copied


@dataclass(frozen=True, slots=True)
class HubAndSpoke:
    """The converter of one kind: a hub version and a :class:`Spoke` per other version.

    Attributes:
        group: the kind's API group.
        kind: the kind.
        hub: the hub version (``v2``).
        spokes: every other served version and how it converts.
    """

    group: str
    kind: str
    hub: str
    spokes: Mapping[str, Spoke]

    def __post_init__(self) -> None:
        if self.hub in self.spokes:
            msg = f"{self.kind}: the hub version {self.hub} cannot also be a spoke"
            raise ValueError(msg)

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version this converter knows, the hub first."""
        return (self.hub, *sorted(self.spokes))

    def _api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def convert(self, obj: KubeObject, desired: str) -> KubeObject:
        """``obj`` in the API version ``desired`` (see the module's invariants).

        Raises:
            ConversionError: a version is not known, the converted object is unusable, or a
                converter raised (its message kept).
        """
        group, source = split_api_version(str(obj.get("apiVersion", "")))
        wanted_group, target = split_api_version(desired)
        if group != self.group or wanted_group != self.group or obj.get("kind") != self.kind:
            msg = f"{self.kind} converter cannot convert {obj.get('kind')} {obj.get('apiVersion')}"
            raise ConversionError(msg + f" to {desired}")
        if source == target:
            return obj
        for version in (source, target):
            if version != self.hub and version not in self.spokes:
                msg = f"{self.kind} has no version {version!r} (known: {', '.join(self.versions)})"
                raise ConversionError(msg)
        current = _copy(obj)
        if source != self.hub:
            current = self._step(self.spokes[source].to_hub, current, self.hub)
        if target != self.hub:
            current = self._step(self.spokes[target].from_hub, current, target)
        self._check(obj, current)
        return current

    def _step(self, function: ConvertFunc, obj: KubeObject, version: str) -> KubeObject:
        source = obj.get("apiVersion")
        what = f"converting {self.kind} {source} to {version}"
        try:
            # Typed loosely: a converter that changed its copy in place may forget to return it.
            converted: object = function(obj)
        except (ValueError, EtctlError) as error:
            raise ConversionError(f"{what}: {error}") from error
        except Exception as error:
            # A bug in the converter: still the request's failure, never a crash.
            metrics.CONVERSION_WEBHOOK_PANICS.inc()
            log.exception("a converter failed", kind=self.kind, source=source, target=version)
            raise ConversionError(f"{what}: {type(error).__name__}: {error}") from error
        if not isinstance(converted, dict):
            msg = f"converting {self.kind} {source} to {version} returned no object"
            raise ConversionError(msg)
        converted["apiVersion"] = self._api_version(version)
        converted["kind"] = self.kind
        return converted

    def _check(self, before: KubeObject, after: KubeObject) -> None:
        old, new = before.get("metadata") or {}, after.get("metadata")
        if not isinstance(new, dict):
            msg = f"converting {self.kind} dropped its metadata"
            raise ConversionError(msg)
        for key in sorted(set(old) | set(new)):
            if key not in _KEPT_FREE and old.get(key) != new.get(key):
                msg = f"converting {self.kind} changed metadata.{key}, which it must keep"
                raise ConversionError(msg)
