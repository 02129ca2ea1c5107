"""Which objects a list, watch or deletecollection is about: namespace, labels and fields.

A :class:`Selection` is built once per request from the query's ``labelSelector`` and
``fieldSelector`` and the resource's strategy, which says which field labels the kind supports
(an unsupported one is a 400 worded as the real server words it for that kind). Matching reads
labels and the strategy's selectable fields from the object.
"""

from __future__ import annotations

from dataclasses import dataclass

from etctl.runtime import FieldSelector, LabelSelector, ObjectView, SelectorError, objects
from etctl.testing._apiserver.registry import ResourceInfo
from etctl.testing._apiserver.status import bad_request
from etctl.testing._apiserver.strategy import Strategy

__all__ = ["Selection", "parse_selection"]


@dataclass(frozen=True, slots=True)
class Selection:
    """A namespace (``""`` for all) and label and field selectors, bound to a strategy."""

    namespace: str
    label: LabelSelector
    field: FieldSelector
    strategy: Strategy

    @property
    def everything(self) -> bool:
        """True when only the namespace restricts the selection."""
        return self.label.empty and self.field.empty

    def matches(self, obj: ObjectView) -> bool:
        """Whether ``obj`` is selected (its namespace is checked too)."""
        if (
            self.namespace
            and str((obj.get("metadata") or {}).get("namespace") or "") != self.namespace
        ):
            return False
        if not self.label.empty and not self.label.matches(objects.labels(obj)):
            return False
        return self.field.empty or self.field.matches(self.strategy.fields(obj))


def parse_selection(
    info: ResourceInfo,
    *,
    namespace: str = "",
    label_selector: str | LabelSelector | None = None,
    field_selector: str | FieldSelector | None = None,
) -> Selection:
    """Parse and check the selectors of a request on ``info``.

    Raises:
        etctl.errors.BadRequest: a selector does not parse, or names an unsupported field.
    """
    try:
        label = (
            label_selector
            if isinstance(label_selector, LabelSelector)
            else LabelSelector.parse(label_selector or "")
        )
        field = (
            field_selector
            if isinstance(field_selector, FieldSelector)
            else FieldSelector.parse(field_selector or "")
        )
    except SelectorError as exc:
        raise bad_request(str(exc)) from exc
    for term in field.terms:
        problem = info.strategy.field_label_error(term.field)
        if problem:
            raise bad_request(problem)
    return Selection(namespace, label, field, info.strategy)
