"""Pod validation with kube-apiserver's messages and field paths, table-driven.

Each case changes a valid pod and lists the causes of the real server's 422 (in its order), or the
message of its 400 when decoding refuses the body. Then the same over HTTP with the runtime client,
as an operator meets them (``test_kubectl`` has kubectl's view).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from etctl._apimachinery.quantity import parse
from etctl.errors import BadRequest, Invalid
from etctl.runtime import PODS, Client, ClientOptions
from etctl.testing import ApiServer

Edit = Callable[[dict[str, Any]], None]
QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
C0 = "spec.containers[0]"


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "ports": [{"name": "http", "containerPort": 8080}],
                    "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "env": [{"name": "MODE", "value": "x"}],
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def _container(pod: dict[str, Any], index: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = pod["spec"]["containers"][index]
    return container


def _set(path: str, value: Any) -> Edit:
    """Set a dotted path of the pod (list indexes as numbers)."""

    def edit(pod: dict[str, Any]) -> None:
        target: Any = pod
        *head, last = path.split(".")
        for part in head:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        if last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value

    return edit


def _delete(path: str) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        target: Any = pod
        *head, last = path.split(".")
        for part in head:
            target = target[int(part)] if part.isdigit() else target[part]
        del target[last]

    return edit


def _second_container(**fields: Any) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        pod["spec"]["containers"].append({"name": "side", "image": "busybox", **fields})

    return edit


def _invalid(reason: str, field: str, message: str) -> tuple[str, str, str]:
    return (reason, field, message)


INVALID_CASES: list[tuple[str, Edit, list[tuple[str, str, str]]]] = [
    (
        "no containers",
        _set("spec.containers", []),
        [("FieldValueRequired", "spec.containers", "Required value")],
    ),
    (
        "a container without a name or an image",
        lambda p: _container(p).update(name="", image=""),
        [
            ("FieldValueRequired", f"{C0}.name", "Required value"),
            ("FieldValueRequired", f"{C0}.image", "Required value"),
        ],
    ),
    (
        "a container name that is not a DNS label",
        _set("spec.containers.0.name", "Main_1"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.name",
                'Invalid value: "Main_1": a lowercase RFC 1123 label must consist of lower case '
                "alphanumeric characters or '-', and must start and end with an alphanumeric "
                "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            )
        ],
    ),
    (
        "two containers of one name",
        _second_container(name="main"),
        [("FieldValueDuplicate", "spec.containers[1].name", 'Duplicate value: "main"')],
    ),
    (
        "an init container named as a container",
        _set("spec.initContainers", [{"name": "main", "image": "busybox"}]),
        [("FieldValueDuplicate", "spec.initContainers[0].name", 'Duplicate value: "main"')],
    ),
    (
        "an image with surrounding whitespace",
        _set("spec.containers.0.image", " busybox "),
        [
            (
                "FieldValueInvalid",
                f"{C0}.image",
                'Invalid value: " busybox ": must not have leading or trailing whitespace',
            )
        ],
    ),
    (
        "a container port above 65535",
        _set("spec.containers.0.ports.0.containerPort", 99999),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].containerPort",
                "Invalid value: 99999: must be between 1 and 65535, inclusive",
            )
        ],
    ),
    (
        "a port without a number",
        _delete("spec.containers.0.ports.0.containerPort"),
        [("FieldValueRequired", f"{C0}.ports[0].containerPort", "Required value")],
    ),
    (
        "a host port of 0 is none, -1 is out of range",
        _set("spec.containers.0.ports.0.hostPort", -1),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].hostPort",
                "Invalid value: -1: must be between 1 and 65535, inclusive",
            )
        ],
    ),
    (
        "a port name with capitals, too long",
        _set("spec.containers.0.ports.0.name", "Metrics-Port-Too-Long"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "Metrics-Port-Too-Long": must be no more than 15 characters',
            ),
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "Metrics-Port-Too-Long": must contain only alpha-numeric '
                "characters (a-z, 0-9), and hyphens (-)",
            ),
        ],
    ),
    (
        "two ports of one name, and an unknown protocol",
        _set(
            "spec.containers.0.ports",
            [{"name": "a", "containerPort": 1}, {"name": "a", "containerPort": 2, "protocol": "X"}],
        ),
        [
            ("FieldValueDuplicate", f"{C0}.ports[1].name", 'Duplicate value: "a"'),
            (
                "FieldValueNotSupported",
                f"{C0}.ports[1].protocol",
                'Unsupported value: "X": supported values: "SCTP", "TCP", "UDP"',
            ),
        ],
    ),
    (
        "requests above limits",
        _set("spec.containers.0.resources", {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests",
                'Invalid value: "2": must be less than or equal to cpu limit of 1',
            )
        ],
    ),
    (
        "requests above limits, printed canonically",
        _set(
            "spec.containers.0.resources",
            {"requests": {"memory": "2048Mi"}, "limits": {"memory": "1.5Gi"}},
        ),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests",
                'Invalid value: "2Gi": must be less than or equal to memory limit of 1536Mi',
            )
        ],
    ),
    (
        "a negative quantity",
        _set("spec.containers.0.resources", {"requests": {"cpu": "-500m"}}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests[cpu]",
                'Invalid value: "-500m": must be greater than or equal to 0',
            )
        ],
    ),
    (
        "an unknown resource name",
        _set("spec.containers.0.resources", {"limits": {"gpu": "1"}}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.limits[gpu]",
                "Invalid value: gpu: must be a standard resource type or fully qualified",
            ),
            (
                "FieldValueInvalid",
                f"{C0}.resources.limits[gpu]",
                "Invalid value: gpu: must be a standard resource for containers",
            ),
            # Requests default to the limits before validation: they are refused too.
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests[gpu]",
                "Invalid value: gpu: must be a standard resource type or fully qualified",
            ),
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests[gpu]",
                "Invalid value: gpu: must be a standard resource for containers",
            ),
        ],
    ),
    (
        "an extended resource requested below its limit",
        _set(
            "spec.containers.0.resources",
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
        ),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests",
                'Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
            )
        ],
    ),
    (
        "an extended resource requested without a limit",
        _set("spec.containers.0.resources", {"requests": {"nvidia.com/gpu": "1"}}),
        [
            (
                "FieldValueRequired",
                f"{C0}.resources.limits",
                "Required value: Limit must be set for non overcommitable resources",
            )
        ],
    ),
    (
        "half a GPU",
        _set("spec.containers.0.resources", {"limits": {"nvidia.com/gpu": "500m"}}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.limits[nvidia.com/gpu]",
                "Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, "
                'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"", Format:"DecimalSI"}: '
                "must be an integer",
            ),
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests[nvidia.com/gpu]",
                "Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, "
                'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"", Format:"DecimalSI"}: '
                "must be an integer",
            ),
        ],
    ),
    (
        "a restart policy that does not exist",
        _set("spec.restartPolicy", "Sometimes"),
        [
            (
                "FieldValueNotSupported",
                "spec.restartPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
            )
        ],
    ),
    (
        "a pull policy that does not exist",
        _set("spec.containers.0.imagePullPolicy", "Sometimes"),
        [
            (
                "FieldValueNotSupported",
                f"{C0}.imagePullPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", '
                '"Never"',
            )
        ],
    ),
    (
        "a mount of a volume that does not exist, twice at one path",
        _set(
            "spec.containers.0.volumeMounts",
            [{"name": "data", "mountPath": "/d"}, {"name": "nope", "mountPath": "/d"}],
        ),
        [
            ("FieldValueNotFound", f"{C0}.volumeMounts[1].name", 'Not found: "nope"'),
            (
                "FieldValueInvalid",
                f"{C0}.volumeMounts[1].mountPath",
                'Invalid value: "/d": must be unique',
            ),
        ],
    ),
    (
        "a mount without a path",
        _delete("spec.containers.0.volumeMounts.0.mountPath"),
        [("FieldValueRequired", f"{C0}.volumeMounts[0].mountPath", "Required value")],
    ),
    (
        "a volume without a type: its mounts are not found either",
        _set("spec.volumes", [{"name": "data"}]),
        [
            ("FieldValueRequired", "spec.volumes[0]", "Required value: must specify a volume type"),
            ("FieldValueNotFound", f"{C0}.volumeMounts[0].name", 'Not found: "data"'),
        ],
    ),
    (
        "two volumes of one name, a config map without a name",
        _set(
            "spec.volumes",
            [{"name": "data", "emptyDir": {}}, {"name": "data", "configMap": {}}],
        ),
        [
            ("FieldValueRequired", "spec.volumes[1].configMap.name", "Required value"),
            ("FieldValueDuplicate", "spec.volumes[1].name", 'Duplicate value: "data"'),
        ],
    ),
    (
        "an environment variable without a name",
        _set("spec.containers.0.env", [{"value": "x"}]),
        [
            ("FieldValueRequired", f"{C0}.env[0].name", "Required value"),
            (
                "FieldValueInvalid",
                f"{C0}.env[0].name",
                'Invalid value: "": environment variable name must be non-empty',
            ),
        ],
    ),
    (
        "a node selector with a bad key",
        _set("spec.nodeSelector", {"bad key": "x"}),
        [
            (
                "FieldValueInvalid",
                "spec.nodeSelector",
                'Invalid value: "bad key": name part must consist of alphanumeric characters, '
                "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )
        ],
    ),
    (
        "an active deadline of 0",
        _set("spec.activeDeadlineSeconds", 0),
        [
            (
                "FieldValueInvalid",
                "spec.activeDeadlineSeconds",
                "Invalid value: 0: must be between 1 and 2147483647, inclusive",
            )
        ],
    ),
    (
        "a restart policy on a regular container",
        _set("spec.containers.0.restartPolicy", "Always"),
        [
            (
                "FieldValueForbidden",
                f"{C0}.restartPolicy",
                "Forbidden: may not be set for non-init containers",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("edit", "causes"), [c[1:] for c in INVALID_CASES], ids=[c[0] for c in INVALID_CASES]
)
async def test_an_invalid_pod_is_refused_with_the_real_causes(
    server: ApiServer, edit: Edit, causes: list[tuple[str, str, str]]
) -> None:
    body = _pod()
    edit(body)
    with pytest.raises(Invalid) as raised:
        server.storage.create(PODS, body, namespace="default")
    details = raised.value.details or {}
    found = [(c["reason"], c["field"], c["message"]) for c in details["causes"]]
    assert found == causes
    listed = ", ".join(f"{field}: {message}" for _, field, message in causes)
    expected = listed if len(causes) == 1 else f"[{listed}]"
    assert raised.value.message == f'Pod "p" is invalid: {expected}'


DECODE_CASES = [
    ("a word for a quantity", {"cpu": "lots"}, QUANTITY_FORMAT),
    ("a number that does not parse", {"cpu": "1.5.5"}, "unable to parse numeric part of quantity"),
    ("a suffix that does not exist", {"memory": "1ki"}, "unable to parse quantity's suffix"),
    ("a boolean", {"memory": True}, QUANTITY_FORMAT),
]


@pytest.mark.parametrize(
    ("limits", "message"), [c[1:] for c in DECODE_CASES], ids=[c[0] for c in DECODE_CASES]
)
async def test_a_quantity_that_does_not_parse_is_refused_when_decoding(
    server: ApiServer, limits: dict[str, Any], message: str
) -> None:
    body = _pod()
    _container(body)["resources"] = {"limits": limits}
    with pytest.raises(BadRequest) as raised:
        server.storage.create(PODS, body, namespace="default")
    assert raised.value.message == f'Pod in version "v1" cannot be handled as a Pod: {message}'


def test_the_valid_pod_is_valid_and_quantities_print_canonically() -> None:
    assert [str(parse(v)) for v in ("0.5", "1000m", "1024Mi", "1e3", "2000", 1, "100Mi")] == [
        "500m",
        "1",
        "1Gi",
        "1e3",
        "2k",
        "1",
        "100Mi",
    ]


async def test_valid_pods_pass_with_every_field_the_cases_break(server: ApiServer) -> None:
    body = _pod()
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    _container(body)["resources"] = {
        "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2"},
        "limits": {"cpu": 1, "memory": "1024Mi", "nvidia.com/gpu": 2},
    }
    created = server.storage.create(PODS, body, namespace="default")
    assert created["status"]["qosClass"] == "Burstable"


async def test_over_http_the_runtime_client_gets_the_422_and_the_400(
    server: ApiServer, tmp_path: Path
) -> None:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    async with await Client.from_kubeconfig(kubeconfig, options=ClientOptions()) as client:
        body = _pod()
        _container(body)["ports"][0]["containerPort"] = 99999
        with pytest.raises(Invalid) as invalid:
            await client.create(PODS, copy.deepcopy(body))
        assert invalid.value.status == 422
        assert invalid.value.message == (
            'Pod "p" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 99999: '
            "must be between 1 and 65535, inclusive"
        )
        body = _pod()
        _container(body)["resources"] = {"requests": {"cpu": "lots"}}
        with pytest.raises(BadRequest) as bad:
            await client.create(PODS, body)
        assert bad.value.status == 400
        assert bad.value.message.endswith(QUANTITY_FORMAT)
