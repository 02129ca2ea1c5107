"""Admission of writes: decoding the body, the request's namespace, and what the namespace allows.

A body is copied and checked against the request: its ``apiVersion`` and ``kind`` must be those
of the URL (filled in when absent), its namespace that of the URL (filled in when absent, cleared
for cluster-scoped kinds), its name that of the URL for updates. Custom resources are pruned and
defaulted by their version's schema here, and their unknown fields reported (a warning, or with
``fieldValidation=Strict`` a 400). A namespaced write needs its namespace to exist; a create also
needs it not to be terminating, and a custom resource create needs its CRD not to be.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.custom import CustomResourceStrategy
from etctl.testing._apiserver.registry import ResourceInfo
from etctl.testing._apiserver.store import CRDS, NAMESPACES, Store, metadata
from etctl.testing._apiserver.writeoptions import WriteOptions

__all__ = ["admit_custom_create", "admit_namespace", "check_name", "decode", "ensure_namespace"]


def ensure_namespace(meta: dict[str, Any], namespace: str) -> None:
    """Default the object's namespace to the request's, clear it for cluster scope, or refuse."""
    given = str(meta.get("namespace") or "")
    if not namespace:
        meta.pop("namespace", None)
    elif not given:
        meta["namespace"] = namespace
    elif given != namespace:
        raise st.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )


def check_name(obj: Mapping[str, Any], name: str, namespace: str) -> None:
    """Refuse a body whose name or namespace is not the URL's (400)."""
    meta = metadata(obj)
    got = str(meta.get("name") or "")
    if got != name:
        raise st.bad_request(
            f"the name of the object ({got}) does not match the name on the URL ({name})"
        )
    ensure_namespace(meta, namespace)


def decode(
    info: ResourceInfo, version: str, body: Mapping[str, Any], opts: WriteOptions
) -> KubeObject:
    """Copy a request body, check its type, and (custom resources) prune and default it."""
    if not isinstance(body, Mapping):
        raise st.bad_request("the body of the request was not a JSON object")
    obj = copy.deepcopy(dict(body))
    expected = info.api_version(version)
    api_version = obj.get("apiVersion")
    if api_version not in (None, "", expected):
        raise st.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({expected})"
        )
    kind = obj.get("kind")
    if kind not in (None, "", info.kind):
        raise st.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({info.kind})"
        )
    obj["apiVersion"], obj["kind"] = expected, info.kind
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    problem = info.strategy.decode_error(obj)
    if problem is not None:
        raise st.bad_request(
            f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: {problem}'
        )
    if isinstance(info.strategy, CustomResourceStrategy):
        unknown = info.strategy.apply_schema(obj, version)
        _unknown_fields(info, version, unknown, opts)
    return obj


def _unknown_fields(
    info: ResourceInfo, version: str, unknown: list[str], opts: WriteOptions
) -> None:
    if not unknown or opts.field_validation == "Ignore":
        return
    messages = [f'unknown field "{path}"' for path in unknown]
    if opts.field_validation == "Strict":
        raise st.bad_request(
            f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: '
            "strict decoding error: " + ", ".join(messages)
        )
    opts.warnings.extend(messages)


def admit_namespace(
    store: Store, info: ResourceInfo, namespace: str, name: str, *, creating: bool
) -> None:
    """The namespace must exist (404); a create also needs it not terminating (403)."""
    if not info.namespaced:
        return
    ns = store.get(NAMESPACES, namespace)
    if ns is None:
        raise st.not_found("", "namespaces", namespace)
    if creating and (ns.get("status") or {}).get("phase") == "Terminating":
        raise st.forbidden(
            info.group,
            info.plural,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
            [
                st.Cause(
                    "NamespaceTerminating",
                    "metadata.namespace",
                    f"namespace {namespace} is being terminated",
                )
            ],
        )


def admit_custom_create(store: Store, info: ResourceInfo) -> None:
    """Refuse creating objects of a CRD that is being deleted (405)."""
    if not info.custom:
        return
    crd = store.get(CRDS, f"{info.plural}.{info.group}")
    if crd is not None and metadata(crd).get("deletionTimestamp"):
        raise st.method_not_supported(
            info.group,
            info.plural,
            "create",
            "create not allowed while custom resource definition is terminating",
        )
