from etctl.runtime import CRDS, LEASES, PODS, Resource, objects


def test_paths() -> None:
    assert PODS.path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    assert PODS.path() == "/api/v1/pods"
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert LEASES.path("kube-system") == leases
    assert CRDS.path("ignored", "x") == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x"
    tj = Resource("kai.alibabacloud.com", "v1alpha1", "trainingjobs", "TrainingJob")
    assert tj.api_version == "kai.alibabacloud.com/v1alpha1"
    assert tj.group_resource == "trainingjobs.kai.alibabacloud.com"


def test_accessors_and_controller_refs() -> None:
    owner = {"metadata": {"name": "job", "namespace": "ns", "uid": "u1"}}
    ref = objects.make_controller_ref(owner, Resource("batch", "v1", "jobs", "Job"))
    child = {"metadata": {"name": "c", "namespace": "ns", "ownerReferences": [ref]}}
    assert objects.is_controlled_by(child, owner)
    assert objects.controller_ref(child) == "u1"
    assert objects.key_of(child) == "ns/c"
    assert objects.split_key("ns/c") == ("ns", "c")
    assert objects.split_key("node-1") == ("", "node-1")
    assert objects.labels(child) == {}
    assert objects.generation(child) == 0
    assert not objects.is_controlled_by(child, {"metadata": {"uid": "other"}})
