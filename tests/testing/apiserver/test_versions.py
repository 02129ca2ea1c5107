"""The release the server models: what /version says and what that release's API has."""

from __future__ import annotations

import aiohttp
import pytest

from etctl.runtime import PODS
from etctl.testing import ApiServer
from etctl.testing._apiserver.versions import KubernetesVersion

POD = {
    "metadata": {"name": "gated"},
    "spec": {
        "containers": [{"name": "main", "image": "busybox"}],
        "schedulingGates": [{"name": "example.etctl.dev/wait"}],
    },
}


async def version_of(server: ApiServer) -> dict[str, str]:
    async with aiohttp.ClientSession() as session, session.get(server.url + "/version") as reply:
        body: dict[str, str] = await reply.json()
        return body


async def test_the_server_says_which_release_it_models() -> None:
    async with ApiServer(kubernetes_version="1.24", controllers=False) as server:
        found = await version_of(server)
    assert (found["major"], found["minor"], found["gitVersion"]) == ("1", "24", "v1.24.0")
    async with ApiServer(controllers=False) as server:
        assert (await version_of(server))["gitVersion"] == "v1.32.0"


@pytest.mark.parametrize(("release", "kept"), [("1.24", False), ("1.26", False), ("1.27", True)])
async def test_pod_scheduling_gates_exist_from_1_27(release: str, kept: bool) -> None:
    async with ApiServer(kubernetes_version=release, controllers=False) as server:
        created = server.storage.create(PODS, POD, namespace="default")
        assert ("schedulingGates" in created["spec"]) is kept
        spec = {**created["spec"], "schedulingGates": [{"name": "example.etctl.dev/wait"}]}
        updated = server.storage.update(PODS, {**created, "spec": spec}, namespace="default")
        assert ("schedulingGates" in updated["spec"]) is kept


def test_only_the_modelled_releases_are_accepted() -> None:
    assert str(KubernetesVersion.parse("v1.28.3")) == "1.28"
    assert KubernetesVersion.parse("1.24") < KubernetesVersion.parse("1.32")
    for text in ("1.23", "1.33", "2.0", "latest"):
        with pytest.raises(ValueError, match=r"1\.24 to 1\.32|not a Kubernetes version"):
            KubernetesVersion.parse(text)
