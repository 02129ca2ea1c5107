"""Structural sharing for cached objects: equal parts of different objects become one.

Objects decoded from JSON are trees of fresh dicts, lists and strings: a thousand pods stamped from
one template hold a thousand copies of the same container spec. A plain-dict cache therefore costs
about as much as kubernetes_asyncio's model objects. A :class:`Compactor`, applied to each object
before it enters a cache, makes equal subtrees and strings shared:

* a subtree (dict or list) is looked up by its exact JSON encoding (``orjson``, in C); a hit
  replaces it with the one already held, so a container's ``env``, ``resources`` or ``ports``, an
  ``ownerReferences`` list or a toleration list is stored once for all the pods that carry it;
* given the *previous* version of the object (the one the cache holds), a subtree equal to the
  one at the same position there is that previous subtree: an update of the status keeps the spec;
* short strings that recur at a position (``Running``, an image name, a namespace) are shared, and
  so are the dict keys of the subtrees kept in the table (the decoder already hands out one
  string per distinct key most of the time).

What keeps this cheap is that the compactor learns, per position in the objects (a key path such
as ``spec.containers[].env``), what pays there. Each position is examined for :data:`_WINDOW`
visits (every subtree looked up, every child visited, hits and bytes saved counted), then keeps a
mode for :data:`_STEADY` visits and is examined again, so the decisions follow the objects:

* ``share``: its subtrees recur, each one is looked up (only for a new object if they recur
  across objects, not only across versions of one object);
* ``unique``: its subtrees do not recur (``metadata``, a pod's ``spec`` with its node name and
  token volume) but some children do: only the children worth a visit are descended into, and
  only the strings that recur are looked up (not names, uids, timestamps or IPs);
* ``opaque``: nothing in it saves :data:`_MIN_GAIN` bytes per visit (a pod's list of IPs): the
  subtree is kept as decoded, at no cost.

Sharing is only sound because cached objects are read-only (the cache's contract, see
:mod:`etctl.runtime._objects`): a caller that mutated one in place would now change the same part of
many objects. Deep-copy before changing anything read from a cache.

Invariants:

* the result is equal (``==``) to the input, with values of the same types: subtrees are matched
  by their exact encoding (a short one is its own table key; a long one's hash finds the
  candidate, whose encoding is compared), so ``true`` is never shared with ``1``, ``1`` with
  ``1.0``, nor ``0.0`` with ``-0.0``; against the previous version the keys are compared sorted
  when the plain encodings differ, so the order of a dict's keys never stops an update reusing
  what it did not change; inputs are JSON values (JSON carries no NaN or infinity); parts that
  cannot be encoded are never shared;
* the input is changed in place, each change replacing a child by an equal shared one (a subtree
  that goes into the table may be a copy holding the shared keys); shared subtrees and the
  previous version are never changed;
* each table holds at most ``2 * max_entries`` entries (two generations: a hit moves an entry to
  the young one, and the old one is dropped when the young one fills), and at most
  :data:`_MAX_PATHS` positions are tracked, so memory stays bounded however many distinct objects
  pass through, while what keeps recurring stays shared.

Cost and benefit are measured by ``bench/cache_memory.py`` and ``bench/informer.py``; the figures
are in ``docs/architecture.md``.
"""

from __future__ import annotations

from typing import Any

import orjson

from etctl.runtime._objects import KubeObject, ObjectView

__all__ = ["Compactor"]

_MAX_SHARED_STRING = 128
"""Longer strings (certificates, scripts, digests of images) rarely pay for a table entry."""

_STRING_OVERHEAD = 49
"""Bytes of a str object besides its characters (what sharing an ASCII string saves)."""

_ENCODED_TO_HELD = 4
"""Bytes a decoded subtree holds per byte of its JSON encoding, at the least."""

_MAX_KEY_BYTES = 256
"""Encodings up to this long are table keys themselves; longer ones are keyed by their hash."""

_WINDOW = 32
"""Visits of a position during which it is examined (looked up, descended, counted)."""

_STEADY = 2048
"""Visits a decision holds before the position is examined again."""

_SHARE_RATIO = 16
"""A position keeps being looked up if at least one visit in this many found its subtree."""

_MIN_STRING_HITS = 2
"""Hits within a window for the strings of a position to keep being shared."""

_MIN_GAIN = 128
"""Bytes a descent into a position must save per visit (in its whole subtree) to go on."""

_MAX_CHILDREN = 256
"""Distinct keys tracked under one position (maps with free-form keys share one position)."""

_MAX_PATHS = 4096
"""Positions tracked in all (a pod has about 150); beyond, new positions are left as they are."""

_PROBE = 0
"""Being examined: subtrees are looked up, every child is visited, hits and savings counted."""
_SHARE = 1
"""Subtrees here recur: look each one up by its encoding."""
_UNIQUE = 2
"""Subtrees here do not recur, but some children do: descend into those the plan names."""
_OPAQUE = 3
"""Nothing here or below recurs enough to pay for a visit: leave the subtree as it is."""

_Plan = tuple[tuple[str, "_Path", bool], ...]


_dumps = orjson.dumps


def _dumps_sorted(value: Any) -> bytes:
    """An encoding with the keys sorted: equal subtrees written in another key order match.

    Go writes the keys of a map sorted and those of a struct in declaration order; another
    writer may order them otherwise. Only an update's comparison with the previous version needs
    it (one server writes the objects the table compares consistently), and only once the
    plain encodings differ.
    """
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class _Generations:
    """A bounded key -> canonical value map in two generations (the old one dropped when full)."""

    __slots__ = ("_limit", "old", "young")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self.young: dict[Any, Any] = {}
        self.old: dict[Any, Any] = {}

    def put(self, key: Any, value: Any) -> None:
        """Make ``value`` the entry of ``key`` in the young generation."""
        young = self.young
        if len(young) >= self._limit and key not in young:
            self.old = young
            self.young = young = {}
        young[key] = value

    def share(self, key: Any, value: Any) -> Any:
        """The entry of ``key`` (made young), or ``value`` as its new entry."""
        found = self.young.get(key)
        if found is None:
            found = self.old.get(key)
            self.put(key, value if found is None else found)
            if found is None:
                return value
        return found

    def __len__(self) -> int:
        return len(self.young) + len(self.old)


class _Path:
    """What the compactor learned about one position (key path) of the objects it sees.

    A position in :data:`_PROBE` mode counts, for :data:`_WINDOW` visits, how often its subtree
    was found in the table, how often the strings of each child were, and how many bytes sharing
    saved at it and below; then it decides its mode for the next :data:`_STEADY` visits, which
    children's strings to share, and which children are worth a visit when it is descended into.
    """

    __slots__ = (
        "across",
        "children",
        "fresh_hits",
        "fresh_seen",
        "gain",
        "gain_mark",
        "hits",
        "holds_trees",
        "items",
        "left",
        "mode",
        "plan",
        "share_strings",
        "string_hits",
    )

    def __init__(self) -> None:
        self.children: dict[str | None, _Path] = {}
        self.items: _Path | None = None
        self.mode = _PROBE
        self.left = _WINDOW
        self.hits = 0
        self.fresh_hits = 0
        self.fresh_seen = 0
        self.across = True
        self.string_hits = 0
        self.share_strings = True
        self.holds_trees = False
        self.gain = 0
        self.gain_mark = 0
        self.plan: _Plan | None = None

    def subtree_gain(self) -> int:
        """Bytes saved so far at this position and every position below it."""
        total = self.gain
        for child in self.children.values():
            total += child.subtree_gain()
        if self.items is not None:
            total += self.items.subtree_gain()
        return total

    def decide(self) -> None:
        """End of a window or of a steady period: choose how the next visits go."""
        if self.mode != _PROBE:
            self.mode = _PROBE
            self.left = _WINDOW
            self.hits = self.fresh_hits = self.fresh_seen = 0
            self.gain_mark = self.subtree_gain()
            for child in self.children.values():
                child.string_hits = 0
            if self.items is not None:
                self.items.string_hits = 0
            return
        seen = _WINDOW - max(self.left, 0)
        gained = self.subtree_gain() - self.gain_mark
        if self.hits and self.hits * _SHARE_RATIO >= seen:
            self.mode = _SHARE
        elif gained >= _MIN_GAIN * seen:
            self.mode = _UNIQUE
        else:
            self.mode = _OPAQUE
        # Subtrees found only when a previous version of the object was there recur across
        # versions, not across objects: a new object's subtree here is not worth looking up.
        fresh = self.fresh_seen
        self.across = not fresh or self.fresh_hits * _SHARE_RATIO >= fresh
        self.left = _STEADY
        self.hits = self.fresh_hits = self.fresh_seen = 0
        if self.items is not None:
            self.items.share_strings = self.items.string_hits >= _MIN_STRING_HITS
        children = self.children
        for child in children.values():
            child.share_strings = child.string_hits >= _MIN_STRING_HITS
        if None in children:
            self.plan = None  # free-form keys: no fixed list of children to visit
        else:
            self.plan = tuple(
                (key, child, not child.holds_trees)
                for key, child in children.items()
                if key is not None
                # Opaque subtrees stay in the plan: an update reuses them when unchanged.
                and (child.share_strings or child.holds_trees)
            )


class Compactor:
    """Makes equal strings and subtrees of successive objects shared (see the module docstring).

    Args:
        max_entries: the size of one table generation (subtrees, strings and dict keys each).
    """

    __slots__ = ("_keys", "_paths", "_root", "_strangers", "_strings", "_trees")

    def __init__(self, *, max_entries: int = 4096) -> None:
        if max_entries < 1:
            msg = "max_entries must be positive"
            raise ValueError(msg)
        self._keys = _Generations(max_entries)
        self._strings = _Generations(max_entries)
        self._trees = _Generations(max_entries)
        self._root = _Path()
        # Where positions beyond _MAX_PATHS go: left as they are, never examined.
        self._strangers = _Path()
        self._strangers.mode = _OPAQUE
        self._strangers.left = 2**62
        self._strangers.share_strings = False
        self._paths = 1

    @property
    def entries(self) -> int:
        """Strings and subtrees currently held for sharing (dict keys included)."""
        return len(self._keys) + len(self._strings) + len(self._trees)

    def __call__(self, obj: KubeObject, previous: ObjectView | None = None) -> KubeObject:
        """The compacted equivalent of ``obj``, which is changed in place and returned.

        Args:
            obj: a freshly decoded object (nobody else holds it yet).
            previous: the version of the same object the cache holds, if any: its subtrees are
                reused wherever ``obj`` has the same content at the same position.
        """
        old = previous if type(previous) is dict else None
        result: KubeObject = self._visit(obj, old, self._root)
        return result

    # -- positions

    def _child(self, path: _Path, key: str) -> _Path:
        children = path.children
        if self._paths >= _MAX_PATHS:
            return self._strangers
        slot: str | None = key if len(children) < _MAX_CHILDREN else None
        found = children.get(slot)
        if found is None:
            found = children[slot] = _Path()
            self._paths += 1
        return found

    def _items(self, path: _Path) -> _Path:
        found = path.items
        if found is None:
            if self._paths >= _MAX_PATHS:
                return self._strangers
            found = path.items = _Path()
            self._paths += 1
        return found

    # -- keys

    def _with_shared_keys(self, node: dict[str, Any]) -> dict[str, Any]:
        """``node``, or a copy of it holding the shared key strings if its own are not those.

        Subtrees that go into the table get shared keys: they are the long-lived ones. The
        decoder (orjson) hands out one string object per distinct key most of the time, so the
        check of the first key usually succeeds and nothing is copied. A node kept in place
        keeps the keys the decoder gave it: checking each would cost more than it saves.
        """
        keys = self._keys
        for first in node:
            found = keys.young.get(first)
            if found is first or (found is None and keys.share(first, first) is first):
                return node
            share = keys.share
            return {share(key, key): value for key, value in node.items()}
        return node

    # -- subtrees

    @staticmethod
    def _encodes_as(value: Any, raw: bytes) -> bool:
        """Whether ``value``'s JSON encoding is exactly ``raw`` (equal, with the same types)."""
        try:
            return _dumps(value) == raw
        except TypeError:
            return False

    @staticmethod
    def _same_encoding(old: Any, node: Any) -> bool:
        """Whether ``old`` and ``node`` encode alike.

        False when either cannot be encoded (an integer beyond 64 bits): such a node is never
        shared.
        """
        try:
            return _dumps(old) == _dumps(node) or _dumps_sorted(old) == _dumps_sorted(node)
        except TypeError:
            return False

    def _unchanged(self, old: Any, node: Any) -> bool:
        """Whether the previous version's ``old`` may stand for ``node``: equal, types and all."""
        return (
            old is not None
            and type(old) is type(node)
            and old == node
            and self._same_encoding(old, node)
        )

    def _tree(self, node: Any, old: Any, path: _Path) -> Any:
        """The shared equivalent of the dict or list ``node`` found at ``path``."""
        path.left -= 1
        if path.left <= 0:
            path.decide()
        mode = path.mode
        if mode == _OPAQUE:
            # Not worth a lookup here, but an update keeps the part it did not change.
            return old if self._unchanged(old, node) else node
        if mode == _UNIQUE or (mode == _SHARE and old is None and not path.across):
            return old if self._unchanged(old, node) else self._descend(node, old, path)
        return self._looked_up(node, old, path)

    def _looked_up(self, node: Any, old: Any, path: _Path) -> Any:
        """``node`` found in the table by its encoding, or descended into and put there."""
        probing = path.mode == _PROBE
        if probing and old is None:
            path.fresh_seen += 1
        try:
            raw = _dumps(node)
        except TypeError:
            return self._descend(node, old, path)
        # A short encoding is its own key, so the lookup compares it; a long one is keyed by its
        # hash and the encoding of the entry found is compared. Either way only an exact match
        # is shared (an entry always encodes: it was looked up by its encoding when put).
        short = len(raw) <= _MAX_KEY_BYTES
        key: bytes | int = raw if short else hash(raw)
        trees = self._trees
        hit = trees.young.get(key)
        young = hit is not None
        if not young:
            hit = trees.old.get(key)
        if hit is not None and type(hit) is type(node) and (short or _dumps(hit) == raw):
            path.gain += len(raw) * _ENCODED_TO_HELD
            if probing:
                path.hits += 1
                if old is None:
                    path.fresh_hits += 1
            if not young:
                trees.put(self._kept(key), hit)
            return hit
        if (
            old is not None
            and type(old) is type(node)
            and (self._encodes_as(old, raw) or self._unchanged(old, node))
        ):
            canonical = old
        else:
            canonical = self._descend(node, old, path, shared_keys=True)
        trees.put(self._kept(key), canonical)
        return canonical

    @staticmethod
    def _kept(key: bytes | int) -> bytes | int:
        """``key`` as the table keeps it: an encoding copied to its own size.

        orjson's output keeps the spare room of its write buffer (kilobytes for a short
        encoding); a key held for long must not.
        """
        return bytes(memoryview(key)) if type(key) is bytes else key

    def _descend(self, node: Any, old: Any, path: _Path, *, shared_keys: bool = False) -> Any:
        """Share what the children of ``node`` hold, in place (in a copy with shared keys)."""
        if type(node) is dict:
            if shared_keys:
                node = self._with_shared_keys(node)
            former = old if type(old) is dict else None
            plan = path.plan
            if path.mode != _PROBE and plan is not None and len(node) <= len(path.children):
                return self._planned(node, former, plan)
            return self._visit(node, former, path)
        return self._list(node, old if type(old) is list else None, path.items or self._items(path))

    def _visit(self, node: dict[str, Any], old: dict[str, Any] | None, path: _Path) -> Any:
        """Visit every child of ``node`` (in place), learning what each position holds."""
        children = path.children
        strings = self._strings
        for key, value in node.items():
            child = children.get(key) or self._child(path, key)
            kind = type(value)
            if kind is str:
                if not child.share_strings:
                    continue
                former = old.get(key) if old is not None else None
                if former is value:
                    continue
                if type(former) is str and former == value:
                    new: Any = former
                elif len(value) > _MAX_SHARED_STRING:
                    continue
                else:
                    new = strings.share(value, value)
                    if new is not value:
                        child.string_hits += 1
                        child.gain += _STRING_OVERHEAD + len(value)
            elif kind is dict or kind is list:
                child.holds_trees = True
                new = self._tree(value, old.get(key) if old is not None else None, child)
            else:
                continue
            if new is not value:
                node[key] = new
        return node

    def _planned(self, node: dict[str, Any], old: dict[str, Any] | None, plan: _Plan) -> Any:
        """Visit only the children ``plan`` names (in place): a position in its steady state."""
        strings = self._strings
        for key, child, is_string in plan:
            value = node.get(key)
            if value is None:
                continue
            kind = type(value)
            if is_string:
                if kind is not str or len(value) > _MAX_SHARED_STRING:
                    continue
                new = strings.young.get(value)
                if new is None:
                    new = strings.share(value, value)
                if new is not value:
                    child.gain += _STRING_OVERHEAD + len(value)
            elif kind is dict or kind is list:
                new = self._tree(value, old.get(key) if old is not None else None, child)
            else:
                continue
            if new is not value:
                node[key] = new
        return node

    def _list(self, node: list[Any], old: list[Any] | None, items: _Path) -> list[Any]:
        """Share the items of ``node`` (in place); ``old`` items are matched by position."""
        formers = old if old is not None else []
        former = len(formers)
        share_strings = items.share_strings
        strings = self._strings
        for index, value in enumerate(node):
            kind = type(value)
            if kind is str:
                if not share_strings or len(value) > _MAX_SHARED_STRING:
                    continue
                new: Any = strings.share(value, value)
                if new is not value:
                    items.string_hits += 1
                    items.gain += _STRING_OVERHEAD + len(value)
            elif kind is dict or kind is list:
                items.holds_trees = True
                new = self._tree(value, formers[index] if index < former else None, items)
            else:
                continue
            if new is not value:
                node[index] = new
        return node
