"""CRD conversion webhooks (``conversion.strategy: Webhook``), called as apiextensions calls them.

A custom resource whose CRD names a conversion webhook is stored at the storage version and
converted by the webhook wherever another version is asked for: the body of a write at another
version before it is stored, the stored object before an update or patch at another version
applies to it and the answer after, every object of a get or list (a list in one review), every
event of a watch (one review per batch of events), and the object a mutating or validating
webhook asks for at another version. Objects already at the desired version are not sent.

The review is ``apiextensions.k8s.io/v1`` ``ConversionReview`` (or ``v1beta1``, the first the CRD
lists) with ``uid``, ``desiredAPIVersion`` and ``objects``, sent as admission webhooks are sent
(:mod:`~etctl.testing._apiserver.webhookclient`: ``caBundle``, ``url`` or ``service``) with a
30-second deadline on the server's clock. The answer is checked as ``webhook_converter.go``
checks it: ``apiVersion``/``kind``, the ``uid``, ``result.status: Success`` (else its message),
as many objects as were sent, each at the desired version, of the same kind, name, namespace and
uid; only labels and annotations are taken from the converted metadata. Any failure fails the
request with 500 ``conversion webhook for <group/version, Kind=...> failed: ...``: nothing
half-converted is ever stored or answered.

Strategy ``None`` (or no CRD) converts by rewriting ``apiVersion``, as before.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from etctl.errors import ApiError
from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.store import CRDS, Event, Store, metadata
from etctl.testing._apiserver.webhookclient import CallError, WebhookClient
from etctl.testing._apiserver.webhookconfigs import ClientConfig, client_config

__all__ = ["CONVERSION_TIMEOUT_SECONDS", "Converter"]

CONVERSION_TIMEOUT_SECONDS = 30
"""How long a conversion webhook may take (the apiextensions client's timeout)."""


@dataclass(frozen=True, slots=True)
class _Webhook:
    client: ClientConfig
    review_versions: tuple[str, ...]


class Converter:
    """The conversions of one server's custom resources.

    Args:
        store: where CRDs are read (every change is seen).
        client: calls the webhooks.
    """

    def __init__(self, store: Store, client: WebhookClient) -> None:
        self._client = client
        self._hooks: dict[tuple[str, str], _Webhook] = {}
        store.subscribe(self._observe)

    def _observe(self, event: Event) -> None:
        if event.resource != CRDS:
            return
        spec = event.object.get("spec") or {}
        key = (str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or ""))
        conversion = spec.get("conversion") or {}
        webhook = conversion.get("webhook") or {}
        if event.type == "DELETED" or conversion.get("strategy") != "Webhook":
            self._hooks.pop(key, None)
            return
        versions = tuple(str(v) for v in webhook.get("conversionReviewVersions") or ())
        self._hooks[key] = _Webhook(client_config(webhook.get("clientConfig")), versions)

    def webhook(self, info: ResourceInfo) -> bool:
        """Whether ``info``'s objects are converted by a webhook."""
        return info.key in self._hooks

    async def convert(self, info: ResourceInfo, obj: KubeObject, version: str) -> KubeObject:
        """``obj`` at ``version`` (one object).

        Raises:
            etctl.errors.ApiError: the webhook failed (500).
        """
        return (await self.convert_all(info, [obj], version))[0]

    async def convert_all(
        self, info: ResourceInfo, objects: Sequence[KubeObject], version: str
    ) -> list[KubeObject]:
        """``objects`` at ``version``, converted in one review (those already there untouched).

        Raises:
            etctl.errors.ApiError: the webhook failed (500).
        """
        api_version = info.api_version(version)
        hook = self._hooks.get(info.key)
        if hook is None:
            return [with_api_version(obj, api_version) for obj in objects]
        pending = [i for i, obj in enumerate(objects) if obj.get("apiVersion") != api_version]
        if not pending:
            return list(objects)
        source = str(objects[pending[0]].get("apiVersion") or "")
        shown = f"{source}, Kind={info.kind}"
        try:
            converted = await self._review(hook, [objects[i] for i in pending], api_version)
        except _Failed as failure:
            raise _error(f"conversion webhook for {shown} failed: {failure}") from None
        if len(converted) != len(pending):
            raise _error(
                f"conversion webhook for {shown} returned {len(converted)} objects, expected "
                f"{len(pending)}"
            )
        out = list(objects)
        for index, (position, result) in enumerate(zip(pending, converted, strict=True)):
            problem = _check(objects[position], result, api_version, info.kind)
            if problem:
                raise _error(
                    f"conversion webhook for {shown} returned invalid converted object at index "
                    f"{index}: {problem}"
                )
            out[position] = _restore_metadata(objects[position], result)
        return out

    async def _review(
        self, hook: _Webhook, objects: list[KubeObject], api_version: str
    ) -> list[Any]:
        version = next((v for v in hook.review_versions if v in ("v1", "v1beta1")), None)
        if version is None:
            msg = "no supported conversion review versions"
            raise _Failed(msg)
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": f"apiextensions.k8s.io/{version}",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": list(objects)},
        }
        try:
            answer = await self._client.post(
                hook.client, review, timeout=CONVERSION_TIMEOUT_SECONDS
            )
        except CallError as error:
            raise _Failed(str(error)) from None
        return _converted_objects(answer, uid, version)


class _Failed(Exception):
    pass


def _error(message: str) -> ApiError:
    return st.internal_error(message)


def _converted_objects(answer: Any, uid: str, version: str) -> list[Any]:
    """The ``convertedObjects`` of a valid, successful answer."""
    if not isinstance(answer, Mapping):
        msg = "the answer is not a ConversionReview"
        raise _Failed(msg)
    if version == "v1":
        kind = (str(answer.get("apiVersion") or ""), str(answer.get("kind") or ""))
        if kind != ("apiextensions.k8s.io/v1", "ConversionReview"):
            msg = (
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
                f"got {kind[0] or '/'}, Kind={kind[1]}"
            )
            raise _Failed(msg)
    response = answer.get("response")
    if not isinstance(response, Mapping):
        msg = "no response provided"
        raise _Failed(msg)
    if version == "v1" and response.get("uid") != uid:
        msg = f'expected response.uid="{uid}", got "{response.get("uid") or ""}"'
        raise _Failed(msg)
    result = response.get("result")
    if not isinstance(result, Mapping):
        result = {}
    if result.get("status") != "Success":
        message = result.get("message")
        if message:
            raise _Failed(str(message))
        msg = f"response.result.status was '{result.get('status') or ''}', not 'Success'"
        raise _Failed(msg)
    converted = response.get("convertedObjects")
    return list(converted) if isinstance(converted, list) else []


def _check(original: KubeObject, converted: Any, api_version: str, kind: str) -> str:
    """Why a converted object is refused, or ``""``."""
    if not isinstance(converted, Mapping):
        return "the object is not a JSON object"
    if converted.get("apiVersion") != api_version:
        return (
            f"invalid groupVersion (expected {api_version}, received "
            f"{converted.get('apiVersion') or ''})"
        )
    if converted.get("kind") != kind:
        return f"invalid kind (expected {kind}, received {converted.get('kind') or ''})"
    before, after = metadata(original), metadata(converted)
    for key in ("name", "namespace", "uid"):
        if (before.get(key) or "") != (after.get(key) or ""):
            return f"must have the same {key}: {before.get(key) or ''} != {after.get(key) or ''}"
    return ""


def _restore_metadata(original: KubeObject, converted: Mapping[str, Any]) -> KubeObject:
    """The converted object with the original's metadata, but for labels and annotations."""
    out = json.loads(json.dumps(converted))
    meta = dict(metadata(original))
    after = metadata(converted)
    for key in ("labels", "annotations"):
        if after.get(key):
            meta[key] = after[key]
        else:
            meta.pop(key, None)
    out["metadata"] = meta
    result: KubeObject = out
    return result
