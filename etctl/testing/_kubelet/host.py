"""What the simulated kubelet needs from the API server it attaches to.

:class:`KubeletHost` is the whole surface: the synchronous storage API, the server's clock,
subscription to committed changes, background tasks owned by the server and subresource routes
(``pods/exec``, ``pods/log``). ``ApiServer`` offers all of it; the kubelet never reaches further.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from etctl.runtime import Clock
from etctl.testing._apiserver.http import SubresourceHandler
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.store import Event

__all__ = ["KubeletHost"]


class KubeletHost(Protocol):
    """What the kubelet needs from the API server it attaches to (``ApiServer`` has it all)."""

    @property
    def storage(self) -> Storage:
        """The synchronous internal API."""
        ...

    @property
    def clock(self) -> Clock:
        """The server's clock."""
        ...

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener`` with every committed change."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run a named background task owned by the server."""
        ...

    def add_subresource(
        self, group: str, plural: str, subresource: str, handler: SubresourceHandler
    ) -> None:
        """Serve a subresource route."""
        ...
