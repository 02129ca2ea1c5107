"""A kind's own validation and model defaults as admission handlers (ModelAdmission)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from etctl.common import (
    SCALEIN,
    ModelAdmission,
    validate_job_update,
    validate_scalein,
    validate_scaler_update,
)
from etctl.common._admission import field_error
from etctl.common._crd import CRDVersion, CustomResource
from etctl.errors import Invalid
from etctl.jobs.tfjob import TFJOB, TFJobPlugin
from etctl.runtime import AdmissionRequest, FieldError, KubeObject


def review(obj: KubeObject, *, version: str = "v1", operation: str = "CREATE") -> Any:
    group, _, _ = obj["apiVersion"].rpartition("/")
    return AdmissionRequest.model_validate(
        {
            "uid": "u-1",
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": "x"},
            "operation": operation,
            "object": obj,
        }
    )


def tfjob(name: str = "mnist", **replica_specs: Any) -> KubeObject:
    specs = replica_specs or {
        "Worker": {
            "replicas": 2,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}},
        }
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": specs, "runPolicy": {"cleanPodPolicy": "None"}},
    }


def admission() -> ModelAdmission[Any]:
    plugin = TFJobPlugin()
    return ModelAdmission(TFJOB, plugin.validate, update_rules=validate_job_update)


def refusal(error: pytest.ExceptionInfo[Invalid]) -> list[tuple[str, str]]:
    return [(cause["field"], cause["reason"]) for cause in error.value.causes]


def test_a_problem_line_is_a_field_error() -> None:
    assert field_error("spec.tfReplicaSpecs.Worker.replicas: -1 is below 0; set 0 or more") == (
        FieldError("spec.tfReplicaSpecs.Worker.replicas", "-1 is below 0; set 0 or more")
    )
    assert field_error("spec.mpiReplicaSpecs.Launcher: missing; add one").type == (
        "FieldValueRequired"
    )
    assert field_error("spec.containers[0].name: bad").field == "spec.containers[0].name"
    assert field_error("no path here") == FieldError("", "no path here")
    assert field_error("a b: not a path").field == ""


async def test_a_tfjob_with_two_chiefs_is_refused_as_kube_apiserver_refuses() -> None:
    chief = {
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}},
    }
    bad = tfjob(Chief=chief, Master=copy.deepcopy(chief))
    with pytest.raises(Invalid) as refused:
        await admission().validate_create(bad, review(bad))
    assert refused.value.status == 422
    assert refused.value.reason == "Invalid"
    assert refused.value.message.startswith('TFJob.kubeflow.org "mnist" is invalid: [')
    assert refusal(refused) == [
        ("spec.tfReplicaSpecs.Chief.replicas", "FieldValueInvalid"),
        ("spec.tfReplicaSpecs.Master.replicas", "FieldValueInvalid"),
        ("spec.tfReplicaSpecs", "FieldValueInvalid"),
    ]
    assert refused.value.details["group"] == "kubeflow.org"
    assert refused.value.details["kind"] == "TFJob"


async def test_a_manifest_that_does_not_parse_is_refused_with_the_parse_problems() -> None:
    bad = tfjob(Worker={"replicas": "many", "template": {"spec": {"containers": []}}})
    with pytest.raises(Invalid) as refused:
        await admission().validate_create(bad, review(bad))
    fields = [field for field, _ in refusal(refused)]
    assert "spec.tfReplicaSpecs.Worker.replicas" in fields
    assert "spec.tfReplicaSpecs.Worker.template" in fields


async def test_the_defaults_are_the_models_and_unknown_fields_stay() -> None:
    sent = tfjob(
        worker={
            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}},
        }
    )
    sent["spec"]["someFutureField"] = {"kept": True}
    defaulted = await admission().default(copy.deepcopy(sent), review(sent))
    assert list(defaulted["spec"]["tfReplicaSpecs"]) == ["Worker"]  # kubeflow's camel case
    assert defaulted["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 1
    assert defaulted["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] == "Never"
    assert defaulted["spec"]["someFutureField"] == {"kept": True}
    assert defaulted["metadata"] == sent["metadata"]
    assert await admission().validate_create(defaulted, review(defaulted)) == []
    unparsable = tfjob(Worker={"replicas": "many"})
    assert await admission().default(copy.deepcopy(unparsable), review(unparsable)) == (unparsable)


def running(obj: KubeObject) -> KubeObject:
    obj = copy.deepcopy(obj)
    obj["status"] = {
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": [{"type": "Running", "status": "True"}],
    }
    return obj


async def update(old: KubeObject, new: KubeObject) -> None:
    await admission().validate_update(old, new, review(new, operation="UPDATE"))


async def test_a_running_job_keeps_its_templates_unless_suspended() -> None:
    old = running(tfjob())
    new = copy.deepcopy(old)
    new["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "tf:3"
    with pytest.raises(Invalid) as refused:
        await update(old, new)
    assert refusal(refused) == [("spec.tfReplicaSpecs.Worker.template", "FieldValueForbidden")]
    assert "suspend the job" in refused.value.message
    scaled = copy.deepcopy(old)
    scaled["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
    await update(old, scaled)  # counts change: that is scaling
    suspended = copy.deepcopy(new)
    suspended["spec"]["runPolicy"]["suspend"] = True
    await update(old, suspended)
    not_started = tfjob()
    await update(not_started, {**copy.deepcopy(new), "status": {}})
    added = copy.deepcopy(old)
    added["spec"]["tfReplicaSpecs"]["PS"] = copy.deepcopy(added["spec"]["tfReplicaSpecs"]["Worker"])
    with pytest.raises(Invalid) as refused:
        await update(old, added)
    assert refusal(refused) == [("spec.tfReplicaSpecs.PS", "FieldValueForbidden")]


async def test_managed_by_never_changes() -> None:
    old = tfjob()
    new = copy.deepcopy(old)
    new["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    with pytest.raises(Invalid) as refused:
        await update(old, new)
    assert refusal(refused) == [("spec.runPolicy.managedBy", "FieldValueForbidden")]
    assert "unset to kueue.x-k8s.io/multikueue" in refused.value.message
    same_operator = copy.deepcopy(old)
    same_operator["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/training-operator"
    await update(old, same_operator)  # the value naming etctl's upstream is etctl


async def test_updates_ratchet_and_never_block_a_deletion() -> None:
    legacy = tfjob(name="x" * 70)  # created before the rule, or with the webhook down
    labelled = copy.deepcopy(legacy)
    labelled["metadata"]["labels"] = {"team": "a"}
    await update(legacy, labelled)  # an old problem is not held against the update
    broken = copy.deepcopy(labelled)
    broken["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = -1
    with pytest.raises(Invalid) as refused:
        await update(labelled, broken)
    assert refusal(refused) == [("spec.tfReplicaSpecs.Worker.replicas", "FieldValueInvalid")]
    terminating = copy.deepcopy(broken)
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    await update(broken, terminating)


def scalein(**spec: Any) -> KubeObject:
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "ScaleIn",
        "metadata": {"name": "shrink", "namespace": "default"},
        "spec": {"selector": {"name": "elastic"}, "toDelete": {"count": 1}, **spec},
    }


async def test_a_scaler_naming_no_job_is_refused_and_a_started_one_is_frozen() -> None:
    scalers = ModelAdmission(SCALEIN, validate_scalein, update_rules=validate_scaler_update)
    nameless = scalein(selector={})
    with pytest.raises(Invalid) as refused:
        await scalers.validate_create(nameless, review(nameless, version="v1alpha1"))
    assert refusal(refused) == [("spec.selector.name", "FieldValueRequired")]
    assert refused.value.message.startswith(
        'ScaleIn.kai.alibabacloud.com "shrink" is invalid: spec.selector.name: missing'
    )
    started = scalein()
    started["status"] = {"step": "Draining"}
    changed = copy.deepcopy(started)
    changed["spec"]["toDelete"]["count"] = 2
    with pytest.raises(Invalid) as refused:
        await scalers.validate_update(
            started, changed, review(changed, version="v1alpha1", operation="UPDATE")
        )
    assert refusal(refused) == [("spec", "FieldValueForbidden")]
    adopted = scalein()  # adopted or not: the CRD's rule says the same
    moved = copy.deepcopy(adopted)
    moved["spec"]["selector"]["name"] = "another"
    with pytest.raises(Invalid) as refused:
        await scalers.validate_update(
            adopted, moved, review(moved, version="v1alpha1", operation="UPDATE")
        )
    assert refusal(refused) == [("spec.selector", "FieldValueForbidden")]
    recounted = copy.deepcopy(adopted)
    recounted["spec"]["toDelete"]["count"] = 2
    await scalers.validate_update(
        adopted, recounted, review(recounted, version="v1alpha1", operation="UPDATE")
    )


class _Widgets(BaseModel):
    size: int = 3


class _Aliased(BaseModel):
    """A kind whose model reads ``spec`` into a field of another name."""

    model_config = ConfigDict(populate_by_name=True)

    kind: str = "Gadget"
    body: _Widgets = Field(default_factory=_Widgets, alias="spec")


async def test_a_spec_read_through_an_alias_is_defaulted_too() -> None:
    gadgets = CustomResource(
        group="example.com",
        kind="Gadget",
        plural="gadgets",
        versions=(CRDVersion(name="v1", model=_Aliased),),
    )
    sent: KubeObject = {"apiVersion": "example.com/v1", "kind": "Gadget", "spec": {"other": 1}}
    defaulted = await ModelAdmission(gadgets, lambda _gadget: []).default(
        copy.deepcopy(sent), review(sent)
    )
    assert defaulted["spec"] == {"size": 3, "other": 1}
