"""Job counters move once per transition written, and the reconcile latency is observed."""

from __future__ import annotations

from pathlib import Path

from etctl.runtime import REGISTRY
from tests.common._harness import harness, simplejob


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_counters_follow_written_transitions(tmp_path: Path) -> None:
    names = ("created", "successful", "failed", "restarted")
    latency = sample("etctl_job_reconcile_duration_seconds_count", {"kind": "SimpleJob"})
    async with harness(tmp_path) as h:
        labels = {"namespace": h.ns, "kind": "SimpleJob"}
        before = {n: sample(f"etctl_jobs_{n}_total", labels) for n in names}
        await h.submit(simplejob("ok", workers=1, restart="OnFailure"))
        await h.submit(simplejob("bad", workers=1))
        for name in ("ok", "bad"):
            await h.step(name)
            await h.step(name)  # nothing new: nothing counted
        await h.set_phase("ok-worker-0", "Failed", exit_code=1)
        await h.step("ok")
        await h.step("ok")
        await h.set_phase("ok-worker-0", "Succeeded", exit_code=0)
        await h.set_phase("bad-worker-0", "Failed", exit_code=1)
        for name in ("ok", "bad"):
            await h.step(name)
            await h.step(name)
    after = {n: sample(f"etctl_jobs_{n}_total", labels) - before[n] for n in names}
    assert after == {"created": 2, "successful": 1, "failed": 1, "restarted": 1}
    reconciles = sample("etctl_job_reconcile_duration_seconds_count", {"kind": "SimpleJob"})
    assert reconciles - latency == 10
