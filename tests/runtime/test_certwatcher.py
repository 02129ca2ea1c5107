"""The certificate watcher: a usable pair only, reloaded once per change, errors said once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from etctl.runtime import FakeClock
from etctl.runtime._certwatcher import CertWatcher
from etctl.testing import eventually
from tests._logs import captured_logs
from tests.runtime._webhooks import make_certs


def watcher(directory: Path, clock: FakeClock) -> CertWatcher:
    return CertWatcher(directory / "tls.crt", directory / "tls.key", clock=clock)


async def test_a_pair_is_loaded_once_and_a_missing_one_said_once(tmp_path: Path) -> None:
    clock = FakeClock()
    watch = watcher(tmp_path / "certs", clock)
    with captured_logs(logging.INFO) as logs:
        assert not watch.load()
        assert not watch.load()
    assert not watch.loaded
    # Not there yet: the normal start, said at info; a file that is there but unusable warns.
    assert [(line["event"], line["level"]) for line in logs] == [
        ("cannot load the serving certificate yet", "info")
    ]
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "tls.crt").write_text("not a certificate")
    (tmp_path / "certs" / "tls.key").write_text("not a key")
    with captured_logs(logging.INFO) as logs:
        assert not watch.load()
    assert [line["level"] for line in logs] == ["warning"]
    certs = make_certs(tmp_path / "certs")
    assert watch.load()
    assert not watch.load()  # the same content: nothing to swap
    assert watch.reloads == 1
    certs.rotate()
    assert watch.load()
    assert watch.reloads == 2


async def test_the_watch_notices_a_change_and_rereads_every_ten_seconds(tmp_path: Path) -> None:
    clock = FakeClock()
    certs = make_certs(tmp_path / "certs")
    watch = watcher(certs.directory, clock)
    task = asyncio.create_task(watch.run(), name="test:certwatcher")
    try:
        await eventually(lambda: watch.reloads == 1 and clock.sleepers == 1)
        certs.rotate()
        await clock.advance(1)
        await eventually(lambda: watch.reloads == 2)
        await clock.advance(30)  # three rereads of an unchanged pair: nothing swapped
        assert watch.reloads == 2
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
