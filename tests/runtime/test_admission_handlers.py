"""Validators and defaulters as admission handlers, and the endpoint that decodes reviews."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from etctl.errors import ConfigError, Forbidden
from etctl.runtime import (
    REGISTRY,
    AdmissionEndpoint,
    AdmissionRequest,
    AdmissionResponse,
    FieldError,
    KubeObject,
    invalid,
)
from etctl.runtime._admission import review_response
from etctl.runtime._admission_handlers import defaulting_handler, validating_handler
from etctl.runtime._http_server import Request
from etctl.testing._apiserver._jsonpatch import apply_json_patch
from tests.runtime._webhooks import admission_review


def greeting(**spec: Any) -> KubeObject:
    return {
        "apiVersion": "example.etctl.dev/v1",
        "kind": "Greeting",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": spec,
    }


def request(operation: str, obj: KubeObject | None, old: KubeObject | None = None) -> Any:
    return AdmissionRequest.model_validate(admission_review(operation, obj, old=old)["request"])


class Judge:
    """A validator: refuses an empty name; warns about a shout; records what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    async def validate_create(self, obj: KubeObject, req: AdmissionRequest) -> Sequence[str]:
        self.seen.append(("create", obj["spec"]))
        return self._judge(obj)

    async def validate_update(
        self, old: KubeObject, new: KubeObject, req: AdmissionRequest
    ) -> Sequence[str]:
        self.seen.append(("update", (old["spec"], new["spec"])))
        if old["spec"].get("name") != new["spec"].get("name"):
            raise invalid(
                "Greeting",
                new["metadata"]["name"],
                [FieldError("spec.name", "may not change", "FieldValueForbidden")],
                group="example.etctl.dev",
            )
        return self._judge(new)

    async def validate_delete(self, obj: KubeObject, req: AdmissionRequest) -> Sequence[str]:
        self.seen.append(("delete", obj["spec"]))
        if obj["spec"].get("protected"):
            raise Forbidden("this greeting is protected", reason="Forbidden")
        return []

    def _judge(self, obj: KubeObject) -> list[str]:
        name = obj["spec"].get("name", "")
        if not name:
            raise invalid(
                "Greeting",
                obj["metadata"]["name"],
                [FieldError("spec.name", "Required value", "FieldValueRequired")],
                group="example.etctl.dev",
            )
        return [f"spec.name: {name!r} is shouted"] if name.isupper() else []


async def test_a_validator_judges_creates_updates_and_deletes() -> None:
    judge = Judge()
    handle = validating_handler(judge)
    ok = await handle(request("CREATE", greeting(name="world")))
    assert ok == AdmissionResponse.allow()
    shouted = await handle(request("CREATE", greeting(name="WORLD")))
    assert shouted.allowed
    assert shouted.warnings == ("spec.name: 'WORLD' is shouted",)
    refused = await handle(request("UPDATE", greeting(name="moon"), greeting(name="world")))
    assert not refused.allowed
    assert refused.status == {
        "metadata": {},
        "code": 422,
        "status": "Failure",
        "message": 'Greeting.example.etctl.dev "hello" is invalid: spec.name: may not change',
        "reason": "Invalid",
        "details": {
            "name": "hello",
            "kind": "Greeting",
            "group": "example.etctl.dev",
            "causes": [
                {"reason": "FieldValueForbidden", "message": "may not change", "field": "spec.name"}
            ],
        },
    }
    deleted = await handle(request("DELETE", None, greeting(protected=True)))
    assert (deleted.allowed, deleted.status["code"], deleted.status["reason"]) == (
        False,
        403,
        "Forbidden",
    )
    assert [what for what, _ in judge.seen] == ["create", "create", "update", "delete"]
    assert judge.seen[2][1] == ({"name": "world"}, {"name": "moon"})  # old first, then new
    assert (await handle(request("CONNECT", greeting()))).allowed


async def test_a_review_missing_its_objects_is_a_bad_request() -> None:
    handle = validating_handler(Judge())
    update = await handle(request("UPDATE", greeting(name="a")))
    assert (update.allowed, update.status["code"]) == (False, 400)
    delete = await handle(request("DELETE", None))
    assert (delete.allowed, delete.status["code"]) == (False, 400)


async def test_several_field_errors_read_as_the_api_server_words_them() -> None:
    error = invalid(
        "TFJob",
        "mnist",
        [
            FieldError("spec.tfReplicaSpecs[Chief].replicas", "2; at most one Chief"),
            FieldError("metadata.name", "too long"),
            FieldError("metadata.name", "too long"),
        ],
        group="kubeflow.org",
    )
    assert error.message == (
        'TFJob.kubeflow.org "mnist" is invalid: '
        "[spec.tfReplicaSpecs[Chief].replicas: 2; at most one Chief, metadata.name: too long]"
    )
    assert [cause["field"] for cause in error.causes] == [
        "spec.tfReplicaSpecs[Chief].replicas",
        "metadata.name",
    ]
    core = invalid("ConfigMap", "x", [FieldError("data", "too big")])
    assert core.message == 'ConfigMap "x" is invalid: data: too big'
    assert "group" not in core.details


class Brittle:
    """A validator and defaulter with a bug."""

    async def validate_create(self, obj: KubeObject, req: AdmissionRequest) -> Sequence[str]:
        return [obj["spec"]["missing"]]

    async def validate_update(
        self, old: KubeObject, new: KubeObject, req: AdmissionRequest
    ) -> Sequence[str]:
        raise ConfigError("updates are refused by configuration")

    async def validate_delete(self, obj: KubeObject, req: AdmissionRequest) -> Sequence[str]:
        return []

    async def default(self, obj: KubeObject, req: AdmissionRequest) -> KubeObject:
        obj["spec"]["greeting"] = "Hello"
        return None  # type: ignore[return-value]  # the bug: changed in place, not returned


def panics() -> float:
    value = REGISTRY.get_sample_value("controller_runtime_webhook_panics_total")
    return value or 0.0


async def test_a_handler_bug_is_a_500_logged_and_counted_never_a_crash() -> None:
    before = panics()
    with capture_logs() as logs:
        broken = await validating_handler(Brittle())(request("CREATE", greeting()))
        no_object = await defaulting_handler(Brittle())(request("CREATE", greeting()))
    assert (broken.allowed, broken.status["code"]) == (False, 500)
    assert "internal error in the validator" in broken.status["message"]
    assert (no_object.allowed, no_object.status["code"]) == (False, 500)
    assert panics() == before + 1
    failure = next(line for line in logs if line["event"] == "an admission handler failed")
    assert failure["handler"] == "validator"
    assert failure["kind"] == "Greeting"
    assert any(line["event"] == "a defaulter returned no object" for line in logs)
    denied = await validating_handler(Brittle())(request("UPDATE", greeting(), greeting()))
    assert (denied.allowed, denied.status["code"]) == (False, 403)
    assert denied.status["message"] == "updates are refused by configuration"


class Defaults:
    """A defaulter: a greeting defaults to Hello, a name to World; a shout is refused."""

    async def default(self, obj: KubeObject, req: AdmissionRequest) -> KubeObject:
        spec = obj.setdefault("spec", {})
        if spec.get("greeting") == "HEY":
            raise invalid(
                "Greeting", obj["metadata"]["name"], [FieldError("spec.greeting", "no shouting")]
            )
        spec.setdefault("greeting", "Hello")
        spec.setdefault("name", "World")
        return obj


async def test_a_defaulter_answers_with_the_patch_to_the_object_it_returns() -> None:
    handle = defaulting_handler(Defaults())
    sent = greeting(name="Ada")
    answer = await handle(request("CREATE", sent))
    assert answer.allowed
    assert list(answer.patch) == [{"op": "add", "path": "/spec/greeting", "value": "Hello"}]
    assert apply_json_patch(sent, list(answer.patch)) == greeting(name="Ada", greeting="Hello")
    assert sent == greeting(name="Ada")  # the defaulter changed a copy
    done = await handle(request("UPDATE", greeting(name="Ada", greeting="Hi"), sent))
    assert done == AdmissionResponse.allow()  # nothing to default: no patch at all
    assert (await handle(request("DELETE", None, sent))) == AdmissionResponse.allow()
    refused = await handle(request("CREATE", greeting(greeting="HEY")))
    assert (refused.allowed, refused.status["code"]) == (False, 422)


def test_the_review_carries_the_patch_base64_encoded_with_its_type() -> None:
    answer = AdmissionResponse.patched([{"op": "add", "path": "/a", "value": 1}], "careful")
    review = review_response(answer, uid="u-1", api_version="admission.k8s.io/v1beta1")
    assert review["apiVersion"] == "admission.k8s.io/v1beta1"
    response = review["response"]
    assert response["uid"] == "u-1"
    assert response["patchType"] == "JSONPatch"
    assert orjson.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/a", "value": 1}
    ]
    assert response["warnings"] == ["careful"]


def post(body: bytes, content_type: str = "application/json") -> Request:
    return Request("POST", "/validate", headers={"content-type": content_type}, body=body)


async def test_the_endpoint_answers_in_the_version_of_the_review() -> None:
    endpoint = AdmissionEndpoint(validating_handler(Judge()))
    review = admission_review("CREATE", greeting(name="x"), api_version="admission.k8s.io/v1beta1")
    answer = await endpoint(post(orjson.dumps(review), "application/json; charset=utf-8"))
    assert answer.status == 200
    body = orjson.loads(answer.body)
    assert body["apiVersion"] == "admission.k8s.io/v1beta1"
    assert body["response"]["uid"] == review["request"]["uid"]
    assert body["response"]["allowed"] is True


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (b"", "application/json", "the request body is empty"),
        (b"{}", "text/plain", "content type 'text/plain', expected application/json"),
        (b"{not json", "application/json", "Invalid JSON"),
        (b'{"apiVersion": "v1", "kind": "Pod"}', "application/json", "not an AdmissionReview"),
        (
            orjson.dumps({**admission_review("CREATE", greeting()), "request": {"uid": "u"}}),
            "application/json",
            "not an AdmissionReview: request.kind: Field required",
        ),
    ],
)
async def test_a_malformed_review_is_a_400_with_the_reason_and_a_log_line(
    body: bytes, content_type: str, reason: str
) -> None:
    endpoint = AdmissionEndpoint(validating_handler(Judge()))
    with capture_logs() as logs:
        answer = await endpoint(post(body, content_type))
    assert answer.status == 400
    response = orjson.loads(answer.body)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert reason in response["status"]["message"]
    (line,) = [line for line in logs if line["event"] == "refused a malformed admission review"]
    assert reason in line["reason"]
