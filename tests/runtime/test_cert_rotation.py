"""The rotation plan, made here and in the child process the rotator runs it in."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gc
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from etctl._cert_rotation import (
    CA_CERT,
    CA_KEY,
    TLS_CERT,
    TLS_KEY,
    Policy,
    plan,
    plan_request,
    read_plan,
)
from etctl._certificates import signed_by
from etctl.runtime._tls import certificates_child

NOW = datetime.datetime(2026, 6, 1, tzinfo=datetime.UTC)
DAY = 86400.0
POLICY = Policy(
    dns_names=("etctl-webhook-service.etctl-system.svc",),
    ip_addresses=("127.0.0.1",),
    ca_name="etctl-webhook-ca",
    ca_validity=3650 * DAY,
    cert_validity=365 * DAY,
    lookahead=90 * DAY,
)


async def test_a_plan_made_in_the_child_is_the_plan_made_here() -> None:
    request = plan_request({}, POLICY, NOW).encode()
    child = read_plan((await certificates_child("--rotate", stdin=request)).decode())
    for made in (plan({}, POLICY, NOW), child):
        assert made.ca_created
        assert not made.replaces_ca
        assert made.first is not None
        assert sorted(made.first) == [CA_CERT, CA_KEY, TLS_CERT, TLS_KEY]
        assert signed_by(made.first[TLS_CERT], made.first[CA_CERT])
        assert made.serving is None  # issued with the CA: nothing was served before
        assert made.due == NOW + datetime.timedelta(days=365 - 90)  # the serving cert's turn
    assert child.first is not None
    again = plan(child.first, POLICY, NOW + datetime.timedelta(days=1))
    assert (again.first, again.serving, again.ca_created) == (None, None, False)


def children() -> set[int]:
    """This process's live or unreaped children (Linux's /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == os.getpid():
                    found.add(int(entry.name))
    return found


def talking(task: asyncio.Task[bytes]) -> bool:
    """True while ``task`` awaits its child's answer (``Process.communicate``)."""
    awaited: Any = task.get_coro()
    while awaited is not None:
        if getattr(awaited, "__qualname__", "") == "Process.communicate":
            return True
        awaited = getattr(awaited, "cr_await", None)
    return False


async def test_a_cancelled_plan_leaves_no_child_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A manager stopping mid-pass cancels the pass, sometimes twice (a TaskGroup, then a timeout).
    # The child hangs as it starts, so that only a kill ends it within the test.
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    before = children()
    request = plan_request({}, POLICY, NOW).encode()
    task = asyncio.create_task(certificates_child("--rotate", stdin=request))
    while not talking(task):  # the child runs, and the call talks to it
        await asyncio.sleep(0.001)
    assert children() - before
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert children() == before  # killed and reaped before the call ended
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()  # an unclosed process transport or pipe would warn here
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
