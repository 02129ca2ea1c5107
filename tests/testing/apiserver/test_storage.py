"""Conformance: create, get, update and the metadata the server maintains."""

from __future__ import annotations

import copy

import pytest

from etctl.errors import AlreadyExists, Conflict, Invalid, NotFound
from etctl.runtime import CONFIGMAPS, PODS, FakeClock
from etctl.testing import ApiServer, WriteOptions
from tests.testing.apiserver._client import PODS as PODS_PATH
from tests.testing.apiserver._client import WIDGETS, Api, configmap, pod, widget

CM = "/api/v1/namespaces/default/configmaps"


async def test_create_returns_201_with_server_metadata(api: Api, clock: FakeClock) -> None:
    await clock.advance(90)
    reply = await api.post(CM, configmap("a"))
    assert reply.status == 201
    meta = reply.body["metadata"]
    assert meta["namespace"] == "default"
    assert meta["creationTimestamp"] == "2026-01-01T00:01:30Z"
    assert len(meta["uid"]) == 36
    assert int(meta["resourceVersion"]) > 0
    assert "generation" not in meta
    assert reply.body["apiVersion"] == "v1"
    assert reply.body["kind"] == "ConfigMap"


async def test_resource_versions_grow_globally_across_resources(api: Api) -> None:
    first = await api.create(CM, configmap("a"))
    second = await api.create(PODS_PATH, pod("p"))
    third = await api.create(CM, configmap("b"))
    versions = [int(o["metadata"]["resourceVersion"]) for o in (first, second, third)]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


async def test_get_missing_object_is_404_with_details(api: Api) -> None:
    reply = await api.get(f"{CM}/nope")
    assert reply.status == 404
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "configmaps"},
        "code": 404,
    }


async def test_create_existing_name_is_409_already_exists(api: Api) -> None:
    await api.create(CM, configmap("a"))
    reply = await api.post(CM, configmap("a"))
    assert reply.status == 409
    assert reply.body["reason"] == "AlreadyExists"
    assert reply.body["message"] == 'configmaps "a" already exists'
    assert reply.body["details"] == {"name": "a", "kind": "configmaps"}


async def test_create_in_missing_namespace_is_404_for_the_namespace(api: Api) -> None:
    reply = await api.post("/api/v1/namespaces/ghost/configmaps", configmap("a"))
    assert reply.status == 404
    assert reply.body["message"] == 'namespaces "ghost" not found'
    assert reply.body["details"] == {"name": "ghost", "kind": "namespaces"}


async def test_namespace_in_body_must_match_the_url(api: Api) -> None:
    reply = await api.post(CM, configmap("a", namespace="kube-system"))
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_invalid_name_is_422_with_the_dns_subdomain_message(api: Api) -> None:
    reply = await api.post(CM, configmap("Not_Valid"))
    assert reply.status == 422
    body = reply.body
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "ConfigMap"
    assert body["details"]["name"] == "Not_Valid"
    cause = body["details"]["causes"][0]
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["field"] == "metadata.name"
    assert cause["message"].startswith(
        'Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of lower case'
    )
    assert body["message"] == f'ConfigMap "Not_Valid" is invalid: metadata.name: {cause["message"]}'


async def test_namespace_names_must_be_dns_labels(api: Api) -> None:
    reply = await api.post("/api/v1/namespaces", {"metadata": {"name": "a.b"}})
    assert reply.status == 422
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "a.b": must not contain dots',
            "field": "metadata.name",
        }
    ]


async def test_service_names_must_be_dns1035_labels(api: Api) -> None:
    svc = {"metadata": {"name": "1abc"}, "spec": {"ports": [{"port": 80}]}}
    reply = await api.post("/api/v1/namespaces/default/services", svc)
    assert reply.status == 422
    assert "a DNS-1035 label must consist of" in reply.body["details"]["causes"][0]["message"]


async def test_rbac_names_only_refuse_path_breaking_characters(api: Api) -> None:
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    assert (await api.post(path, {"metadata": {"name": "system:Admin"}})).status == 201
    reply = await api.post(path, {"metadata": {"name": "a/b"}})
    assert reply.status == 422
    assert (
        reply.body["details"]["causes"][0]["message"]
        == "Invalid value: \"a/b\": may not contain '/'"
    )


async def test_missing_name_is_required(api: Api) -> None:
    reply = await api.post(CM, {"data": {}})
    assert reply.status == 422
    assert reply.body["message"] == (
        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    )


async def test_generate_name_appends_five_characters(api: Api) -> None:
    created = await api.create(CM, {"metadata": {"generateName": "job-"}, "data": {}})
    name = created["metadata"]["name"]
    assert name.startswith("job-")
    assert len(name) == len("job-") + 5
    assert created["metadata"]["generateName"] == "job-"


async def test_generate_name_retries_on_collision(server: ApiServer) -> None:
    first = server.storage.create(
        CONFIGMAPS, {"metadata": {"generateName": "x-"}}, namespace="default"
    )
    storage = server.storage
    storage.random.seed(7)
    storage.create(CONFIGMAPS, {"metadata": {"generateName": "x-"}}, namespace="default")
    storage.random.seed(7)  # the same first guess again: taken, so a retry must pick another
    third = storage.create(CONFIGMAPS, {"metadata": {"generateName": "x-"}}, namespace="default")
    names = {first["metadata"]["name"], third["metadata"]["name"]}
    assert len(names) == 2
    assert len(storage.list(CONFIGMAPS, namespace="default").items) == 3


async def test_resource_version_on_create_is_an_internal_error(api: Api) -> None:
    body = configmap("a")
    body["metadata"]["resourceVersion"] = "12"
    reply = await api.post(CM, body)
    assert reply.status == 500
    assert reply.body["reason"] == "InternalError"
    assert reply.body["message"] == (
        "Internal error occurred: resourceVersion should not be set on objects to be created"
    )


async def test_update_with_stale_resource_version_is_409_conflict(api: Api) -> None:
    created = await api.create(CM, configmap("a"))
    fresh = copy.deepcopy(created)
    fresh["data"] = {"k": "2"}
    assert (await api.put(f"{CM}/a", fresh)).status == 200
    stale = copy.deepcopy(created)
    stale["data"] = {"k": "3"}
    reply = await api.put(f"{CM}/a", stale)
    assert reply.status == 409
    assert reply.body["reason"] == "Conflict"
    assert reply.body["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )
    assert reply.body["details"] == {"name": "a", "kind": "configmaps"}


async def test_update_without_resource_version_is_unconditional_for_built_ins(api: Api) -> None:
    await api.create(CM, configmap("a"))
    reply = await api.put(f"{CM}/a", configmap("a", data=None))
    assert reply.status == 200


async def test_update_without_resource_version_is_invalid_for_custom_resources(
    api: Api, widgets: ApiServer
) -> None:
    await api.create(WIDGETS, widget("w", color="red"))
    reply = await api.put(f"{WIDGETS}/w", widget("w", color="blue"))
    assert reply.status == 422
    assert reply.body["message"] == (
        'widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
        "must be specified for an update"
    )


async def test_update_of_missing_object_is_404(api: Api) -> None:
    reply = await api.put(f"{CM}/a", configmap("a"))
    assert reply.status == 404
    assert reply.body["message"] == 'configmaps "a" not found'


async def test_update_name_must_match_the_url(api: Api) -> None:
    await api.create(CM, configmap("a"))
    reply = await api.put(f"{CM}/a", configmap("b"))
    assert reply.status == 400
    assert (
        reply.body["message"] == "the name of the object (b) does not match the name on the URL (a)"
    )


async def test_update_keeps_uid_and_creation_timestamp(api: Api, clock: FakeClock) -> None:
    created = await api.create(CM, configmap("a"))
    await clock.advance(60)
    body = configmap("a", data={"k": "new"})
    body["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    reply = await api.put(f"{CM}/a", body)
    assert reply.body["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert reply.body["metadata"]["uid"] == created["metadata"]["uid"]


async def test_changing_uid_on_update_is_invalid(api: Api) -> None:
    created = await api.create(CM, configmap("a"))
    body = copy.deepcopy(created)
    body["metadata"]["uid"] = "other"
    reply = await api.put(f"{CM}/a", body)
    assert reply.status == 422
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "other": field is immutable',
            "field": "metadata.uid",
        }
    ]


async def test_noop_update_keeps_the_resource_version(api: Api, server: ApiServer) -> None:
    created = await api.create(CM, configmap("a"))
    before = server.store.rv
    reply = await api.put(f"{CM}/a", created)
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert server.store.rv == before


async def test_generation_starts_at_one_and_counts_spec_changes_only(
    api: Api, widgets: ApiServer
) -> None:
    created = await api.create(WIDGETS, widget("w", color="red"))
    assert created["metadata"]["generation"] == 1
    labelled = copy.deepcopy(created)
    labelled["metadata"]["labels"] = {"a": "b"}
    after_labels = (await api.put(f"{WIDGETS}/w", labelled)).body
    assert after_labels["metadata"]["generation"] == 1
    status = copy.deepcopy(after_labels)
    status["status"] = {"phase": "Ready"}
    after_status = (await api.put(f"{WIDGETS}/w/status", status)).body
    assert after_status["metadata"]["generation"] == 1
    spec = copy.deepcopy(after_status)
    spec["spec"]["color"] = "blue"
    after_spec = (await api.put(f"{WIDGETS}/w", spec)).body
    assert after_spec["metadata"]["generation"] == 2


async def test_status_is_dropped_on_create_and_ignored_by_main_writes(
    api: Api, widgets: ApiServer
) -> None:
    body = widget("w", color="red")
    body["status"] = {"phase": "Forged"}
    created = await api.create(WIDGETS, body)
    assert "status" not in created
    created["status"] = {"phase": "Forged"}
    created["spec"]["color"] = "blue"
    updated = (await api.put(f"{WIDGETS}/w", created)).body
    assert "status" not in updated
    assert updated["spec"]["color"] == "blue"


async def test_status_writes_take_only_the_status(api: Api, widgets: ApiServer) -> None:
    created = await api.create(WIDGETS, widget("w", color="red"))
    created["status"] = {"phase": "Running"}
    created["spec"]["color"] = "blue"
    created["metadata"]["labels"] = {"sneaky": "yes"}
    updated = (await api.put(f"{WIDGETS}/w/status", created)).body
    assert updated["status"] == {"phase": "Running"}
    assert updated["spec"]["color"] == "red"
    assert "labels" not in updated["metadata"]


async def test_pods_get_the_defaults_and_status_the_real_server_gives_them(api: Api) -> None:
    created = await api.create(PODS_PATH, pod("p"))
    spec = created["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["serviceAccountName"] == "default"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert {t["key"] for t in spec["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


async def test_pod_without_containers_or_image_is_invalid(api: Api) -> None:
    reply = await api.post(PODS_PATH, {"metadata": {"name": "p"}, "spec": {}})
    assert reply.status == 422
    assert reply.body["message"] == 'Pod "p" is invalid: spec.containers: Required value'
    bad = pod("q")
    del bad["spec"]["containers"][0]["image"]
    reply = await api.post(PODS_PATH, bad)
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value",
            "field": "spec.containers[0].image",
        }
    ]


async def test_pod_spec_is_immutable_except_images(api: Api) -> None:
    created = await api.create(PODS_PATH, pod("p"))
    image = copy.deepcopy(created)
    image["spec"]["containers"][0]["image"] = "busybox:1.37"
    assert (await api.put(f"{PODS_PATH}/p", image)).status == 200
    image = (await api.get(f"{PODS_PATH}/p")).body
    image["spec"]["restartPolicy"] = "Never"
    reply = await api.put(f"{PODS_PATH}/p", image)
    assert reply.status == 422
    assert reply.body["details"]["causes"][0]["field"] == "spec"
    assert reply.body["details"]["causes"][0]["message"].startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
    )


async def test_services_get_a_cluster_ip_unless_headless(api: Api) -> None:
    path = "/api/v1/namespaces/default/services"
    svc = await api.create(path, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    assert svc["spec"]["clusterIP"].startswith("10.96.")
    assert svc["spec"]["clusterIPs"] == [svc["spec"]["clusterIP"]]
    assert svc["spec"]["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}
    assert svc["spec"]["type"] == "ClusterIP"
    other = await api.create(path, {"metadata": {"name": "t"}, "spec": {"ports": [{"port": 80}]}})
    assert other["spec"]["clusterIP"] != svc["spec"]["clusterIP"]
    headless = await api.create(path, {"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}})
    assert headless["spec"]["clusterIP"] == "None"


async def test_dry_run_create_commits_nothing(api: Api, server: ApiServer) -> None:
    before = server.store.rv
    reply = await api.post(CM, configmap("a"), params={"dryRun": "All"})
    assert reply.status == 201
    assert "resourceVersion" not in reply.body["metadata"]
    assert reply.body["metadata"]["uid"]
    assert server.store.rv == before
    assert (await api.get(f"{CM}/a")).status == 404


async def test_dry_run_update_patch_and_delete_commit_nothing(api: Api, server: ApiServer) -> None:
    created = await api.create(CM, configmap("a"))
    before = server.store.rv
    created["data"] = {"k": "dry"}
    assert (await api.put(f"{CM}/a", created, params={"dryRun": "All"})).body["data"] == {
        "k": "dry"
    }
    patched = await api.patch(f"{CM}/a", {"data": {"k": "x"}}, params={"dryRun": "All"})
    assert patched.body["data"] == {"k": "x"}
    deleted = await api.delete(f"{CM}/a", params={"dryRun": "All"})
    assert deleted.status == 200
    assert server.store.rv == before
    assert (await api.get(f"{CM}/a")).body["data"] == {"k": "v"}


async def test_unknown_dry_run_value_is_invalid(api: Api) -> None:
    reply = await api.post(CM, configmap("a"), params={"dryRun": "Some"})
    assert reply.status == 422
    assert reply.body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "Some": supported '
        'values: "All"'
    )


async def test_storage_api_runs_the_same_logic_as_http(server: ApiServer) -> None:
    storage = server.storage
    created = storage.create(PODS, pod("p"), namespace="default")
    assert created["status"]["phase"] == "Pending"
    with pytest.raises(AlreadyExists) as exists:
        storage.create(PODS, pod("p"), namespace="default")
    assert exists.value.reason == "AlreadyExists"
    stale = copy.deepcopy(created)
    stale["metadata"]["resourceVersion"] = "1"
    with pytest.raises(Conflict) as conflict:
        storage.update(PODS, stale, namespace="default")
    assert conflict.value.details["name"] == "p"
    with pytest.raises(NotFound) as missing:
        storage.get(PODS, "missing", namespace="default")
    assert str(missing.value) == '(404 NotFound) pods "missing" not found'
    with pytest.raises(Invalid) as invalid:
        storage.create(PODS, {"metadata": {"name": "q"}, "spec": {}}, namespace="default")
    assert invalid.value.causes[0]["field"] == "spec.containers"


async def test_storage_writes_emit_events_to_subscribers(server: ApiServer) -> None:
    seen: list[tuple[str, str]] = []
    unsubscribe = server.subscribe(lambda e: seen.append((e.type, e.key)))
    obj = server.storage.create(CONFIGMAPS, configmap("a"), namespace="default")
    server.storage.update(
        CONFIGMAPS, {**obj, "data": {"k": "2"}}, namespace="default", options=WriteOptions()
    )
    server.storage.delete(CONFIGMAPS, "a", namespace="default")
    unsubscribe()
    server.storage.create(CONFIGMAPS, configmap("b"), namespace="default")
    assert seen == [("ADDED", "default/a"), ("MODIFIED", "default/a"), ("DELETED", "default/a")]


async def test_writing_a_subresource_the_resource_lacks_is_404(server: ApiServer) -> None:
    created = server.storage.create(CONFIGMAPS, configmap("a"), namespace="default")
    for subresource in ("status", "scale", "finalize", "nonsense"):
        with pytest.raises(NotFound):
            server.storage.update(CONFIGMAPS, created, namespace="default", subresource=subresource)
