"""Reading the job (read-your-writes), writing its status (guarded, quiet on conflicts), and
recording what a reconcile did when that write conflicts."""

from __future__ import annotations

from pathlib import Path

from etctl.runtime import PODS
from tests.common._harness import Harness, harness, simplejob
from tests.common._plugins import RestartingPlugin
from tests.common.simplejob import SIMPLEJOBS


async def test_a_conflicting_status_write_requeues_quietly(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1))
        await h.step("train")
        await h.set_phase("train-worker-0", "Succeeded", exit_code=0)
        # The conditions, which the job controller owns, change behind the cache's back (another
        # writer): the status write must not apply.
        await behind_the_cache(h, "train")
        result = await h.step("train", refresh=False)
        assert result.requeue_after == 1.0
        assert "Succeeded" not in await h.conditions("train")
        await h.step("train")
        assert (await h.conditions("train"))["Succeeded"][0] == "True"


async def test_the_controller_reads_its_own_writes(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, restart="OnFailure"))
        await h.step("train")
        await h.set_phase("train-worker-0", "Failed", exit_code=1)
        await h.step("train")
        written = await h.job("train")
        assert written["status"]["restartCount"] == 1
        # The pods are current, the job is not: the reconcile reads the job from the server.
        await h.cache.refresh(PODS)
        result = await h.step("train", refresh=False)
        assert result.requeue_after is None
        job = await h.job("train")
        assert job["status"]["restartCount"] == 1
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]


FOREIGN = {"type": "Audited", "status": "True", "reason": "Audit", "message": "seen"}


async def behind_the_cache(h: Harness, name: str) -> None:
    """Refresh the cache, then change the job's conditions on the server: the write conflicts.

    The other writer is another process (an operator that lost its lease, say). A change of
    fields the job controller does not own would not: its writes are guarded by its own fields."""
    await h.cache.refresh()
    job = await h.job(name)
    conditions = [*job["status"]["conditions"], FOREIGN]
    await h.client.patch_status(
        SIMPLEJOBS, name, {"status": {"conditions": conditions}}, namespace=h.ns
    )


async def test_a_change_of_fields_the_controller_does_not_own_is_no_conflict(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1))
        await h.step("train")
        await h.set_phase("train-worker-0", "Succeeded", exit_code=0)
        await h.cache.refresh()
        await h.client.patch(
            SIMPLEJOBS, "train", {"metadata": {"labels": {"x": "y"}}}, namespace=h.ns
        )
        result = await h.step("train", refresh=False)
        assert result.requeue_after is None
        assert (await h.conditions("train"))["Succeeded"][0] == "True"
        job = await h.job("train")
        assert job["metadata"]["labels"] == {"x": "y"}
        assert not h.server.requests.find(verb="patch", subresource="status", code=409)
        assert not h.server.requests.find(verb="patch", subresource="status", code=422)


async def test_a_restart_is_counted_even_when_the_status_write_conflicts(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, restart="OnFailure"))
        await h.step("train")
        await h.set_phase("train-worker-0", "Failed", exit_code=1, restarts=2)
        await behind_the_cache(h, "train")
        result = await h.step("train", refresh=False)
        assert result.requeue_after == 1.0
        assert sorted(await h.pods()) == ["train-worker-1"]
        job = await h.job("train")
        # One recreation plus the two in-place restarts the deleted pod took with it.
        assert job["status"]["restartCount"] == 3
        assert FOREIGN["type"] in {c["type"] for c in job["status"]["conditions"]}
        assert (await h.conditions("train"))["Restarting"] == ("True", "SimpleJobRestarting")
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
        await h.step("train")
        assert (await h.job("train"))["status"]["restartCount"] == 3


async def test_a_limit_enforced_by_deleting_pods_survives_a_conflict(tmp_path: Path) -> None:
    policy = {"backoffLimit": 2, "cleanPodPolicy": "None"}
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, restart="OnFailure", run_policy=policy))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running", restarts=3)
        await behind_the_cache(h, "train")
        await h.step("train", refresh=False)
        # The pod that went past the limit is gone; only the status can say why.
        assert await h.pods() == {}
        assert (await h.conditions("train"))["Failed"] == ("True", "BackoffLimitExceeded")
        await h.step("train")
        assert await h.pods() == {}
        assert len(await h.events("BackoffLimitExceeded")) == 1


async def test_a_whole_job_restart_survives_a_conflict(tmp_path: Path) -> None:
    async with harness(tmp_path, plugin=RestartingPlugin()) as h:
        await h.submit(simplejob("train", workers=2, run_policy={"backoffLimit": 3}))
        await h.step("train")
        await h.set_phase("train-worker-0", "Succeeded", exit_code=0)
        await h.step("train")
        worker = (await h.job("train"))["status"]["replicaStatuses"]["Worker"]
        assert worker["completedIndexes"] == "0"
        await h.set_phase("train-worker-1", "Failed", exit_code=1)
        await behind_the_cache(h, "train")
        await h.step("train", refresh=False)
        assert await h.pods() == {}
        status = (await h.job("train"))["status"]
        assert status["restartCount"] == 1
        # Every pod was deleted: the completion of worker 0 no longer holds.
        assert "completedIndexes" not in status["replicaStatuses"]["Worker"]
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
        assert (await h.job("train"))["status"]["restartCount"] == 1


async def test_a_job_replaced_meanwhile_gets_no_record(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, restart="OnFailure"))
        await h.step("train")
        await h.set_phase("train-worker-0", "Failed", exit_code=1)
        await h.cache.refresh()
        await h.client.delete(SIMPLEJOBS, "train", namespace=h.ns)
        await h.submit(simplejob("train", workers=1, restart="OnFailure"))
        assert (await h.step("train", refresh=False)).requeue_after == 1.0
        # The delta of the old job is not written onto its successor.
        assert "restartCount" not in ((await h.job("train")).get("status") or {})
