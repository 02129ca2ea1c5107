"""The events that handlers map to requests and predicates filter.

An :class:`~etctl.runtime._source.EventSource` calls ``on_add`` / ``on_update`` / ``on_delete``; the
controller's adapter turns each call into one of these frozen records, so predicates and handlers
see one value with everything the source knew:

* :class:`CreateEvent` says whether the object came from the source's initial list (or a replay
  to a late handler) rather than from a watch;
* :class:`UpdateEvent` says whether it is a resync (old and new share a ``resourceVersion``: nothing
  changed on the server);
* :class:`DeleteEvent` carries the last known object, unwrapped from its tombstone when the delete
  itself was not observed (``state_unknown``).
"""

from __future__ import annotations

from dataclasses import dataclass

from etctl.runtime._objects import ObjectView, resource_version

__all__ = ["CreateEvent", "DeleteEvent", "UpdateEvent"]


@dataclass(frozen=True, slots=True)
class CreateEvent:
    """An object appeared.

    Attributes:
        obj: the object.
        is_in_initial_list: True for objects of the source's first list or of a replay.
    """

    obj: ObjectView
    is_in_initial_list: bool = False


@dataclass(frozen=True, slots=True)
class UpdateEvent:
    """An object changed, or was resynced.

    Attributes:
        old: the object before the change.
        new: the object after it.
    """

    old: ObjectView
    new: ObjectView

    @property
    def is_resync(self) -> bool:
        """True when both versions share a ``resourceVersion``: a periodic resync, not a change."""
        return resource_version(self.old) == resource_version(self.new)


@dataclass(frozen=True, slots=True)
class DeleteEvent:
    """An object is gone.

    Attributes:
        obj: the deleted object, or the last state the cache held when the delete was missed.
        state_unknown: True when ``obj`` came from a tombstone (the delete happened while the watch
            was down, so the object may have changed in between).
    """

    obj: ObjectView
    state_unknown: bool = False
