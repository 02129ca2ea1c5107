"""Serving a watch over HTTP: a chunked stream of JSON event lines.

The stream begins once the watch is registered (so errors in the options are ordinary error
responses), then sends what the :class:`~etctl.testing._apiserver.watch.Watcher` queues, batching
whatever is ready into one write. Two timers run beside it on the server's clock: bookmarks every
``bookmark_interval`` when the client allows them (the real server sends one about every minute),
and the end of the stream after ``timeoutSeconds`` (or the server's default). The stream also ends
when the watcher is closed (too slow a client, the resource going away, server shutdown) or the
client disconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from etctl.errors import ApiError
from etctl.runtime import Clock, KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.faults import Fault
from etctl.testing._apiserver.registry import ResourceInfo
from etctl.testing._apiserver.request import parse_bool, parse_int, parse_optional_bool
from etctl.testing._apiserver.requestlog import RequestRecord
from etctl.testing._apiserver.selection import Selection
from etctl.testing._apiserver.tables import render_table
from etctl.testing._apiserver.watch import Transform, Watcher
from etctl.testing._apiserver.watching import start_watch

if TYPE_CHECKING:
    from etctl.testing._apiserver.storage import Storage

__all__ = ["WatchSettings", "serve_watch"]


@dataclass(frozen=True, slots=True)
class WatchSettings:
    """Timing and buffering of watch streams.

    Attributes:
        bookmark_interval: seconds between bookmarks (when the client allows them).
        default_timeout: seconds a watch lasts when the client sets no ``timeoutSeconds``.
        max_buffer: event lines a watcher may fall behind before it is closed.
    """

    bookmark_interval: float = 60.0
    default_timeout: float = 1800.0
    max_buffer: int = 1000


def _transform(
    info: ResourceInfo,
    version: str,
    *,
    representation: str,
    api_version: str,
    query: Mapping[str, str],
    clock: Clock,
) -> Transform | None:
    if representation == "Table":
        include = query.get("includeObject", "")

        def table(obj: KubeObject, first: bool) -> Any:
            rendered = render_table(
                info, version, [obj], now=clock.now(), include_object=include, headers=first
            )
            rendered["apiVersion"] = api_version
            return rendered

        return table
    if representation == "PartialObjectMetadata":

        def partial(obj: KubeObject, first: bool) -> Any:
            return {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": obj.get("metadata") or {},
            }

        return partial
    return None


async def _converted(storage: Storage, info: ResourceInfo, version: str, chunk: bytes) -> bytes:
    """A chunk of watch events with their objects converted by the CRD's webhook.

    The objects of the chunk go in one review. When the webhook fails, the chunk becomes one
    ERROR event with the 500 Status, and the watch ends.
    """
    converter = storage.converts(info)
    assert converter is not None
    events = [json.loads(line) for line in chunk.splitlines() if line.strip()]
    targets = [e for e in events if e.get("type") in ("ADDED", "MODIFIED", "DELETED")]
    try:
        objects = await converter.convert_all(info, [e["object"] for e in targets], version)
    except ApiError as error:
        raise _ConversionFailed(st.status_body(error)) from None
    for event, obj in zip(targets, objects, strict=True):
        event["object"] = obj
    for event in events:
        if event.get("type") == "BOOKMARK":
            event["object"]["apiVersion"] = info.api_version(version)
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)


class _ConversionFailed(Exception):
    def __init__(self, status: Any) -> None:
        super().__init__("conversion failed")
        self.status = status


async def _ticker(
    clock: Clock, interval: float, watcher: Watcher, storage: Storage, info: ResourceInfo
) -> None:
    while not watcher.closed:
        await clock.sleep(interval)
        watcher.bookmark(storage.store.watch_rv(info.key))


async def _deadline(clock: Clock, seconds: float, watcher: Watcher) -> None:
    await clock.sleep(seconds)
    watcher.close("timeout")


async def serve_watch(
    request: web.Request,
    *,
    storage: Storage,
    info: ResourceInfo,
    version: str,
    selection: Selection,
    query: Mapping[str, str],
    settings: WatchSettings,
    clock: Clock,
    record: RequestRecord,
    representation: str,
    representation_version: str,
    fault: Fault | None,
) -> web.StreamResponse:
    """Register a watch and stream it until it ends."""
    if info.verbs and "watch" not in info.verbs:
        raise st.method_not_supported(info.group, info.plural, "watch")
    allow_bookmarks = parse_bool(query, "allowWatchBookmarks")
    timeout = parse_int(query, "timeoutSeconds") or 0
    transform = _transform(
        info,
        version,
        representation=representation,
        api_version=representation_version,
        query=query,
        clock=clock,
    )
    # A conversion webhook converts the objects of a watch in JSON (Tables and metadata are
    # rendered from the stored version).
    convert = transform is None and storage.converts(info) is not None
    if fault is not None and fault.expire_watch:
        rv = query.get("resourceVersion") or str(storage.store.rv)
        watcher = Watcher(
            kind=info.kind, api_version=info.api_version(version), selection=selection, max_buffer=1
        )
        watcher.error(
            st.status_body(st.expired(f"too old resource version: {rv} ({storage.store.rv})"))
        )
    else:
        watcher = start_watch(
            storage.store,
            info,
            # Converted objects are watched at the storage version, then converted per chunk.
            info.storage_version.name if convert else version,
            selection,
            resource_version=query.get("resourceVersion", ""),
            resource_version_match=query.get("resourceVersionMatch", ""),
            send_initial_events=parse_optional_bool(query, "sendInitialEvents"),
            allow_bookmarks=allow_bookmarks,
            max_buffer=settings.max_buffer,
            transform=transform,
        )
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    try:
        await response.prepare(request)
        record.code = 200
        if fault is not None and fault.drop_watch:
            watcher.close("dropped")
            return response
        async with asyncio.TaskGroup() as group:
            timers = [
                group.create_task(
                    _deadline(clock, timeout if timeout > 0 else settings.default_timeout, watcher),
                    name="watch-deadline",
                )
            ]
            if allow_bookmarks:
                timers.append(
                    group.create_task(
                        _ticker(clock, settings.bookmark_interval, watcher, storage, info),
                        name="watch-bookmarks",
                    )
                )
            try:
                # The client may go away mid-write: the watch just ends.
                with contextlib.suppress(ConnectionResetError, RuntimeError):
                    while (chunk := await watcher.next_chunk()) is not None:
                        if convert:
                            try:
                                chunk = await _converted(storage, info, version, chunk)
                            except _ConversionFailed as failed:
                                error = {"type": "ERROR", "object": failed.status}
                                await response.write(json.dumps(error).encode() + b"\n")
                                break
                        await response.write(chunk)
            finally:
                for timer in timers:
                    timer.cancel()
    finally:
        watcher.close()
    with contextlib.suppress(ConnectionResetError, RuntimeError):
        await response.write_eof()
    return response
