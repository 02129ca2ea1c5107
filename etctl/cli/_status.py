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
  Failed, was deleted, did not exist, or did not finish in time; 130 on Ctrl-C.

Exit status 2 is a usage error: an unknown kind (the message lists the registered ones) or a
target that is neither ``KIND/NAME`` nor ``KIND NAME``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TextIO

from etctl.cli._connection import add_connection_options, connect
from etctl.cli._describe import describe_job
from etctl.cli._feed import Feed
from etctl.cli._jobkinds import JobKind, job_kinds, resolve, split_target
from etctl.cli._jobview import Snapshot, snapshot
from etctl.cli._observer import Observer, StepFailed
from etctl.cli._timeline import Timeline
from etctl.common import JOB_NAME, SCALEINS, SCALEOUTS, discover
from etctl.errors import ConfigError, EtctlError, NotFound
from etctl.runtime import CONFIGMAPS, EVENTS, PODS, Client, objects

__all__ = [
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
Exit status: 0 the job Succeeded; 1 it Failed, was deleted, does not exist, did not finish
within --timeout, or the cluster could not be read; 2 a usage error; 130 Ctrl-C.
"""


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
        help="give up (exit 1) when the job has not finished after this long (default: never)",
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
    connection = await connect(args)
    async with connection.client as client:
        return await watch_job(
            client, kind, connection.namespace, name, sys.stdout, timeout=args.timeout
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
) -> int:
    """Print the job's state, then every change, until it finishes; returns the exit status.

    Args:
        client: the client to read with.
        kind: the job's kind.
        namespace: its namespace.
        name: its name.
        out: where to write.
        timeout: seconds to follow before giving up (exit 1).
        sync_timeout: seconds the first lists may take.

    Raises:
        EtctlError: the first lists failed.
    """
    feed = Feed(client, kind, namespace=namespace, job=name, files=True, events=True)
    timeline = Timeline(out, steps=0)
    observer = Observer(feed, timeline)
    outcome: int | Exception = 1
    async with asyncio.TaskGroup() as group:
        following = group.create_task(feed.run(), name=f"watch:{feed.subject}")
        try:
            outcome = await _follow(feed, observer, timeout=timeout, sync_timeout=sync_timeout)
        except (_Missing, EtctlError) as exc:
            # Raised outside the group, which would wrap it in an exception group.
            outcome = exc
        finally:
            following.cancel()
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


async def _follow(feed: Feed, observer: Observer, *, timeout: float, sync_timeout: float) -> int:
    """Print the first state once the lists are done, then narrate until the job finishes."""
    subject, namespace, timeline = feed.subject, feed.namespace, observer.timeline
    try:
        async with asyncio.timeout(sync_timeout):
            await feed.wait_synced()
    except TimeoutError:
        msg = f"the first lists of {subject} did not finish within {sync_timeout:g}s"
        raise ConfigError(msg) from None
    first = feed.latest()
    feed.pending()
    if first.job is None:
        raise _Missing(_not_found(feed.kind, feed.job, namespace))
    api_version = feed.kind.resource.api_version
    timeline.text(_lines(describe_job(first, namespace=namespace, api_version=api_version)))
    timeline.start()
    observer.last = first
    return _ending(timeline, subject, await _until_finished(observer, subject, timeout))


async def _until_finished(observer: Observer, subject: str, timeout: float) -> Snapshot | str:
    """The state in which the job finished or vanished, or why following it stopped."""
    if observer.last.job is not None and observer.last.job.finished:
        return observer.last

    def over(seen: Snapshot) -> bool:
        return seen.job is None or seen.job.finished

    try:
        return await observer.until(f"{subject} to finish", over, timeout=timeout)
    except StepFailed as exc:
        return str(exc)


def _ending(timeline: Timeline, subject: str, end: Snapshot | str) -> int:
    if isinstance(end, str):
        timeline.failed(end)
        return 1
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
