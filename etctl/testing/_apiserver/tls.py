"""A serving certificate for the embedded API server, made when it starts.

kubectl sends a bearer token only over TLS, so a server that authenticates tokens must serve HTTPS
for kubectl to use it at all. :func:`serving_certificate` makes a self-signed certificate (an ECDSA
P-256 key, valid for a day, its own CA) for the server's loopback names; the kubeconfig the server
writes carries it as ``certificate-authority-data``, so clients verify the server as they would a
cluster's, with nothing to skip.

The certificate is the runtime's (:func:`etctl.runtime.self_signed_pem`, made in this process:
the test server has the memory to spare), and so are its invariants: a new key every time, on disk
only for the instant :class:`ssl.SSLContext` loads it.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from etctl.runtime import self_signed_pem, serving_context

__all__ = ["ServingCertificate", "serving_certificate"]

_VALIDITY = datetime.timedelta(days=1)
_NAMES = ("localhost",)
_ADDRESSES = ("127.0.0.1", "::1")


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """A server's TLS settings and what its clients need to trust them.

    Attributes:
        context: the server side's TLS context, certificate and key loaded.
        ca_pem: the certificate (its own CA), PEM-encoded.
    """

    context: ssl.SSLContext
    ca_pem: bytes

    @property
    def ca_data(self) -> str:
        """The certificate as a kubeconfig's ``certificate-authority-data`` (base64 of the PEM)."""
        return base64.b64encode(self.ca_pem).decode()


def serving_certificate(host: str, *, names: Sequence[str] = ()) -> ServingCertificate:
    """A fresh self-signed certificate valid for ``host``, the loopback names and ``names``.

    ``names`` adds DNS names (a webhook's ``<service>.<namespace>.svc``, say).
    """
    addresses = list(_ADDRESSES)
    dns = [*_NAMES, *names]
    try:
        ipaddress.ip_address(host)
        if host not in addresses:
            addresses.append(host)
    except ValueError:
        dns.append(host)
    cert_pem, key_pem = self_signed_pem(
        "etctl embedded apiserver", dns, sorted(addresses), validity=_VALIDITY
    )
    return ServingCertificate(serving_context(cert_pem, key_pem), cert_pem)
