"""The fanout operator on kopf (run by ``fanout.py`` in its own process; ``pip install kopf``).

A creation handler creates the parent's ConfigMaps (concurrently, with a plain aiohttp session:
the cheapest client a kopf handler can use) and puts the status into kopf's own patch. Tuned as
kopf's documentation allows, so that it makes the minimum requests with the least work: no
Kubernetes events posted, standalone (no peering), no cluster scanning, its progress and diff-base
kept in the status (so one status patch carries them and the handler's status), warnings-only
logging.

    python bench/_fanout_kopf.py KUBECONFIG
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import yaml

from _fanout_workload import CHILDREN, GROUP, NAMESPACE, PLURAL, VERSION, child

_session: dict[str, aiohttp.ClientSession] = {}


def main(kubeconfig: str) -> None:
    config = yaml.safe_load(Path(kubeconfig).read_text())
    server = config["clusters"][0]["cluster"]["server"]
    token = config["users"][0]["user"]["token"]
    kopf.configure(quiet=True)  # warnings only, as the etctl operator logs

    @kopf.on.login()
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=server, token=token, scheme="Bearer")

    @kopf.on.startup()
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.scanning.disabled = True
        settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.kopf")
        settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(field="status.diff")
        _session["api"] = aiohttp.ClientSession(
            base_url=server,
            headers={"Authorization": f"Bearer {token}"},
            connector=aiohttp.TCPConnector(limit=100),
        )
        print("ready", flush=True)

    @kopf.on.cleanup()
    async def cleanup(**_: Any) -> None:
        await _session["api"].close()

    @kopf.on.create(GROUP, VERSION, PLURAL)
    async def created(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        owner = {"metadata": dict(body.metadata), "spec": dict(body.spec)}
        async with asyncio.TaskGroup() as group:
            for index in range(CHILDREN):
                group.create_task(_create(child(owner, index)))
        patch.status["configMaps"] = CHILDREN
        patch.status["observedGeneration"] = body.metadata.get("generation")

    kopf.run(standalone=True, namespaces=[NAMESPACE])


async def _create(body: dict[str, Any]) -> None:
    path = f"/api/v1/namespaces/{body['metadata']['namespace']}/configmaps"
    async with _session["api"].post(path, json=body) as response:
        if response.status not in (201, 409):  # 409: created by an earlier attempt
            raise kopf.TemporaryError(f"{path}: HTTP {response.status}", delay=1)
        await response.read()


if __name__ == "__main__":
    main(sys.argv[1])
