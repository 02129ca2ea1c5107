"""``etctl status KIND/NAME`` and ``etctl watch KIND/NAME``: one job, on any cluster.

Both take the job as kubectl does (``tfjob/mnist`` or ``tfjob mnist``; the kind by any of its
names, :mod:`etctl.cli._jobkinds`) and connect as kubectl does (``--kubeconfig``, ``--context``,
``-n/--namespace``, :mod:`etctl.cli._connection`). They only read.

* ``status`` reads the job, its pods, its scalers (elastic kinds), the ConfigMaps holding the files
  its kind publishes, and the Events about them, once, and prints them as ``kubectl describe``
  would (:mod:`etctl.cli._describe`). Exit 0; 1 when the job does not exist or the cluster cannot
  be read, with a one-line message.
* ``watch`` prints the same, then follows every change as it happens (the feed of the sandbox
  demo: list then watch, :mod:`etctl.cli._feed`), one timestamped line each, until the job
  finishes, is deleted, ``--timeout`` passes, or Ctrl-C. Exit 0 when it Succeeded, 1 when it
  Failed, was deleted, did not exist, or could not be read; 124 (as ``timeout(1)``) when
  ``--timeout`` ran out first, which says nothing against the job: the last line gives the state
  it was in; 130 on Ctrl-C. ``--timeout`` bounds the whole command, from connecting and the first
  lists on. An error that keeps something from being followed is printed as soon as it persists
  (three failures in a row), and the command keeps trying until its bound; when the job itself
  could not be read by then, it exits 1 with that error.

Exit status 2 is a usage error: an unknown kind (the message lists the registered ones) or a
target that is neither ``KIND/NAME`` nor ``KIND NAME``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from etctl.cli._connection import add_connection_options, connect
from etctl.cli._describe import describe_job
from etctl.cli._feed import Feed
from etctl.cli._jobkinds import JobKind, job_kinds, resolve, split_target
from etctl.cli._jobview import Snapshot, snapshot
from etctl.cli._observer import Observer, StepFailed, describe
from etctl.cli._registry import discover
from etctl.cli._timeline import Timeline
from etctl.common import JOB_NAME, SCALEINS, SCALEOUTS
from etctl.errors import ConfigError, EtctlError, NotFound
from etctl.runtime import CONFIGMAPS, EVENTS, PODS, Client, Clock, RealClock, objects

__all__ = [
    "EXIT_TIMED_OUT",
    "add_status_parser",
    "add_watch_parser",
    "read_job",
    "status_command",
    "watch_command",
    "watch_job",
]

_STATUS_EPILOG = """\
Exit status: 0 the job was shown; 1 it does not exist, or the cluster could not be read;
2 a usage error (an unknown kind, a malformed KIND/NAME).
"""
_WATCH_EPILOG = """\
Exit status: 0 the job Succeeded; 1 it Failed, was deleted, does not exist, or the cluster could
not be read; 2 a usage error; 124 --timeout ran out before the job finished (the last line says
the state it was in); 130 Ctrl-C.
"""
EXIT_TIMED_OUT = 124
"""``etctl watch``'s exit status when ``--timeout`` ran out first (``timeout(1)``'s)."""


def _add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="+",
        metavar="KIND/NAME",
        help="the job: KIND/NAME or KIND NAME (tfjob/mnist, trainingjob elastic-mnist)",
    )
    add_connection_options(parser)


def add_status_parser(commands: Any, summary: str) -> argparse.ArgumentParser:
    """Declare ``etctl status`` on the ``etctl`` parser's subcommands.

    ``summary`` is its line in ``etctl --help``.
    """
    status: argparse.ArgumentParser = commands.add_parser(
        "status",
        help=summary,
        description="Show a job of any registered kind, as kubectl describe would.",
        epilog=_STATUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_target(status)
    status.set_defaults(handler=status_command)
    return status


def add_watch_parser(commands: Any, summary: str) -> argparse.ArgumentParser:
    """Declare ``etctl watch`` on the ``etctl`` parser's subcommands.

    ``summary`` is its line in ``etctl --help``.
    """
    watch: argparse.ArgumentParser = commands.add_parser(
        "watch",
        help=summary,
        description="Show a job of any registered kind, then follow every change to it (its "
        "pods, scalers, files and events) until it finishes.",
        epilog=_WATCH_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_target(watch)
    watch.add_argument(
        "--timeout",
        type=float,
        default=math.inf,
        metavar="SECONDS",
        help="stop (exit 124) when the job has not finished this long after the command "
        "started (default: never)",
    )
    watch.set_defaults(handler=watch_command)
    return watch


def _target(args: argparse.Namespace) -> tuple[JobKind, str]:
    word, name = split_target(args.target)
    return resolve(job_kinds(discover()), word), name


def _error(command: str, message: str) -> None:
    print(f"etctl {command}: error: {message}", file=sys.stderr)  # noqa: T201


def _not_found(kind: JobKind, name: str, namespace: str) -> str:
    return f'{kind.kind.lower()} "{name}" not found in namespace "{namespace}"'


def status_command(args: argparse.Namespace) -> int:
    """Run ``etctl status``; returns the exit status."""
    return _run("status", args, _status)


def watch_command(args: argparse.Namespace) -> int:
    """Run ``etctl watch``; returns the exit status."""
    return _run("watch", args, _watch)


_Body = Callable[[argparse.Namespace, JobKind, str], Coroutine[Any, Any, int]]


def _run(command: str, args: argparse.Namespace, body: _Body) -> int:
    try:
        kind, name = _target(args)
    except ConfigError as exc:
        _error(command, str(exc))
        return 2
    try:
        status: int = asyncio.run(body(args, kind, name))
    except _Missing as missing:
        _error(command, str(missing))
        return 1
    except EtctlError as exc:
        _error(command, str(exc))
        return 1
    return status


class _Missing(Exception):
    """The job does not exist."""


async def _status(args: argparse.Namespace, kind: JobKind, name: str) -> int:
    connection = await connect(args)
    async with connection.client as client:
        seen = await read_job(client, kind, connection.namespace, name)
    if seen.job is None:
        raise _Missing(_not_found(kind, name, connection.namespace))
    api_version = kind.resource.api_version
    lines = describe_job(seen, namespace=connection.namespace, api_version=api_version)
    sys.stdout.write(_lines(lines))
    return 0


async def _watch(args: argparse.Namespace, kind: JobKind, name: str) -> int:
    clock = RealClock()
    deadline = clock.monotonic() + args.timeout
    try:
        async with asyncio.timeout(None if math.isinf(args.timeout) else args.timeout):
            connection = await connect(args)
    except TimeoutError:
        msg = f"could not connect within --timeout {args.timeout:g}s"
        raise ConfigError(msg) from None
    async with connection.client as client:
        return await watch_job(
            client,
            kind,
            connection.namespace,
            name,
            sys.stdout,
            timeout=max(deadline - clock.monotonic(), 0.0),
            clock=clock,
        )


async def read_job(client: Client, kind: JobKind, namespace: str, name: str) -> Snapshot:
    """One look at the job and everything :func:`~etctl.cli._jobview.snapshot` shows of it.

    ``job`` is None in the result when the job does not exist (nothing else is read then).

    Raises:
        EtctlError: a request failed.
    """
    try:
        job = await client.get(kind.resource, name, namespace=namespace)
    except NotFound:
        return snapshot(kind, name, None)
    by_label = f"{JOB_NAME}={name}"
    pods = await client.list(PODS, namespace=namespace, label_selector=by_label)
    scalers: list[Any] = []
    if kind.elastic:
        for res in (SCALEOUTS, SCALEINS):
            scalers += (await client.list(res, namespace=namespace)).items
    config_maps = None
    if kind.capabilities.files is not None:
        listed = await client.list(CONFIGMAPS, namespace=namespace, label_selector=by_label)
        config_maps = {objects.name(obj): obj for obj in listed.items}
    events = await client.list(EVENTS, namespace=namespace)
    return snapshot(
        kind, name, job, pods.items, scalers, config_maps=config_maps, events=events.items
    )


async def watch_job(
    client: Client,
    kind: JobKind,
    namespace: str,
    name: str,
    out: TextIO,
    *,
    timeout: float = math.inf,
    sync_timeout: float = 60.0,
    clock: Clock | None = None,
) -> int:
    """Print the job's state, then every change, until it finishes; returns the exit status.

    Args:
        client: the client to read with.
        kind: the job's kind.
        namespace: its namespace.
        name: its name.
        out: where to write.
        timeout: seconds (from now) after which to stop following: exit 124 with the state the
            job was in. The first lists count in it.
        sync_timeout: seconds the first lists may take (within ``timeout``).
        clock: the clock the bounds are measured on.

    Raises:
        EtctlError: the job could not be read within the bounds (the persisting error says why).
    """
    clock = clock or RealClock()
    deadline = clock.monotonic() + timeout
    feed = Feed(client, kind, namespace=namespace, job=name, files=True, events=True, clock=clock)
    timeline = Timeline(out, steps=0, clock=clock)
    observer = Observer(feed, timeline, clock=clock)
    outcome: int | Exception = 1
    async with asyncio.TaskGroup() as group:
        following = group.create_task(feed.run(), name=f"watch:{feed.subject}")
        try:
            first = min(deadline, clock.monotonic() + sync_timeout)
            outcome = await _follow(feed, observer, first=first, deadline=deadline)
        except (_Missing, EtctlError) as exc:
            # Raised outside the group, which would wrap it in an exception group.
            outcome = exc
        finally:
            following.cancel()
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


@dataclass(frozen=True, slots=True)
class _OutOfTime:
    """``--timeout`` ran out while the job was in ``state``."""

    state: Snapshot
    watched: float


async def _synced(feed: Feed, observer: Observer, *, by: float) -> None:
    """Wait for the first lists until the monotonic time ``by``, telling problems meanwhile.

    Raises:
        ConfigError: the lists did not finish in time; the persisting errors say why.
    """
    clock, started = observer.clock, observer.clock.monotonic()
    while not feed.synced:
        remaining = by - clock.monotonic()
        if remaining <= 0:
            problems = feed.problems()
            why = f": {'; '.join(problems)}" if problems else ""
            msg = f"could not read {feed.subject} within {by - started:.3g}s{why}"
            raise ConfigError(msg)
        await feed.wait(min(remaining, 0.1))
        for problem in feed.new_problems():
            observer.timeline.warning(f"cannot read {problem}; trying again")


async def _follow(feed: Feed, observer: Observer, *, first: float, deadline: float) -> int:
    """Print the first state once the lists are done, then narrate until the job finishes."""
    subject, namespace, timeline = feed.subject, feed.namespace, observer.timeline
    await _synced(feed, observer, by=first)
    first_state = feed.latest()
    feed.pending()
    if first_state.job is None:
        raise _Missing(_not_found(feed.kind, feed.job, namespace))
    api_version = feed.kind.resource.api_version
    timeline.text(_lines(describe_job(first_state, namespace=namespace, api_version=api_version)))
    timeline.start()
    observer.last = first_state
    return _ending(timeline, subject, await _until_finished(observer, subject, deadline))


async def _until_finished(
    observer: Observer, subject: str, deadline: float
) -> Snapshot | _OutOfTime:
    """The state in which the job finished or vanished, or the one it was in at ``deadline``."""
    if observer.last.job is not None and observer.last.job.finished:
        return observer.last

    def over(seen: Snapshot) -> bool:
        return seen.job is None or seen.job.finished

    timeout = deadline - observer.clock.monotonic()
    try:
        return await observer.until(f"{subject} to finish", over, timeout=timeout)
    except StepFailed:
        return _OutOfTime(observer.catch_up(), watched=observer.timeline.elapsed())


def _ending(timeline: Timeline, subject: str, end: Snapshot | _OutOfTime) -> int:
    if isinstance(end, _OutOfTime):
        timeline.stopped(
            f"{subject} had not finished when --timeout ran out, {end.watched:.2f}s into "
            f"watching: {describe(end.state, subject)}"
        )
        return EXIT_TIMED_OUT
    job = end.job
    if job is None:
        timeline.failed(f"{subject} was deleted")
        return 1
    outcome = job.outcome
    took = f"after {timeline.elapsed():.2f}s of watching"
    if outcome is not None and outcome.type == "Succeeded":
        timeline.finish(f"{subject} Succeeded ({outcome.reason or 'no reason given'}), {took}")
        return 0
    detail = f": {outcome.message}" if outcome is not None and outcome.message else ""
    timeline.failed(f"{subject} {job.phase}{detail}")
    return 1


def _lines(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)
