"""Label and field selectors, parsed and matched as apimachinery does.

A :class:`LabelSelector` is a conjunction of requirements on an object's labels (``app=web``,
``tier in (a,b)``, ``!legacy``); a :class:`FieldSelector` is a conjunction of equality and
inequality terms on selectable fields (``metadata.name=x,status.phase!=Failed``). Both are frozen
and hashable, so they key caches and watch filters, and both print in apimachinery's canonical form
(requirements sorted by key, set values sorted, field values escaped), so
``parse(str(s)) == s``.

Invariants:

- The grammar, the accepted characters and every error message follow
  ``k8s.io/apimachinery/pkg/labels`` and ``pkg/fields`` (Kubernetes 1.31 wording), so an API
  server built on this module answers a bad selector with the real 400 body.
- There are two selectors that select no restriction at all, and they differ: the *empty* selector
  (``parse("")``, or a metav1.LabelSelector ``{}``) matches everything, while the *nothing* selector
  (a ``None`` metav1.LabelSelector) matches no object. As in apimachinery, the nothing selector
  prints as ``""`` and is not :attr:`~LabelSelector.empty`.
- Field selectors compare strings only: a field the caller does not supply reads as ``""`` (so
  ``x!=a`` matches an object without ``x``). Which fields are selectable is the caller's business.
"""

from etctl.runtime._selectors.fields import FieldSelector, FieldTerm
from etctl.runtime._selectors.labels import LabelSelector
from etctl.runtime._selectors.requirements import Operator, Requirement
from etctl.runtime._selectors.syntax import SelectorError

__all__ = [
    "FieldSelector",
    "FieldTerm",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorError",
]
