"""Protobuf request bodies of built-in kinds decode into the dicts their JSON would be.

The bodies are built with a tiny encoder (``_protoencode``, not with the decoder), field numbers
from Kubernetes' ``generated.proto`` files.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from pathlib import Path

import pytest

from etctl.testing import ApiServer
from etctl.testing._apiserver import protobody, protowire
from etctl.testing._apiserver.builtin import builtin_resources
from etctl.testing._apiserver.services import ClusterIPAllocator
from etctl.testing._goduration import go_duration
from tests.testing.apiserver import proto_descriptors
from tests.testing.apiserver._client import Api
from tests.testing.apiserver._protoencode import entry, envelope, f, m, varint


# ObjectMeta: 1 name, 3 namespace, 8 creationTimestamp (non-pointer: written empty when zero),
# 11 labels, 7 generation.
def meta(name: str, *more: bytes) -> bytes:
    return f(1, m(f(1, name), f(8, b""), *more))


def test_a_configmap_decodes_with_its_maps_and_a_null_creation_timestamp() -> None:
    body = envelope(
        "v1",
        "ConfigMap",
        m(
            meta("c", entry(11, "app", "web")),
            entry(2, "a", "b"),  # data
            entry(2, "empty", ""),
            entry(3, "bin", b"\x00\xff"),  # binaryData: bytes, base64 in JSON
        ),
    )
    assert protobody.decode(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "creationTimestamp": None, "labels": {"app": "web"}},
        "data": {"a": "b", "empty": ""},
        "binaryData": {"bin": base64.b64encode(b"\x00\xff").decode()},
    }


def test_secret_data_is_base64_and_empty_strings_and_false_zeros_are_dropped() -> None:
    # Secret: 2 data (map<string, bytes>), 3 type (omitempty string), 5 immutable (*bool).
    body = envelope("v1", "Secret", m(meta("s"), entry(2, "k", b"v\n"), f(3, "")))
    assert protobody.decode(body)["data"] == {"k": "dgo="}
    assert "type" not in protobody.decode(body)
    immutable = envelope("v1", "Secret", m(meta("s"), f(5, False)))
    assert protobody.decode(immutable)["immutable"] is False  # a pointer set to false stays


def _deployment(*spec: bytes) -> bytes:
    container = m(
        f(1, "web"),  # name
        f(2, "nginx"),  # image
        f(6, m(f(1, "http"), f(3, 80), f(4, "TCP"))),  # ports: name, containerPort, protocol
        # resources: 1 limits map<string, Quantity{1 string}>
        f(8, f(1, m(f(1, "cpu"), f(2, f(1, "500m"))))),
        # readinessProbe: 1 handler, its 2 httpGet: 1 path, 2 port IntOrString{1 type, 3 strVal}
        f(11, f(1, f(2, m(f(1, "/"), f(2, m(f(1, 1), f(2, 0), f(3, "http"))))))),
        # livenessProbe: its httpGet port is an int: type 0, intVal 8080
        f(10, f(1, f(2, m(f(1, "/"), f(2, m(f(1, 0), f(2, 8080), f(3, ""))))))),
    )
    template = m(f(1, m(f(8, b""), entry(11, "app", "w"))), f(2, f(2, container)))
    return envelope(
        "apps/v1",
        "Deployment",
        m(meta("w"), f(2, m(*spec, f(3, template), f(5, 0), f(7, False))), f(3, b"")),
    )


def test_a_deployment_keeps_a_zero_replica_count_and_drops_non_pointer_zeros() -> None:
    obj = protobody.decode(_deployment(f(1, 0)))
    spec = obj["spec"]
    assert spec["replicas"] == 0  # *int32: written only when set, so 0 is meant
    assert "minReadySeconds" not in spec  # int32 omitempty: Go's JSON leaves out its 0
    assert "paused" not in spec
    assert obj["status"] == {}  # a non-pointer struct is {} in Go's JSON too
    container = spec["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"name": "http", "containerPort": 80, "protocol": "TCP"}]
    assert container["resources"] == {"limits": {"cpu": "500m"}}
    assert container["readinessProbe"]["httpGet"] == {"path": "/", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/", "port": 8080}
    assert "replicas" not in protobody.decode(_deployment())["spec"]


def test_negative_numbers_are_twos_complement() -> None:
    # Pod: 2 spec; PodSpec 5 activeDeadlineSeconds (*int64), 4 terminationGracePeriodSeconds.
    body = envelope("v1", "Pod", m(meta("p"), f(2, m(f(5, -1), f(4, -(1 << 40))))))
    spec = protobody.decode(body)["spec"]
    assert spec["activeDeadlineSeconds"] == -1
    assert spec["terminationGracePeriodSeconds"] == -(1 << 40)


def test_times_are_rfc3339_with_the_precision_their_type_keeps() -> None:
    # ObjectMeta 9 deletionTimestamp: Time keeps whole seconds only.
    stamp = m(f(1, 1_700_000_000), f(2, 123_456_789))
    pod = envelope("v1", "Pod", f(1, m(f(1, "p"), f(9, stamp))))
    assert protobody.decode(pod)["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:20Z"
    # events.k8s.io Event: 2 eventTime is a MicroTime.
    event = envelope("events.k8s.io/v1", "Event", m(meta("e"), f(2, stamp)))
    assert protobody.decode(event)["eventTime"] == "2023-11-14T22:13:20.123456Z"


def test_managed_fields_carry_their_raw_json() -> None:
    # ObjectMeta 17 managedFields: ManagedFieldsEntry 1 manager, 7 fieldsV1 {1 raw JSON}.
    fields: dict[str, object] = {"f:metadata": {"f:labels": {}}}
    managed = f(17, m(f(1, "kubectl"), f(7, f(1, json.dumps(fields)))))
    body = envelope("v1", "Namespace", f(1, m(f(1, "n"), managed)))
    entry_ = protobody.decode(body)["metadata"]["managedFields"][0]
    assert entry_ == {"manager": "kubectl", "fieldsV1": fields}


def test_role_rules_are_repeated_strings() -> None:
    # Role 2 rules: PolicyRule 1 verbs, 2 apiGroups, 3 resources.
    rule = m(f(1, "get"), f(1, "list"), f(2, ""), f(3, "pods"))
    body = envelope("rbac.authorization.k8s.io/v1", "Role", m(meta("r"), f(2, rule)))
    assert protobody.decode(body)["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}
    ]


# Types no served kind reaches, on a descriptor of their own.
_OWN: protobody.Descriptors = {
    "T": {
        "1": ["raw", "runtime.RawExtension", False],
        "2": ["timeout", "apis.meta.v1.Duration", False],
        "3": ["ratio", "double", False],
        "4": ["counts", "[int32", False],
        "5": ["quantities", "{api.resource.Quantity", False],
    }
}


def test_raw_extensions_durations_doubles_and_packed_numbers() -> None:
    double = varint(3 << 3 | 1) + struct.pack("<d", 0.25)
    packed = f(4, varint(1) + varint(-2) + varint(300))
    data = m(
        f(1, f(1, b'{"a": [1]}')),
        f(2, f(1, 90 * 60 * 10**9 + 500_000_000)),
        double,
        packed,
        f(4, 7),
        f(5, f(1, "zero")),  # an entry without a value: the value type's zero
    )
    assert protobody.decode_message(data, "T", _OWN) == {
        "raw": {"a": [1]},
        "timeout": "1h30m0.5s",
        "ratio": 0.25,
        "counts": [1, -2, 300, 7],
        "quantities": {"zero": ""},
    }


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1500, "1.5µs"),
        (2_000_000, "2ms"),
        (61 * 10**9, "1m1s"),
        (3600 * 10**9, "1h0m0s"),
        (-(10**9), "-1s"),
    ],
)
def test_durations_print_as_go_does(nanos: int, text: str) -> None:
    assert go_duration(nanos) == text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{}", "no k8s magic"),
        (envelope("batch/v1", "Job", b""), "no protobuf decoding for batch/v1, Kind=Job"),
        (envelope("v1", "ConfigMap", f(1, b"\x0a\x05ab")), "runs past the end"),
        (envelope("v1", "ConfigMap", f(1, 5)), "should be length-delimited"),
    ],
)
def test_what_does_not_decode_is_a_value_error(body: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        protobody.decode(body)


async def test_the_server_creates_from_a_protobuf_body_and_refuses_a_bad_one(
    api: Api, server: ApiServer
) -> None:
    headers = {"Content-Type": protowire.MEDIA_TYPE, "Accept": "application/json"}
    url = f"{server.url}/api/v1/namespaces/default/configmaps"
    body = envelope("v1", "ConfigMap", m(meta("c"), entry(2, "a", "b")))
    async with api.session.post(url, data=body, headers=headers) as response:
        assert response.status == 201, await response.text()
        assert response.content_type == "application/json"
        created = await response.json()
    assert created["data"] == {"a": "b"}
    assert created["metadata"]["namespace"] == "default"
    stored = server.store.get(("", "configmaps"), "default/c")
    assert stored is not None
    assert stored["data"] == {"a": "b"}
    for bad in (envelope("batch/v1", "Job", b""), body[:-3]):
        async with api.session.post(url, data=bad, headers=headers) as response:
            assert response.status == 400
            assert (await response.json())["reason"] == "BadRequest"


def test_the_committed_descriptors_cover_every_built_in_kind_but_crds() -> None:
    kinds, messages = protobody.descriptors()
    served = {
        f"{r.group + '/' if r.group else ''}{v.name}/{r.kind}"
        for r in builtin_resources(ClusterIPAllocator())
        for v in r.versions
    }
    # No typed kubectl command sends CRDs or webhook configurations as protobuf.
    assert set(kinds) == served - {
        "apiextensions.k8s.io/v1/CustomResourceDefinition",
        "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration",
    }
    for fields in messages.values():
        for _, kind, _ in fields.values():
            inner = kind.lstrip("[{")
            assert inner in proto_descriptors.SCALARS or inner in messages, inner


def test_the_generator_reads_messages_and_go_tags() -> None:
    proto = (
        'syntax = "proto2";\npackage k8s.io.api.apps.v1;\n\n'
        "// comment\nmessage DeploymentSpec {\n  // +optional\n  optional int32 replicas = 1;\n\n"
        "  repeated .k8s.io.api.core.v1.Container containers = 2;\n\n"
        "  map<string, .k8s.io.apimachinery.pkg.api.resource.Quantity> limits = 3;\n}\n"
    )
    assert proto_descriptors.parse_proto(proto) == {
        "apps.v1.DeploymentSpec": {
            1: ("replicas", "int32"),
            2: ("containers", "[core.v1.Container"),
            3: ("limits", "{api.resource.Quantity"),
        }
    }
    go = (
        "type DeploymentSpec struct {\n"
        '\tReplicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`\n'
        '\tPaused bool `json:"paused,omitempty" protobuf:"varint,7,opt,name=paused"`\n'
        '\tmetav1.TypeMeta `json:",inline"`\n'
        "}\n"
    )
    parsed = proto_descriptors.parse_go(go)
    assert parsed[("DeploymentSpec", 1)] == proto_descriptors.GoField("replicas", True, True)
    assert parsed[("DeploymentSpec", 7)] == proto_descriptors.GoField("paused", False, True)


def _sources() -> tuple[Path, Path] | None:
    cache = os.environ.get("GOMODCACHE") or str(
        Path(os.environ.get("GOPATH", str(Path.home() / "go"))) / "pkg" / "mod"
    )
    version = proto_descriptors.VERSION
    api = Path(cache) / "k8s.io" / f"api@{version}"
    apimachinery = Path(cache) / "k8s.io" / f"apimachinery@{version}"
    return (api, apimachinery) if api.is_dir() and apimachinery.is_dir() else None


def test_the_committed_descriptors_are_what_the_generator_makes() -> None:
    sources = _sources()
    if sources is None:
        pytest.skip(
            f"k8s.io/api and k8s.io/apimachinery {proto_descriptors.VERSION} are not in the Go "
            "module cache: fetch them to compare"
        )
    assert proto_descriptors.TARGET.read_text() == proto_descriptors.render(*sources), (
        "regenerate with: python -m tests.testing.apiserver.proto_descriptors API_DIR "
        "APIMACHINERY_DIR"
    )


def test_an_autoscaling_v2_hpa_decodes_from_protobuf() -> None:
    target = m(f(1, "Utilization"), f(4, 70))
    metric = m(f(1, "Resource"), f(4, m(f(1, "cpu"), f(2, target))))
    ref = m(f(1, "PyTorchJob"), f(2, "job"), f(3, "kubeflow.org/v1"))
    spec = m(f(1, ref), f(2, 1), f(3, 4), f(4, metric))
    body = envelope("autoscaling/v2", "HorizontalPodAutoscaler", m(meta("job"), f(2, spec)))
    decoded = protobody.decode(body)
    assert decoded["spec"] == {
        "scaleTargetRef": {"kind": "PyTorchJob", "name": "job", "apiVersion": "kubeflow.org/v1"},
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70},
                },
            }
        ],
    }
