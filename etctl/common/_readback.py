"""A write whose answer was lost is read back before anything is concluded from it.

A guarded write (a merge patch carrying the ``resourceVersion`` that was read) can fail in two
ways that say nothing about whether it was applied:

* its answer was lost (a timeout, a connection reset): the server may have committed it. The
  client retries such a patch, and the retry, guarded by the version the first attempt already
  moved past, answers **Conflict**, for the caller's own write (the client marks such an answer
  ``after_lost_answer``; a Conflict without it is a plain one, and costs no read);
* the client gave up on lost answers altogether (a :class:`~etctl.errors.TransportError`), or the
  server answered 5xx, which may come after the write was committed (``504``: "may still be
  processing the request").

Concluding "not written" from either would act on a falsehood: the scaling machinery, finding the
decision it wrote absent, would write it again and conflict, or judge the step it records as
interrupted. So :func:`read_back` reads the object from the API server and tells whether the write
is in it: every field the merge patch sets holds the value it sets (RFC 7386: maps merge key by key,
``null`` removes a key, anything else is replaced whole). Found, the write is taken as done (what
is stored is what it wrote, whoever else wrote the same since); not found, or not readable, the
original error stands and the caller concludes nothing more than before.

What stays open: a write whose answer was lost and that is not found yet may still be committed
later (a server that holds the request). Every write here is guarded by a version, so it then
lands only on the version it was decided from, and the next reconcile reads whichever happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.errors import Conflict, EtctlError, NotFound, RequestNotSent, ServerError, TransportError
from etctl.log import get_logger
from etctl.runtime import Client, KubeObject, ObjectView, Resource, objects

__all__ = ["AMBIGUOUS", "carries", "read_back"]

log = get_logger(__name__)

AMBIGUOUS: tuple[type[EtctlError], ...] = (Conflict, TransportError, ServerError)
"""Failures of a guarded write that do not say whether it was applied (see the module docs)."""


def carries(obj: ObjectView, patch: Mapping[str, Any]) -> bool:
    """Whether ``obj`` holds everything the merge patch ``patch`` sets (RFC 7386)."""
    for key, wanted in patch.items():
        if wanted is None:
            if obj.get(key) is not None:
                return False
            continue
        found = obj.get(key)
        if isinstance(wanted, Mapping):
            if not isinstance(found, Mapping):
                found = {}
            if not carries(found, wanted):
                return False
        elif _plain(found) != _plain(wanted):
            return False
    return True


def _plain(value: Any) -> Any:
    """A replaced value as the server stores it: maps inside lists without their null fields.

    So an element written with ``"reason": null`` equals the one read back without it.
    """
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _without_guard(patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` without the ``metadata.resourceVersion`` that guards it (not a written field)."""
    body = dict(patch)
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        kept = {k: v for k, v in metadata.items() if k != "resourceVersion"}
        if kept:
            body["metadata"] = kept
        else:
            del body["metadata"]
    return body


async def read_back(
    client: Client,
    res: Resource,
    obj: ObjectView,
    patch: Mapping[str, Any],
    error: EtctlError,
) -> KubeObject:
    """The object as stored when ``patch`` (to ``obj``) is in it, after it failed with ``error``.

    Args:
        client: the API client.
        res: the object's resource.
        obj: the object as it was read before the write (its name, namespace and uid).
        patch: the merge patch that was sent (its guarding ``resourceVersion`` is ignored).
        error: how the write failed; one of :data:`AMBIGUOUS`.

    Returns:
        The object as the API server has it now, carrying the write.

    Raises:
        EtctlError: ``error`` itself, when the write is not in the object as read now, the object
            is gone or another one by now, or it could not be read (nothing more is known).
    """
    if isinstance(error, RequestNotSent) or not isinstance(error, AMBIGUOUS):
        raise error  # provably not sent, or an answer that says it was not applied
    if isinstance(error, Conflict) and not error.after_lost_answer:
        raise error  # the first answer: the write met a change, and was not applied
    name, namespace = objects.name(obj), objects.namespace(obj)
    try:
        fresh = await client.get(res, name, namespace=namespace or None)
    except NotFound:
        raise error from None
    except EtctlError as unread:
        log.info(
            "a write's outcome is unknown and could not be read back",
            resource=str(res),
            name=name,
            error=str(error),
            read_error=str(unread),
        )
        raise error from unread
    if objects.uid(fresh) != objects.uid(obj) or not carries(fresh, _without_guard(patch)):
        raise error
    log.info(
        "a write whose answer was lost was read back: it was applied",
        resource=str(res),
        name=name,
        error=str(error),
    )
    return fresh
