"""The webhook server over real HTTPS: TLS, limits, metrics, certificates appearing and rotating."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import warnings
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import pytest
from structlog.testing import capture_logs

from etctl.errors import ConfigError
from etctl.runtime import (
    REGISTRY,
    AdmissionRequest,
    FakeClock,
    KubeObject,
    RealClock,
    Resource,
    WebhookBuilder,
    WebhookServer,
    WebhookServerOptions,
)
from etctl.testing import eventually
from tests.runtime._webhooks import (
    Accepting,
    CertFiles,
    admission_review,
    make_certs,
    server_on,
    serving,
)

GREETINGS = Resource("example.etctl.dev", "v1", "greetings", "Greeting")
PATH = "/validate-example-etctl-dev-v1-greeting"


class Slow(Accepting):
    """A validator that takes its time when asked to, and refuses an empty greeting."""

    async def validate_create(self, obj: KubeObject, req: AdmissionRequest) -> Sequence[str]:
        await asyncio.sleep(float(obj["spec"].get("delay", 0)))
        if not obj["spec"].get("greeting"):
            from etctl.runtime import FieldError, invalid  # noqa: PLC0415

            raise invalid("Greeting", req.name, [FieldError("spec.greeting", "Required value")])
        return []


def greeting(greeting: str = "Hello", **spec: object) -> KubeObject:
    return {
        "apiVersion": "example.etctl.dev/v1",
        "kind": "Greeting",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {"greeting": greeting, **spec},
    }


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_review_is_answered_over_tls_with_metrics(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    server = server_on(certs.directory)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    before = sample("controller_runtime_webhook_requests_total", webhook=PATH, code="200")
    async with serving(server, certs) as client:
        status, body = await client.post(PATH, admission_review("CREATE", greeting()))
        assert status == 200
        assert body["response"]["allowed"] is True
        status, body = await client.post(PATH, admission_review("CREATE", greeting("")))
        assert status == 200
        assert body["response"]["allowed"] is False
        assert body["response"]["status"]["code"] == 422
        assert server.check() is None
    assert sample("controller_runtime_webhook_requests_total", webhook=PATH, code="200") == (
        before + 2
    )
    assert sample("controller_runtime_webhook_latency_seconds_count", webhook=PATH) >= 2
    assert sample("controller_runtime_webhook_requests_in_flight", webhook=PATH) == 0
    assert server.check() is not None  # stopped


async def test_only_posts_and_only_tls_1_2_or_later(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    server = server_on(certs.directory)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    async with serving(server, certs) as client:
        host, port = client.address
        async with client.session.get(
            f"https://{host}:{port}{PATH}", ssl=certs.client_context()
        ) as response:
            assert response.status == 405
            assert response.headers["Allow"] == "POST"
        status, _ = await client.post("/nowhere", admission_review("CREATE", greeting()))
        assert status == 404
        old = certs.client_context()
        with warnings.catch_warnings():  # asking for TLS 1.1 is deprecated: that is the point
            warnings.simplefilter("ignore", DeprecationWarning)
            old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
            old.maximum_version = ssl.TLSVersion.TLSv1_1
        with contextlib.suppress(ssl.SSLError):
            old.set_ciphers("ALL:@SECLEVEL=0")
        with pytest.raises((ssl.SSLError, aiohttp.ClientError)):
            await client.post(PATH, admission_review("CREATE", greeting()), context=old)
        untrusting = ssl.create_default_context()  # the system's CAs: not ours
        with pytest.raises(aiohttp.ClientError):
            await client.post(PATH, admission_review("CREATE", greeting()), context=untrusting)


async def test_an_oversized_review_is_refused_before_it_is_read(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    server = server_on(certs.directory, max_request_size=64 * 1024)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    huge = admission_review("CREATE", greeting(padding="x" * 100_000))
    async with serving(server, certs) as client:
        with capture_logs() as logs:
            status, body = await client.post(PATH, huge)
        assert status == 413
        assert "request entity is too large" in body
        assert "the limit is 65536 bytes" in body
        refused = [line for line in logs if line["event"] == "request refused"]
        assert refused
        assert refused[0]["server"] == "webhook server"
        assert refused[0]["status"] == 413
        status, _ = await client.post(PATH, admission_review("CREATE", greeting()))
        assert status == 200  # the server lives on


async def test_a_handler_past_its_time_is_a_500_and_others_are_served_meanwhile(
    tmp_path: Path,
) -> None:
    certs = make_certs(tmp_path / "certs")
    server = server_on(certs.directory, timeout=0.5)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    async with serving(server, certs) as client:
        slow = asyncio.ensure_future(
            client.post(PATH, admission_review("CREATE", greeting(delay=5)))
        )
        status, body = await client.post(PATH, admission_review("CREATE", greeting()))
        assert (status, body["response"]["allowed"]) == (200, True)
        status, body = await slow
        assert status == 500
        assert "did not answer within 0.5s" in body


async def test_the_server_waits_for_its_certificate_then_serves(tmp_path: Path) -> None:
    clock = FakeClock()
    certs = make_certs(tmp_path / "certs", write=False)
    server = server_on(certs.directory, clock=clock)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    task = asyncio.create_task(server.run(), name="test:webhook-server")
    try:
        await eventually(lambda: clock.sleepers >= 2)  # the watcher polls, the server waits
        assert server.check() == f"the webhook server waits for its certificate in {tmp_path}/certs"
        certs.write()
        await clock.advance(1)
        await eventually(lambda: server.address is not None)
        assert server.check() is None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_certificate_that_never_comes_fails_with_the_reason(tmp_path: Path) -> None:
    clock = FakeClock()
    server = server_on(tmp_path / "empty", clock=clock, cert_wait_timeout=60)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    task = asyncio.create_task(server.run(), name="test:webhook-server")
    await eventually(lambda: clock.sleepers >= 2)
    await clock.advance(61)
    with pytest.raises(ConfigError, match=r"no usable serving certificate in .*empty .* after 60s"):
        await asyncio.wait_for(task, timeout=10)


async def test_a_port_in_use_fails_naming_the_webhooks(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        options = WebhookServerOptions(host="127.0.0.1", port=port, cert_dir=certs.directory)
        server = WebhookServer(options, clock=RealClock())
        WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
        with pytest.raises(OSError, match=rf"webhooks: .*{port}.*address already in use"):
            await asyncio.wait_for(server.run(), timeout=10)


async def served_serial(address: tuple[str, int], context: ssl.SSLContext) -> bytes:
    """The DER certificate a fresh connection is served."""
    _, writer = await asyncio.open_connection(*address, ssl=context)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        assert der is not None
        return bytes(der)
    finally:
        writer.close()
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await writer.wait_closed()


def der(certs: CertFiles) -> bytes:
    return ssl.PEM_cert_to_DER_cert(certs.serving.cert_pem.decode())


@pytest.mark.parametrize("new_ca", [False, True], ids=["same CA", "new CA"])
async def test_a_rotated_certificate_is_served_without_a_refused_request(
    tmp_path: Path, new_ca: bool
) -> None:
    clock = FakeClock()
    certs = make_certs(tmp_path / "certs")
    server = server_on(certs.directory, clock=clock)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    old_ca = certs.ca.cert_pem
    async with serving(server, certs) as client:
        first = der(certs)
        assert await served_serial(client.address, certs.client_context()) == first
        certs.rotate(new_ca_too=new_ca)
        # The API server trusts the bundle the rotator injected: the old CA and the new one.
        bundle = ssl.create_default_context(cadata=(certs.ca.cert_pem + old_ca).decode())
        failures: list[BaseException] = []
        answered = 0
        stop = asyncio.Event()

        async def hammer() -> None:
            nonlocal answered
            connector = aiohttp.TCPConnector(force_close=True)  # a handshake per request
            async with aiohttp.ClientSession(connector=connector) as session:
                host, port = client.address
                while not stop.is_set():
                    try:
                        async with session.post(
                            f"https://{host}:{port}{PATH}",
                            json=admission_review("CREATE", greeting()),
                            ssl=bundle,
                        ) as response:
                            assert response.status == 200
                            answered += 1
                    except Exception as error:  # collected and asserted on
                        failures.append(error)

        hammering = asyncio.create_task(hammer())
        await eventually(lambda: answered >= 3)
        reloads = server.certificate.reloads
        await clock.advance(1)  # the watcher's next look at the files
        await eventually(lambda: server.certificate.reloads == reloads + 1)
        at_reload = answered
        await eventually(lambda: answered >= at_reload + 3)
        stop.set()
        await hammering
        assert failures == []
        assert await served_serial(client.address, bundle) == der(certs) != first


async def test_a_broken_pair_on_disk_keeps_the_previous_one_in_service(tmp_path: Path) -> None:
    clock = FakeClock()
    certs = make_certs(tmp_path / "certs")
    server = server_on(certs.directory, clock=clock)
    WebhookBuilder(server, GREETINGS).with_validator(Slow()).build()
    async with serving(server, certs) as client:
        served = der(certs)
        other = make_certs(tmp_path / "other", write=False)
        (certs.directory / "tls.key").write_bytes(other.serving.key_pem)  # a key of another cert
        errors = sample("certwatcher_read_certificate_errors_total")
        with capture_logs() as logs:
            await clock.advance(1)
            await eventually(lambda: sample("certwatcher_read_certificate_errors_total") > errors)
        assert any(
            line["event"] == "cannot load the serving certificate; the previous one stays in use"
            for line in logs
        )
        assert await served_serial(client.address, certs.client_context()) == served
        status, _ = await client.post(PATH, admission_review("CREATE", greeting()))
        assert status == 200
