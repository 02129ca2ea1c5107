"""The root CA publisher: kube-root-ca.crt in every namespace, kept there."""

from __future__ import annotations

from etctl.runtime import CONFIGMAPS, NAMESPACES
from etctl.testing import ApiServer


async def test_every_namespace_holds_the_root_ca_and_keeps_it() -> None:
    async with ApiServer() as server:
        for namespace in ("default", "kube-system"):
            assert server.storage.get(CONFIGMAPS, "kube-root-ca.crt", namespace=namespace)
        server.storage.create(NAMESPACES, {"metadata": {"name": "team"}})
        published = server.storage.get(CONFIGMAPS, "kube-root-ca.crt", namespace="team")
        assert published["data"] == {"ca.crt": ""}  # plain HTTP: no CA to publish
        assert "kubernetes.io/description" in published["metadata"]["annotations"]
        server.storage.delete(CONFIGMAPS, "kube-root-ca.crt", namespace="team")
        again = server.storage.get(CONFIGMAPS, "kube-root-ca.crt", namespace="team")
        assert again["metadata"]["uid"] != published["metadata"]["uid"]
        changed = {**again, "data": {"ca.crt": "tampered"}}
        server.storage.update(CONFIGMAPS, changed, namespace="team")
        restored = server.storage.get(CONFIGMAPS, "kube-root-ca.crt", namespace="team")
        assert restored["data"] == {"ca.crt": ""}


async def test_over_https_it_publishes_the_servers_ca() -> None:
    async with ApiServer(tls=True) as server:
        assert server.certificate is not None
        published = server.storage.get(CONFIGMAPS, "kube-root-ca.crt", namespace="default")
        assert published["data"]["ca.crt"] == server.certificate.ca_pem.decode()


async def test_without_controllers_nothing_is_published() -> None:
    async with ApiServer(controllers=False) as server:
        assert server.storage.list(CONFIGMAPS, namespace="default").items == []
