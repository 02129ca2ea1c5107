"""What every sandbox demo does the same way, whatever job kind it narrates.

A demo (``etctl sandbox --demo [KIND]``) is a user of the API like kubectl: its own client from
the sandbox's kubeconfig, a :class:`~etctl.cli._feed.Feed` following the job, an
:class:`~etctl.cli._observer.Observer` turning what the feed sees into a timeline. This module
holds the parts every demo shares: the runner (:func:`run_steps`: connect, follow, run the steps,
turn a step that did not happen into exit status 1) and :class:`DemoSteps`, the base of each
demo's steps, with the steps and helpers that do not depend on the kind: the membership file shown
as a diff, a scaler followed to its end, an eviction and its replacement, the summary of the
operator's Events and the teardown.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from etctl._version import __version__
from etctl.cli._demo_manifests import NAMESPACE
from etctl.cli._embedded import Sandbox
from etctl.cli._feed import Feed
from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import JobView, Snapshot
from etctl.cli._observer import Observer, StepFailed
from etctl.cli._sandbox_options import DemoOptions
from etctl.cli._timeline import Mark, Timeline, Tone
from etctl.errors import EtctlError
from etctl.runtime import EVENTS, Client, ClientOptions, KubeObject, Resource

__all__ = ["PAD", "DemoJob", "DemoSteps", "event_groups", "run_steps"]

PAD = " " * 8


@dataclass(frozen=True)
class DemoJob:
    """The job a demo narrates.

    Attributes:
        kind: the job kind as the sandbox serves it.
        name: the job's name (in :data:`NAMESPACE`).
        launcher: its launcher pod's name.
        operator_objects: ``(kind, name)`` of the objects whose Events the summary shows.
        expected_events: ``(kind, reason)`` of the Events that must have arrived before it does.
        files: whether the feed follows the job's published files (its ConfigMap) too.
    """

    kind: JobKind
    name: str
    launcher: str
    operator_objects: frozenset[tuple[str, str]]
    expected_events: frozenset[tuple[str, str]]
    files: bool = False

    @property
    def resource(self) -> Resource:
        """The job's resource."""
        return self.kind.resource


async def run_steps(
    sandbox: Sandbox,
    timeline: Timeline,
    steps: type[DemoSteps],
    *,
    options: DemoOptions | None = None,
) -> int:
    """Run a demo's ``steps`` on a ready sandbox while a feed follows their job (``job_spec``).

    Returns:
        0 when every step happened; 1 when one did not (the timeline says which and why).
    """
    options = options or DemoOptions()
    client_options = ClientOptions(request_timeout=10.0, user_agent=f"etctl-demo/{__version__}")
    async with Client.connect(sandbox.kubeconfig, options=client_options) as client:
        job = steps.job_spec
        feed = Feed(client, job.kind, namespace=NAMESPACE, job=job.name, files=job.files)
        observer = Observer(feed, timeline, poll_interval=options.poll_interval)
        demo = steps(sandbox, client, observer, options)
        status, error = 0, None
        async with asyncio.TaskGroup() as group:
            following = group.create_task(feed.run(), name="demo:feed")
            try:
                await demo.run()
            except StepFailed as exc:
                timeline.failed(str(exc))
                status = 1
            except Exception as exc:  # noqa: BLE001 - raised again below, outside the group
                error = exc
            finally:
                following.cancel()
        if error is not None:
            raise error
    return status


class DemoSteps(ABC):
    """The base of a demo's steps: subclasses give :meth:`steps` and how members are read.

    ``shown`` is the membership file as last shown (its next showing is a diff against it).
    """

    job_spec: DemoJob
    members_file: str = "the hostfile"
    """How the summary names the file that lists the members."""

    def __init__(
        self, sandbox: Sandbox, client: Client, observer: Observer, options: DemoOptions
    ) -> None:
        self.sandbox = sandbox
        self.client = client
        self.observer = observer
        self.t = observer.timeline
        self.timeout = options.step_timeout
        self.shown = ""

    async def run(self) -> None:
        """Wait for the feed's first lists, then run every step; a refused write fails the step."""
        try:
            await self._synced()
            for step in self.steps():
                await step()
        except EtctlError as exc:  # a write was refused: the step cannot go on
            raise StepFailed(str(exc)) from exc

    # -- what a kind gives

    @abstractmethod
    def steps(self) -> Sequence[Callable[[], Awaitable[None]]]:
        """The demo's steps, in order."""

    @property
    @abstractmethod
    def read_command(self) -> str:
        """The kubectl command that reads the membership file in the launcher."""

    @abstractmethod
    async def read_members(self, members: Sequence[str]) -> str:
        """The membership file once it lists exactly ``members``."""

    async def after_delete(self) -> None:
        """Wait for what else must go with the job (nothing by default)."""
        return

    # -- shared steps

    async def show_first(self, title: str, listed: str) -> None:
        """A step reading the membership file as the launcher sees it (``N <listed>``)."""
        self.t.step(title)
        self.t.hint(self.read_command)
        members = self.job(self.observer.last).members
        self.shown = await self.read_members(members)
        self.t.block([(Mark.SAME, line) for line in self.shown.splitlines()])
        self.t.done(f"{len(members)} {listed}")

    def victim(self, members: Sequence[str]) -> str:
        """The member :meth:`evict` evicts: the second (the first when it is alone)."""
        return members[1] if len(members) > 1 else members[0]

    async def evict(self) -> None:
        """The kubelet evicts a worker (:meth:`victim`); wait until a new name replaced it."""
        self.t.step("Evict a worker: its node runs low on memory")
        seen = self.observer.catch_up()
        victim = self.victim(self.job(seen).members)
        node = seen.pods[victim].node if victim in seen.pods else "its node"
        self.t.hint(f"# the kubelet on {node} evicts {victim}")
        try:
            self.sandbox.kubelet.evict(NAMESPACE, victim)
        except LookupError as exc:
            msg = f"the kubelet cannot evict {victim}: {exc}"
            raise StepFailed(msg) from exc
        self.t.change(f"pod/{victim}", f"evicted by the kubelet on {node}", tone=Tone.WARN)
        targets = set(self.job(seen).targets)

        def replaced(now: Snapshot) -> bool:
            job = now.job
            return (
                job is not None
                and job.phase == "Running"
                and victim not in now.pods
                and victim not in job.targets
                and len(job.targets) == len(targets)
                and set(job.members) == set(job.targets)
                and now.running(*job.targets)
            )

        now = await self.observer.until(
            f"a new worker to replace {victim}", replaced, timeout=self.timeout
        )
        newcomers = [name for name in self.job(now).targets if name not in targets]
        await self.show_members(self.job(now).members)
        self.t.done(f"{victim} was replaced by {', '.join(newcomers)}, a new name")

    async def summary(self) -> None:
        """Show the workers and the operator's Events, then delete the job and wait it out."""
        job = self.job_spec
        self.t.step("Summary, then tear down")
        seen = self.observer.catch_up()
        workers = self.job(seen).members
        self.t.text(f"{PAD}{len(workers)} workers in {self.members_file}:")
        self.pods_table(seen, list(workers))
        events = await self.observer.poll(
            "the operator's events to arrive", self._operator_events, timeout=self.timeout
        )
        self.t.text("")
        self.t.text(f"{PAD}Events the operator recorded (kubectl get events):")
        self.t.grouped_table(["COUNT", "REASON", "LAST MESSAGE"], event_groups(events))
        self.t.text("")
        self.t.hint(f"kubectl delete {job.resource.kind.lower()} {job.name}")
        await self.client.delete(job.resource, job.name, namespace=NAMESPACE)

        def gone(now: Snapshot) -> bool:
            return now.job is None and not now.pods and not now.scalers

        await self.observer.until(
            "the job, its pods and its scalers to be deleted", gone, timeout=self.timeout
        )
        await self.after_delete()
        self.t.done("the job and everything it owned are gone")

    # -- shared helpers

    def job(self, seen: Snapshot) -> JobView:
        """The job in ``seen``; every step after the first starts from a look that saw it."""
        if seen.job is None:
            msg = f"{self.job_spec.resource.kind} {self.job_spec.name} is gone"
            raise StepFailed(msg)
        return seen.job

    async def show_members(self, members: Sequence[str]) -> None:
        """Read the membership file until it lists ``members``; show it as a diff."""
        self.t.hint(self.read_command)
        content = await self.read_members(members)
        before = self.shown.splitlines()
        after = content.splitlines()
        lines = [(Mark.SAME if line in before else Mark.ADDED, line) for line in after]
        lines += [(Mark.REMOVED, line) for line in before if line not in after]
        self.t.block(lines)
        self.shown = content

    async def scaled(self, what: str, size: int, matches: Callable[[str], bool]) -> Snapshot:
        """Wait until the scalers ``matches`` accepts (by ``kind/name``) succeeded.

        And until the job has ``size`` running members and no other pod than them and its
        launcher.

        Raises:
            StepFailed: such a scaler failed (its reason and message), or the wait timed out.
        """
        launcher = self.job_spec.launcher

        def finished(seen: Snapshot) -> bool:
            found = [
                scaler
                for key, scaler in seen.scalers.items()
                if matches(key) and scaler.outcome is not None
            ]
            for scaler in found:
                if not scaler.succeeded:
                    assert scaler.outcome is not None
                    _, reason, message = scaler.outcome
                    msg = f"{scaler.subject} failed ({reason}): {message}"
                    raise StepFailed(msg)
            job = seen.job
            return (
                bool(found)
                and job is not None
                and job.phase == "Running"
                and len(job.members) == size
                and set(job.members) == set(job.targets)
                and seen.running(*job.targets)
                and all(pod in job.targets or pod == launcher for pod in seen.pods)
            )

        return await self.observer.until(what, finished, timeout=self.timeout)

    async def settled(self, what: str, size: int) -> Snapshot:
        """Wait until the job runs with ``size`` members, all running (and its launcher, if any)."""
        launcher = self.job_spec.launcher

        def running(seen: Snapshot) -> bool:
            job = seen.job
            return (
                job is not None
                and job.phase == "Running"
                and len(job.targets) == size
                and set(job.members) == set(job.targets)
                and seen.running(*([launcher] if launcher else []), *job.targets)
            )

        return await self.observer.until(what, running, timeout=self.timeout)

    async def scaled_by(self, res: Resource, size: int, name: str | None = None) -> Snapshot:
        """Wait until a scaler of ``res`` (``name``, or any) succeeded and the job has ``size``."""
        prefix = f"{res.kind.lower()}/"

        def matches(key: str) -> bool:
            return key.startswith(prefix) and (name is None or key == f"{prefix}{name}")

        return await self.scaled(f"{res.kind} to finish with {size} workers", size, matches)

    def pods_table(self, seen: Snapshot, names: Sequence[str]) -> None:
        """The named pods of ``seen`` as a table (those not seen are left out)."""
        rows = []
        for name in names:
            pod = seen.pods.get(name)
            if pod is not None:
                rows.append([pod.name, pod.status, pod.node, pod.ip])
        self.t.table(["NAME", "STATUS", "NODE", "IP"], rows)

    async def _synced(self) -> None:
        async def listed() -> tuple[bool | None, str]:
            return (True if self.observer.feed.synced else None), "the first lists are not done"

        await self.observer.poll("the watches to start", listed, timeout=self.timeout)

    async def _operator_events(self) -> tuple[list[KubeObject] | None, str]:
        job = self.job_spec
        listed = await self.client.list(EVENTS, namespace=NAMESPACE)
        events = [event for event in listed.items if _about(event, job.operator_objects)]
        seen = {
            (str((event.get("involvedObject") or {}).get("kind")), str(event.get("reason")))
            for event in events
        }
        missing = sorted(f"{kind} {reason}" for kind, reason in job.expected_events - seen)
        if missing:
            return None, f"no {', '.join(missing)} event yet"
        return events, ""


def _about(event: Mapping[str, Any], objects: frozenset[tuple[str, str]]) -> bool:
    """True for an event about one of ``objects`` (``(kind, name)``)."""
    involved = event.get("involvedObject") or {}
    return (involved.get("kind"), involved.get("name")) in objects


def event_groups(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[list[str]]]]:
    """Events by involved object, then by reason, in order of first occurrence, with counts.

    Each row is ``[count, reason, last message]``: the events of one reason are added up, and the
    latest message stands for them.
    """
    ordered = sorted(events, key=lambda e: (str(e.get("firstTimestamp") or ""), _rv(e)))
    groups: dict[str, dict[str, list[str]]] = {}
    for event in ordered:
        involved = event.get("involvedObject") or {}
        subject = f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"
        reason = str(event.get("reason") or "")
        count = int(event.get("count") or 1)
        message = str(event.get("message") or "")
        rows = groups.setdefault(subject, {})
        row = rows.get(reason)
        if row is None:
            rows[reason] = [str(count), reason, message]
        else:
            row[0] = str(int(row[0]) + count)
            row[2] = message
    return [(subject, list(rows.values())) for subject, rows in groups.items()]


def _rv(event: Mapping[str, Any]) -> int:
    version = str((event.get("metadata") or {}).get("resourceVersion") or "0")
    return int(version) if version.isdigit() else 0
