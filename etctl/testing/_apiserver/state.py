"""What every verb works on: the served resources, the object store, the clock and the randomness.

The verbs (:mod:`~etctl.testing._apiserver.writes`, ``patching``, ``removal``, ``binding``,
``watching``, ``admission``) are functions of a :class:`ServerState`; the internal API,
:class:`~etctl.testing._apiserver.storage.Storage`, is a :class:`ServerState` that offers them as
methods. Keeping the shared state here, below both, is what lets the verbs and the facade import
in one direction only.

Invariants: everything is synchronous and runs on the server's event loop thread; objects read
here are the committed ones, shared and never to be changed in place.
"""

from __future__ import annotations

import random
import uuid
from typing import TYPE_CHECKING

from etctl.runtime import Clock, KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.deletion import timestamp
from etctl.testing._apiserver.registry import Registry, ResourceInfo, with_api_version
from etctl.testing._apiserver.store import Store, object_key

if TYPE_CHECKING:
    from etctl.testing._apiserver.conversion import Converter

__all__ = ["ServerState"]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
"""The alphabet of generated name suffixes (the real server's: no vowels, no 0/1/3)."""


class ServerState:
    """The registry, the store, the clock and the seeded source of generated names and uids.

    Args:
        registry: the served resources.
        store: the object store.
        clock: the clock for every timestamp.
        seed: seeds generated names and uids (for reproducible runs).
    """

    def __init__(
        self, *, registry: Registry, store: Store, clock: Clock, seed: int | None = None
    ) -> None:
        self.registry = registry
        self.store = store
        self.clock = clock
        self.random = random.Random(seed)  # noqa: S311 - generated names, not secrets
        # The conversion webhooks of custom resources (None: versions differ in apiVersion only).
        self.converter: Converter | None = None

    def now(self) -> str:
        """The server clock's time as written in objects."""
        return timestamp(self.clock.now())

    def key(self, info: ResourceInfo, namespace: str, name: str) -> str:
        """The storage key of an object of ``info`` (the namespace is ignored for cluster scope)."""
        return object_key(namespace if info.namespaced else "", name)

    def lookup(self, info: ResourceInfo, namespace: str, name: str) -> KubeObject | None:
        """The committed object, or None."""
        return self.store.get(info.key, self.key(info, namespace, name))

    def load(self, info: ResourceInfo, namespace: str, name: str) -> KubeObject:
        """The committed object.

        Raises:
            etctl.errors.NotFound: there is none.
        """
        obj = self.lookup(info, namespace, name)
        if obj is None:
            raise st.not_found(info.group, info.plural, name)
        return obj

    def new_uid(self) -> str:
        """A fresh object uid (a version 4 UUID from the seeded source)."""
        return str(uuid.UUID(int=self.random.getrandbits(128), version=4))

    def converts(self, info: ResourceInfo) -> Converter | None:
        """The converter when ``info``'s objects are converted by a webhook, else None."""
        converter = self.converter
        return converter if converter is not None and converter.webhook(info) else None

    async def at_version(self, info: ResourceInfo, obj: KubeObject, version: str) -> KubeObject:
        """``obj`` as served at ``version``: converted by the CRD's webhook, or relabelled.

        Raises:
            etctl.errors.ApiError: the conversion webhook failed (500).
        """
        converter = self.converts(info)
        if converter is None:
            return with_api_version(obj, info.api_version(version))
        return await converter.convert(info, obj, version)

    def generate_name(self, base: str) -> str:
        """``generateName`` plus five random characters, the base cut to fit 63 characters."""
        suffix = "".join(self.random.choice(_NAME_CHARS) for _ in range(5))
        return base[:58] + suffix
