import dataclasses

import pytest

from etctl.runtime import ReconcileFunc, Reconciler, Request, Result
from tests.runtime._fakes import obj


def test_request_is_a_frozen_hashable_key() -> None:
    request = Request("ns", "job")
    assert str(request) == "ns/job"
    assert str(Request("", "node-1")) == "node-1"
    assert {request, Request("ns", "job")} == {request}
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.name = "other"  # type: ignore[misc]
    assert not hasattr(request, "__dict__")


def test_request_from_keys_and_objects() -> None:
    assert Request.from_key("ns/job") == Request("ns", "job")
    assert Request.from_key("node-1") == Request("", "node-1")
    assert Request.for_object(obj("p", "team")) == Request("team", "p")
    assert Request.for_object(obj("n", "")) == Request("", "n")


def test_result_defaults_to_no_requeue() -> None:
    assert Result().requeue_after is None
    assert Result(requeue_after=3.5).requeue_after == 3.5
    assert Result() == Result(None)


async def test_reconcile_func_adapts_a_plain_function() -> None:
    seen: list[Request] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request)
        return Result(requeue_after=1.0)

    adapter = ReconcileFunc(reconcile)
    assert isinstance(adapter, Reconciler)
    assert await adapter.reconcile(Request("a", "b")) == Result(requeue_after=1.0)
    assert seen == [Request("a", "b")]
    assert "reconcile" in repr(adapter)
