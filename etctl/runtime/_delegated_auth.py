"""Who may read an endpoint: the bearer token and the path judged by the API server.

:class:`DelegatedAuth` is controller-runtime's metrics filter
(``filters.WithAuthenticationAndAuthorization``) for etctl's HTTP server: a request's bearer token
is authenticated by a ``TokenReview`` and the user it names is authorized by a
``SubjectAccessReview`` on the non-resource URL (the request's path, its method in lower case as
the verb: ``get /metrics``). So a scraper needs what it would need to read ``/metrics`` from the
API server itself, a binding to a ClusterRole with ``nonResourceURLs: ["/metrics"]``, and the
operator needs ``create`` on ``tokenreviews`` and ``subjectaccessreviews``.

The answers are those of controller-runtime's filter: no token or a token the review does not
authenticate is ``401 Unauthorized``; a user the review does not allow is ``403 Authorization
denied for user <name>``; a review that fails (the API server unreachable, the operator not
allowed to create it) is ``500``, and is logged. Reviews are cached as the delegating
authenticator and authorizer cache them: a token's review for a minute, an allowed decision for
five minutes, a denied one for 30 seconds, at most :data:`CACHE_SIZE` of each, keyed by a digest of
the token, never the token itself. No token, and no part of one, is ever logged.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from etctl.errors import EtctlError
from etctl.log import get_logger
from etctl.runtime._client import Client
from etctl.runtime._clock import Clock
from etctl.runtime._http_server import Request, Response, text
from etctl.runtime._resources import Resource

__all__ = [
    "CACHE_SIZE",
    "SUBJECTACCESSREVIEWS",
    "TOKENREVIEWS",
    "DelegatedAuth",
    "ReviewedUser",
]

log = get_logger(__name__)

TOKENREVIEWS: Final = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
SUBJECTACCESSREVIEWS: Final = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
CACHE_SIZE: Final = 1024
"""Reviews kept per cache; the oldest goes first."""
_TOKEN_TTL: Final = 60.0
_ALLOW_TTL: Final = 300.0
_DENY_TTL: Final = 30.0
_REVIEW_TIMEOUT: Final = 10.0

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class ReviewedUser:
    """Who a TokenReview says a token belongs to."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


_NOBODY: Final = ReviewedUser("")
"""What a token that did not authenticate is cached as."""


class _Expiring(Generic[K, V]):
    """A bounded map whose entries expire (on the injected clock)."""

    def __init__(self, clock: Clock, size: int) -> None:
        self._clock = clock
        self._size = size
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock.monotonic() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        self._entries[key] = (self._clock.monotonic() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class _ReviewFailed(Exception):
    """A review could not be made: the answer is 500."""


@dataclass
class DelegatedAuth:
    """Authenticates and authorizes requests through the API server (see the module docstring).

    Args:
        client: the client the reviews are created with (the operator's own).
        clock: what the caches' lifetimes run on.
        timeout: seconds a review may take before the request is answered 500.
    """

    client: Client
    clock: Clock
    timeout: float = _REVIEW_TIMEOUT
    _tokens: _Expiring[str, ReviewedUser] = field(init=False)
    _decisions: _Expiring[tuple[Any, ...], tuple[bool, str]] = field(init=False)

    def __post_init__(self) -> None:
        self._tokens = _Expiring(self.clock, CACHE_SIZE)
        self._decisions = _Expiring(self.clock, CACHE_SIZE)

    async def check(self, request: Request) -> Response | None:
        """``None`` when ``request`` may be served, else the answer that refuses it."""
        try:
            user = await self.authenticate(request.headers.get("authorization"))
        except _ReviewFailed:
            return text(500, "Authentication failed\n")
        if user is None:
            return text(401, "Unauthorized\n")
        verb = request.method.lower()
        try:
            allowed, reason = await self.authorize(user, verb, request.path)
        except _ReviewFailed:
            return text(500, f"Authorization for user {user.name} failed\n")
        if not allowed:
            log.debug("request denied", user=user.name, verb=verb, path=request.path, reason=reason)
            return text(403, f"Authorization denied for user {user.name}\n")
        return None

    async def authenticate(self, authorization: str | None) -> ReviewedUser | None:
        """The user a bearer token belongs to; ``None`` when there is none or it is not valid.

        Raises:
            _ReviewFailed: the TokenReview could not be made.
        """
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._tokens.get(key)
        if cached is not None:
            return None if cached is _NOBODY else cached
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = await self._review(TOKENREVIEWS, review, "authenticating a token")
        user = _user(status) if status.get("authenticated") is True else _NOBODY
        self._tokens.put(key, user, _TOKEN_TTL)
        return None if user is _NOBODY else user

    async def authorize(self, user: ReviewedUser, verb: str, path: str) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` the non-resource URL ``path``, and why not.

        Raises:
            _ReviewFailed: the SubjectAccessReview could not be made.
        """
        key = (user, verb, path)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {name: list(values) for name, values in user.extra}
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = await self._review(SUBJECTACCESSREVIEWS, review, f"authorizing {user.name}")
        allowed = status.get("allowed") is True and status.get("denied") is not True
        decision = (allowed, str(status.get("reason") or ""))
        self._decisions.put(key, decision, _ALLOW_TTL if allowed else _DENY_TTL)
        return decision

    async def _review(
        self, resource: Resource, review: Mapping[str, Any], what: str
    ) -> Mapping[str, Any]:
        try:
            async with asyncio.timeout(self.timeout):
                answer = await self.client.create(resource, review)
        except (EtctlError, TimeoutError) as exc:
            # str(exc) is the API server's message or the transport's: never the token sent.
            log.error("a review for the metrics endpoint failed", review=what, error=str(exc))
            raise _ReviewFailed from None
        status = answer.get("status")
        return status if isinstance(status, Mapping) else {}


def _user(status: Mapping[str, Any]) -> ReviewedUser:
    user = status.get("user")
    user = user if isinstance(user, Mapping) else {}
    extra = user.get("extra")
    pairs: Sequence[tuple[str, tuple[str, ...]]] = ()
    if isinstance(extra, Mapping):
        pairs = tuple(sorted((str(k), tuple(map(str, v or ()))) for k, v in extra.items()))
    return ReviewedUser(
        name=str(user.get("username") or ""),
        uid=str(user.get("uid") or ""),
        groups=tuple(str(group) for group in user.get("groups") or ()),
        extra=tuple(pairs),
    )
