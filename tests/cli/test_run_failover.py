"""``etctl run --leader-elect``: a leader paused past its lease writes nothing once it resumes.

Real processes: two replicas against the embedded API server of this process (see
:mod:`tests.cli._failover`). The leader is stopped (SIGSTOP) just after it sent a renew, the
standby takes over, jobs are created meanwhile, and the old leader is resumed (SIGCONT).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli._failover import Drill, prepare, server

pytestmark = pytest.mark.etctl_hooks(
    "the request log of the embedded server shows each replica's writes"
)

# Short durations keep the drill a few seconds long; their ratios are the defaults' (15/10/2 s).
_LEASE = (3.0, 2.0, 0.4)


async def test_a_paused_leader_sends_no_write_after_the_standby_took_over(
    tmp_path: Path,
) -> None:
    async with server() as api:
        await prepare(api)
        drill = Drill(api, tmp_path, lease=_LEASE)
        try:
            await drill.start("replica-a")
            await drill.start("replica-b")
            result = await drill.paused_leader(jobs=4)
        finally:
            await drill.stop()
    assert result.deposed_writes == []
    assert result.deposed_exit == 1  # leadership lost: it exits for a new process to stand
    assert result.successor_writes > 0  # the successor did the work meanwhile
    assert result.takeover >= _LEASE[0] - 0.5  # nobody took over before the lease ran out
