"""``ConversionReview`` v1 over HTTP: the ``/convert`` endpoint of every kind's converter.

:class:`ConversionEndpoint` decodes a review (pydantic at the boundary; a malformed one gets HTTP
400 with the reason and a log line), converts every object with the converter of its kind
(:class:`~etctl.runtime.HubAndSpoke`), all or nothing, and answers ``Success`` with the objects
or ``Failure`` with the first failure's message, which the API server passes on to the client.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from etctl.log import get_logger
from etctl.runtime._admission_handlers import json_response, unparsed
from etctl.runtime._conversion import ConversionError, HubAndSpoke, split_api_version
from etctl.runtime._http_server import Request, Response
from etctl.runtime._objects import KubeObject

__all__ = ["ConversionEndpoint", "ConversionReview"]

log = get_logger(__name__)


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
            group, _ = split_api_version(str(obj.get("apiVersion", "")))
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
