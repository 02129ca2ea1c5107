"""Starting a watch: where the stream begins, as the resourceVersion semantics of the real server.

* ``resourceVersion`` unset or ``"0"``: synthetic ADDED events for every selected object, then
  live events;
* ``resourceVersion=N``: every event after N from the resource's watch cache, then live events;
  N older than what the watch cache holds gives a single ERROR event with a 410 ``Expired``
  Status (``too old resource version: N (oldest - 1)``); N not reached
  yet gives a 504 (too large resource version);
* ``sendInitialEvents=true`` (with ``resourceVersionMatch=NotOlderThan``): the current state as
  ADDED events, then (with bookmarks allowed) a BOOKMARK annotated
  ``k8s.io/initial-events-end``, then live events; ``sendInitialEvents=false`` starts at N like
  a plain watch.

Registration of the watcher and the snapshot or replay it starts with happen in one synchronous
step, so nothing is missed or duplicated between them.
"""

from __future__ import annotations

from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.registry import ResourceInfo
from etctl.testing._apiserver.selection import Selection
from etctl.testing._apiserver.store import Store
from etctl.testing._apiserver.validation import forbidden_cause
from etctl.testing._apiserver.watch import Transform, Watcher

__all__ = ["check_watch_options", "start_watch"]


def check_watch_options(resource_version_match: str, send_initial_events: bool | None) -> None:
    """Reject watch options the real server rejects (422 ``ListOptions`` Invalid)."""
    causes: list[st.Cause] = []
    if send_initial_events is not None and resource_version_match != "NotOlderThan":
        causes.append(
            forbidden_cause(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if resource_version_match:
        if send_initial_events is None:
            causes.append(
                forbidden_cause(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless "
                    "sendInitialEvents is provided",
                )
            )
        if resource_version_match != "NotOlderThan":
            causes.append(
                st.Cause(
                    "FieldValueNotSupported",
                    "resourceVersionMatch",
                    f'Unsupported value: "{resource_version_match}": supported values: '
                    '"NotOlderThan"',
                )
            )
    if causes:
        raise st.invalid("meta.k8s.io", "ListOptions", "", causes)


def start_watch(
    store: Store,
    info: ResourceInfo,
    version: str,
    selection: Selection,
    *,
    resource_version: str = "",
    resource_version_match: str = "",
    send_initial_events: bool | None = None,
    allow_bookmarks: bool = False,
    max_buffer: int = 1000,
    transform: Transform | None = None,
) -> Watcher:
    """Register a watcher on ``info`` and queue what it starts with.

    The caller streams :meth:`Watcher.next_chunk` and calls :meth:`Watcher.close` when done.

    Raises:
        etctl.errors.Invalid: contradictory options.
        etctl.errors.ServerError: 504 for a resourceVersion the server has not reached.
    """
    check_watch_options(resource_version_match, send_initial_events)
    watcher = Watcher(
        kind=info.kind,
        api_version=info.api_version(version),
        selection=selection,
        max_buffer=max_buffer,
        transform=transform,
    )
    rv = 0
    if resource_version not in ("", "0"):
        try:
            rv = int(resource_version)
        except ValueError as exc:
            raise st.bad_request(f'invalid resource version "{resource_version}"') from exc
        if rv > store.rv:
            raise st.too_large_resource_version(rv, store.rv)
    namespace = selection.namespace if info.namespaced else ""
    initial = send_initial_events is True or (send_initial_events is None and rv == 0)
    if initial:
        # The current state, so events still on their way to the watchers are known already.
        watcher.after = store.rv
        for _key, obj in store.items(info.key, namespace):
            watcher.add_initial(obj)
        if send_initial_events and allow_bookmarks:
            watcher.bookmark(store.rv, initial_events_end=True)
    elif rv:
        watcher.after = rv
        replay = store.history_after(info.key, rv)
        if replay is None:
            watcher.error(
                st.status_body(
                    st.expired(f"too old resource version: {rv} ({store.watch_floor(info.key)})")
                )
            )
            return watcher
        for event in replay:
            watcher.deliver(event)
    if watcher.closed:
        return watcher
    store.add_sink(info.key, watcher)
    watcher.on_close = lambda: store.remove_sink(info.key, watcher)
    return watcher
