"""The transport of the client against a scripted server: errors, retries, timeouts, metrics."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from etctl.errors import (
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    RequestNotSent,
    ServerError,
    TooManyRequests,
    TransportError,
)
from etctl.runtime import CONFIGMAPS, NAMESPACES, PODS, REGISTRY, Client, PatchType, RetryPolicy
from etctl.runtime._transport import Transport, error_from_response
from tests.runtime.scripted import (
    Handler,
    InstantClock,
    client_for,
    json_response,
    refused_url,
    scripted_server,
    silent_server,
    status_body,
)

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns"},
}


def requests_total(code: str, method: str, host: str) -> float:
    value = REGISTRY.get_sample_value(
        "rest_client_requests_total", {"code": code, "method": method, "host": host}
    )
    return value or 0.0


def failure(code: int, reason: str, message: str) -> web.Response:
    """A fresh error answer (an aiohttp response can be sent once only)."""
    return json_response(status_body(code, reason, message), code)


def scripted(*answers: web.StreamResponse | BaseException) -> Handler:
    """A handler that plays ``answers`` in order (an exception drops the connection)."""
    queue = list(answers)

    async def handler(request: web.Request) -> web.StreamResponse:
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            assert request.transport is not None
            request.transport.close()
            raise answer
        return answer

    return handler


def network(client: Client) -> Transport:
    """The client's own HTTP transport (the one these tests exercise)."""
    transport = client._caller.transport
    assert isinstance(transport, Transport)
    return transport


async def test_get_sends_credentials_and_decodes_plain_dicts(tmp_path: Path) -> None:
    async with scripted_server() as server:
        server.handler = scripted(json_response(POD))
        async with await client_for(server.url, tmp_path) as client:
            got = await client.get(PODS, "p", namespace="ns")
    assert got == POD
    assert type(got) is dict
    seen = server.seen[0]
    assert (seen.method, seen.path) == ("GET", "/api/v1/namespaces/ns/pods/p")
    assert seen.headers["Authorization"] == "Bearer t0ken"
    assert seen.headers["User-Agent"].startswith("etctl/")


async def test_error_statuses_map_to_the_error_tree(tmp_path: Path) -> None:
    details = {"name": "p", "kind": "pods", "causes": [{"field": "spec", "reason": "X"}]}
    async with scripted_server() as server:
        server.handler = scripted(
            json_response(status_body(404, "NotFound", 'pods "p" not found'), 404),
            json_response(status_body(409, "AlreadyExists", "exists"), 409),
            json_response(status_body(409, "Conflict", "stale"), 409),
            json_response(status_body(422, "Invalid", "bad", **details), 422),
            web.Response(status=404, text="plain text 404"),
        )
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(NotFound) as missing:
                await client.get(PODS, "p", namespace="ns")
            with pytest.raises(AlreadyExists):
                await client.create(PODS, POD)
            with pytest.raises(Conflict) as conflict:
                await client.replace(PODS, POD)
            with pytest.raises(Invalid) as invalid:
                await client.replace(PODS, POD)
            with pytest.raises(NotFound) as plain:
                await client.get(PODS, "q", namespace="ns")
    assert missing.value.message == 'pods "p" not found'
    assert missing.value.reason == "NotFound"
    assert not isinstance(conflict.value, AlreadyExists)
    assert invalid.value.causes == [{"field": "spec", "reason": "X"}]
    # No Status: named by the code, as client-go names it, the body kept in the message.
    assert plain.value.reason == "NotFound"
    assert (
        plain.value.message == "the server could not find the requested resource (plain text 404)"
    )
    assert len(server.seen) == 5  # nothing was retried


async def test_429_with_retry_after_then_success(tmp_path: Path) -> None:
    clock = InstantClock()
    async with scripted_server() as server:
        server.handler = scripted(
            json_response(
                status_body(429, "TooManyRequests", "slow down"), 429, **{"Retry-After": "7"}
            ),
            json_response(POD),
        )
        async with await client_for(server.url, tmp_path, clock=clock) as client:
            host = network(client).host
            before = (requests_total("429", "GET", host), requests_total("200", "GET", host))
            assert await client.get(PODS, "p", namespace="ns") == POD
            after = (requests_total("429", "GET", host), requests_total("200", "GET", host))
    assert clock.slept == [7.0]
    assert after[0] - before[0] == 1
    assert after[1] - before[1] == 1


async def test_retry_after_is_capped(tmp_path: Path) -> None:
    clock = InstantClock()
    policy = RetryPolicy(max_attempts=2, retry_after_cap=30.0)
    async with scripted_server() as server:
        server.handler = scripted(
            json_response(status_body(429, "TooManyRequests", "x"), 429, **{"Retry-After": "3600"}),
            json_response(status_body(429, "TooManyRequests", "x"), 429, **{"Retry-After": "3600"}),
        )
        async with await client_for(server.url, tmp_path, clock=clock, retry=policy) as client:
            with pytest.raises(TooManyRequests) as exc:
                await client.get(PODS, "p", namespace="ns")
    assert clock.slept == [30.0]
    assert exc.value.retry_after == 3600.0


async def test_503_twice_then_success_backs_off_with_jitter(tmp_path: Path) -> None:
    clock = InstantClock()
    policy = RetryPolicy(backoff_base=1.0, backoff_cap=1.5)
    unavailable = status_body(503, "ServiceUnavailable", "etcd is down")
    async with scripted_server() as server:
        server.handler = scripted(
            json_response(unavailable, 503),
            json_response(unavailable, 503),
            json_response(POD),
        )
        async with await client_for(server.url, tmp_path, clock=clock, retry=policy) as client:
            assert await client.get(PODS, "p", namespace="ns") == POD
    assert len(server.seen) == 3
    first, second = clock.slept
    assert 0.5 <= first <= 1.0  # upper half of base * 2**0
    assert 0.75 <= second <= 1.5  # upper half of the cap (base * 2**1 = 2 is capped at 1.5)


async def test_server_errors_give_up_after_max_attempts(tmp_path: Path) -> None:
    clock = InstantClock()
    policy = RetryPolicy(max_attempts=3)
    async with scripted_server() as server:
        server.handler = scripted(*(failure(500, "InternalError", "boom") for _ in range(3)))
        async with await client_for(server.url, tmp_path, clock=clock, retry=policy) as client:
            with pytest.raises(ServerError, match="boom"):
                await client.get(PODS, "p", namespace="ns")
    assert len(server.seen) == 3
    assert len(clock.slept) == 2


async def test_conflicts_are_never_retried(tmp_path: Path) -> None:
    async with scripted_server() as server:
        server.handler = scripted(json_response(status_body(409, "Conflict", "stale"), 409))
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(Conflict):
                await client.patch(
                    PODS, "p", {"metadata": {"resourceVersion": "1"}}, namespace="ns"
                )
    assert len(server.seen) == 1


async def test_connection_refused_is_a_transport_error_counted_as_error(tmp_path: Path) -> None:
    clock = InstantClock()
    url = refused_url()
    async with await client_for(url, tmp_path, clock=clock) as client:
        host = network(client).host
        before = requests_total("<error>", "GET", host)
        with pytest.raises(RequestNotSent):
            await client.get(PODS, "p", namespace="ns")
        after = requests_total("<error>", "GET", host)
    assert after - before == 5  # every attempt is counted
    assert len(clock.slept) == 4


async def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    policy = RetryPolicy(max_attempts=2)
    async with silent_server() as url:
        client = await client_for(url, tmp_path, request_timeout=0.2, retry=policy)
        async with client:
            started = time.monotonic()
            with pytest.raises(TransportError) as exc:
                await client.get(PODS, "p", namespace="ns")
            elapsed = time.monotonic() - started
    assert not isinstance(exc.value, RequestNotSent)  # it was sent; the answer never came
    assert 0.35 <= elapsed < 2.0


async def test_creates_are_not_retried_once_sent(tmp_path: Path) -> None:
    generated = {"metadata": {"generateName": "p-", "namespace": "ns"}}
    unavailable = [failure(503, "ServiceUnavailable", "x") for _ in range(2)]
    async with scripted_server() as server:
        server.handler = scripted(*unavailable, json_response(POD, 201))
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(ServerError):
                await client.create(PODS, generated)
            assert len(server.seen) == 1
            # A named create is a POST too: the server may have acted, so it is not repeated.
            with pytest.raises(ServerError):
                await client.create(PODS, POD)
            assert len(server.seen) == 2
            assert await client.create(PODS, POD) == POD
    assert len(server.seen) == 3
    sent = json.loads(server.seen[0].body)
    assert sent["apiVersion"] == "v1"
    assert sent["kind"] == "Pod"
    assert "kind" not in generated


async def test_generate_name_creates_are_retried_when_never_sent(tmp_path: Path) -> None:
    clock = InstantClock()
    generated = {"metadata": {"generateName": "p-", "namespace": "ns"}}
    async with await client_for(refused_url(), tmp_path, clock=clock) as client:
        with pytest.raises(RequestNotSent):
            await client.create(PODS, generated)
    assert len(clock.slept) == 4


async def test_throttled_creates_are_retried_when_told_when(tmp_path: Path) -> None:
    body = status_body(429, "TooManyRequests", "x")
    told = json_response(body, 429, **{"Retry-After": "1"})
    untold = json_response(body, 429)
    generated = {"metadata": {"generateName": "p-", "namespace": "ns"}}
    async with scripted_server() as server:
        server.handler = scripted(told, json_response(POD, 201), untold)
        async with await client_for(server.url, tmp_path) as client:
            assert await client.create(PODS, generated) == POD
            assert len(server.seen) == 2
            # client-go's rule for a POST: a 429 without Retry-After is an answer.
            with pytest.raises(TooManyRequests):
                await client.create(PODS, generated)
    assert len(server.seen) == 3


async def test_json_patches_are_retried_only_when_guarded(tmp_path: Path) -> None:
    append = [{"op": "add", "path": "/metadata/finalizers/-", "value": "f"}]
    guarded = [{"op": "test", "path": "/metadata/resourceVersion", "value": "5"}, *append]
    async with scripted_server() as server:
        server.handler = scripted(
            failure(500, "InternalError", "x"),
            failure(500, "InternalError", "x"),
            json_response(POD),
        )
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(ServerError):
                await client.patch(PODS, "p", append, namespace="ns", patch_type=PatchType.JSON)
            assert len(server.seen) == 1
            await client.patch(PODS, "p", guarded, namespace="ns", patch_type=PatchType.JSON)
    assert len(server.seen) == 3
    assert server.seen[1].headers["Content-Type"] == "application/json-patch+json"
    assert json.loads(server.seen[1].body) == guarded


async def test_delete_whose_answer_was_lost_returns_none_when_the_retry_finds_nothing(
    tmp_path: Path,
) -> None:
    async with scripted_server() as server:
        server.handler = scripted(
            ConnectionResetError("dropped"),
            json_response(status_body(404, "NotFound", "gone"), 404),
            json_response(status_body(404, "NotFound", "gone"), 404),
        )
        async with await client_for(server.url, tmp_path) as client:
            assert await client.delete(PODS, "p", namespace="ns") is None
            with pytest.raises(NotFound):  # a plain 404 is still an error
                await client.delete(PODS, "p", namespace="ns")
    body = json.loads(server.seen[0].body)
    assert body["kind"] == "DeleteOptions"


async def test_delete_returns_the_object_or_none_for_a_status(tmp_path: Path) -> None:
    terminating = {
        **POD,
        "metadata": {**POD["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
    }
    success = {"kind": "Status", "apiVersion": "v1", "status": "Success"}
    async with scripted_server() as server:
        server.handler = scripted(json_response(terminating), json_response(success))
        async with await client_for(server.url, tmp_path) as client:
            got = await client.delete(
                PODS,
                "p",
                namespace="ns",
                propagation_policy="Foreground",
                grace_period_seconds=0,
                preconditions={"uid": "u1"},
                dry_run=True,
            )
            assert got == terminating
            assert await client.delete(NAMESPACES, "ns") is None
    body = json.loads(server.seen[0].body)
    assert body == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "u1"},
        "dryRun": ["All"],
    }
    assert server.seen[1].path == "/api/v1/namespaces/ns"


async def test_paged_list_follows_continue_tokens(tmp_path: Path) -> None:
    def page(names: list[str], token: str) -> web.Response:
        items = [{"metadata": {"name": n, "namespace": "ns"}} for n in names]
        meta = {"resourceVersion": "42", "continue": token}
        return json_response({"kind": "ConfigMapList", "metadata": meta, "items": items})

    async with scripted_server() as server:
        server.handler = scripted(page(["a", "b"], "t1"), page(["c", "d"], "t2"), page(["e"], ""))
        async with await client_for(server.url, tmp_path) as client:
            listed = await client.list(
                CONFIGMAPS, namespace="ns", limit=2, label_selector="app=x", resource_version="0"
            )
    assert [i["metadata"]["name"] for i in listed.items] == ["a", "b", "c", "d", "e"]
    assert listed.resource_version == "42"
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in listed.items)
    queries = [dict(s.query) for s in server.seen]
    assert queries[0] == {"labelSelector": "app=x", "limit": "2", "resourceVersion": "0"}
    assert queries[1] == {"labelSelector": "app=x", "limit": "2", "continue": "t1"}
    assert queries[2]["continue"] == "t2"


async def test_an_expired_continue_token_raises_gone(tmp_path: Path) -> None:
    first = json_response(
        {"kind": "PodList", "metadata": {"resourceVersion": "9", "continue": "old"}, "items": []}
    )
    expired = json_response(
        status_body(410, "Expired", "The provided continue parameter is too old"), 410
    )
    async with scripted_server() as server:
        server.handler = scripted(first, expired)
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(Gone):
                await client.list(PODS)
    assert server.seen[0].path == "/api/v1/pods"


async def test_requests_and_watches_use_separate_pools(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n')
            await release.wait()
            return response
        return json_response(POD)

    async with scripted_server() as server:
        server.handler = handler
        client = await client_for(server.url, tmp_path, pool_size=1, watch_pool_size=2)
        async with client:
            async with client.watch(PODS) as first, client.watch(PODS) as second:
                assert (await anext(first)).object["metadata"]["name"] == "a"
                assert (await anext(second)).object["metadata"]["name"] == "a"
                # Two watches hold their pool's connections; the request pool is untouched.
                got = await asyncio.wait_for(client.get(PODS, "p", namespace="ns"), 2)
                assert got == POD
            release.set()


async def test_addressing_rules(tmp_path: Path) -> None:
    async with scripted_server() as server:
        server.handler = scripted(json_response(POD, 201))
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(ValueError, match="namespace is required"):
                await client.get(PODS, "p")
            with pytest.raises(ValueError, match="does not match"):
                await client.create(PODS, POD, namespace="other")
            with pytest.raises(ValueError, match="name is required"):
                await client.get(PODS, "", namespace="ns")
            with pytest.raises(ValueError, match="only valid for server-side apply"):
                await client.patch(PODS, "p", {}, namespace="ns", force=True)
            with pytest.raises(TypeError):
                await client.patch(
                    PODS, "p", {"op": "add"}, namespace="ns", patch_type=PatchType.JSON
                )
            await client.create(PODS, POD, dry_run=True, field_manager="me")
    assert server.seen[0].path == "/api/v1/namespaces/ns/pods"
    assert dict(server.seen[0].query) == {"dryRun": "All", "fieldManager": "me"}


def test_an_answer_with_no_status_is_named_by_its_code() -> None:
    # Go's mux answers a group no API handler serves with plain text: client-go names it by code.
    plain = error_from_response(404, {}, b"404 page not found\n")
    assert isinstance(plain, NotFound)
    assert plain.reason == "NotFound"
    assert plain.message == "the server could not find the requested resource (404 page not found)"
    other = error_from_response(502, {}, b"<html>bad gateway</html>")
    assert other.reason == ""
    assert other.message == "<html>bad gateway</html>"
