"""Listing: one page of objects, read from the latest state or a snapshot, with continue tokens.

Which state a list reads follows the real server's resourceVersion semantics: unset or ``"0"``
reads the latest state; ``resourceVersion=N`` with ``resourceVersionMatch=Exact`` (or with a
``limit`` and no match, the legacy form) reads the snapshot at N, as etcd would, rebuilt from the
kept history (410 Expired, "The resourceVersion for the provided list is too old.", once etcd's
compaction has passed N); ``NotOlderThan`` reads the latest state once it
has reached N (504 when the server has not). A page that stops early carries a continue token
bound to the snapshot it was read at, so following pages are consistent with the first; when that
snapshot is gone the 410 offers an inconsistent token that continues from the latest state.
Objects are returned in storage-key order; ``remainingItemCount`` is given when no selector
filters the list.
"""

from __future__ import annotations

from dataclasses import dataclass

from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.paging import INCONSISTENT, decode_continue, encode_continue
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.selection import Selection
from etctl.testing._apiserver.store import Store, object_key, parse_resource_version
from etctl.testing._apiserver.validation import forbidden_cause

__all__ = ["ListResult", "check_list_options", "list_objects"]


@dataclass(frozen=True, slots=True)
class ListResult:
    """One page of a list.

    Attributes:
        items: the objects, in key order.
        resource_version: the resourceVersion the page was read at.
        continue_token: the token for the next page (``""`` on the last page).
        remaining_item_count: how many objects follow, when known (no selector).
    """

    items: list[KubeObject]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None


def _last_key(items: list[KubeObject], info: ResourceInfo) -> str:
    meta = items[-1]["metadata"]
    return object_key(
        str(meta.get("namespace") or "") if info.namespaced else "", str(meta.get("name"))
    )


def list_objects(
    store: Store,
    info: ResourceInfo,
    version: str,
    selection: Selection,
    *,
    limit: int = 0,
    continue_token: str = "",
    resource_version: str = "",
    resource_version_match: str = "",
) -> ListResult:
    """One page of the selected objects of ``info``, read at ``version``."""
    check_list_options(resource_version, resource_version_match, continue_token)
    start = ""
    state: dict[str, KubeObject] | None
    if continue_token:
        read_rv, start = decode_continue(continue_token)
        if read_rv == INCONSISTENT:
            read_rv = store.rv
        # At the latest resourceVersion the snapshot is the store itself: read its sorted keys.
        state = (
            None
            if read_rv == store.rv
            else _state(store, info, read_rv, expired_token=(INCONSISTENT, start))
        )
    else:
        read_rv, state = _read_state(store, info, resource_version, resource_version_match, limit)
    items: list[KubeObject] = []
    token, remaining = "", None
    if state is not None:
        source = [(k, state[k]) for k in sorted(state)]
    else:
        source = store.items(info.key, selection.namespace if info.namespaced else "", start=start)
    api_version = info.api_version(version)
    prefix = f"{selection.namespace}/" if info.namespaced and selection.namespace else ""
    for index, (key, obj) in enumerate(source):
        if start and key < start:
            continue
        if prefix and not key.startswith(prefix):
            continue
        if not selection.matches(obj):
            continue
        if limit and len(items) == limit:
            token = encode_continue(read_rv, _last_key(items, info) + "\x00")
            if selection.everything:
                remaining = sum(1 for k, _ in source[index:] if not prefix or k.startswith(prefix))
            break
        items.append(with_api_version(obj, api_version))
    return ListResult(items, str(read_rv), token, remaining)


def _read_state(
    store: Store, info: ResourceInfo, resource_version: str, match: str, limit: int
) -> tuple[int, dict[str, KubeObject] | None]:
    current = store.rv
    if resource_version in ("", "0"):
        return current, None
    wanted = parse_resource_version(resource_version)
    exact = match == "Exact" or (not match and limit > 0)
    if wanted > current:
        raise st.too_large_resource_version(wanted, current)
    if not exact:
        return current, None
    return wanted, _state(store, info, wanted)


def _state(
    store: Store,
    info: ResourceInfo,
    rv: int,
    *,
    expired_token: tuple[int, str] | None = None,
) -> dict[str, KubeObject]:
    state = store.snapshot(info.key, rv)
    if state is None:
        if expired_token is not None:
            raise st.expired_continue(encode_continue(*expired_token))
        raise st.expired("The resourceVersion for the provided list is too old.")
    return state


def check_list_options(resource_version: str, match: str, continue_token: str) -> None:
    """Reject list options the real server rejects (422 ``ListOptions`` Invalid, or 400)."""
    causes: list[st.Cause] = []
    if match and match not in ("NotOlderThan", "Exact"):
        causes.append(
            st.Cause(
                "FieldValueNotSupported",
                "resourceVersionMatch",
                f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan", ""',
            )
        )
    elif match and continue_token:
        causes.append(
            forbidden_cause(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            )
        )
    elif match and not resource_version:
        causes.append(
            forbidden_cause(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )
        )
    elif match == "Exact" and resource_version == "0":
        causes.append(
            forbidden_cause(
                "resourceVersionMatch",
                'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
            )
        )
    if causes:
        raise st.invalid("meta.k8s.io", "ListOptions", "", causes)
    if continue_token and resource_version not in ("", "0"):
        raise st.bad_request("specifying resource version is not allowed when using continue")
