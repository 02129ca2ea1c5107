"""Pod requests: what a pod asks of a node, summed exactly."""

from __future__ import annotations

from fractions import Fraction

from etctl.testing._kubelet.quantity import format_cpu, pod_requests, resource_list


def test_cpu_is_shown_in_millicores() -> None:
    assert format_cpu(Fraction(3, 2)) == "1500"


def test_resource_lists_skip_bad_values() -> None:
    assert resource_list({"cpu": "1", "memory": "lots"}) == {"cpu": Fraction(1)}


def test_pod_requests_take_the_larger_of_containers_and_init_containers() -> None:
    def container(cpu: str, memory: str) -> dict[str, object]:
        return {"resources": {"requests": {"cpu": cpu}, "limits": {"memory": memory}}}

    spec = {
        "containers": [container("500m", "1Gi"), container("1", "1Gi")],
        "initContainers": [container("2", "512Mi")],
        "overhead": {"cpu": "100m"},
    }
    assert pod_requests(spec) == {"cpu": Fraction(21, 10), "memory": Fraction(2 * 2**30)}
