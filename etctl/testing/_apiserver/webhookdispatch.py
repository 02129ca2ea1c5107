"""Admission webhooks: every configuration of one server, and the calls a request makes to them.

:class:`WebhookDispatcher` keeps the server's mutating and validating webhook configurations
(read again on every change, configurations in name order, their webhooks in order) and hands each
HTTP write a :class:`RequestAdmission`, the
:class:`~etctl.testing._apiserver.admissionrequest.Admission` the write path calls. As
kube-apiserver's dispatchers do:

* **Mutating** webhooks are called one after the other; each sees the object as the previous ones
  left it, and a JSON patch it returns is applied (then the object is defaulted again, and a
  custom resource pruned by its schema). When a webhook changed the object, the webhooks with
  ``reinvocationPolicy: IfNeeded`` called before it are called once more, after the others.
* **Validating** webhooks are called concurrently; the first refusal (in configuration order)
  is the answer.
* A request the webhook refuses fails with the webhook's ``Status`` as ``ToStatusErr`` words it
  (``admission webhook "x" denied the request: ...``, 403 unless the webhook gives a code). A
  webhook that cannot be called, times out, or answers a malformed review fails the request with
  500 ``failed calling webhook "x": ...`` under ``failurePolicy: Fail``, and is skipped (and
  logged) under ``Ignore``. A dry run is refused (400) by a webhook whose ``sideEffects`` are not
  ``None`` or ``NoneOnDryRun``. A webhook's warnings reach the client as ``Warning`` headers.
* Requests on webhook configurations themselves are never sent to webhooks.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from etctl.errors import ApiError, api_error_from_status
from etctl.log import get_logger
from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver._jsonpatch import apply_json_patch
from etctl.testing._apiserver._patcherror import PatchError
from etctl.testing._apiserver.admissionrequest import AdmissionAttributes
from etctl.testing._apiserver.authn import UserInfo
from etctl.testing._apiserver.custom import CustomResourceStrategy
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.store import Event, Store
from etctl.testing._apiserver.webhookclient import CallError, WebhookClient
from etctl.testing._apiserver.webhookconfigs import Webhook, webhooks_of
from etctl.testing._apiserver.webhookmatch import Invocation, admission_namespace, should_call

__all__ = [
    "MUTATING",
    "VALIDATING",
    "Convert",
    "RequestAdmission",
    "WebhookDispatcher",
]

log = get_logger(__name__)

MUTATING = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")

Convert = Callable[[ResourceInfo, KubeObject, str], Awaitable[KubeObject]]
"""Convert an object of a resource to another of its versions (a conversion webhook, maybe)."""


async def _relabel(info: ResourceInfo, obj: KubeObject, version: str) -> KubeObject:
    return with_api_version(obj, info.api_version(version))


class _CallFailed(Exception):
    """A webhook could not be called or answered nonsense (``ErrCallingWebhook``)."""

    def __init__(self, webhook: Webhook, reason: str) -> None:
        super().__init__(f'failed calling webhook "{webhook.name}": {reason}')


class WebhookDispatcher:
    """The admission webhooks of one server.

    Args:
        store: the server's store (configurations, namespaces, Services and Endpoints).
        client: calls the webhooks.
        convert: converts an object to the version a webhook asked for (``apiVersion`` only,
            unless the server has conversion webhooks).
    """

    def __init__(self, store: Store, client: WebhookClient, convert: Convert = _relabel) -> None:
        self.store = store
        self.client = client
        self.convert = convert
        self.mutating: list[Webhook] = []
        self.validating: list[Webhook] = []
        store.subscribe(self._observe)

    def _observe(self, event: Event) -> None:
        if event.resource == MUTATING:
            self.mutating = self._load(MUTATING, mutating=True)
        elif event.resource == VALIDATING:
            self.validating = self._load(VALIDATING, mutating=False)

    def _load(self, resource: tuple[str, str], *, mutating: bool) -> list[Webhook]:
        configs = sorted(
            (obj for _key, obj in self.store.items(resource)),
            key=lambda obj: str((obj.get("metadata") or {}).get("name")),
        )
        return [hook for obj in configs for hook in webhooks_of(obj, mutating=mutating)]

    def admission(self, user: UserInfo, warnings: list[str]) -> RequestAdmission:
        """The admission of one request by ``user``; webhooks' warnings go to ``warnings``."""
        return RequestAdmission(self, user, warnings)


def _fail(hook: Webhook, failure: _CallFailed) -> None:
    """A failed call: logged and skipped under ``failurePolicy: Ignore``, else a 500."""
    if hook.failure_policy == "Ignore":
        log.warning("failed calling webhook, failing open", webhook=hook.name, error=str(failure))
        return
    log.warning("failed calling webhook, failing closed", webhook=hook.name, error=str(failure))
    raise st.internal_error(str(failure)) from None


def _exempt(attributes: AdmissionAttributes) -> bool:
    return attributes.info.key in (MUTATING, VALIDATING)


class RequestAdmission:
    """The webhooks' admission of one HTTP request."""

    def __init__(self, dispatcher: WebhookDispatcher, user: UserInfo, warnings: list[str]) -> None:
        self._dispatcher = dispatcher
        self._user = user
        self._warnings = warnings

    # -- mutating -------------------------------------------------------------------------------

    async def mutate(self, attributes: AdmissionAttributes) -> KubeObject | None:
        """Call the mutating webhooks in order; the object they leave, or None if unchanged."""
        hooks = self._dispatcher.mutating
        if not hooks or _exempt(attributes):
            return None
        original = attributes.object
        reinvocable: list[str] = []  # IfNeeded webhooks called since the last change
        reinvoke: set[str] = set()
        changed_any = False
        for hook in hooks:
            invocation = should_call(hook, attributes, self._dispatcher.store)
            if invocation is None:
                continue
            changed = await self._call_mutating(invocation, attributes)
            if changed:
                changed_any = True
                reinvoke.update(reinvocable)
                reinvocable.clear()
            if hook.reinvocation == "IfNeeded":
                reinvocable.append(hook.uid)
        if changed_any and reinvoke:
            for hook in hooks:
                if hook.uid not in reinvoke:
                    continue
                invocation = should_call(hook, attributes, self._dispatcher.store)
                if invocation is not None:
                    await self._call_mutating(invocation, attributes)
        if attributes.object is original:
            return None
        return attributes.object

    async def _call_mutating(self, invocation: Invocation, attributes: AdmissionAttributes) -> bool:
        """Call one mutating webhook; apply its patch to ``attributes.object``; True if changed."""
        hook = invocation.webhook
        try:
            response = await self._call(invocation, attributes)
        except _CallFailed as failure:
            _fail(hook, failure)
            return False
        if not response.get("allowed"):
            raise _denied(attributes, hook, response.get("status"))
        operations = self._operations(hook, response)
        if not operations:
            return False
        if attributes.object is None:
            raise st.internal_error(
                f'admission webhook "{hook.name}" attempted to modify the object, which is not '
                "supported for this operation"
            )
        info, version = attributes.info, attributes.version
        seen = await self._versioned(attributes.object, attributes, invocation.version)
        try:
            patched = apply_json_patch(seen, operations)
        except PatchError as error:
            raise st.internal_error(error.detail or error.message) from None
        if not isinstance(patched, dict):
            raise st.internal_error("the patched object is not a JSON object")
        patched = copy.deepcopy(patched)
        if attributes.kind is None:
            if invocation.version != version:
                patched = dict(await self._dispatcher.convert(info, patched, version))
            patched["apiVersion"], patched["kind"] = info.api_version(version), info.kind
            if not isinstance(patched.get("metadata"), dict):
                patched["metadata"] = {}
            if isinstance(info.strategy, CustomResourceStrategy):
                info.strategy.apply_schema(patched, version)
            info.strategy.defaults(patched)
        changed = patched != attributes.object
        attributes.object = patched
        return changed

    @staticmethod
    def _operations(hook: Webhook, response: Mapping[str, Any]) -> list[Any]:
        """The JSON patch of a mutating webhook's answer (empty: nothing to apply).

        A patch that does not decode, or of another type, is a failed call: the request fails
        under ``failurePolicy: Fail``, and the patch is dropped under ``Ignore``.
        """
        patch = response.get("patch")
        if not patch:
            return []
        reason = ""
        try:
            operations = json.loads(base64.b64decode(str(patch), validate=True))
        except ValueError as error:
            reason = f"received undecodable patch in webhook response: {error}"
        else:
            if not isinstance(operations, list):
                reason = "received undecodable patch in webhook response: not a JSON patch"
            elif operations and response.get("patchType") != "JSONPatch":
                reason = f'unsupported patch type "{response.get("patchType")}"'
            else:
                return operations
        _fail(hook, _CallFailed(hook, reason))
        return []

    # -- validating -----------------------------------------------------------------------------

    async def validate(self, attributes: AdmissionAttributes) -> None:
        """Call the matching validating webhooks concurrently; raise the first refusal."""
        hooks = self._dispatcher.validating
        if not hooks or _exempt(attributes):
            return
        invocations = [
            invocation
            for hook in hooks
            if (invocation := should_call(hook, attributes, self._dispatcher.store)) is not None
        ]
        if not invocations:
            return
        if len(invocations) == 1:  # in this task: gather would start one for it
            await self._call_validating(invocations[0], attributes)
            return
        results = await asyncio.gather(
            *(self._call_validating(invocation, attributes) for invocation in invocations),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _call_validating(
        self, invocation: Invocation, attributes: AdmissionAttributes
    ) -> None:
        hook = invocation.webhook
        try:
            response = await self._call(invocation, attributes)
        except _CallFailed as failure:
            _fail(hook, failure)
            return
        if not response.get("allowed"):
            raise _denied(attributes, hook, response.get("status"))

    # -- one call -------------------------------------------------------------------------------

    async def _versioned(
        self, obj: KubeObject | None, attributes: AdmissionAttributes, version: str
    ) -> Any:
        if obj is None or attributes.kind is not None:
            return obj
        if version == attributes.version:
            return obj
        return await self._dispatcher.convert(attributes.info, obj, version)

    async def _call(
        self, invocation: Invocation, attributes: AdmissionAttributes
    ) -> Mapping[str, Any]:
        """Send the AdmissionReview; the verified ``response``.

        Raises:
            _CallFailed: the call failed or the answer is not a valid review.
            etctl.errors.BadRequest: a dry run, and the webhook has side effects.
        """
        hook = invocation.webhook
        if attributes.dry_run and hook.side_effects not in ("None", "NoneOnDryRun"):
            raise st.bad_request(f'admission webhook "{hook.name}" does not support dry run')
        review_version = next((v for v in hook.review_versions if v in ("v1", "v1beta1")), None)
        if review_version is None:
            raise _CallFailed(
                hook, "webhook does not accept known AdmissionReview versions (v1, v1beta1)"
            )
        uid = str(uuid.uuid4())
        request = await self._review_request(uid, invocation, attributes)
        review = {
            "kind": "AdmissionReview",
            "apiVersion": f"admission.k8s.io/{review_version}",
            "request": request,
        }
        try:
            answer = await self._dispatcher.client.post(
                hook.client, review, timeout=hook.timeout_seconds
            )
        except CallError as error:
            raise _CallFailed(hook, f"failed to call webhook: {error}") from None
        try:
            response = _verify(answer, uid, review_version, mutating=hook.mutating)
        except ValueError as error:
            raise _CallFailed(hook, f"received invalid webhook response: {error}") from None
        for warning in response.get("warnings") or []:
            if isinstance(warning, str):
                self._warnings.append(warning)
        return response

    async def _review_request(
        self, uid: str, invocation: Invocation, attributes: AdmissionAttributes
    ) -> dict[str, Any]:
        info = attributes.info
        request_group, request_version, request_kind = attributes.gvk()
        if attributes.kind is None:
            group, version, kind = info.group, invocation.version, info.kind
        else:
            group, version, kind = request_group, request_version, request_kind
        user: dict[str, Any] = {"username": self._user.name}
        if self._user.uid:
            user["uid"] = self._user.uid
        if self._user.groups:
            user["groups"] = list(self._user.groups)
        request: dict[str, Any] = {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {
                "group": info.group,
                "version": invocation.version,
                "resource": info.plural,
            },
            "requestKind": {
                "group": request_group,
                "version": request_version,
                "kind": request_kind,
            },
            "requestResource": {
                "group": info.group,
                "version": attributes.version,
                "resource": info.plural,
            },
        }
        if attributes.subresource:
            request["subResource"] = attributes.subresource
            request["requestSubResource"] = attributes.subresource
        if attributes.name:
            request["name"] = attributes.name
        namespace = admission_namespace(attributes)
        if namespace:
            request["namespace"] = namespace
        request["operation"] = attributes.operation
        request["userInfo"] = user
        request["object"] = await self._versioned(attributes.object, attributes, invocation.version)
        request["oldObject"] = await self._versioned(
            attributes.old_object, attributes, invocation.version
        )
        request["dryRun"] = attributes.dry_run
        request["options"] = dict(attributes.options) or None
        return request


def _verify(answer: Any, uid: str, version: str, *, mutating: bool) -> Mapping[str, Any]:
    """The ``response`` of a review, checked as ``VerifyAdmissionResponse`` checks it."""
    if not isinstance(answer, Mapping):
        msg = f"expected a JSON object, got {type(answer).__name__}"
        raise ValueError(msg)
    response = answer.get("response")
    if not isinstance(response, Mapping):
        msg = "webhook response was absent"
        raise ValueError(msg)
    if version == "v1":
        if response.get("uid") != uid:
            msg = f'expected response.uid="{uid}", got "{response.get("uid") or ""}"'
            raise ValueError(msg)
        got = (str(answer.get("apiVersion") or "/"), str(answer.get("kind") or ""))
        if got != ("admission.k8s.io/v1", "AdmissionReview"):
            api_version = got[0] if "/" in got[0] else f"/{got[0]}"
            msg = (
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
                f"{api_version}, Kind={got[1]}"
            )
            raise ValueError(msg)
        _verify_patch(response, mutating=mutating)
        return response
    # v1beta1 checked neither the uid nor the patch type; only JSON patches exist.
    if not mutating:
        return {k: v for k, v in response.items() if k not in ("patch", "patchType")}
    return {**response, "patchType": "JSONPatch"} if response.get("patch") else response


def _verify_patch(response: Mapping[str, Any], *, mutating: bool) -> None:
    patch, patch_type = response.get("patch"), response.get("patchType")
    if mutating and patch and patch_type is None:
        msg = "webhook returned response.patch but not response.patchType"
    elif mutating and not patch and patch_type is not None:
        msg = "webhook returned response.patchType but not response.patch"
    elif not mutating and patch:
        msg = "validating webhook may not return response.patch"
    elif not mutating and patch_type is not None:
        msg = "validating webhook may not return response.patchType"
    else:
        return
    raise ValueError(msg)


def _denied(attributes: AdmissionAttributes, hook: Webhook, result: Any) -> ApiError:
    """The refusal of ``hook``, as ``ToStatusErr`` makes it."""
    status = dict(result) if isinstance(result, Mapping) else {}
    given = status.get("code")
    code = given if isinstance(given, int) and given else 403
    name = attributes.name or "Unknown"
    denied_by = f'admission webhook "{hook.name}" denied the request'
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = status.get("details")
    if not isinstance(details, Mapping):
        if code == 500:
            details = {"causes": [{"message": message}]}
        else:
            group = attributes.info.group
            details = {
                "name": name,
                **({"group": group} if group else {}),
                "kind": attributes.info.plural,
            }
    if code == 500:
        prefix = "Internal error occurred"
    else:
        resource = st.group_resource(attributes.info.group, attributes.info.plural)
        prefix = f"{resource} {json.dumps(name)} is forbidden"
    reason = status.get("reason") or ("InternalError" if code == 500 else "Forbidden")
    body = {"message": f"{prefix}: {message}", "reason": reason, "details": details}
    return api_error_from_status(code, body)
