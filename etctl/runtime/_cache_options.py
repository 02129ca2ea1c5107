"""How a :class:`~etctl.runtime.Cache` holds what it watches: scope, transforms, memory, pacing.

The options are set once, when the cache (or the manager that owns it) is built, and apply to every
informer the cache creates. Defaults suit an operator: all namespaces, ``managedFields`` dropped,
equal parts of cached objects shared, no periodic resync (reconcilers requeue on their own), a
silent watch restarted after 90 s, lists paged by 500 as client-go's reflector pages them.

**Per resource** (controller-runtime's ``cache.Options.ByObject``): ``by_object`` maps a resource to
a :class:`ByObject` that scopes every informer of that resource, whoever asks for it (a controller's
``for_``, ``owns`` or ``watches``, or a direct :meth:`~etctl.runtime.Cache.informer` call):

* ``label_selector`` and ``field_selector`` are sent to the API server with the list and the watch,
  so objects outside them never reach the operator's memory (the way to keep an operator's cache
  proportional to its own objects instead of the cluster: select the labels it puts on what it
  creates). A watch that asks for selectors of its own gets both (a conjunction);
* ``namespaces`` replaces the cache-wide ``namespaces`` for that resource;
* ``transform`` replaces the cache-wide ``transform`` for that resource.

A scoped cache holds nothing else of that resource: a read of an object outside the scope finds
nothing, as if it did not exist (controller-runtime's behaviour). Scope only what the reconcilers
never need to see whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from etctl.errors import ConfigError
from etctl.runtime._resources import Resource
from etctl.runtime._selectors import FieldSelector, LabelSelector, SelectorError
from etctl.runtime._transforms import Transform, strip_managed_fields

__all__ = ["ByObject", "CacheOptions"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ByObject:
    """How the cache holds one resource (controller-runtime's ``cache.ByObject``).

    Attributes:
        label_selector: only objects whose labels match (sent to the server); ``None``: all.
        field_selector: only objects whose fields match (sent to the server); ``None``: all.
        namespaces: cache the resource in these namespaces only, instead of the cache-wide
            ``namespaces`` (``None``: the cache-wide setting). Namespaced resources only.
        transform: applied to each object of the resource instead of the cache-wide ``transform``
            (``None``: the cache-wide transform).

    Raises:
        ConfigError: a selector does not parse, or ``namespaces`` is empty.
    """

    label_selector: str | None = None
    field_selector: str | None = None
    namespaces: Sequence[str] | None = None
    transform: Transform | None = None

    def __post_init__(self) -> None:
        try:
            labels = str(LabelSelector.parse(self.label_selector or ""))
            fields = str(FieldSelector.parse(self.field_selector or ""))
        except SelectorError as exc:
            msg = f"ByObject selector: {exc}"
            raise ConfigError(msg) from exc
        # Canonical spellings, so that equal scopes share informers.
        object.__setattr__(self, "label_selector", labels or None)
        object.__setattr__(self, "field_selector", fields or None)
        if self.namespaces is not None:
            if isinstance(self.namespaces, str) or not self.namespaces:
                msg = "ByObject namespaces must name at least one namespace (None: the default)"
                raise ConfigError(msg)
            object.__setattr__(self, "namespaces", tuple(dict.fromkeys(self.namespaces)))


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
        by_object: per-resource scope and transform (see the module docstring).

    Raises:
        ConfigError: an empty namespace list, a non-positive duration or page size, or a
            ``by_object`` entry that names namespaces for a cluster-scoped resource.
    """

    namespaces: Sequence[str] | None = None
    transform: Transform | None = strip_managed_fields
    compact: bool = True
    resync_period: float | None = None
    idle_timeout: float = 90.0
    page_size: int = 500
    by_object: Mapping[Resource, ByObject] = field(default_factory=dict)

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
        for res, scope in self.by_object.items():
            if scope.namespaces is not None and not res.namespaced:
                msg = f"by_object[{res}]: {res} is cluster-scoped and has no namespaces"
                raise ConfigError(msg)
        object.__setattr__(self, "by_object", MappingProxyType(dict(self.by_object)))
