"""A handler that rebuilds a source's content from its events, and flags lost or repeated ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from etctl.runtime import ObjectView, Tombstone, objects

__all__ = ["Recorder"]


@dataclass
class Recorder:
    """A handler that rebuilds the source's content from the events it receives.

    Every event is checked against what it saw before: an add of a key it holds, or an update or
    delete of a key it does not hold, is recorded in ``problems`` (a lost or duplicated event).
    """

    view: dict[str, ObjectView] = field(default_factory=dict)
    log: list[tuple[str, str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
        key = objects.key_of(obj)
        if key in self.view:
            self.problems.append(f"add of {key}, which is already there")
        self.view[key] = obj
        self.log.append(("add", key, is_in_initial_list))

    def on_update(self, old: ObjectView, new: ObjectView) -> None:
        key = objects.key_of(new)
        if self.view.get(key) is not old and old is not new:
            self.problems.append(f"update of {key} from a state it never saw")
        self.view[key] = new
        self.log.append(("update", key, old is new))

    def on_delete(self, obj: ObjectView | Tombstone) -> None:
        if isinstance(obj, Tombstone):
            key, missed = obj.key, True
        else:
            key, missed = objects.key_of(obj), False
        if self.view.pop(key, None) is None:
            self.problems.append(f"delete of {key}, which it does not hold")
        self.log.append(("delete", key, missed))

    def versions(self) -> dict[str, str]:
        """key -> resourceVersion of what the handler holds."""
        return {key: objects.resource_version(obj) for key, obj in self.view.items()}
