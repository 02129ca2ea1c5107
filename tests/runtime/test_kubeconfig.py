"""Loading cluster connections and keeping credentials fresh."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from etctl.errors import ConfigError, Unauthorized
from etctl.runtime import PODS, Client, ClientOptions, FakeClock, context_namespace
from etctl.runtime._kubeconfig import (
    default_kubeconfig_path,
    in_cluster_available,
    load_in_cluster,
    load_kubeconfig,
)
from tests.runtime.scripted import (
    Handler,
    InstantClock,
    ScriptedServer,
    json_response,
    scripted_server,
    status_body,
    write_kubeconfig,
)

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}


def exec_plugin(tmp_path: Path, *, expires_in: timedelta | None) -> Path:
    """An exec credential plugin that hands out tok-1, tok-2, ... one per run."""
    counter = tmp_path / "runs"
    counter.write_text("0")
    expiry = ""
    if expires_in is not None:
        stamp = (datetime.now(UTC) + expires_in).strftime("%Y-%m-%dT%H:%M:%SZ")
        expiry = f', "expirationTimestamp": "{stamp}"'
    script = tmp_path / "plugin.py"
    script.write_text(
        f"#!{sys.executable}\n"
        "import pathlib\n"
        f"counter = pathlib.Path({str(counter)!r})\n"
        "runs = int(counter.read_text()) + 1\n"
        "counter.write_text(str(runs))\n"
        'print(\'{"apiVersion": "client.authentication.k8s.io/v1", \'\n'
        '      \'"kind": "ExecCredential", \'\n'
        f'      \'"status": {{"token": "tok-\' + str(runs) + \'"{expiry}}}}}\')\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def exec_user(script: Path) -> dict[str, object]:
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script)}}


def accepting(token: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {token}":
            return json_response(status_body(401, "Unauthorized", "Unauthorized"), 401)
        return json_response(POD)

    return handler


async def test_explicit_path_and_context(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config", "http://127.0.0.1:1")
    data = yaml.safe_load(path.read_text())
    data["clusters"].append({"name": "c2", "cluster": {"server": "http://127.0.0.1:2"}})
    data["contexts"].append({"name": "other", "context": {"cluster": "c2", "user": "u"}})
    path.write_text(yaml.safe_dump(data))
    assert (await load_kubeconfig(path)).host == "http://127.0.0.1:1"
    other = await load_kubeconfig(path, "other")
    assert other.host == "http://127.0.0.1:2"
    assert "context other" in other.source
    assert not other.refreshable  # a static token


async def test_unusable_kubeconfigs_raise_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no kubeconfig"):
        await load_kubeconfig(tmp_path / "missing")
    path = write_kubeconfig(tmp_path / "config", "http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="unusable"):
        await load_kubeconfig(path, "no-such-context")
    (tmp_path / "broken").write_text("clusters: [\n")
    with pytest.raises(ConfigError):
        await load_kubeconfig(tmp_path / "broken")


async def test_kubeconfig_env_merges_files_and_auto_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with scripted_server() as server:
        server.handler = accepting("t0ken")
        first = write_kubeconfig(tmp_path / "a", server.url)
        second = tmp_path / "b"
        second.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": []}))
        monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{first}:{second}")
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        assert default_kubeconfig_path() == f"{tmp_path / 'absent'}:{first}:{second}"
        async with await Client.auto() as client:
            assert await client.get(PODS, "p", namespace="ns") == POD
        async with Client.connect() as connected:
            assert await connected.get(PODS, "p", namespace="ns") == POD
        async with Client.connect(first) as named:
            assert await named.get(PODS, "p", namespace="ns") == POD


@asynccontextmanager
async def plugin_client(tmp_path: Path) -> AsyncIterator[tuple[ScriptedServer, Client]]:
    """A client whose token comes from an exec plugin without expiry; the server takes tok-2."""
    script = exec_plugin(tmp_path, expires_in=None)
    async with scripted_server() as server:
        server.handler = accepting("tok-2")
        path = write_kubeconfig(tmp_path / "config", server.url, token="", **exec_user(script))
        opts = ClientOptions(clock=InstantClock())
        async with await Client.from_kubeconfig(path, options=opts) as client:
            yield server, client


async def test_exec_plugin_token_is_refreshed_on_401(tmp_path: Path) -> None:
    async with plugin_client(tmp_path) as (server, client):
        assert client.cluster is not None
        assert client.cluster.refreshable
        # tok-1 is rejected: the plugin runs again and the request is repeated once.
        assert await client.get(PODS, "p", namespace="ns") == POD
        assert await client.get(PODS, "p", namespace="ns") == POD
        server.handler = accepting("never")
        with pytest.raises(Unauthorized):
            await client.get(PODS, "p", namespace="ns")
    tokens = [s.headers["Authorization"] for s in server.seen]
    assert tokens == [
        "Bearer tok-1",
        "Bearer tok-2",
        "Bearer tok-2",
        "Bearer tok-2",
        "Bearer tok-3",
    ]
    assert (tmp_path / "runs").read_text() == "3"


async def test_exec_plugin_token_is_kept_until_it_expires(tmp_path: Path) -> None:
    # A token that lives two minutes: client-go runs the plugin again only once it expired (a
    # five-minute skew had the plugin run for every request, 22 runs for 20 GETs).
    script = exec_plugin(tmp_path, expires_in=timedelta(minutes=2))
    clock = FakeClock(start=datetime.now(UTC))
    async with scripted_server() as server:
        server.handler = json_response_always()
        path = write_kubeconfig(tmp_path / "config", server.url, token="", **exec_user(script))
        async with await Client.from_kubeconfig(path, options=ClientOptions(clock=clock)) as client:
            for _ in range(20):
                await client.get(PODS, "p", namespace="ns")
            assert (tmp_path / "runs").read_text() == "1"
            await clock.advance(118)  # before its expirationTimestamp (whole seconds): valid
            await client.get(PODS, "p", namespace="ns")
            await clock.advance(3)  # past it
            await client.get(PODS, "p", namespace="ns")
    tokens = [s.headers["Authorization"] for s in server.seen]
    assert tokens == ["Bearer tok-1"] * 21 + ["Bearer tok-2"]
    assert (tmp_path / "runs").read_text() == "2"


async def test_a_burst_of_refusals_runs_the_plugin_once(tmp_path: Path) -> None:
    async with plugin_client(tmp_path) as (server, client):
        gets = [client.get(PODS, "p", namespace="ns") for _ in range(8)]
        assert await asyncio.gather(*gets) == [POD] * 8
    # tok-1 refused eight times over, reloaded once: every request repeated with tok-2.
    assert (tmp_path / "runs").read_text() == "2"
    tokens = [s.headers["Authorization"] for s in server.seen]
    assert sorted(tokens) == ["Bearer tok-1"] * 8 + ["Bearer tok-2"] * 8


async def test_exec_plugin_token_with_a_distant_expiry_is_reused(tmp_path: Path) -> None:
    script = exec_plugin(tmp_path, expires_in=timedelta(hours=1))
    async with scripted_server() as server:
        server.handler = json_response_always()
        path = write_kubeconfig(tmp_path / "config", server.url, token="", **exec_user(script))
        opts = ClientOptions(clock=FakeClock(start=datetime.now(UTC)))
        async with await Client.from_kubeconfig(path, options=opts) as client:
            for _ in range(3):
                await client.get(PODS, "p", namespace="ns")
    assert {s.headers["Authorization"] for s in server.seen} == {"Bearer tok-1"}


async def test_token_files_are_reread_every_minute(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first")
    clock = FakeClock()
    async with scripted_server() as server:
        server.handler = json_response_always()
        path = write_kubeconfig(
            tmp_path / "config", server.url, token="", tokenFile=str(token_file)
        )
        async with await Client.from_kubeconfig(path, options=ClientOptions(clock=clock)) as client:
            await client.get(PODS, "p", namespace="ns")
            token_file.write_text("second")
            await client.get(PODS, "p", namespace="ns")
            await clock.advance(61)
            await client.get(PODS, "p", namespace="ns")
    tokens = [s.headers["Authorization"] for s in server.seen]
    assert tokens == ["Bearer first", "Bearer first", "Bearer second"]


async def test_token_files_are_trimmed_as_client_go_trims_them(tmp_path: Path) -> None:
    # A token file written by echo or an editor ends in a newline: client-go trims it, and so
    # the first requests in a pod (before any re-read) work too.
    token_file = tmp_path / "token"
    token_file.write_text("  first\n")
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    pod = load_in_cluster(token_path=token_file, ca_path=ca, environ=env, clock=FakeClock())
    assert pod.configuration.api_key["BearerToken"] == "Bearer first"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "relative").write_text("second\r\n")
    async with scripted_server() as server:
        server.handler = json_response_always()
        path = write_kubeconfig(
            tmp_path / "sub" / "config", server.url, token="", tokenFile="relative"
        )
        async with await Client.from_kubeconfig(path) as client:
            await client.get(PODS, "p", namespace="ns")
    assert [s.headers["Authorization"] for s in server.seen] == ["Bearer second"]


async def test_in_cluster_service_account(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("sa-1")
    token.with_name("blank").write_text(" \n")
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert in_cluster_available(env)
    assert not in_cluster_available({})
    clock = FakeClock()
    cluster = load_in_cluster(token_path=token, ca_path=ca, environ=env, clock=clock)
    assert cluster.host == "https://10.0.0.1:443"
    assert cluster.configuration.api_key["BearerToken"] == "Bearer sa-1"
    token.write_text("sa-2")
    await cluster.refresh()
    assert cluster.configuration.api_key["BearerToken"] == "Bearer sa-1"  # not due yet
    await clock.advance(60)
    await cluster.refresh()
    assert cluster.configuration.api_key["BearerToken"] == "Bearer sa-2"
    # A re-read that finds nothing keeps the last token, as client-go's cached token source does.
    token.write_text("")
    await cluster.refresh(force=True)
    assert cluster.configuration.api_key["BearerToken"] == "Bearer sa-2"
    token.write_text("sa-3\n")
    await clock.advance(60)
    await cluster.refresh()
    assert cluster.configuration.api_key["BearerToken"] == "Bearer sa-3"
    with pytest.raises(ConfigError):
        load_in_cluster(token_path=tmp_path / "none", ca_path=ca, environ=env)
    with pytest.raises(ConfigError, match="empty"):
        load_in_cluster(token_path=token.with_name("blank"), ca_path=ca, environ=env)
    with pytest.raises(ConfigError):
        load_in_cluster(token_path=token, ca_path=ca, environ={})


def json_response_always() -> Handler:
    async def handler(_request: web.Request) -> web.StreamResponse:
        return json_response(POD)

    return handler


def test_the_context_namespace_is_read_as_kubectl_merges_files(tmp_path: Path) -> None:
    def kubeconfig(name: str, current: str | None, contexts: dict[str, str | None]) -> Path:
        config: dict[str, object] = {
            "apiVersion": "v1",
            "kind": "Config",
            "contexts": [
                {"name": ctx, "context": {"cluster": "c", "user": "u", "namespace": ns}}
                if ns
                else {"name": ctx, "context": {"cluster": "c", "user": "u"}}
                for ctx, ns in contexts.items()
            ],
        }
        if current:
            config["current-context"] = current
        path = tmp_path / name
        path.write_text(yaml.safe_dump(config))
        return path

    first = kubeconfig("first", "a", {"a": "team-a", "b": None})
    second = kubeconfig("second", "b", {"a": "shadowed", "c": "team-c"})
    merged = f"{first}:{second}"
    # The first file that sets current-context, and the first definition of a context, win.
    assert context_namespace(merged) == "team-a"
    assert context_namespace(merged, "b") == ""
    assert context_namespace(merged, "c") == "team-c"
    assert context_namespace(merged, "missing") == ""
    (tmp_path / "broken").write_text("- not\n- a mapping\n")
    with pytest.raises(ConfigError, match="is not a mapping"):
        context_namespace(tmp_path / "broken")


def test_loading_a_connection_leaves_the_generated_api_unloaded_until_used(tmp_path: Path) -> None:
    # In a fresh interpreter: this one may have imported kubernetes_asyncio in full already.
    path = write_kubeconfig(tmp_path / "config", "http://127.0.0.1:1")
    script = (
        "import asyncio, sys\n"
        "from etctl.runtime import Client\n"
        "async def connect():\n"
        f"    async with await Client.from_kubeconfig({str(path)!r}):\n"
        "        pass\n"
        "asyncio.run(connect())\n"
        "models = [m for m in sys.modules if m.startswith('kubernetes_asyncio.client.models.')]\n"
        "apis = [m for m in sys.modules if m.startswith('kubernetes_asyncio.client.api.')]\n"
        "rest = [m for m in sys.modules if m.startswith(('kubernetes_asyncio.client.rest',\n"
        "        'kubernetes_asyncio.client.api_client'))]\n"
        "print(len(models), len(apis), len(rest))\n"
        "import kubernetes_asyncio\n"
        "from kubernetes_asyncio import client\n"
        "from kubernetes_asyncio.client import ApiClient, Configuration, V1Pod\n"
        "from kubernetes_asyncio.client.api_client import ApiClient as Same\n"
        "assert ApiClient is Same and V1Pod.__name__ == 'V1Pod' and client.CoreV1Api\n"
        "print(kubernetes_asyncio.__version__ == client.__version__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["0", "0", "0", "True"]


# The loader alone, in a fresh interpreter: etctl.runtime's own __init__ imports the rest of the
# runtime (whose transport uses aiohttp), so the package is registered without running it and only
# the kubeconfig module and what it imports are loaded.
_LOADER_ALONE = """
import asyncio, pathlib, sys, types
import etctl
runtime = types.ModuleType("etctl.runtime")
runtime.__path__ = [str(pathlib.Path(etctl.__file__).parent / "runtime")]
sys.modules["etctl.runtime"] = runtime
from etctl.runtime import _kubeconfig
"""


def test_loading_a_connection_imports_only_kubernetes_asyncios_configuration_layer(
    tmp_path: Path,
) -> None:
    path = write_kubeconfig(tmp_path / "config", "http://127.0.0.1:1")
    (tmp_path / "token").write_text("sa-1")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    script = _LOADER_ALONE + (
        f"cluster = asyncio.run(_kubeconfig.load_kubeconfig({str(path)!r}))\n"
        f"pod = _kubeconfig.load_in_cluster(token_path={str(tmp_path / 'token')!r},\n"
        f"    ca_path={str(tmp_path / 'ca.crt')!r}, environ={env!r})\n"
        "print(cluster.configuration.api_key['BearerToken'], pod.host)\n"
        "heavy = ('aiohttp', 'dateutil', 'multiprocessing', 'urllib3.',\n"
        "         'kubernetes_asyncio.client.rest', 'kubernetes_asyncio.client.api_client',\n"
        "         'kubernetes_asyncio.client.api', 'kubernetes_asyncio.client.models.')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
        "print('PoolManager' in vars(sys.modules['urllib3']))\n"
        # What kube_config calls the OIDC requestor and ApiClient through is a stand-in; what
        # anyone else imports is the real class, and the stand-in builds real objects.
        "from kubernetes_asyncio.config import kube_config, new_client_from_config\n"
        "from kubernetes_asyncio.config.openid import OpenIDRequestor\n"
        "from kubernetes_asyncio.client import ApiClient, CoreV1Api\n"
        "from kubernetes_asyncio.client.api_client import ApiClient as Defined\n"
        "import kubernetes_asyncio.config.openid as openid\n"
        "assert isinstance(OpenIDRequestor, type) and openid.aiohttp.ClientSession\n"
        "assert isinstance(ApiClient, type) and ApiClient is Defined and CoreV1Api\n"
        "assert kube_config.ApiClient is not ApiClient\n"
        f"api = asyncio.run(new_client_from_config(config_file={str(path)!r}))\n"
        "assert type(api) is ApiClient and kube_config.ApiClient is ApiClient\n"
        "asyncio.run(api.close())\n"
        "import urllib3\n"
        "cluster.configuration.username, cluster.configuration.password = 'me', 'pw'\n"
        "assert cluster.configuration.get_basic_auth_token() == 'Basic bWU6cHc='\n"
        "assert urllib3.PoolManager.__module__ == 'urllib3.poolmanager'\n"
        "print('real')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Bearer t0ken https://10.0.0.1:443", "[]", "False", "real"]


def _jwt(claims: dict[str, object]) -> str:
    """An unsigned JWT with ``claims`` (kube_config reads only its expiry)."""

    def part(value: dict[str, object]) -> str:
        return base64.b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


async def test_an_oidc_auth_providers_expired_token_is_refreshed_when_loaded(
    tmp_path: Path,
) -> None:
    expired = _jwt({"exp": int(datetime.now(UTC).timestamp()) - 3600})
    fresh = _jwt({"exp": int(datetime.now(UTC).timestamp()) + 3600})

    async def issuer(request: web.Request) -> web.StreamResponse:
        if request.path == "/.well-known/openid-configuration":
            return json_response({"token_endpoint": f"{idp.url}/token"})
        form = await request.post()
        if request.path != "/token" or form.get("refresh_token") != "refresh-1":
            return json_response({"error": "invalid_grant"}, 400)
        return json_response({"id_token": fresh, "refresh_token": "refresh-2"})

    async with scripted_server() as idp:
        idp.handler = issuer
        provider = {
            "name": "oidc",
            "config": {
                "client-id": "etctl",
                "client-secret": "s3cret",
                "idp-issuer-url": idp.url,
                "id-token": expired,
                "refresh-token": "refresh-1",
            },
        }
        path = write_kubeconfig(
            tmp_path / "config", "http://127.0.0.1:1", token="", **{"auth-provider": provider}
        )
        # A fresh interpreter, where kube_config calls the requestor through its stand-in first
        # (this one may have imported kubernetes_asyncio in full already).
        script = _LOADER_ALONE + (
            f"cluster = asyncio.run(_kubeconfig.load_kubeconfig({str(path)!r}))\n"
            "print(cluster.configuration.api_key['BearerToken'], cluster.refreshable)\n"
            "from kubernetes_asyncio.config import kube_config\n"
            "from kubernetes_asyncio.config.openid import OpenIDRequestor\n"
            "print(kube_config.OpenIDRequestor is OpenIDRequestor)\n"
        )
        environ = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            env=environ,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(60):
            out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().splitlines() == [f"Bearer {fresh} True", "True"]
    assert [(seen.method, seen.path) for seen in idp.seen] == [
        ("GET", "/.well-known/openid-configuration"),
        ("POST", "/token"),
    ]
    expected = base64.b64encode(b"etctl:s3cret").decode()
    assert idp.seen[1].headers["Authorization"] == f"Basic {expected}"
