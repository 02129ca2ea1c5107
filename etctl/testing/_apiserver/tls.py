"""A serving certificate for the embedded API server, made when it starts.

kubectl sends a bearer token only over TLS, so a server that authenticates tokens must serve HTTPS
for kubectl to use it at all. :func:`serving_certificate` makes a self-signed certificate (an ECDSA
P-256 key, valid for a day, its own CA) for the server's loopback names; the kubeconfig the server
writes carries it as ``certificate-authority-data``, so clients verify the server as they would a
cluster's, with nothing to skip.

Invariants: a new key every time (never one shipped in the package); the private key exists in
this process's memory and, for the instant :class:`ssl.SSLContext` needs to load it, in a file only
the current user can read, removed before :func:`serving_certificate` returns.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
    # Imported here: only a server asked for TLS needs it.
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "etctl embedded apiserver")])
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(dns) for dns in (*_NAMES, *names)]
    addresses = set(_ADDRESSES)
    try:
        ipaddress.ip_address(host)
        addresses.add(host)
    except ValueError:
        sans.append(x509.DNSName(host))
    sans += [x509.IPAddress(ipaddress.ip_address(address)) for address in sorted(addresses)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    # SSLContext loads a chain from files only: a private directory, gone when this returns.
    with tempfile.TemporaryDirectory(prefix="etctl-tls-") as directory:
        cert_file, key_file = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        cert_file.write_bytes(cert_pem)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key_pem)
        context.load_cert_chain(cert_file, key_file)
    return ServingCertificate(context, cert_pem)
