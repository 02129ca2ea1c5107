"""Cluster DNS in the pods' shells: Service and pod host names, as CoreDNS answers them."""

from __future__ import annotations

from typing import Any

from etctl.testing._kubelet import Kubelet
from tests.testing.apiserver._client import Api
from tests.testing.kubelet._helpers import PODS, phase_is, pod, sim, wait_for

SERVICES = "/api/v1/namespaces/default/services"


def service(name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    body = {"selector": selector, "ports": [{"port": 23456}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


def ip_of(obj: dict[str, Any]) -> str:
    return str(obj["status"]["podIP"])


async def test_a_headless_service_resolves_to_its_pods_from_every_pod_the_selected_one_too(
    api: Api, kubelet: Kubelet
) -> None:
    host = await api.create(PODS, pod("host", labels={"role": "rdzv"}))
    await api.create(PODS, pod("other"))
    await api.create(SERVICES, service("rdzv", {"role": "rdzv"}, clusterIP="None"))
    host = await wait_for(api, PODS, "host", phase_is("Running"))
    await wait_for(api, PODS, "other", phase_is("Running"))
    for name in ("host", "other"):
        looked = kubelet.exec("default", name, ["getent", "hosts", "rdzv"])
        assert looked.exit_code == 0
        assert looked.output.split() == [ip_of(host), "rdzv.default.svc.cluster.local"]
    # The selected pod finds its own address behind the name: what torchrun's is_host test reads.
    own = kubelet.exec("default", "host", ["getent", "hosts", "host"]).output.split()[0]
    assert own == ip_of(host)
    full = kubelet.exec("default", "other", ["nslookup", "rdzv.default.svc.cluster.local"])
    assert full.exit_code == 0
    assert f"Address: {ip_of(host)}" in full.output


async def test_not_ready_pods_are_published_only_when_the_service_asks(
    api: Api, kubelet: Kubelet
) -> None:
    await api.create(PODS, pod("slow", labels={"app": "a"}, annotations=sim(ready="false")))
    await api.create(SERVICES, service("plain", {"app": "a"}, clusterIP="None"))
    await api.create(
        SERVICES,
        service("eager", {"app": "a"}, clusterIP="None", publishNotReadyAddresses=True),
    )
    slow = await wait_for(api, PODS, "slow", phase_is("Running"))
    assert kubelet.exec("default", "slow", ["nslookup", "plain"]).exit_code == 1
    eager = kubelet.exec("default", "slow", ["nslookup", "eager"])
    assert (eager.exit_code, f"Address: {ip_of(slow)}" in eager.output) == (0, True)


async def test_a_cluster_ip_service_resolves_to_its_address_and_unknown_names_to_nothing(
    api: Api, kubelet: Kubelet
) -> None:
    await api.create(PODS, pod("client"))
    created = await api.create(SERVICES, service("web", {"app": "web"}))
    await wait_for(api, PODS, "client", phase_is("Running"))
    answer = kubelet.exec("default", "client", ["sh", "-c", "getent hosts web.default"])
    assert answer.output.split() == [created["spec"]["clusterIP"], "web.default.svc.cluster.local"]
    missing = kubelet.exec("default", "client", ["nslookup", "nosuch"])
    assert missing.exit_code == 1
    assert "** server can't find nosuch: NXDOMAIN" in missing.output
    assert kubelet.exec("default", "client", ["getent", "hosts", "example.com"]).exit_code == 2


async def test_a_pod_hostname_under_its_subdomain_resolves(api: Api, kubelet: Kubelet) -> None:
    await api.create(
        PODS, pod("w0", labels={"job": "j"}, hostname="w0", subdomain="j")
    )  # fmt: skip
    await api.create(
        SERVICES, service("j", {"job": "j"}, clusterIP="None", publishNotReadyAddresses=True)
    )
    w0 = await wait_for(api, PODS, "w0", phase_is("Running"))
    answer = kubelet.exec("default", "w0", ["getent", "hosts", "w0.j"])
    assert answer.output.split() == [ip_of(w0), "w0.j.default.svc.cluster.local"]
