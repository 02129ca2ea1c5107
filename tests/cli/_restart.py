"""Restart drills with real processes: the operator stopped, upgraded, killed, or left unanswered.

The embedded API server (RBAC on, the simulated kubelet) serves in the calling process, so its
storage, request log and fault injection are at hand; the operator runs as ``etctl run`` child
processes (:class:`tests.cli._failover.Drill`), signalled as Kubernetes signals a pod's process.
Each drill returns what it counted; the suite asserts it (``tests/cli/test_restart_drills.py``) and
``bench/restart_drills.py`` repeats the drills and prints the counts.

* :func:`sigterm_burst`: launcher jobs (TrainingJobs, or MPIJobs whose launcher waits for ready
  workers) are created one after another while the operator is stopped with SIGTERM at seeded
  points of the burst, each time replaced by a new process: every job must end Running.
* :func:`rolling_update`: two replicas with leader election are replaced one by one as a
  Deployment's rolling update does it (``maxSurge: 1``, ``maxUnavailable: 0``: a new replica
  starts and becomes ready, then an old one gets SIGTERM) while jobs of both kinds start.
* :func:`lost_answers`: the server commits the writes that record a scaler's Script step (its
  decision, then its attempt marker) and drops their answers: no scaler may be rolled back, and
  every script runs once.
* :func:`killed_between`: the server commits one of those writes and holds its answer; the
  operator is killed (SIGKILL) meanwhile, before it could send the exec, and a new one takes over.
  The documented outcome: a step decided but not marked is sent (the script runs once); a marked
  one is judged interrupted (the script is not run, the scale-out rolled back). Never twice.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import random
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp

from etctl.common import SCALEIN, SCALEOUT, SCALEOUTS, CustomResource
from etctl.jobs.mpijob import MPIJOB, MPIJOBS
from etctl.jobs.trainingjob import TRAININGJOB, TRAININGJOBS
from etctl.runtime import PODS
from etctl.testing import ApiServer, Fault, eventually
from etctl.testing._apiserver.store import Event
from tests.cli._failover import NAMESPACE, Drill, Replica, is_write
from tests.schema_support import EXAMPLES, load_yaml

CRDS: tuple[CustomResource, ...] = (TRAININGJOB, MPIJOB, SCALEIN, SCALEOUT)
KINDS = "trainingjob,mpijob"
SCRIPT = "/scripts/on-scale.sh"
_SCRIPT_BODY = 'echo "$1" >> /scripts/runs\n'
# The defaults (15/10/2 s): a replica that stops gracefully releases the Lease, so a takeover
# takes at most a retry period or two; shorter ones make a leader starved of CPU by the drill's
# other processes lose its Lease, which is another drill.
LEASE = (15.0, 10.0, 2.0)
_WAIT = 120.0  # the bound of every wait (seconds): a drill that needs it has failed


def trainingjob(name: str) -> dict[str, Any]:
    """The example TrainingJob (two workers, a launcher under restartPolicy Never)."""
    document = copy.deepcopy(load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml"))
    document["metadata"] = {"name": name, "namespace": NAMESPACE}
    return document


def mpijob(name: str) -> dict[str, Any]:
    """mpi-operator's pi example, its launcher created once every worker is ready."""
    document = copy.deepcopy(load_yaml(EXAMPLES / "mpijob" / "pi.yaml"))
    document["metadata"] = {"name": name, "namespace": NAMESPACE}
    document["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    document["spec"]["runPolicy"].pop("ttlSecondsAfterFinished", None)
    return document


_JOBS = {"trainingjob": (TRAININGJOBS, trainingjob), "mpijob": (MPIJOBS, mpijob)}


def drill_for(
    server: ApiServer, workdir: Any, *, lease: tuple[float, float, float] = LEASE
) -> Drill:
    """A drill running TrainingJobs and MPIJobs on ``server``."""
    return Drill(server, workdir, lease=lease, jobs=KINDS)


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status = obj.get("status") or {}
    return {c["type"]: c for c in status.get("conditions", [])}


def state_of(obj: dict[str, Any]) -> str:
    """Failed, Running or Starting."""
    conditions = _conditions(obj)
    for final in ("Failed", "Running"):
        if conditions.get(final, {}).get("status") == "True":
            return final
    return "Starting"


@dataclass
class Jobs:
    """What became of the jobs a drill started."""

    states: Counter[str] = field(default_factory=Counter)
    failed: dict[str, str] = field(default_factory=dict)
    """Each Failed job's condition message, by ``kind/name``."""

    @property
    def total(self) -> int:
        return sum(self.states.values())


def jobs_of(drill: Drill, kinds: tuple[str, ...]) -> Jobs:
    """The states of every job of ``kinds`` in the drill's namespace."""
    found = Jobs()
    for kind in kinds:
        res, _ = _JOBS[kind]
        for obj in drill.server.storage.list(res, namespace=NAMESPACE).items:
            state = state_of(obj)
            found.states[state] += 1
            if state == "Failed":
                message = _conditions(obj)["Failed"].get("message", "")
                found.failed[f"{kind}/{obj['metadata']['name']}"] = message
    return found


_TRAININGJOBS = ("kai.alibabacloud.com", "trainingjobs")
_WATCHED = {_TRAININGJOBS, ("kubeflow.org", "mpijobs")}


@dataclass
class Witness:
    """Every commit that says a job's launcher was created while no launcher pod exists.

    The server's view at the moment of the commit: a status that records ``LauncherCreated`` True
    must come after the pod's own create.
    """

    server: ApiServer
    premature: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.unsubscribe = self.server.subscribe(self._commit)

    def _commit(self, event: Event) -> None:
        if event.resource not in _WATCHED or event.type == "DELETED":
            return
        before = _conditions(event.previous or {}).get("LauncherCreated", {})
        after = _conditions(event.object).get("LauncherCreated", {})
        if after.get("status") != "True" or before.get("status") == "True":
            return
        namespace, _, name = event.key.partition("/")
        if self.server.store.get(("", "pods"), f"{namespace}/{name}-launcher") is None:
            self.premature.append(f"{event.resource[1]}/{name}: {after.get('reason')}")


def create(drill: Drill, kind: str, name: str) -> None:
    res, document = _JOBS[kind]
    drill.server.storage.create(res, document(name), namespace=NAMESPACE)


async def ready(replica: Replica, *, timeout: float = _WAIT) -> None:
    """Wait until the replica's ``/readyz`` answers 200 (caches synced, election state known)."""
    assert replica.probe_port is not None
    url = f"http://127.0.0.1:{replica.probe_port}/readyz"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            if replica.process.returncode is not None:
                raise AssertionError(f"{replica.user} exited {replica.process.returncode}")
            try:
                async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as reply:
                    if reply.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            if loop.time() > deadline:
                raise AssertionError(f"{replica.user} never became ready")
            await asyncio.sleep(0.05)


@dataclass
class Stop:
    """One replica's stop: its exit status, how long it took, what it said it cut short."""

    user: str
    exit: int | None
    seconds: float
    cut: list[str]


async def terminate(replica: Replica, *, grace: float = 30.0) -> Stop:
    """SIGTERM, then SIGKILL after ``grace`` seconds, as the kubelet stops a pod's container."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    if replica.process.returncode is None:
        replica.process.send_signal(signal.SIGTERM)
    try:
        code: int | None = await asyncio.wait_for(replica.process.wait(), grace)
    except TimeoutError:
        replica.process.kill()
        await replica.process.wait()
        code = None
    messages = [str(line.get("msg", line.get("event", ""))) for line in replica.lines()]
    cut = [m for m in messages if m.startswith(("stopping:", "reconcile cut short"))]
    return Stop(replica.user, code, loop.time() - started, cut)


async def until(condition: Callable[[], object], *, what: str, timeout: float = _WAIT) -> None:
    """Wait until ``condition()`` holds, at most ``timeout`` seconds."""
    await eventually(condition, timeout=timeout, what=f"the drill's {what}")


async def settled(drill: Drill, kinds: tuple[str, ...], count: int) -> Jobs:
    """Wait until ``count`` jobs are Running or Failed (bounded); what they are then."""

    def done() -> bool:
        found = jobs_of(drill, kinds)
        return found.states["Starting"] == 0 and found.total == count

    await until(done, what=f"{count} jobs settle")
    return jobs_of(drill, kinds)


# -- SIGTERM during a burst -----------------------------------------------------------------------


@dataclass
class Burst:
    """What a burst under SIGTERM left."""

    jobs: Jobs
    stops: list[Stop]
    premature: list[str]
    """Launchers recorded as created before they existed (see :class:`Witness`)."""


@dataclass
class GateOpening:
    """How many jobs have reached the moment their launcher's gate opens, as the server commits.

    A TrainingJob's launcher waits until both workers are members (``currentWorkers``, written
    once they run); an MPIJob's (WaitForWorkersReady) until both workers are Ready.
    """

    server: ApiServer
    kind: str
    seen: set[str] = field(default_factory=set)
    ready: dict[str, set[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.unsubscribe = self.server.subscribe(self._commit)

    @property
    def count(self) -> int:
        return len(self.seen)

    def _commit(self, event: Event) -> None:
        if event.type == "DELETED":
            return
        name = event.key.partition("/")[2]
        if self.kind == "trainingjob" and event.resource == (
            "kai.alibabacloud.com",
            "trainingjobs",
        ):
            if len((event.object.get("status") or {}).get("currentWorkers") or []) >= 2:
                self.seen.add(name)
        elif self.kind == "mpijob" and event.resource == ("", "pods"):
            job, _, index = name.rpartition("-worker-")
            conditions = (event.object.get("status") or {}).get("conditions") or []
            if job and any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
            ):
                workers = self.ready.setdefault(job, set())
                workers.add(index)
                if len(workers) >= 2:
                    self.seen.add(job)


def _reached(opening: GateOpening, threshold: int) -> bool:
    return opening.count >= threshold


async def sigterm_burst(
    drill: Drill, kind: str, *, jobs: int, restarts: int, seed: int, spacing: float = 0.05
) -> Burst:
    """Create ``jobs`` jobs of ``kind``; SIGTERM the operator ``restarts`` times meanwhile.

    Each SIGTERM comes a seeded moment (0 to 30 ms) after a seeded job of the burst reached the
    moment its launcher's gate opens (:class:`GateOpening`): the operator is then deciding to
    create that launcher.
    """
    rng = random.Random(seed)
    witness = Witness(drill.server)
    up = GateOpening(drill.server, kind)
    operator = await drill.start("operator-0", leader_elect=False, probes=True)
    await ready(operator)
    thresholds = sorted(rng.sample(range(jobs // 4, 3 * jobs // 4), restarts))
    stops = []

    async def burst() -> None:
        for index in range(jobs):
            create(drill, kind, f"{kind}-{index}")
            await asyncio.sleep(rng.uniform(0, 2 * spacing))

    async with asyncio.TaskGroup() as group:
        group.create_task(burst(), name="drill-burst")
        for threshold in thresholds:
            await until(partial(_reached, up, threshold), what=f"{threshold} launchers due")
            await asyncio.sleep(rng.uniform(0, 0.03))
            stops.append(await terminate(operator))
            operator = await drill.start(f"operator-{len(stops)}", leader_elect=False, probes=True)
            await ready(operator)  # a process signalled before it handles signals just dies
    settled_jobs = await settled(drill, (kind,), jobs)
    witness.unsubscribe()
    up.unsubscribe()
    return Burst(settled_jobs, stops, witness.premature)


# -- a rolling update -----------------------------------------------------------------------------


@dataclass
class Rollout:
    """What a rolling update while jobs start left."""

    jobs: Jobs
    stops: list[Stop]
    premature: list[str]
    """Launchers recorded as created before they existed (see :class:`Witness`)."""


async def rolling_update(drill: Drill, *, jobs: int, seed: int, spacing: float = 0.1) -> Rollout:
    """Two replicas replaced one by one (surge one, none unavailable) while ``jobs`` start."""
    rng = random.Random(seed)
    witness = Witness(drill.server)
    old = [await drill.start(f"old-{i}", probes=True) for i in range(2)]
    for replica in old:
        await ready(replica)

    async def burst() -> None:
        for index in range(jobs):
            kind = "trainingjob" if index % 2 == 0 else "mpijob"
            create(drill, kind, f"{kind}-{index}")
            await asyncio.sleep(rng.uniform(0, 2 * spacing))

    stops = []
    async with asyncio.TaskGroup() as group:
        group.create_task(burst(), name="drill-burst")
        await asyncio.sleep(rng.uniform(0, jobs * spacing / 2))
        for index, replica in enumerate(old):
            new = await drill.start(f"new-{index}", probes=True)
            await ready(new)
            stops.append(await terminate(replica))
    settled_jobs = await settled(drill, ("trainingjob", "mpijob"), jobs)
    witness.unsubscribe()
    return Rollout(settled_jobs, stops, witness.premature)


# -- a lost Lease ---------------------------------------------------------------------------------

LOST_LEASE = (3.0, 2.0, 0.4)
"""Short durations, so the standby takes over within seconds of the leader's pause."""


@dataclass
class Takeover:
    """What a burst during which the leader lost its Lease left."""

    jobs: Jobs
    premature: list[str]
    deposed_exit: int | None
    """The paused leader's exit status once resumed (1: leadership lost)."""
    deposed_writes: list[str]
    """Writes it sent once resumed, the standby leading (fenced: must be none)."""


async def lease_lost_burst(drill: Drill, kind: str, *, jobs: int, seed: int) -> Takeover:
    """Two replicas; the leader frozen (SIGSTOP) past its Lease at a seeded launcher moment.

    The standby takes over while the burst goes on; then the old leader resumes (SIGCONT) with its
    reconciles overdue, and must write nothing and exit.
    """
    rng = random.Random(seed)
    witness = Witness(drill.server)
    due = GateOpening(drill.server, kind)
    replicas = [await drill.start(f"replica-{i}", probes=True) for i in range(2)]
    for replica in replicas:
        await ready(replica)
    threshold = rng.randrange(jobs // 4, 3 * jobs // 4)

    async def burst() -> None:
        for index in range(jobs):
            create(drill, kind, f"{kind}-{index}")
            await asyncio.sleep(rng.uniform(0, 0.1))

    held: set[str] = set()

    async def deployment() -> None:
        # A replica that exits is started again, as its Deployment would (on a loaded machine a
        # short Lease is lost now and then: one more lost Lease for the drill).
        while True:
            for user, replica in list(drill.replicas.items()):
                if replica.process.returncode is not None and user not in held:
                    await drill.start(user, probes=True)
            await asyncio.sleep(0.1)

    async with asyncio.TaskGroup() as group:
        group.create_task(burst(), name="drill-burst")
        restarter = group.create_task(deployment(), name="drill-deployment")
        await until(lambda: drill.holder() is not None, what="a leader")
        await until(lambda: due.count >= threshold, what=f"{threshold} launchers due")
        await asyncio.sleep(rng.uniform(0, 0.03))
        leader = drill.replicas[str(drill.holder())]
        held.add(leader.user)
        os.kill(leader.pid, signal.SIGSTOP)
        await until(lambda: drill.holder() not in (None, leader.user), what="the takeover")
        await asyncio.sleep(rng.uniform(0.5, 1.5))
        # From here on the deposed leader can send again. (What the server logs between the
        # takeover and now was sent before the freeze and read late by a busy server.)
        mark = len(drill.server.requests)
        os.kill(leader.pid, signal.SIGCONT)
        try:
            code: int | None = await asyncio.wait_for(leader.process.wait(), 30)
        except TimeoutError:
            code = None
        end = len(drill.server.requests)  # what a restart under the same user sends is not its
        held.discard(leader.user)
        settled_jobs = await settled(drill, (kind,), jobs)
        restarter.cancel()
    witness.unsubscribe()
    due.unsubscribe()
    after = list(drill.server.requests)[mark:end]
    writes = [
        f"{r.verb} {r.resource}/{r.subresource} {r.name} {r.code}"
        for r in after
        # Its elector's own attempt at the Lease is not leader-only work (and is refused).
        if r.user == leader.user and is_write(r) and r.resource != "leases"
    ]
    return Takeover(settled_jobs, witness.premature, code, writes)


# -- scalers whose writes lose their answers ------------------------------------------------------


def scaleout(name: str, job: str) -> dict[str, Any]:
    """A ScaleOut of one worker running the drill's script."""
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "ScaleOut",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "selector": {"name": job},
            "toAdd": {"count": 1},
            "script": SCRIPT,
            "timeout": 60,
        },
    }


@dataclass
class Scaled:
    """A scaler's end and its job's script runs."""

    name: str
    outcome: tuple[str, str]
    """The last condition of the scaler: (type, reason)."""
    runs: int
    """How many times its script ran on the launcher."""
    workers: int
    """The job's target workers afterwards."""


def _scaler(drill: Drill, name: str) -> dict[str, Any] | None:
    for obj in drill.server.storage.list(SCALEOUTS, namespace=NAMESPACE).items:
        if obj["metadata"]["name"] == name:
            return dict(obj)
    return None


def _done(drill: Drill, name: str) -> bool:
    found = _scaler(drill, name)
    return found is not None and (found.get("status") or {}).get("step") == "Done"


def _running_job(drill: Drill, job: str) -> bool:
    found = drill.server.storage.list(TRAININGJOBS, namespace=NAMESPACE).items
    obj = next((o for o in found if o["metadata"]["name"] == job), None)
    return obj is not None and state_of(obj) == "Running"


async def started_job(drill: Drill, job: str) -> None:
    """Create a TrainingJob, wait until it runs, and put the script on its launcher."""
    create(drill, "trainingjob", job)
    await until(lambda: _running_job(drill, job), what=f"{job} run")
    kubelet = drill.server.kubelet
    assert kubelet is not None
    setup = kubelet.exec(
        NAMESPACE,
        f"{job}-launcher",
        ["sh", "-c", f"mkdir -p /scripts && cat > {SCRIPT}"],
        stdin=_SCRIPT_BODY.encode(),
    )
    assert setup.exit_code == 0, setup.stderr


def scaled(drill: Drill, name: str, job: str) -> Scaled:
    """How the ScaleOut ``name`` of ``job`` ended."""
    found = _scaler(drill, name)
    assert found is not None
    last = found["status"]["conditions"][-1]
    kubelet = drill.server.kubelet
    assert kubelet is not None
    read = kubelet.exec(
        NAMESPACE, f"{job}-launcher", ["sh", "-c", "cat /scripts/runs 2>/dev/null || true"]
    )
    runs = read.stdout.decode()
    jobs = drill.server.storage.list(TRAININGJOBS, namespace=NAMESPACE).items
    status = next(o for o in jobs if o["metadata"]["name"] == job)["status"]
    return Scaled(
        name, (last["type"], last.get("reason", "")), runs.count("\n"), len(status["targetWorkers"])
    )


async def lost_answers(drill: Drill, *, jobs: int, scalers: int) -> list[Scaled]:
    """Every Script step's decision and attempt marker committed, their answers dropped."""
    await drill.start("operator", leader_elect=False)
    names = [f"job-{index}" for index in range(jobs)]
    for job in names:
        await started_job(drill, job)
    for marker in ('"step":"Script"', "ScriptSending"):
        drill.server.inject(
            Fault(
                verb="patch",
                resource="scaleouts",
                subresource="status",
                body_contains=marker,
                drop_answer=True,
                times=None,
            )
        )
    found = []
    for round_ in range(scalers):
        for job in names:
            name = f"{job}-grow-{round_}"
            drill.server.storage.create(SCALEOUTS, scaleout(name, job), namespace=NAMESPACE)
        for job in names:
            name = f"{job}-grow-{round_}"
            await until(partial(_done, drill, name), what=f"{name} end")
            found.append(scaled(drill, name, job))
    return found


async def killed_between(drill: Drill, *, marker: str) -> Scaled:
    """SIGKILL while the answer of the Script step's write ``marker`` is held; a new operator."""
    operator = await drill.start("operator-0", leader_elect=False)
    await started_job(drill, "job")
    held = drill.server.inject(
        Fault(
            verb="patch",
            resource="scaleouts",
            subresource="status",
            body_contains=marker,
            answer_delay=60.0,
        )
    )
    drill.server.storage.create(SCALEOUTS, scaleout("grow", "job"), namespace=NAMESPACE)
    await until(lambda: held.fired == 1, what=f"the write of {marker}")
    await until(
        lambda: marker in json.dumps(_scaler(drill, "grow"), separators=(",", ":")),
        what=f"{marker} committed",
    )
    os.kill(operator.pid, signal.SIGKILL)
    await operator.process.wait()
    await drill.start("operator-1", leader_elect=False)
    await until(lambda: _done(drill, "grow"), what="the scaler end")
    # The rolled-back worker of a failed scale-out is gone before the job's targets say so.
    await until(lambda: _pods(drill) == len(_targets(drill)) + 1, what="the pods settle")
    return scaled(drill, "grow", "job")


def _targets(drill: Drill) -> list[str]:
    (job,) = drill.server.storage.list(TRAININGJOBS, namespace=NAMESPACE).items
    return list(job["status"]["targetWorkers"])


def _pods(drill: Drill) -> int:
    return len(drill.server.storage.list(PODS, namespace=NAMESPACE).items)


__all__ = [
    "CRDS",
    "LEASE",
    "LOST_LEASE",
    "Burst",
    "Jobs",
    "Rollout",
    "Scaled",
    "Stop",
    "Takeover",
    "Witness",
    "drill_for",
    "jobs_of",
    "killed_between",
    "lease_lost_burst",
    "lost_answers",
    "ready",
    "rolling_update",
    "sigterm_burst",
    "terminate",
]
