"""The client's transport seam: a Client whose requests a test answers, with no server at all."""

from __future__ import annotations

import pytest

from etctl.errors import (
    AlreadyExists,
    ConfigError,
    NotFound,
    RequestNotSent,
    TransportError,
    Unauthorized,
)
from etctl.runtime import (
    CONFIGMAPS,
    PODS,
    Client,
    ClientOptions,
    HttpRequest,
    HttpResponse,
    RetryPolicy,
)
from etctl.testing import MockTransport, json_answer, watch_answer
from tests.runtime.scripted import InstantClock

META: dict[str, object] = {"name": "p", "namespace": "a"}
POD: dict[str, object] = {"apiVersion": "v1", "kind": "Pod", "metadata": META}


def status(code: int, reason: str, message: str) -> dict[str, object]:
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def options(attempts: int = 5) -> ClientOptions:
    return ClientOptions(clock=InstantClock(), retry=RetryPolicy(max_attempts=attempts))


async def test_a_read_is_answered_and_decoded_and_the_request_is_what_the_server_would_see() -> (
    None
):
    transport = MockTransport(lambda request: json_answer(200, POD))
    async with Client(transport=transport, options=options()) as client:
        assert await client.get(PODS, "p", namespace="a") == POD
    (sent,) = transport.requests
    assert (sent.method, sent.path, sent.body, sent.stream) == (
        "GET",
        "/api/v1/namespaces/a/pods/p",
        None,
        False,
    )
    assert sent.accept == "application/json"
    assert transport.closed


async def test_writes_send_their_encoded_body_and_the_answer_is_the_stored_object() -> None:
    def answer(request: HttpRequest) -> HttpResponse:
        assert request.content_type == "application/merge-patch+json"
        return json_answer(200, {**POD, "metadata": {**META, "labels": {"x": "1"}}})

    transport = MockTransport(answer)
    async with Client(transport=transport, options=options()) as client:
        patched = await client.patch(PODS, "p", {"metadata": {"labels": {"x": "1"}}}, namespace="a")
    assert patched["metadata"]["labels"] == {"x": "1"}
    assert transport.bodies("PATCH") == [{"metadata": {"labels": {"x": "1"}}}]


async def test_statuses_map_to_the_error_tree() -> None:
    answers = {
        "GET": json_answer(404, status(404, "NotFound", 'pods "p" not found')),
        "POST": json_answer(409, status(409, "AlreadyExists", 'pods "p" already exists')),
    }
    transport = MockTransport(lambda request: answers[request.method])
    async with Client(transport=transport, options=options()) as client:
        with pytest.raises(NotFound, match="not found"):
            await client.get(PODS, "p", namespace="a")
        with pytest.raises(AlreadyExists):
            await client.create(PODS, POD, namespace="a")
    assert len(transport.requests) == 2  # neither is retried


async def test_transient_answers_are_retried_and_creates_only_when_unsent() -> None:
    failures = [json_answer(500, status(500, "InternalError", "try again"))]

    def answer(request: HttpRequest) -> HttpResponse:
        if request.method == "GET":
            return failures.pop() if failures else json_answer(200, POD)
        raise TransportError("the answer was lost")

    transport = MockTransport(answer)
    async with Client(transport=transport, options=options()) as client:
        assert await client.get(PODS, "p", namespace="a") == POD
        with pytest.raises(TransportError, match="lost"):
            await client.create(PODS, POD, namespace="a")
    assert [r.method for r in transport.requests] == ["GET", "GET", "POST"]


async def test_a_create_never_sent_is_retried() -> None:
    unsent = [RequestNotSent("connection refused")]

    def answer(request: HttpRequest) -> HttpResponse:
        if unsent:
            raise unsent.pop()
        return json_answer(201, POD)

    transport = MockTransport(answer)
    async with Client(transport=transport, options=options()) as client:
        assert await client.create(PODS, POD, namespace="a") == POD
    assert len(transport.requests) == 2


async def test_a_refused_credential_is_not_reloaded_when_the_transport_has_none() -> None:
    transport = MockTransport(lambda r: json_answer(401, status(401, "Unauthorized", "who?")))
    async with Client(transport=transport, options=options(attempts=1)) as client:
        with pytest.raises(Unauthorized):
            await client.get(PODS, "p", namespace="a")
    assert len(transport.requests) == 1


async def test_a_watch_reads_the_answer_as_a_stream_of_events() -> None:
    first = {**POD, "metadata": {**META, "resourceVersion": "5"}}
    transport = MockTransport(lambda request: watch_answer([("ADDED", first), ("DELETED", first)]))
    async with Client(transport=transport, options=options()) as client:
        async with client.watch(PODS, namespace="a", resource_version="4") as stream:
            seen = [(event.type, event.object["metadata"]["name"]) async for event in stream]
    assert seen == [("ADDED", "p"), ("DELETED", "p")]
    (sent,) = transport.requests
    assert sent.stream
    assert ("watch", "true") in list(sent.query)


async def test_a_refused_watch_raises_its_status() -> None:
    transport = MockTransport(lambda r: json_answer(410, status(410, "Expired", "too old")))
    async with Client(transport=transport, options=options()) as client:
        with pytest.raises(Exception, match="too old"):
            async with client.watch(CONFIGMAPS, namespace="a", resource_version="1"):
                pass


async def test_exec_needs_a_transport_that_opens_websockets() -> None:
    transport = MockTransport(lambda r: json_answer(200, POD))
    async with Client(transport=transport, options=options()) as client:
        with pytest.raises(ConfigError, match="websockets"):
            await client.exec("a", "p", ["true"], timeout=1)


def test_a_client_needs_a_cluster_or_a_transport() -> None:
    with pytest.raises(ConfigError, match="cluster to connect to, or a transport"):
        Client()
