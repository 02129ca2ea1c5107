"""A leader failover drill with real processes (used by a test and by ``bench/leader_failover.py``).

Two ``etctl run --leader-elect`` replicas run as child processes against one embedded API server
(with the simulated kubelet) that serves in the calling process, so its request log can be read.
Each replica authenticates with its own token, so every request in the log names the replica that
sent it.

One round is the worst case of a paused leader: the leader's next renew is held by the server for
a moment, and while it is held the leader is stopped (SIGSTOP). The renew then succeeds: it was
sent before the pause, as a leader's renew is when the process freezes just after sending it.
While the leader is stopped, the standby takes the Lease over and new jobs are created, which the
successor reconciles; then the old leader is resumed (SIGCONT) with every timer overdue and a
backlog of watch events, and must exit without one write. The round reports how long the takeover
took and every write the deposed leader sent after it (which must be none).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from etctl.common import CustomResource, crd_manifest
from etctl.jobs.tfjob._api import TFJOB, TFJOBS
from etctl.runtime import NAMESPACES, PODS
from etctl.testing import ApiServer, AuthConfig, Fault, KubeletConfig, RequestRecord, eventually

NAMESPACE = "drill"
LEASE = "etctl-drill"
_READS = ("get", "list", "watch")


def is_write(record: RequestRecord) -> bool:
    """A request that changes something (an exec counts: it runs a command)."""
    return record.verb not in _READS or record.subresource == "exec"


def tfjob(name: str, workers: int = 2) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": "tf"}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}
            }
        },
    }


@dataclass
class Replica:
    """One ``etctl run`` process and the user its requests are logged under."""

    user: str
    process: asyncio.subprocess.Process
    log: Path
    probe_port: int | None = None
    """Where its ``/healthz`` and ``/readyz`` are served (None: not served)."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def lines(self) -> list[dict[str, Any]]:
        """Its JSON log lines so far."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue  # a traceback or a line cut by a kill
        return found


@dataclass
class Round:
    """What one paused-leader round measured."""

    takeover: float
    """Seconds from the leader's stop to the standby holding the Lease."""
    paused: float
    """Seconds the old leader was stopped."""
    deposed_exit: int | None
    """The old leader's exit status after it resumed (1: leadership lost)."""
    deposed_writes: list[RequestRecord] = field(default_factory=list)
    """Writes the old leader sent after the standby took over (must be empty)."""
    successor_writes: int = 0
    """Writes the new leader sent meanwhile (it did the work)."""


class Drill:
    """Two replicas of the operator, one server, and rounds of pausing the leader.

    Args:
        server: a started server from :func:`server`.
        workdir: where kubeconfigs and the replicas' logs go.
        lease: the lease duration, renew deadline and retry period, in seconds.
    """

    def __init__(
        self,
        server: ApiServer,
        workdir: Path,
        *,
        lease: tuple[float, float, float],
        jobs: str = "tfjob",
    ) -> None:
        self.server = server
        self.workdir = workdir
        self.lease_duration, self.renew_deadline, self.retry_period = lease
        self.jobs = jobs
        self.replicas: dict[str, Replica] = {}
        self._jobs = 0
        self._tokens = 0

    async def start(self, user: str, *, leader_elect: bool = True, probes: bool = False) -> Replica:
        """Start (or restart) the replica named ``user`` (serving its probes, if asked)."""
        self._tokens += 1
        token = f"token-{user}-{self._tokens}"
        self.server.add_token(token, user=user, groups=["system:masters"])
        kubeconfig = self.server.write_kubeconfig(self.workdir / f"kubeconfig-{user}", token=token)
        log = self.workdir / f"{user}-{self._tokens}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCTL_")}
        port = free_port() if probes else None
        election = [
            "--leader-elect",
            f"--leader-election-namespace={NAMESPACE}",
            f"--leader-election-id={LEASE}",
            f"--leader-elect-lease-duration={self.lease_duration}s",
            f"--leader-elect-renew-deadline={self.renew_deadline}s",
            f"--leader-elect-retry-period={self.retry_period}s",
        ]
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "etctl.cli",
                "run",
                "--log-format=json",
                "--log-level=info",
                f"--kubeconfig={kubeconfig}",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address={f'127.0.0.1:{port}' if port else 0}",
                f"--namespace={NAMESPACE}",
                f"--jobs={self.jobs}",
                *(election if leader_elect else []),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env=env,
            )
        replica = Replica(user, process, log, port)
        self.replicas[user] = replica
        return replica

    async def stop(self) -> None:
        """Kill every replica still running (and resume a stopped one first)."""
        for replica in self.replicas.values():
            if replica.process.returncode is None:
                os.kill(replica.pid, signal.SIGCONT)
                replica.process.kill()
                await replica.process.wait()

    def holder(self) -> str | None:
        """The replica that made the last successful write of the Lease (the holder)."""
        for record in reversed(list(self.server.requests)):
            lease = record.resource == "leases" and record.name in (LEASE, "")
            ours = record.user in self.replicas and 200 <= record.code < 300
            if lease and ours and is_write(record):
                return record.user
        return None

    async def until(self, condition: Callable[[], object], *, timeout: float, what: str) -> None:
        """Wait for ``condition``; fail at once when the replica holding the lease exited."""

        def check() -> object:
            for replica in self.replicas.values():
                code = replica.process.returncode
                if code is not None and replica.user == self.holder():
                    text = replica.log.read_text(errors="replace")[-4000:]
                    raise RuntimeError(f"replica {replica.user} exited {code}:\n{text}")
            return condition()

        await eventually(check, timeout=timeout, what=f"the drill's {what}")

    def pods(self) -> set[str]:
        listed = self.server.storage.list(PODS, namespace=NAMESPACE)
        return {str(pod["metadata"]["name"]) for pod in listed.items}

    def create_jobs(self, count: int) -> list[str]:
        """Create ``count`` TFJobs of two workers; their names."""
        names = []
        for _ in range(count):
            self._jobs += 1
            name = f"job-{self._jobs}"
            self.server.storage.create(TFJOBS, tfjob(name), namespace=NAMESPACE)
            names.append(name)
        return names

    async def leader(self, *, timeout: float = 60.0) -> Replica:
        """The replica that leads, once it reconciles (a job of its own gets its pods)."""
        await self.until(lambda: self.holder() is not None, timeout=timeout, what="a leader")
        (name,) = self.create_jobs(1)
        wanted = {f"{name}-worker-0", f"{name}-worker-1"}
        await self.until(lambda: wanted <= self.pods(), timeout=timeout, what="a working leader")
        holder = self.holder()
        assert holder is not None
        return self.replicas[holder]

    async def paused_leader(self, *, jobs: int, hold_answer: float = 0.3) -> Round:
        """Stop the leader just after it sent a renew, past its lease; resume it; measure."""
        loop = asyncio.get_running_loop()
        leader = await self.leader()
        renew = self.server.inject(
            Fault(verb="update", resource="leases", name=LEASE, delay=hold_answer, times=1)
        )
        await self.until(lambda: renew.fired == 1, timeout=10, what="the leader's next renew")
        os.kill(leader.pid, signal.SIGSTOP)
        stopped = loop.time()
        names = self.create_jobs(jobs)
        await self.until(
            lambda: self.holder() not in (None, leader.user),
            timeout=10 * self.lease_duration,
            what="the standby take over",
        )
        takeover = loop.time() - stopped
        mark = len(self.server.requests)
        successor = self.holder()
        wanted = {f"{name}-worker-{i}" for name in names for i in (0, 1)}
        await self.until(lambda: wanted <= self.pods(), timeout=60, what="the successor work")
        os.kill(leader.pid, signal.SIGCONT)
        paused = loop.time() - stopped
        try:
            code: int | None = await asyncio.wait_for(leader.process.wait(), timeout=30)
        except TimeoutError:
            code = None
        after = list(self.server.requests)[mark:]
        return Round(
            takeover=takeover,
            paused=paused,
            deposed_exit=code,
            deposed_writes=[r for r in after if r.user == leader.user and is_write(r)],
            successor_writes=sum(1 for r in after if r.user == successor and is_write(r)),
        )


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def server(
    *, nodes: int = 4, crds: Sequence[CustomResource] = (TFJOB,), gpus: int = 0
) -> ApiServer:
    """The drill's server: RBAC on (each replica is its own user), CRDs, a simulated kubelet."""
    return ApiServer(
        auth=AuthConfig(),
        crds=[crd_manifest(crd) for crd in crds],
        kubelet=KubeletConfig.uniform(nodes, cpu="64", memory="256Gi", pods=500, gpus=gpus),
        request_log_size=1_000_000,
    )


async def prepare(api: ApiServer) -> None:
    """Create the drill's namespace."""
    api.storage.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})


__all__ = [
    "NAMESPACE",
    "Drill",
    "Replica",
    "Round",
    "free_port",
    "is_write",
    "prepare",
    "server",
    "tfjob",
]
