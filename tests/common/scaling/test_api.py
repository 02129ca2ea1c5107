import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from etctl.common import crd_manifest
from etctl.common._scaling.api import (
    DEFAULT_TIMEOUT_SECONDS,
    SCALEIN,
    SCALEINS,
    SCALEOUT,
    SCALEOUTS,
    ElasticWorkersStatus,
    EnvVar,
    ScaleIn,
    ScaleInStatus,
    ScaleOut,
    ScaleStep,
    ToDelete,
    validate_scalein,
    validate_scaleout,
)
from etctl.common._validation import parse_problems
from etctl.runtime import Resource
from etctl.testing import ClusterTarget
from tests.schema_support import (
    EXAMPLES,
    admitted,
    apply_defaults,
    as_created,
    conformance_problems,
    crd_schema,
    load_document,
    load_yaml,
    refused,
)

SCALE_IN_EXAMPLES = sorted((EXAMPLES / "trainingjob").glob("scale-in*.yaml"))
SCALE_OUT_EXAMPLES = sorted((EXAMPLES / "trainingjob").glob("scale-out*.yaml"))
SCALE_IN_SCHEMA = crd_schema(SCALEIN)
SCALE_OUT_SCHEMA = crd_schema(SCALEOUT)
STATUS_DEFAULTS = {"conditions": [], "replicaStatuses": {}, "restartCount": 0}


def with_defaults(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` plus every default the model (and the schema) adds to a scaler."""
    out = copy.deepcopy(document)
    out["spec"].setdefault("timeout", DEFAULT_TIMEOUT_SECONDS)
    return out


def scale_in(to_delete: dict[str, Any] | None, **spec: Any) -> ScaleIn:
    body: dict[str, Any] = {"selector": {"name": "elastic"}, **spec}
    if to_delete is not None:
        body["toDelete"] = to_delete
    return ScaleIn.model_validate({"metadata": {"name": "s"}, "spec": body})


def scale_out(to_add: dict[str, Any] | None, **spec: Any) -> ScaleOut:
    body: dict[str, Any] = {"selector": {"name": "elastic"}, **spec}
    if to_add is not None:
        body["toAdd"] = to_add
    return ScaleOut.model_validate({"metadata": {"name": "s"}, "spec": body})


def test_examples_exist() -> None:
    assert [p.name for p in SCALE_IN_EXAMPLES] == ["scale-in-count.yaml", "scale-in-pod-names.yaml"]
    assert [p.name for p in SCALE_OUT_EXAMPLES] == ["scale-out-script.yaml", "scale-out.yaml"]


@pytest.mark.parametrize("path", SCALE_IN_EXAMPLES, ids=lambda p: p.name)
def test_scale_in_examples(path: Path) -> None:
    document = load_yaml(path)
    parsed = ScaleIn.model_validate(document)
    expected = with_defaults(document)
    assert parsed.to_dict() == {**expected, "status": {**STATUS_DEFAULTS, "toDeletePods": []}}
    assert apply_defaults(document, SCALE_IN_SCHEMA) == expected
    assert conformance_problems(document, SCALE_IN_SCHEMA) == []
    assert validate_scalein(ScaleIn.model_validate(as_created(document))) == []
    assert parsed.spec.job_name == "elastic-training"


@pytest.mark.parametrize("path", SCALE_OUT_EXAMPLES, ids=lambda p: p.name)
def test_scale_out_examples(path: Path) -> None:
    document = load_document(path, "ScaleOut")
    parsed = ScaleOut.model_validate(document)
    expected = with_defaults(document)
    assert parsed.to_dict() == {**expected, "status": {**STATUS_DEFAULTS, "addPods": []}}
    assert apply_defaults(document, SCALE_OUT_SCHEMA) == expected
    assert conformance_problems(document, SCALE_OUT_SCHEMA) == []
    assert validate_scaleout(parsed) == []


def test_parsed_scaler_fields() -> None:
    by_names = ScaleIn.model_validate(
        load_yaml(EXAMPLES / "trainingjob" / "scale-in-pod-names.yaml")
    )
    assert by_names.spec.to_delete == ToDelete(pod_names=["elastic-training-worker-1"])
    assert by_names.metadata.name == "scalein-by-name"
    scripted = ScaleOut.model_validate(
        load_document(EXAMPLES / "trainingjob" / "scale-out-script.yaml", "ScaleOut")
    )
    assert scripted.spec.env == [EnvVar(name="SCALE_REASON", value="more-data")]
    assert (scripted.spec.script, scripted.spec.timeout) == ("/scripts/on-scale.sh", 600)
    assert scripted.spec.to_add is not None
    assert scripted.spec.to_add.count == 2


def test_status_round_trip() -> None:
    status = {
        "phase": "ScaleSucceeded",
        "conditions": [
            {"type": "Created", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "ScaleSucceeded", "status": "True", "reason": "ScalingInSucceeded"},
        ],
        "replicaStatuses": {},
        "restartCount": 0,
        "toDeletePods": ["elastic-worker-3"],
        "completionTime": "2026-01-01T00:01:00Z",
    }
    parsed = ScaleIn.model_validate({"spec": {"toDelete": {"count": 1}}, "status": status})
    assert parsed.to_dict()["status"] == status


BOTH = (
    "spec.toDelete: both count and podNames are set; set count to let the controller pick the "
    "workers, or podNames to name them, not both"
)
NEITHER = (
    "spec.toDelete: count {} and no podNames; set count (workers to remove, at least 1) or "
    "podNames (the workers to remove)"
)


@pytest.mark.parametrize(
    ("to_delete", "expected"),
    [
        ({"count": 2}, []),
        ({"podNames": ["w-1", "w-2"]}, []),
        ({"count": 1, "podNames": ["w-1"]}, [BOTH]),
        ({"count": 0}, [NEITHER.format("0 is below 1")]),
        ({}, [NEITHER.format("missing")]),
        (None, [NEITHER.format("missing")]),
        (
            {"podNames": ["w-1", "", "w-1"]},
            [
                "spec.toDelete.podNames[1]: empty; name a worker pod",
                "spec.toDelete.podNames[2]: 'w-1' is listed twice",
            ],
        ),
    ],
)
def test_scale_in_validation(to_delete: dict[str, Any] | None, expected: list[str]) -> None:
    assert validate_scalein(scale_in(to_delete)) == expected


@pytest.mark.parametrize(
    ("to_add", "expected"),
    [
        ({"count": 1}, []),
        ({"count": 0}, ["spec.toAdd.count: 0 is below 1; add at least one worker"]),
        ({}, ["spec.toAdd.count: missing; set how many workers to add (at least 1)"]),
        (None, ["spec.toAdd.count: missing; set how many workers to add (at least 1)"]),
    ],
)
def test_scale_out_validation(to_add: dict[str, Any] | None, expected: list[str]) -> None:
    assert validate_scaleout(scale_out(to_add)) == expected


def test_common_scaler_validation() -> None:
    scaler = ScaleOut.model_validate(
        {
            "spec": {
                "toAdd": {"count": 1},
                "timeout": 0,
                "backoffLimit": -1,
                "env": [{"name": "OK_1", "value": "x"}, {"name": "1BAD"}, {"name": "A-B"}],
            }
        }
    )
    assert validate_scaleout(scaler) == [
        "spec.selector.name: missing; name the job to scale (in the same namespace)",
        "spec.timeout: 0 is below 1 second; set 1 or more",
        "spec.backoffLimit: -1 is negative; set 0 or more",
        "spec.env[1].name: '1BAD' is not a shell variable name (letters, digits and '_', not "
        "starting with a digit); the script gets it through export",
        "spec.env[2].name: 'A-B' is not a shell variable name (letters, digits and '_', not "
        "starting with a digit); the script gets it through export",
    ]


def test_wrongly_typed_scalers_do_not_parse() -> None:
    with pytest.raises(ValidationError) as caught:
        ScaleIn.model_validate({"spec": {"toDelete": {"podNames": "w-1"}}})
    assert parse_problems(caught.value) == ["spec.toDelete.podNames: Input should be a valid list"]
    with pytest.raises(ValidationError):
        ScaleIn.model_validate({"kind": "ScaleOut"})


@pytest.mark.parametrize(
    ("to_delete", "problem"),
    [
        ({"count": 1, "podNames": ["w-1"]}, "Found 2 valid alternatives"),
        ({}, "Found none valid"),
        ({"count": 0}, "should be greater than or equal to 1"),
        ({"podNames": []}, "should have at least 1 items"),
        ({"podNames": [""]}, "should be at least 1 chars long"),
    ],
)
def test_scale_in_schema_rejects_bad_requests(to_delete: dict[str, Any], problem: str) -> None:
    document = {"spec": {"selector": {"name": "elastic"}, "toDelete": to_delete}}
    problems = conformance_problems(document, SCALE_IN_SCHEMA)
    assert any(problem in found for found in problems), problems


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"selector": {"name": "elastic"}}, "spec.toAdd: Required value"),
        ({"toAdd": {"count": 1}}, "spec.selector: Required value"),
        ({"selector": {"name": ""}, "toAdd": {"count": 1}}, "should be at least 1 chars long"),
        ({"selector": {"name": "e"}, "toAdd": {}}, "spec.toAdd.count: Required value"),
        (
            {"selector": {"name": "e"}, "toAdd": {"count": 1}, "timeout": 0},
            "should be greater than or equal to 1",
        ),
        (
            {"selector": {"name": "e"}, "toAdd": {"count": 1}, "env": [{"value": "x"}]},
            "spec.env[0].name: Required value",
        ),
        (
            {"selector": {"name": "e"}, "toAdd": {"count": 1}, "env": [{"name": "A-B"}]},
            "should match",
        ),
    ],
)
def test_scale_out_schema_rejects_bad_requests(spec: dict[str, Any], problem: str) -> None:
    problems = conformance_problems({"spec": spec}, SCALE_OUT_SCHEMA)
    assert any(problem in found for found in problems), problems


@pytest.fixture
def etctl_target_crds() -> list[dict[str, Any]]:
    return [crd_manifest(SCALEIN), crd_manifest(SCALEOUT)]


@pytest.mark.parametrize(
    ("res", "path"),
    [(SCALEINS, p) for p in SCALE_IN_EXAMPLES] + [(SCALEOUTS, p) for p in SCALE_OUT_EXAMPLES],
    ids=lambda value: getattr(value, "name", ""),
)
async def test_the_cluster_admits_each_example_with_the_schemas_defaults(
    etctl_target: ClusterTarget, res: Resource, path: Path
) -> None:
    document = load_document(path, res.kind)
    stored = await admitted(etctl_target, res, document)
    assert stored["spec"] == with_defaults(document)["spec"]


@pytest.mark.parametrize(
    "to_delete", [{"count": 1, "podNames": ["w-1"]}, {}, {"count": 0}, {"podNames": [""]}]
)
async def test_the_cluster_refuses_bad_scale_ins(
    etctl_target: ClusterTarget, to_delete: dict[str, Any]
) -> None:
    document = {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "ScaleIn",
        "metadata": {"name": "bad"},
        "spec": {"selector": {"name": "elastic"}, "toDelete": to_delete},
    }
    refusal = await refused(etctl_target, SCALEINS, document)
    assert "spec.toDelete" in str(refusal)


def test_crd_descriptions() -> None:
    for resource, short, count in (
        (SCALEIN, "sci", ".spec.toDelete.count"),
        (SCALEOUT, "sco", ".spec.toAdd.count"),
    ):
        manifest = crd_manifest(resource)
        assert manifest["spec"]["names"]["shortNames"] == [short]
        assert manifest["spec"]["names"]["categories"] == ["etctl"]
        (version,) = manifest["spec"]["versions"]
        columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
        assert columns == {
            "Phase": ".status.conditions[-1:].type",
            "Job": ".spec.selector.name",
            "Age": ".metadata.creationTimestamp",
            "Count": count,
        }
        assert version["subresources"] == {"status": {}}
    assert SCALEINS.path("ns") == "/apis/kai.alibabacloud.com/v1alpha1/namespaces/ns/scaleins"


def test_progress_round_trip_and_finished() -> None:
    status = {
        "phase": "Scaling",
        "conditions": [
            {"type": "Created", "status": "True"},
            {"type": "Scaling", "status": "True", "reason": "ScalingStart"},
        ],
        "replicaStatuses": {},
        "restartCount": 0,
        "addPods": ["elastic-worker-4"],
        "step": "Creating",
        "stepStartTime": "2026-01-01T00:00:05Z",
    }
    parsed = ScaleOut.model_validate({"spec": {"toAdd": {"count": 1}}, "status": status})
    assert parsed.status.step is ScaleStep.CREATING
    assert parsed.status.adopted()
    assert not parsed.status.finished()
    assert parsed.to_dict()["status"] == status
    done = parsed.status.model_copy(update={"step": ScaleStep.DONE})
    assert done.finished()


def test_et_operator_finished_scalers_stay_finished() -> None:
    # Objects et-operator finished carry no step, only the condition.
    for kind in ("ScaleSucceeded", "ScaleFailed"):
        status = ScaleInStatus.model_validate({"conditions": [{"type": kind, "status": "True"}]})
        assert status.finished()
        assert not status.adopted()


def test_membership_status_round_trip() -> None:
    status = {
        "conditions": [],
        "replicaStatuses": {},
        "restartCount": 0,
        "targetWorkers": ["j-worker-0", "j-worker-3"],
        "currentWorkers": ["j-worker-0"],
        "lastWorkerIndex": 3,
    }
    assert ElasticWorkersStatus.model_validate(status).to_dict() == status
    assert "lastWorkerIndex" not in ElasticWorkersStatus().to_dict()


def test_scaler_schema_accepts_progress_and_rejects_unknown_steps() -> None:
    spec = {"selector": {"name": "elastic"}, "toAdd": {"count": 1}}
    for step, problems in (("Joining", False), ("Sleeping", True)):
        status = {"step": step, "stepStartTime": "2026-01-01T00:00:05Z"}
        found = conformance_problems({"spec": spec, "status": status}, SCALE_OUT_SCHEMA)
        assert bool(found) is problems, found
