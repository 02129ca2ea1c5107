"""Authentication: who a request comes from, read from its bearer token as kube-apiserver reads it.

A token maps to a :class:`UserInfo` (a name and groups). Three kinds of identity exist:

* static tokens (:meth:`Authenticator.add_token`), as ``--token-auth-file`` configures them;
* ServiceAccount tokens (:meth:`Authenticator.service_account_token`): the user
  ``system:serviceaccount:<ns>:<name>`` in the groups ``system:serviceaccounts`` and
  ``system:serviceaccounts:<ns>``. A token is bound to the ServiceAccount's uid when it is minted,
  and stops authenticating once that ServiceAccount is gone or recreated, as bound tokens do;
* the administrator of the server's own kubeconfig (:data:`ADMIN_TOKEN`), in ``system:masters``.

Every authenticated user is also in ``system:authenticated`` (the real authenticator chain adds it).
A request without a token is ``system:anonymous`` in ``system:unauthenticated`` when anonymous
requests are allowed, and rejected otherwise; a token no one issued is always rejected (401).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from etctl.errors import Unauthorized
from etctl.testing._apiserver.store import Store, object_key

__all__ = [
    "ADMIN_TOKEN",
    "ADMIN_USER",
    "ANONYMOUS",
    "AUTHENTICATED",
    "MASTERS",
    "Authenticator",
    "UserInfo",
    "service_account_user",
    "unauthorized",
]

ADMIN_TOKEN = "etctl-embedded-apiserver"  # noqa: S105 - the test administrator's token, not a secret
"""The token of the kubeconfig :meth:`ApiServer.kubeconfig` writes: full access."""

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
SA_PREFIX = "system:serviceaccount:"
SA_GROUP = "system:serviceaccounts"
_SERVICEACCOUNTS = ("", "serviceaccounts")


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated identity.

    Attributes:
        name: the user name (``system:serviceaccount:ns:sa`` for a ServiceAccount).
        groups: the groups, ``system:authenticated`` included for every authenticated user.
        uid: a unique id (the ServiceAccount's uid for its tokens), ``""`` if none.
    """

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""


ADMIN_USER = UserInfo("etctl-admin", (MASTERS, AUTHENTICATED))
"""Who :data:`ADMIN_TOKEN` authenticates as."""

ANONYMOUS = UserInfo("system:anonymous", (UNAUTHENTICATED,))
"""Who a request without a token is, when anonymous requests are allowed."""


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """The identity of ServiceAccount ``namespace/name``."""
    return UserInfo(
        f"{SA_PREFIX}{namespace}:{name}",
        (SA_GROUP, f"{SA_GROUP}:{namespace}", AUTHENTICATED),
        uid,
    )


def unauthorized() -> Unauthorized:
    """401, as the real server answers a missing or rejected credential."""
    return Unauthorized("Unauthorized", reason="Unauthorized")


@dataclass(frozen=True, slots=True)
class _Bound:
    """A ServiceAccount token: whose, and the uid it was minted for."""

    namespace: str
    name: str
    uid: str


class Authenticator:
    """Maps bearer tokens to users.

    Args:
        store: the server's store (ServiceAccount tokens are checked against it).
        anonymous: treat a request without a token as ``system:anonymous`` instead of
            rejecting it (kube-apiserver's ``--anonymous-auth``).
    """

    def __init__(self, store: Store, *, anonymous: bool = False) -> None:
        self._store = store
        self.anonymous = anonymous
        self._static: dict[str, UserInfo] = {ADMIN_TOKEN: ADMIN_USER}
        self._bound: dict[str, _Bound] = {}

    def add_token(
        self, token: str, *, user: str, groups: Iterable[str] = (), uid: str = ""
    ) -> UserInfo:
        """Accept ``token`` as ``user`` in ``groups`` (plus ``system:authenticated``).

        Raises:
            ValueError: the token is empty or already issued.
        """
        if not token or token in self._static or token in self._bound:
            msg = "a token must be non-empty and not issued already"
            raise ValueError(msg)
        names = tuple(dict.fromkeys((*groups, AUTHENTICATED)))
        info = UserInfo(user, names, uid)
        self._static[token] = info
        return info

    def service_account_token(self, namespace: str, name: str) -> str:
        """Mint a token for ServiceAccount ``namespace/name``, bound to its current uid.

        Raises:
            LookupError: the ServiceAccount does not exist (a TokenRequest needs it).
        """
        account = self._store.get(_SERVICEACCOUNTS, object_key(namespace, name))
        if account is None:
            msg = f'serviceaccounts "{name}" not found in namespace "{namespace}"'
            raise LookupError(msg)
        token = secrets.token_urlsafe(24)
        self._bound[token] = _Bound(namespace, name, str(account["metadata"].get("uid", "")))
        return token

    def authenticate(self, authorization: str | None) -> UserInfo:
        """The user an ``Authorization`` header value names.

        Raises:
            etctl.errors.Unauthorized: no token (and anonymous requests are off), a malformed
                header, a token no one issued, or a ServiceAccount token whose account is gone.
        """
        if not authorization:
            if self.anonymous:
                return ANONYMOUS
            raise unauthorized()
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise unauthorized()
        found = self._static.get(token)
        if found is not None:
            return found
        bound = self._bound.get(token)
        if bound is None:
            raise unauthorized()
        account = self._store.get(_SERVICEACCOUNTS, object_key(bound.namespace, bound.name))
        if account is None or str(account["metadata"].get("uid", "")) != bound.uid:
            raise unauthorized()
        return service_account_user(bound.namespace, bound.name, bound.uid)
