"""A self-signed serving certificate, made by the ``cryptography`` package.

Apart from the runtime (:mod:`etctl.runtime._tls`) because the package weighs about 11 MB of
resident memory once imported: an operator runs ``python -m etctl._certificates <common name>``
in a short-lived child process, which imports nothing of etctl but this module, and reads the
certificate and key back from its standard output (one JSON object: ``cert``, ``key``, PEM text).

Invariants: a new ECDSA P-256 key every time (never one shipped in the package); the certificate
is its own CA, serves the names and addresses asked for, and is valid from five minutes ago.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["self_signed_pem"]

_VALIDITY: Final = datetime.timedelta(days=365)
_NAMES: Final = ("localhost",)
_ADDRESSES: Final = ("127.0.0.1",)


def self_signed_pem(
    common_name: str,
    names: Sequence[str] = _NAMES,
    addresses: Sequence[str] = _ADDRESSES,
    validity: datetime.timedelta = _VALIDITY,
) -> tuple[bytes, bytes]:
    """A fresh self-signed certificate and its private key, PEM-encoded.

    The certificate is its own CA (so a client may trust it as one) and serves ``names`` and
    ``addresses``.
    """
    # Imported here: see the module docstring for what it weighs.
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(dns) for dns in names]
    sans += [x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
    usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


if __name__ == "__main__":
    cert_pem, key_pem = self_signed_pem(sys.argv[1])
    sys.stdout.write(json.dumps({"cert": cert_pem.decode(), "key": key_pem.decode()}))
