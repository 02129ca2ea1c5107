"""Which Kubernetes release the server models, and what that release's API has.

The server answers ``/version`` with its release (1.32 by default) and behaves as that release
does where releases differ in ways a client can observe. A client that depends on a newer
feature must detect it rather than assume it, as it must on a real cluster of that release:
the server models the differences the suite met on real clusters.

* **Pod scheduling gates** (``spec.schedulingGates``): on by default from 1.27 (beta; alpha and
  off in 1.26). An older server does not know the field and drops it from every pod written,
  as any unknown field of a built-in kind was dropped then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from etctl.testing._apiserver.discovery import SERVER_VERSION

__all__ = ["DEFAULT_VERSION", "OLDEST_VERSION", "KubernetesVersion"]

_SINCE = {"PodSchedulingReadiness": 27}
"""The minor release from which each modelled feature is on by default."""

_FORM = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?$")


@dataclass(frozen=True, slots=True, order=True)
class KubernetesVersion:
    """A Kubernetes release (``major.minor``).

    Raises:
        ValueError: a release the server does not model (before 1.24 or after 1.32).
    """

    major: int
    minor: int

    def __post_init__(self) -> None:
        if (self.major, self.minor) < (1, 24) or (self.major, self.minor) > (1, 32):
            msg = f"the embedded server models Kubernetes 1.24 to 1.32, not {self}"
            raise ValueError(msg)

    @classmethod
    def parse(cls, text: str) -> KubernetesVersion:
        """``1.24``, ``v1.24`` or ``v1.24.3``.

        Raises:
            ValueError: not a version, or one the server does not model.
        """
        match = _FORM.match(text.strip())
        if match is None:
            msg = f"not a Kubernetes version: {text!r} (expected 1.MINOR)"
            raise ValueError(msg)
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def has(self, feature: str) -> bool:
        """Whether the release has ``feature`` on by default (``PodSchedulingReadiness``)."""
        return self.minor >= _SINCE[feature]

    def document(self) -> dict[str, Any]:
        """What ``/version`` answers."""
        if self == DEFAULT_VERSION:
            return dict(SERVER_VERSION)
        return {
            **SERVER_VERSION,
            "major": str(self.major),
            "minor": str(self.minor),
            "gitVersion": f"v{self}.0",
        }


DEFAULT_VERSION = KubernetesVersion(1, 32)
OLDEST_VERSION = KubernetesVersion(1, 24)
