"""Where a request on a resource goes: its namespace and its URL path.

A request on one object of a namespaced resource needs a namespace, from the caller or from the
object itself (both must agree); a cluster-scoped resource never has one. Every segment of the
path (names, namespaces, subresources, the resource's own) is percent-encoded by
:func:`etctl.runtime._target.api_path`, so no name can address another object.
"""

from __future__ import annotations

from etctl.runtime import _objects as objects
from etctl.runtime._objects import ObjectView
from etctl.runtime._resources import Resource

__all__ = ["namespace_for", "path_for"]


def namespace_for(res: Resource, namespace: str | None, obj: ObjectView | None = None) -> str:
    """The namespace a request on one object of ``res`` goes to (``""`` when cluster-scoped).

    Raises:
        ValueError: a namespaced resource without a namespace, or one that contradicts the
            object's own.
    """
    if not res.namespaced:
        return ""
    from_obj = objects.namespace(obj) if obj is not None else ""
    if namespace and from_obj and namespace != from_obj:
        msg = f"namespace {namespace!r} does not match the object's namespace {from_obj!r}"
        raise ValueError(msg)
    ns = namespace or from_obj
    if not ns:
        msg = f"{res} is namespaced: a namespace is required"
        raise ValueError(msg)
    return ns


def path_for(
    res: Resource, namespace: str | None, name: str | None = None, sub: str | None = None
) -> str:
    """The URL path of ``res`` (in ``namespace``), of one object of it, or of a subresource.

    Raises:
        ValueError: an empty name.
        UnsafeRequest: a name, namespace or subresource of ``.`` or ``..``.
    """
    if name is not None and not name:
        msg = f"a name is required to address one {res.kind}"
        raise ValueError(msg)
    return res.path(namespace if res.namespaced else None, name, sub)
