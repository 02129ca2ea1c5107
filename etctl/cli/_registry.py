"""The job plugin registry: every job kind the operator can run, found through entry points.

A job kind registers under the ``etctl.jobs`` entry-point group of its package, built-in kinds
exactly as third-party ones::

    [project.entry-points."etctl.jobs"]
    tfjob = "etctl.jobs.tfjob._plugin:TFJobPlugin"

An entry loads one of:

* a :class:`~etctl.common.JobPlugin` instance, or a class (any callable without
  arguments) that builds one: a job kind with its controller;
* a :class:`~etctl.common.CustomResource` or a sequence of them: a kind whose API is published
  before its controller exists (its CRDs are generated and installed; nothing reconciles it yet).

The registry is where the CRD list comes from: a plugin's ``custom_resources`` (the job kind
first, then any companion kinds such as ScaleIn/ScaleOut), so ``etctl crds``
renders exactly what the registered kinds need.

Invariants: entry names are unique (a second registration of a name is a
:class:`~etctl.errors.ConfigError`), a plugin's capabilities are resolved once, here, and an entry
that loads anything else fails loudly with the entry's name rather than being skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from etctl.common import Capabilities, CustomResource, JobPlugin, custom_resources
from etctl.errors import ConfigError

__all__ = ["ENTRY_POINT_GROUP", "Registered", "Registry", "discover"]

ENTRY_POINT_GROUP = "etctl.jobs"
"""The entry-point group job kinds register under (built-in kinds as third-party ones)."""


@dataclass(frozen=True, slots=True)
class Registered:
    """One registered job kind.

    Attributes:
        name: the entry's name (what ``--jobs`` selects).
        plugin: the plugin, or None for an API-only entry.
        capabilities: the plugin's optional capabilities (empty for an API-only entry).
        resources: the CRDs the entry brings, the job kind first.
    """

    name: str
    plugin: JobPlugin[Any] | None
    capabilities: Capabilities
    resources: tuple[CustomResource, ...]


class Registry:
    """Registered job kinds by name, in registration order."""

    def __init__(self) -> None:
        self._entries: dict[str, Registered] = {}

    def register(self, name: str, loaded: object) -> Registered:
        """Register what an entry point (or a test) provides under ``name``.

        Raises:
            ConfigError: the name is taken, or ``loaded`` is neither a plugin (or its factory) nor
                custom resources.
        """
        if name in self._entries:
            msg = f"job kind {name!r} is registered twice"
            raise ConfigError(msg)
        entry = _entry(name, loaded)
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> Registered:
        """The entry called ``name``.

        Raises:
            ConfigError: no such entry; the message lists the registered ones.
        """
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(self._entries) or "none"
            msg = f"no job kind {name!r} is registered (registered: {known})"
            raise ConfigError(msg)
        return entry

    def plugins(self, names: Iterable[str] | None = None) -> list[Registered]:
        """The entries with a controller plugin (those named, or all), in registration order.

        Raises:
            ConfigError: a named entry is unknown or has no controller plugin.
        """
        if names is None:
            return [entry for entry in self if entry.plugin is not None]
        chosen = [self.get(name) for name in names]
        for entry in chosen:
            if entry.plugin is None:
                msg = f"job kind {entry.name!r} publishes CRDs only; it has no controller yet"
                raise ConfigError(msg)
        return chosen

    def custom_resources(self) -> list[CustomResource]:
        """Every CRD of every entry, sorted by CRD name; a CRD two entries share appears once."""
        found: dict[str, CustomResource] = {}
        for entry in self:
            for resource in entry.resources:
                other = found.setdefault(resource.name, resource)
                if other is not resource and other != resource:
                    msg = f"two job kinds define the CRD {resource.name} differently"
                    raise ConfigError(msg)
        return [found[name] for name in sorted(found)]

    def __iter__(self) -> Iterator[Registered]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries


def _entry(name: str, loaded: object) -> Registered:
    if isinstance(loaded, CustomResource):
        return Registered(name, None, Capabilities(), (loaded,))
    if isinstance(loaded, Sequence) and not isinstance(loaded, str | bytes):
        items = tuple(loaded)
        if items and all(isinstance(item, CustomResource) for item in items):
            return Registered(name, None, Capabilities(), items)
    plugin = loaded
    if isinstance(loaded, type) or (callable(loaded) and not isinstance(loaded, JobPlugin)):
        try:
            plugin = loaded()
        except TypeError as exc:
            msg = f"job kind {name!r}: {loaded!r} cannot be built without arguments: {exc}"
            raise ConfigError(msg) from exc
    if not isinstance(plugin, JobPlugin) or isinstance(plugin, type):
        msg = (
            f"job kind {name!r} loads {loaded!r}: expected a JobPlugin, a factory of one, or "
            "CustomResource objects"
        )
        raise ConfigError(msg)
    resources = tuple(custom_resources(plugin))
    if not resources or resources[0] != plugin.resource:
        msg = f"job kind {name!r}: custom_resources must list the job kind's own CRD first"
        raise ConfigError(msg)
    return Registered(name, plugin, Capabilities.of(plugin), resources)


def discover(group: str = ENTRY_POINT_GROUP) -> Registry:
    """A registry of every entry point in ``group``, sorted by entry name.

    Raises:
        ConfigError: an entry loads something unusable, or two entries share a name.
    """
    registry = Registry()
    for entry in sorted(entry_points(group=group), key=lambda e: e.name):
        registry.register(entry.name, entry.load())
    return registry
