"""How the client reaches the server: TLS, proxies and ~/.netrc, all settled when it is built."""

from __future__ import annotations

import base64
import datetime
import os
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import web

from etctl.errors import RequestNotSent
from etctl.runtime import CONFIGMAPS, PODS, Client, ClientOptions
from etctl.runtime._transport import _environment_proxies, _no_proxy_matches, encode_body
from etctl.testing._apiserver.tls import ServingCertificate, serving_certificate
from tests.runtime.scripted import (
    InstantClock,
    client_for,
    json_response,
    scripted_server,
    write_kubeconfig,
)

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test starts without proxies and without a netrc file."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


async def answer_pod(_request: web.Request) -> web.StreamResponse:
    """Every request's answer: :data:`POD`."""
    return json_response(POD)


def self_signed() -> ServingCertificate:
    """A certificate for 127.0.0.1 signed by its own key (the embedded server's kind)."""
    return serving_certificate("127.0.0.1")


@asynccontextmanager
async def tls_server(certificate: ServingCertificate) -> AsyncIterator[str]:
    """An HTTPS server on 127.0.0.1 that answers every request with :data:`POD`."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer_pod)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certificate.context)
    await site.start()
    try:
        yield f"https://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def connect(tmp_path: Path, url: str, **cluster: Any) -> Client:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
    if cluster:
        data = yaml.safe_load(kubeconfig.read_text())
        data["clusters"][0]["cluster"].update(cluster)
        kubeconfig.write_text(yaml.safe_dump(data))
    return await Client.from_kubeconfig(kubeconfig, options=ClientOptions(clock=InstantClock()))


async def test_tls_with_the_kubeconfig_ca(tmp_path: Path) -> None:
    certificate = self_signed()
    async with tls_server(certificate) as url:
        ca = {"certificate-authority-data": certificate.ca_data}
        async with await connect(tmp_path, url, **ca) as client:
            assert await client.get(PODS, "p", namespace="ns") == POD


async def test_tls_with_an_unknown_ca_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    async with tls_server(self_signed()) as url:
        async with await connect(tmp_path, url) as client:
            with pytest.raises(RequestNotSent):
                await client.get(PODS, "p", namespace="ns")
        skip = {"insecure-skip-tls-verify": True}
        async with await connect(tmp_path, url, **skip) as client:
            assert await client.get(PODS, "p", namespace="ns") == POD


async def test_the_environment_proxy_is_read_when_the_client_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with scripted_server() as proxy:
        proxy.handler = answer_pod
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://me:pw@"))
        # The cluster's name does not resolve: only the proxy can carry the request.
        async with await client_for("http://cluster.invalid:6443", tmp_path) as client:
            monkeypatch.delenv("HTTP_PROXY")  # read once: later changes do not matter
            assert await client.get(PODS, "p", namespace="ns") == POD
    assert proxy.seen[0].path == "/api/v1/namespaces/ns/pods/p"
    assert proxy.seen[0].headers["Authorization"] == "Bearer t0ken"
    assert (
        proxy.seen[0].headers["Proxy-Authorization"]
        == "Basic " + base64.b64encode(b"me:pw").decode()
    )


async def test_no_proxy_hosts_are_reached_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with scripted_server() as server:
        server.handler = answer_pod
        monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with await client_for(server.url, tmp_path) as client:
            assert await client.get(PODS, "p", namespace="ns") == POD
    assert len(server.seen) == 1


@pytest.mark.parametrize(
    ("entry", "host", "port", "bypassed"),
    [
        ("*", "anything.example", 443, True),
        ("10.96.0.0/12", "10.96.0.1", 443, True),
        ("10.96.0.0/12", "10.112.0.1", 443, False),
        ("fd00::/8", "fd00::1", 443, True),
        ("10.96.0.1", "10.96.0.1", 6443, True),
        ("10.96.0.1:443", "10.96.0.1", 6443, False),
        ("[fd00::1]:443", "fd00::1", 443, True),
        ("fd00::1", "fd00::1", 443, True),
        ("example.com", "api.example.com", 443, True),
        (".example.com", "api.example.com", 443, True),
        ("*.example.com", "example.com", 443, True),
        ("example.com", "notexample.com", 443, False),
        ("example.com:6443", "example.com", 443, False),
        ("10.0.0.0/8", "kubernetes.default.svc", 443, False),
        ("", "example.com", 443, False),
    ],
)
def test_no_proxy_entries_are_read_as_client_go_reads_them(
    entry: str, host: str, port: int, bypassed: bool
) -> None:
    assert _no_proxy_matches(entry, host, port) is bypassed


async def test_the_kubeconfig_proxy_url_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with scripted_server() as proxy:
        proxy.handler = answer_pod
        monkeypatch.setenv("HTTP_PROXY", "http://elsewhere.invalid:3128")
        monkeypatch.setenv("NO_PROXY", "cluster.invalid")  # the configured proxy is not bypassed
        client = await connect(tmp_path, "http://cluster.invalid:6443", **{"proxy-url": proxy.url})
        async with client:
            assert await client.get(PODS, "p", namespace="ns") == POD
    assert proxy.seen[0].path == "/api/v1/namespaces/ns/pods/p"


async def test_a_no_proxy_cidr_block_is_reached_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An in-cluster operator behind a proxy reaches the service IP that NO_PROXY's block holds."""
    async with scripted_server() as server:
        server.handler = answer_pod
        monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
        monkeypatch.setenv("NO_PROXY", "10.96.0.0/12,127.0.0.0/8")
        async with await client_for(server.url, tmp_path) as client:
            assert await client.get(PODS, "p", namespace="ns") == POD
    assert len(server.seen) == 1


async def test_netrc_credentials_are_used_only_without_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login admin password s3cret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    async with scripted_server() as server:
        server.handler = answer_pod
        kubeconfig = write_kubeconfig(tmp_path / "anonymous", server.url, token="")
        async with await Client.from_kubeconfig(kubeconfig) as client:
            await client.get(PODS, "p", namespace="ns")
        async with await client_for(server.url, tmp_path) as client:
            await client.get(PODS, "p", namespace="ns")
    basic = "Basic " + base64.b64encode(b"admin:s3cret").decode()
    assert [seen.headers["Authorization"] for seen in server.seen] == [basic, "Bearer t0ken"]


async def test_bodies_are_compact_json_with_their_content_type(tmp_path: Path) -> None:
    async with scripted_server() as server:

        async def answer(_request: web.Request) -> web.StreamResponse:
            return json_response(POD, 201)

        server.handler = answer
        body = {"metadata": {"name": "cm", "namespace": "ns"}, "data": {"k": "vé"}}
        async with await client_for(server.url, tmp_path) as client:
            await client.create(CONFIGMAPS, body)
    seen = server.seen[0]
    assert seen.headers["Content-Type"] == "application/json"
    assert orjson.loads(seen.body) == {"apiVersion": "v1", "kind": "ConfigMap", **body}


def test_body_encoding_covers_what_json_dumps_accepted() -> None:
    stamp = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    encoded = encode_body({"at": stamp, "ids": (1, 2), 3: "three", "none": None})
    assert orjson.loads(encoded) == {
        "at": "2026-01-02T03:04:05+00:00",
        "ids": [1, 2],
        "3": "three",
        "none": None,
    }
    with pytest.raises(TypeError):
        encode_body({"x": object()})


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"HTTPS_PROXY": "http://upper:3128", "NO_PROXY": "10.0.0.0/8"},
        {"HTTPS_PROXY": "http://upper:3128", "https_proxy": "http://lower:3128"},
        {"HTTPS_PROXY": "http://upper:3128", "https_proxy": ""},  # the lower case unsets it
        {"http_proxy": "http://p:1", "HTTP_PROXY": "http://q:2", "REQUEST_METHOD": "GET"},
        {"HTTP_PROXY": "http://q:2", "REQUEST_METHOD": "GET", "Ftp_Proxy": "x", "PROXY": "y"},
        {"all_proxy": "socks5://s:1080", "no_proxy": "", "NO_PROXY": "a,b"},
    ],
)
def test_proxy_variables_are_read_as_python_reads_them(environ: dict[str, str]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            patch.delenv(name)
        for name, value in environ.items():
            patch.setenv(name, value)
        expected = urllib.request.getproxies_environment()
    assert _environment_proxies(environ) == expected
