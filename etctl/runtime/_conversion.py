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

:class:`ConversionEndpoint` is the HTTP side (the ``/convert`` path): a malformed review gets
HTTP 400 with the reason and a log line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from etctl.errors import EtctlError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._admission_handlers import json_response, unparsed
from etctl.runtime._http_server import Request, Response
from etctl.runtime._objects import KubeObject

__all__ = [
    "ConversionEndpoint",
    "ConversionError",
    "ConversionReview",
    "ConvertFunc",
    "HubAndSpoke",
    "Spoke",
]

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


def _split(api_version: str) -> tuple[str, str]:
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
        group, source = _split(str(obj.get("apiVersion", "")))
        wanted_group, target = _split(desired)
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


class _ReviewModel(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class _ConversionRequest(_ReviewModel):
    uid: str = Field(min_length=1)
    desired_api_version: str = Field(alias="desiredAPIVersion", min_length=1)
    objects: list[dict[str, Any]]


class ConversionReview(_ReviewModel):
    """A ``ConversionReview`` as the API server sends it."""

    api_version: Literal["apiextensions.k8s.io/v1"] = Field(alias="apiVersion")
    kind: Literal["ConversionReview"]
    request: _ConversionRequest


def _result(uid: str, objects: list[KubeObject] | None, message: str = "") -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid}
    if objects is None:
        response["result"] = {"status": "Failure", "message": message}
    else:
        response["convertedObjects"] = objects
        response["result"] = {"status": "Success"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": response,
    }


class ConversionEndpoint:
    """Serves the converters of several kinds at one path (``/convert``)."""

    def __init__(self) -> None:
        self._converters: dict[tuple[str, str], HubAndSpoke] = {}

    def register(self, converter: HubAndSpoke) -> None:
        """Serve ``converter`` for its kind.

        Raises:
            ValueError: that kind has a converter already.
        """
        key = (converter.group, converter.kind)
        if key in self._converters:
            msg = f"{converter.kind}.{converter.group} has a converter already"
            raise ValueError(msg)
        self._converters[key] = converter

    def convert(self, objects: list[KubeObject], desired: str) -> list[KubeObject]:
        """Every object in ``desired``, or the first failure.

        Raises:
            ConversionError: one object cannot be converted (the review then fails whole).
        """
        converted = []
        for obj in objects:
            group, _ = _split(str(obj.get("apiVersion", "")))
            converter = self._converters.get((group, str(obj.get("kind", ""))))
            if converter is None:
                msg = f"no converter for {obj.get('kind')} in {group or 'the core group'}"
                raise ConversionError(msg)
            converted.append(converter.convert(obj, desired))
        return converted

    async def __call__(self, http: Request) -> Response:
        """Decode the review, convert every object, answer (see the module docs)."""
        try:
            review = ConversionReview.model_validate_json(http.body)
        except ValidationError as error:
            reason = unparsed("a ConversionReview", error)
            log.warning("refused a malformed conversion review", path=http.path, reason=reason)
            return json_response(400, _result("", None, reason))
        request = review.request
        try:
            objects = self.convert(request.objects, request.desired_api_version)
        except ConversionError as error:
            log.info("conversion failed", uid=request.uid, reason=str(error))
            return json_response(200, _result(request.uid, None, str(error)))
        return json_response(200, _result(request.uid, objects))
