"""The job kinds a person names on the command line, and what each lets a tool show of a job.

A :class:`JobKind` is one registered job kind seen from outside the operator: the REST resource its
jobs live at, the names a person may call it by (as kubectl does: the kind, its plural, singular
and short names, ``<plural>.<group>``, and the registry entry's name, all case-insensitive),
whether it is elastic (ScaleIn and ScaleOut objects resize it), and how its jobs read: the replica
types its spec asks for and the files it publishes to its pods (a hostfile).

Nothing here is particular to one kind. What differs between kinds comes from the plugin: the
replica types from its model (``replica_specs()``), the status fields recording an elastic job's
members from its elastic declaration, the files from its :class:`~etctl.common.PublishesFiles`
capability. So a new plugin registered under the ``etctl.jobs`` entry point is shown by
``etctl status`` and ``etctl watch`` without a change here. A kind registered without a
controller (CRDs only) is shown from its status alone.

Invariant: reading a job never fails; a job whose spec does not parse (it will be marked Failed by
the operator) shows no desired replica counts, membership or files, and everything else as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from etctl.cli._registry import Registered
from etctl.common import (
    Capabilities,
    CustomResource,
    JobPlugin,
    MemberFields,
    PublishedFile,
    ReplicatedJob,
)
from etctl.errors import ConfigError
from etctl.runtime import ObjectView, Resource

__all__ = ["JobKind", "job_kinds", "resolve", "split_target"]


@dataclass(frozen=True, slots=True)
class JobKind:
    """One job kind, as tools outside the operator read its jobs.

    Attributes:
        crd: the kind's CRD description.
        plugin: its plugin, or None for a kind registered with its CRDs only.
        capabilities: the plugin's optional capabilities (empty without a plugin).
        entry: the registry entry's name (``tfjob``), or ``""``.
    """

    crd: CustomResource
    plugin: JobPlugin[Any] | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)
    entry: str = ""

    @classmethod
    def of(cls, plugin: JobPlugin[Any], entry: str = "") -> JobKind:
        """The kind of ``plugin``."""
        return cls(plugin.resource, plugin, Capabilities.of(plugin), entry)

    @classmethod
    def from_entry(cls, registered: Registered) -> JobKind:
        """The kind of a registry entry."""
        return cls(
            registered.resources[0],
            registered.plugin,
            registered.capabilities,
            registered.name,
        )

    @property
    def kind(self) -> str:
        """The kind (``TFJob``)."""
        return self.crd.kind

    @property
    def resource(self) -> Resource:
        """Where its jobs live (the storage version)."""
        return self.crd.resource()

    @property
    def elastic(self) -> bool:
        """True when ScaleIn and ScaleOut objects resize its jobs."""
        return self.capabilities.elastic is not None

    @property
    def names(self) -> frozenset[str]:
        """Every name a person may call it by, in lower case."""
        crd = self.crd
        words = {crd.kind, crd.plural, crd.singular, crd.name, *crd.short_names, self.entry}
        return frozenset(word.lower() for word in words if word)

    def subject(self, name: str) -> str:
        """``<kind>/<name>`` in lower case, as kubectl names an object (``tfjob/mnist``)."""
        return f"{self.kind.lower()}/{name}"

    def parse(self, obj: ObjectView) -> ReplicatedJob | None:
        """The job's spec parsed by the plugin's model, or None (no plugin, or it does not parse).

        The status is left out: what is read from the parsed job (replica types, published
        files) comes from the spec, and the status is read as it is, even where it would not
        parse.
        """
        if self.plugin is None:
            return None
        try:
            spec_only = {key: value for key, value in obj.items() if key != "status"}
            parsed: ReplicatedJob = self.plugin.model.model_validate(spec_only)
        except (ValidationError, ValueError, TypeError):
            return None
        return parsed

    def desired_replicas(self, job: ReplicatedJob | None) -> dict[str, int]:
        """The replicas its spec asks for, by replica type, in creation order."""
        if job is None:
            return {}
        return {str(kind): int(spec.replicas or 0) for kind, spec in job.replica_specs().items()}

    def member_fields(self, job: ReplicatedJob | None) -> MemberFields | None:
        """Where an elastic kind records its jobs' members in their status (None: not elastic)."""
        elastic = self.capabilities.elastic
        if job is None or elastic is None:
            return None
        return elastic.elastic.fields

    def files(self, job: ReplicatedJob | None) -> tuple[PublishedFile, ...]:
        """The files its plugin publishes to its pods (none without the capability)."""
        publisher = self.capabilities.files
        if job is None or publisher is None:
            return ()
        return tuple(publisher.published_files(job))


def job_kinds(entries: Iterable[Registered]) -> list[JobKind]:
    """The kind of every registry entry, in registration order."""
    return [JobKind.from_entry(entry) for entry in entries]


def resolve(kinds: Sequence[JobKind], word: str) -> JobKind:
    """The kind ``word`` names (kind, plural, singular, short name, ``plural.group``, entry).

    Raises:
        ConfigError: no registered kind is called that; the message lists the kinds there are.
    """
    wanted = word.strip().lower()
    for kind in kinds:
        if wanted in kind.names:
            return kind
    known = ", ".join(sorted(kind.kind for kind in kinds)) or "none"
    msg = f"{word!r} is not a registered job kind (registered: {known})"
    raise ConfigError(msg)


def split_target(words: Sequence[str]) -> tuple[str, str]:
    """``(kind, name)`` from ``KIND/NAME`` or ``KIND NAME``, as kubectl takes them.

    Raises:
        ConfigError: neither form, or an empty part.
    """
    if len(words) == 1 and "/" in words[0]:
        kind, _, name = words[0].partition("/")
    elif len(words) == 2 and "/" not in words[0]:
        kind, name = words
    else:
        msg = f"expected KIND/NAME or KIND NAME, got {' '.join(words)!r}"
        raise ConfigError(msg)
    if not kind or not name or "/" in name:
        msg = f"expected KIND/NAME or KIND NAME, got {' '.join(words)!r}"
        raise ConfigError(msg)
    return kind, name
