"""How a :class:`~etctl.runtime.Cache` holds what it watches: scope, transforms, memory, pacing.

The options are set once, when the cache (or the manager that owns it) is built, and apply to every
informer the cache creates. Defaults suit an operator: all namespaces, ``managedFields`` dropped,
equal parts of cached objects shared, no periodic resync (reconcilers requeue on their own), a
silent watch restarted after 90 s, lists paged by 500 as client-go's reflector pages them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from etctl.errors import ConfigError
from etctl.runtime._transforms import Transform, strip_managed_fields

__all__ = ["CacheOptions"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CacheOptions:
    """The options of a :class:`~etctl.runtime.Cache`.

    Attributes:
        namespaces: cache namespaced resources in these namespaces only (``None``: all of them).
        transform: applied to every object before it is cached (``None``: keep objects whole).
        compact: share equal strings and subtrees between cached objects (about 5x less memory).
        resync_period: seconds between local resyncs of every informer (``None``: never).
        idle_timeout: seconds a watch may stay silent (not even a bookmark) before it restarts.
        page_size: objects per page of an informer's initial list.

    Raises:
        ConfigError: an empty namespace list, or a non-positive duration or page size.
    """

    namespaces: Sequence[str] | None = None
    transform: Transform | None = strip_managed_fields
    compact: bool = True
    resync_period: float | None = None
    idle_timeout: float = 90.0
    page_size: int = 500

    def __post_init__(self) -> None:
        if self.namespaces is not None and not self.namespaces:
            msg = "namespaces must name at least one namespace (None caches all of them)"
            raise ConfigError(msg)
        if self.resync_period is not None and self.resync_period <= 0:
            msg = f"resync_period must be positive (or None): {self.resync_period}"
            raise ConfigError(msg)
        if self.idle_timeout <= 0 or self.page_size < 1:
            msg = f"idle_timeout and page_size must be positive: {self.idle_timeout}, " + str(
                self.page_size
            )
            raise ConfigError(msg)
