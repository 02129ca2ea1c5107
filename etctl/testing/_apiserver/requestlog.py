"""A bounded log of the requests a server answered, for tests to assert on.

Each :class:`RequestRecord` names the request the way the real server's audit log does (verb,
resource, namespace, name, subresource) and adds what tests ask about: the HTTP status, the user
agent and the field manager. The log keeps the last ``maxlen`` records (appending is O(1) and
memory stays bounded however long the server runs). Watch requests are recorded when their stream
starts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["RequestLog", "RequestRecord"]


@dataclass(slots=True)
class RequestRecord:
    """One request.

    Attributes:
        method: the HTTP method.
        path: the URL path.
        verb: get, list, watch, create, update, patch, delete, deletecollection (or the lower-cased
            method for non-resource paths).
        group: the API group of the resource.
        version: the API version.
        resource: the resource (plural), ``""`` for discovery and the like.
        namespace: the namespace, ``""`` if none.
        name: the object name, ``""`` if none.
        subresource: the subresource, ``""`` if none.
        code: the HTTP status (0 until known).
        user_agent: the ``User-Agent`` header.
        field_manager: the ``fieldManager`` query parameter.
        user: the authenticated user when the server enforces RBAC (``""`` otherwise, and for a
            request that failed authentication).
        dropped: the request was served and its answer dropped (an injected fault): ``code`` is
            the answer the client never got.
    """

    method: str
    path: str
    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    code: int = 0
    user_agent: str = ""
    field_manager: str = ""
    user: str = ""
    dropped: bool = False


class RequestLog:
    """The last ``maxlen`` requests, oldest first."""

    def __init__(self, maxlen: int = 10_000) -> None:
        self._records: deque[RequestRecord] = deque(maxlen=maxlen)
        self._listeners: list[Callable[[RequestRecord], None]] = []
        self.total = 0
        """Requests recorded since the server started (the log itself keeps the last ones)."""

    def append(self, record: RequestRecord) -> None:
        """Record a request, and hand it to every listener (its ``code`` is not known yet)."""
        self._records.append(record)
        self.total += 1
        for listener in self._listeners:
            listener(record)

    def subscribe(self, listener: Callable[[RequestRecord], None]) -> None:
        """Call ``listener`` with each request as it is recorded, synchronously."""
        self._listeners.append(listener)

    def clear(self) -> None:
        """Forget every record."""
        self._records.clear()

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def find(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        code: int | None = None,
        user: str | None = None,
    ) -> list[RequestRecord]:
        """The records matching every given field (``resource`` may be ``plural.group``)."""
        out = []
        for record in self._records:
            full = f"{record.resource}.{record.group}" if record.group else record.resource
            if resource is not None and resource not in (record.resource, full):
                continue
            if verb is not None and record.verb != verb:
                continue
            if namespace is not None and record.namespace != namespace:
                continue
            if name is not None and record.name != name:
                continue
            if subresource is not None and record.subresource != subresource:
                continue
            if code is not None and record.code != code:
                continue
            if user is not None and record.user != user:
                continue
            out.append(record)
        return out
