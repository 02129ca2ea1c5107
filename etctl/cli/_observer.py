"""Following a job of any kind as a user does: narrating each change, waiting with limits.

An :class:`Observer` reads the states a :class:`~etctl.cli._feed.Feed` queues, writes every change
between consecutive states on a :class:`~etctl.cli._timeline.Timeline` as it arrives, and waits
for conditions with a timeout each: :meth:`Observer.until` for the job, its pods and its scalers,
:meth:`Observer.listing` for the hosts a command in a pod prints until they are the members
(:meth:`Observer.hostfile`: ``cat`` of a hostfile through ``pods/exec``, the path ``kubectl exec``
takes), and :meth:`Observer.poll` for anything else that must be asked for again and again.
Changes keep being narrated during every wait.

A wait that runs out raises :class:`StepFailed` with a message that says what was awaited, for how
long, and the state it was stuck in (the job's phase and every pod that is not Running), so a
failed demo explains itself. A condition may raise :class:`StepFailed` itself to fail at once (a
scaler that finished with ``ScaleFailed``).

Invariants: every request has a timeout (the client's, and each exec's own); waits are measured on
the injected clock; a spinner frame is drawn at least every ``spin_interval`` seconds of a wait;
an observer only reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from etctl.cli._changes import changes
from etctl.cli._feed import Feed
from etctl.cli._jobview import Snapshot, empty
from etctl.cli._timeline import Timeline
from etctl.errors import EtctlError
from etctl.runtime import Clock, RealClock

__all__ = ["Observer", "StepFailed", "describe", "hosts_of"]

_EXEC_TIMEOUT = 10.0

T = TypeVar("T")


class StepFailed(Exception):
    """A demo step did not happen (in time, or at all); the message says what and why."""


def describe(snapshot: Snapshot, subject: str = "the job") -> str:
    """The state a wait was stuck in, in one line: the job's phase, and pods not Running.

    ``subject`` names the job when it does not exist (``tfjob/mnist``).
    """
    parts = []
    if snapshot.job is None:
        parts.append(f"{subject} does not exist")
    else:
        parts.append(f"job phase {snapshot.job.phase or '(none yet)'}")
        if snapshot.job.targets or snapshot.job.members:
            parts.append(f"{len(snapshot.job.members)} worker(s) in the hostfile")
    stuck = [
        f"{pod.name} {pod.status}" for pod in snapshot.pods.values() if pod.status != "Running"
    ]
    if stuck:
        parts.append("pods not running: " + ", ".join(stuck))
    else:
        parts.append(f"{len(snapshot.pods)} pod(s), all Running" if snapshot.pods else "no pods")
    return "; ".join(parts)


def hosts_of(hostfile: str) -> list[str]:
    """The host names of a hostfile, in order.

    Each line is ``<host>:<slots>`` (Horovod, Intel MPI, MPICH) or ``<host> slots=<n>``
    (OpenMPI, DeepSpeed); a host given by its FQDN (``<pod>.<service>.<ns>.svc``) counts as its
    pod, the first label. Comments and blank lines are skipped.
    """
    hosts = []
    for line in hostfile.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            hosts.append(words[0].split(":", 1)[0].split(".", 1)[0])
    return hosts


class Observer:
    """Narrates a job's changes from a feed, and waits for conditions on it.

    Args:
        feed: the job's feed (running, and synced before the first wait).
        timeline: where changes are written.
        clock: the clock waits are measured on.
        poll_interval: seconds between attempts of :meth:`poll`.
        spin_interval: seconds between spinner frames while nothing happens.
    """

    def __init__(
        self,
        feed: Feed,
        timeline: Timeline,
        *,
        clock: Clock | None = None,
        poll_interval: float = 0.05,
        spin_interval: float = 0.1,
    ) -> None:
        self.feed = feed
        self.client = feed.client
        self.timeline = timeline
        self.clock: Clock = clock or RealClock()
        self._poll = poll_interval
        self._spin = spin_interval
        self.last: Snapshot = empty()

    def catch_up(self) -> Snapshot:
        """Narrate every state the feed queued since the last call; return the latest.

        An error that keeps the feed from following something is told too, once.
        """
        for state in self.feed.pending():
            self._narrate(state)
        for problem in self.feed.new_problems():
            self.timeline.warning(f"cannot follow {problem}; trying again")
        return self.last

    def _narrate(self, state: Snapshot) -> None:
        for change in changes(self.last, state, self.feed.subject, arrow=self.timeline.arrow):
            self.timeline.change(change.subject, change.what, tone=change.tone)
        self.last = state

    async def _pause(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the feed's next state, narrating what came."""
        if await self.feed.wait(seconds):
            self.catch_up()

    async def _wait_more(
        self, what: str, deadline: float, timeout: float, why: str, step: float
    ) -> None:
        """Wait up to ``step`` seconds more, or fail the wait once ``deadline`` has passed.

        Raises:
            StepFailed: the deadline passed; the message says what was awaited and ``why``.
        """
        remaining = deadline - self.clock.monotonic()
        if remaining <= 0:
            msg = f"{what}: not done after {timeout:g}s ({why})"
            raise StepFailed(msg)
        self.timeline.waiting(what)
        await self._pause(min(remaining, step))

    async def until(
        self, what: str, done: Callable[[Snapshot], bool], *, timeout: float
    ) -> Snapshot:
        """Narrate changes until ``done(state)`` holds; return that state.

        Args:
            what: what is awaited, in words (shown beside the spinner and in a failure).
            done: the condition on the latest state; it may raise :class:`StepFailed`.
            timeout: seconds before giving up.

        Raises:
            StepFailed: the condition failed, or did not hold within ``timeout``.
        """
        deadline = self.clock.monotonic() + timeout
        while True:
            state = self.catch_up()
            if done(state):
                return state
            why = describe(state, self.feed.subject)
            await self._wait_more(what, deadline, timeout, why, self._spin)

    async def poll(
        self,
        what: str,
        attempt: Callable[[], Awaitable[tuple[T | None, str]]],
        *,
        timeout: float,
    ) -> T:
        """Call ``attempt`` until it returns a result, narrating changes meanwhile.

        Args:
            what: what is awaited, in words (shown beside the spinner and in a failure).
            attempt: returns ``(result, problem)``: a result ends the wait, else ``problem`` says
                what is still missing. It may raise :class:`StepFailed` to fail at once; a failed
                request (:class:`~etctl.errors.EtctlError`) counts as a problem and is retried.
            timeout: seconds before giving up.

        Raises:
            StepFailed: ``attempt`` failed, or returned no result within ``timeout``.
        """
        deadline = self.clock.monotonic() + timeout
        while True:
            self.catch_up()
            try:
                result, problem = await attempt()
            except EtctlError as exc:
                result, problem = None, f"a request failed: {exc}"
            if result is not None:
                return result
            await self._wait_more(what, deadline, timeout, problem, self._poll)

    async def output(self, pod: str, command: Sequence[str]) -> str:
        """What ``command`` prints in ``pod``, run through ``pods/exec``.

        Raises:
            StepFailed: the command failed.
            EtctlError: the exec was refused or could not run.
        """
        result = await self.client.exec(
            self.feed.namespace, pod, list(command), timeout=_EXEC_TIMEOUT
        )
        if result.exit_code != 0:
            detail = result.stderr.decode(errors="replace").strip()
            msg = f"{' '.join(command)} in {pod} exited {result.exit_code}: {detail}"
            raise StepFailed(msg)
        return result.stdout.decode(errors="replace")

    async def read_file(self, pod: str, path: str) -> str:
        """A file in ``pod``, read with ``cat`` through ``pods/exec`` (see :meth:`output`)."""
        return await self.output(pod, ["cat", path])

    async def hostfile(
        self, reader: str, path: str, members: Sequence[str], *, timeout: float
    ) -> str:
        """Read the hostfile at ``path`` in ``reader`` until it lists exactly ``members``.

        Returns the content (see :meth:`listing`).
        """
        workers = "worker" if len(members) == 1 else "workers"
        what = f"the hostfile in {reader} to list {len(members)} {workers}"
        return await self.listing(what, reader, ["cat", path], members, timeout=timeout)

    async def listing(
        self,
        what: str,
        pod: str,
        command: Sequence[str],
        members: Sequence[str],
        *,
        timeout: float,
    ) -> str:
        """Run ``command`` in ``pod`` until the hosts it prints are exactly ``members``.

        Whatever delivers the hosts (a pusher, the kubelet's ConfigMap sync) rewrites them after
        the membership changed, so a run may briefly see the previous ones; runs are repeated
        until they match or ``timeout`` passes. Returns what the matching run printed.

        Raises:
            StepFailed: it never matched (what it listed last is in the message), or the command
                failed.
        """
        wanted = sorted(members)

        async def attempt() -> tuple[str | None, str]:
            content = await self.output(pod, command)
            listed = hosts_of(content)
            if sorted(listed) == wanted:
                return content, ""
            return None, f"it lists {', '.join(listed) or 'nothing'}"

        return await self.poll(what, attempt, timeout=timeout)
