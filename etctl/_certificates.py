"""Certificates made and read by the ``cryptography`` package, apart from the rest of etctl.

Apart because the package weighs about 11 MB of resident memory once imported, a quarter of an
idle operator: an operator runs this module in a short-lived child process, which imports nothing
of etctl but this module and :mod:`etctl._cert_rotation`, and reads the result from its standard
output (``python -m etctl._certificates <common name>``: one JSON object, ``cert`` and ``key``,
PEM text, for :mod:`etctl.runtime._tls`; the webhook certificates' rotation plans through
:mod:`etctl._cert_rotation`). Tests and whoever has the memory to spare call the functions in
process; ``cryptography`` is imported when one runs.

What it makes (ECDSA P-256 keys, as strong as RSA 2048 and generated in a millisecond instead of a
hundred; a new key every time, never one shipped in the package; PKCS#8 PEM):

* :func:`self_signed_pem`: a serving certificate that is its own CA, for the metrics endpoint and
  the embedded API server, valid from five minutes ago;
* :func:`new_ca` and :func:`issue_serving_certificate`: what cert-controller (Kueue's, Trainer's)
  makes for webhooks, a self-signed CA (``CA:TRUE``, ``keyCertSign``) and serving certificates it
  signs for the webhook Service's DNS names and any IP addresses (``serverAuth``), valid from an
  hour before their issue (clock skew).

:func:`inspect` reads what rotation decides on: validity, names, whether a certificate is a CA;
:func:`key_matches` and :func:`signed_by` whether a key belongs to a certificate and whether a CA
signed it. Unparseable input is a :class:`CertificateError`, never a crash.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

__all__ = [
    "CertificateError",
    "CertificateInfo",
    "KeyPair",
    "inspect",
    "issue_serving_certificate",
    "key_matches",
    "new_ca",
    "self_signed_pem",
    "signed_by",
    "split_pem",
]

if TYPE_CHECKING:
    from cryptography import x509

_VALIDITY: Final = datetime.timedelta(days=365)
_NAMES: Final = ("localhost",)
_ADDRESSES: Final = ("127.0.0.1",)

_SKEW = datetime.timedelta(hours=1)
_PEM_END = b"-----END CERTIFICATE-----"


class CertificateError(ValueError):
    """A certificate or key cannot be read, or does not fit its use."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate and its private key, PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True, slots=True)
class CertificateInfo:
    """What rotation reads from a certificate.

    Attributes:
        not_before: the start of its validity (aware UTC).
        not_after: the end of its validity (aware UTC).
        dns_names: its DNS subject alternative names.
        ip_addresses: its IP subject alternative names, as strings.
        is_ca: whether it may sign certificates.
    """

    not_before: datetime.datetime
    not_after: datetime.datetime
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]
    is_ca: bool

    def covers(self, dns_names: Sequence[str], ip_addresses: Sequence[str]) -> bool:
        """True when every name and address is among its subject alternative names."""
        ips = {str(ipaddress.ip_address(ip)) for ip in ip_addresses}
        return set(dns_names) <= set(self.dns_names) and ips <= set(self.ip_addresses)

    def valid_until(self, moment: datetime.datetime) -> bool:
        """True when it is valid now and still at ``moment`` (a lookahead)."""
        return self.not_before <= moment <= self.not_after


def split_pem(bundle: bytes) -> list[bytes]:
    """The certificates of a PEM bundle, each as its own PEM block."""
    blocks = []
    for part in bundle.split(_PEM_END):
        start = part.find(b"-----BEGIN CERTIFICATE-----")
        if start >= 0:
            blocks.append(part[start:] + _PEM_END + b"\n")
    return blocks


def _load_cert(pem: bytes) -> x509.Certificate:
    from cryptography import x509  # noqa: PLC0415 - only rotation needs cryptography

    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError as error:
        msg = f"not a PEM certificate: {error}"
        raise CertificateError(msg) from error


def _load_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    try:
        return serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as error:
        msg = "not an unencrypted PEM private key"
        raise CertificateError(msg) from error


def inspect(cert_pem: bytes) -> CertificateInfo:
    """What the first certificate of ``cert_pem`` says about itself.

    Raises:
        CertificateError: it cannot be parsed.
    """
    from cryptography import x509  # noqa: PLC0415

    cert = _load_cert(cert_pem)
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = tuple(sans.get_values_for_type(x509.DNSName))
        ips = tuple(str(ip) for ip in sans.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        dns, ips = (), ()
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    return CertificateInfo(
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
        dns_names=dns,
        ip_addresses=ips,
        is_ca=is_ca,
    )


def key_matches(cert_pem: bytes, key_pem: bytes) -> bool:
    """True when ``key_pem`` is the private key of the certificate (False when unreadable)."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    try:
        public = _load_cert(cert_pem).public_key()
        key = _load_key(key_pem)
    except CertificateError:
        return False
    encoding, fmt = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    return bool(public.public_bytes(encoding, fmt) == key.public_key().public_bytes(encoding, fmt))


def signed_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    """True when the CA's key signed the certificate (False when either is unreadable)."""
    try:
        cert, ca = _load_cert(cert_pem), _load_cert(ca_pem)
        cert.verify_directly_issued_by(ca)
    except (CertificateError, ValueError, TypeError):
        return False
    except Exception:  # noqa: BLE001 - cryptography's InvalidSignature and kin: not signed by it
        return False
    return True


def _name(common_name: str) -> x509.Name:
    from cryptography import x509  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(*, signs: bool, revokes: bool | None = None) -> x509.KeyUsage:
    """Digital signatures (ECDSA keys need no encipherment); a CA's certificates and CRLs too."""
    from cryptography import x509  # noqa: PLC0415

    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs,
        crl_sign=signs if revokes is None else revokes,
        encipher_only=False,
        decipher_only=False,
    )


def _encode(cert: x509.Certificate, key: Any) -> KeyPair:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    return KeyPair(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def new_ca(common_name: str, *, now: datetime.datetime, validity: datetime.timedelta) -> KeyPair:
    """A fresh self-signed CA valid from an hour before ``now`` for ``validity``."""
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _encode(cert, key)


def issue_serving_certificate(
    ca: KeyPair,
    *,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    now: datetime.datetime,
    validity: datetime.timedelta,
) -> KeyPair:
    """A serving certificate for the names and addresses, signed by ``ca``.

    Raises:
        CertificateError: the CA's certificate or key is unusable, or no name is given.
    """
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import ExtendedKeyUsageOID  # noqa: PLC0415

    if not dns_names and not ip_addresses:
        msg = "a serving certificate needs a DNS name or an IP address"
        raise CertificateError(msg)
    ca_cert, ca_key = _load_cert(ca.cert_pem), _load_key(ca.key_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0] if dns_names else str(ip_addresses[0])))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
        .not_valid_after(min(now + validity, ca_cert.not_valid_after_utc))
        .add_extension(_sans(dns_names, ip_addresses), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _encode(cert, key)


def _sans(dns_names: Sequence[str], ip_addresses: Sequence[str]) -> x509.SubjectAlternativeName:
    from cryptography import x509  # noqa: PLC0415

    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    return x509.SubjectAlternativeName(names)


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
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import ExtendedKeyUsageOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(_sans(names, addresses), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(signs=True, revokes=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pair = _encode(cert, key)
    return pair.cert_pem, pair.key_pem


def _main(argv: Sequence[str]) -> None:
    if argv[:1] == ["--rotate"]:
        from etctl._cert_rotation import serve_plan  # noqa: PLC0415 - the child's other task

        sys.stdout.write(serve_plan(sys.stdin.read()))
        return
    cert_pem, key_pem = self_signed_pem(argv[0])
    sys.stdout.write(json.dumps({"cert": cert_pem.decode(), "key": key_pem.decode()}))


if __name__ == "__main__":
    _main(sys.argv[1:])
