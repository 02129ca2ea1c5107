"""What the webhook certificate Secret should hold: the rotation plan, a pure function.

:class:`etctl.runtime.CertRotator` reads the Secret, asks :func:`plan` what it should hold and
writes that, injecting the CA in between. The plan reads and makes certificates with
``cryptography`` (:mod:`etctl._certificates`), so the rotator runs it in a short-lived child
process (``python -m etctl._certificates --rotate``: the request on standard input, the plan on
standard output, JSON both, see :func:`serve_plan`); the operator never loads the package. This
module imports nothing else of etctl, and nothing heavy until a plan is made.

The plan, given the Secret's data, the policy and the time:

1. A CA that is missing, unreadable, not a CA, not matching its key or expiring within the
   lookahead is replaced by a new one. The bundle (``ca.crt``) holds the CA that signs *and* the
   one it replaces while that one is still valid; the serving certificate signed by the old CA
   stays for now (``first``: what to write before the bundle is injected).
2. A serving certificate that is missing, not signed by the current CA, not matching its key, not
   covering the names and addresses, or expiring within the lookahead is replaced (``serving``:
   what to write once the bundle is injected, so a certificate of a new CA is served only after
   clients trust it). A Secret without a serving certificate gets one in ``first`` already:
   nothing is served yet that a client could refuse.
3. The next pass is due when the earliest expiry minus the lookahead comes (``due``).
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from etctl._certificates import (
    CertificateError,
    KeyPair,
    inspect,
    issue_serving_certificate,
    key_matches,
    new_ca,
    signed_by,
    split_pem,
)

__all__ = [
    "CA_CERT",
    "CA_KEY",
    "TLS_CERT",
    "TLS_KEY",
    "Plan",
    "Policy",
    "plan",
    "plan_request",
    "read_plan",
    "serve_plan",
]

CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
"""The keys of the certificate Secret (cert-controller's)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """What the certificates must be (seconds for durations)."""

    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]
    ca_name: str
    ca_validity: float
    cert_validity: float
    lookahead: float


@dataclass(frozen=True, slots=True)
class Plan:
    """What to write, in order, and when to look again.

    Attributes:
        first: the Secret's whole new data, to write before injecting its CA bundle (``None``:
            the Secret stays as it is until then).
        serving: a new serving certificate and key (``tls.crt``, ``tls.key``), to write once
            the bundle is injected (``None``: the current pair is good).
        ca_created: a new CA was made.
        replaces_ca: it replaces one (rather than filling an empty Secret).
        due: when the next rotation is due (aware UTC).
    """

    first: dict[str, bytes] | None
    serving: dict[str, bytes] | None
    ca_created: bool
    replaces_ca: bool
    due: datetime.datetime


def plan(data: Mapping[str, bytes], policy: Policy, now: datetime.datetime) -> Plan:
    """What the Secret holding ``data`` should hold at ``now`` (see the module docs).

    Raises:
        CertificateError: a certificate could not be made.
    """
    horizon = now + datetime.timedelta(seconds=policy.lookahead)
    bundle = split_pem(data.get(CA_CERT, b""))
    current = bundle[0] if bundle else b""
    key = data.get(CA_KEY, b"")
    created = not (current and _valid_ca(current, horizon) and key_matches(current, key))
    if created:
        ca = new_ca(
            policy.ca_name, now=now, validity=datetime.timedelta(seconds=policy.ca_validity)
        )
    else:
        ca = KeyPair(current, key)
    # The bundle: the signing CA, then the one it replaced while that one is still valid.
    older = [pem for pem in bundle if pem != ca.cert_pem and _valid_ca(pem, now)]
    wanted = {**data, CA_CERT: b"".join([ca.cert_pem, *older[:1]]), CA_KEY: ca.key_pem}
    first = None
    if wanted != data:
        if TLS_CERT not in wanted or TLS_KEY not in wanted:
            wanted.update(_serving(ca, wanted, policy, now, horizon) or {})
        first = wanted
    serving = _serving(ca, wanted, policy, now, horizon)
    served = (serving or wanted)[TLS_CERT]
    lookahead = datetime.timedelta(seconds=policy.lookahead)
    due = min(inspect(ca.cert_pem).not_after, inspect(served).not_after) - lookahead
    return Plan(first, serving, created, created and bool(current), due)


def _valid_ca(pem: bytes, moment: datetime.datetime) -> bool:
    try:
        info = inspect(pem)
    except CertificateError:
        return False
    return info.is_ca and info.valid_until(moment)


def _serving(
    ca: KeyPair,
    data: Mapping[str, bytes],
    policy: Policy,
    now: datetime.datetime,
    horizon: datetime.datetime,
) -> dict[str, bytes] | None:
    """A new serving certificate and key, or None when the current pair is good."""
    cert, key = data.get(TLS_CERT, b""), data.get(TLS_KEY, b"")
    try:
        info = inspect(cert) if cert else None
    except CertificateError:
        info = None
    if (
        info is not None
        and info.valid_until(horizon)
        and info.covers(policy.dns_names, policy.ip_addresses)
        and signed_by(cert, ca.cert_pem)
        and key_matches(cert, key)
    ):
        return None
    issued = issue_serving_certificate(
        ca,
        dns_names=policy.dns_names,
        ip_addresses=policy.ip_addresses,
        now=now,
        validity=datetime.timedelta(seconds=policy.cert_validity),
    )
    return {TLS_CERT: issued.cert_pem, TLS_KEY: issued.key_pem}


# -- the child's protocol


def _encode(data: Mapping[str, bytes] | None) -> dict[str, str] | None:
    if data is None:
        return None
    return {key: base64.b64encode(value).decode() for key, value in sorted(data.items())}


def _decode(data: Mapping[str, str] | None) -> dict[str, bytes] | None:
    if data is None:
        return None
    return {key: base64.b64decode(value) for key, value in data.items()}


def plan_request(data: Mapping[str, bytes], policy: Policy, now: datetime.datetime) -> str:
    """The JSON request :func:`serve_plan` answers."""
    return json.dumps({"data": _encode(data), "policy": asdict(policy), "now": now.isoformat()})


def serve_plan(request: str) -> str:
    """Answer a :func:`plan_request` with the plan, as JSON (the child process's side)."""
    asked: dict[str, Any] = json.loads(request)
    policy = asked["policy"]
    made = plan(
        _decode(asked["data"]) or {},
        Policy(
            dns_names=tuple(policy["dns_names"]),
            ip_addresses=tuple(policy["ip_addresses"]),
            ca_name=policy["ca_name"],
            ca_validity=policy["ca_validity"],
            cert_validity=policy["cert_validity"],
            lookahead=policy["lookahead"],
        ),
        datetime.datetime.fromisoformat(asked["now"]),
    )
    return json.dumps(
        {
            "first": _encode(made.first),
            "serving": _encode(made.serving),
            "ca_created": made.ca_created,
            "replaces_ca": made.replaces_ca,
            "due": made.due.isoformat(),
        }
    )


def read_plan(answer: str) -> Plan:
    """The plan of a :func:`serve_plan` answer."""
    made: dict[str, Any] = json.loads(answer)
    return Plan(
        first=_decode(made["first"]),
        serving=_decode(made["serving"]),
        ca_created=bool(made["ca_created"]),
        replaces_ca=bool(made["replaces_ca"]),
        due=datetime.datetime.fromisoformat(made["due"]),
    )
