"""``etctl run``'s metrics as kubebuilder scaffolds them: HTTPS, for allowed ServiceAccounts only.

The operator runs as a process with its default metrics flags (only the address moved to a free
loopback port), as the ServiceAccount of the committed manifests, against the embedded API server
enforcing RBAC with those manifests installed. A scraper's ServiceAccount bound to the
``etctl-metrics-reader`` ClusterRole reads ``/metrics``; another one is refused; no token is
refused; plain HTTP gets nothing; the probes stay plain HTTP.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp

from etctl.cli._render import METRICS_READER
from etctl.runtime import NAMESPACES, SERVICEACCOUNTS
from etctl.testing import ApiServer, AuthConfig, eventually
from tests.cli.test_manifests_rbac import ACCOUNT, KINDS, NAMESPACE, OPERATOR, install
from tests.cli.test_run import free_port, get, operator_process
from tests.runtime._realtime import client_of


async def scrape(url: str, token: str | None = None) -> tuple[int, str]:
    """GET ``url`` over TLS without verifying the self-signed certificate, as a scraper would."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = aiohttp.ClientTimeout(total=5)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, headers=headers, ssl=False) as answer,
        ):
            return answer.status, await answer.text()
    except aiohttp.ClientError:
        return 0, ""


async def test_metrics_are_served_over_https_to_allowed_service_accounts_only(
    tmp_path: Path,
) -> None:
    async with ApiServer(auth=AuthConfig()) as server, client_of(server, tmp_path) as admin:
        install(server)
        await admin.create(NAMESPACES, {"metadata": {"name": "monitoring"}})
        for name in ("prometheus", "nosy"):
            account = {"metadata": {"name": name, "namespace": "monitoring"}}
            await admin.create(SERVICEACCOUNTS, account)
        api = "rbac.authorization.k8s.io"
        binding = {
            "apiVersion": f"{api}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "prometheus-reads-etctl-metrics"},
            "roleRef": {"apiGroup": api, "kind": "ClusterRole", "name": METRICS_READER},
            "subjects": [
                {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
            ],
        }
        server.apply_object(KINDS["ClusterRoleBinding"], binding)
        reader = server.service_account_token("monitoring", "prometheus")
        nosy = server.service_account_token("monitoring", "nosy")
        kubeconfig = server.write_service_account_kubeconfig(
            tmp_path / "operator.kubeconfig", namespace=NAMESPACE, name=ACCOUNT
        )
        metrics, probes = free_port(), free_port()
        async with operator_process(
            f"--kubeconfig={kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            "--jobs=tfjob",
        ) as process:
            url = f"https://127.0.0.1:{metrics}/metrics"

            async def serving() -> bool:
                return (await scrape(url))[0] != 0

            await eventually(serving, timeout=30)
            assert await scrape(url) == (401, "Unauthorized\n")
            assert await scrape(url, "not-a-token") == (401, "Unauthorized\n")
            assert await scrape(url, nosy) == (
                403,
                "Authorization denied for user system:serviceaccount:monitoring:nosy\n",
            )
            status, body = await scrape(url, reader)
            assert status == 200
            assert "rest_client_requests_total" in body
            assert (await get(f"http://127.0.0.1:{metrics}/metrics"))[0] == 0  # TLS only

            async def ready() -> bool:
                return (await get(f"http://127.0.0.1:{probes}/readyz"))[0] == 200

            await eventually(ready, timeout=30)  # the probes: plain HTTP for the kubelet
            process.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(process.communicate(), timeout=30)
        assert process.returncode == 0, err.decode()
    # The operator reviewed the scrapers' tokens as its own ServiceAccount, and logged no token.
    reviews = server.requests.find(resource="tokenreviews", user=OPERATOR, code=201)
    access = server.requests.find(resource="subjectaccessreviews", user=OPERATOR, code=201)
    assert reviews
    assert access
    for token in (reader, nosy):
        assert token.encode() not in out + err
