"""Certificates a webhook server provisions for itself: a CA, and serving certificates it signs.

What cert-controller (Kueue's, Trainer's) makes, with ECDSA P-256 keys instead of RSA 2048 (as
strong, and generated in a millisecond instead of a hundred): a self-signed CA (``CA:TRUE``,
``keyCertSign``) and serving certificates for the webhook Service's DNS names and any IP
addresses (``serverAuth``), valid from an hour before their issue (clock skew) for a given time.
Keys are PKCS#8 PEM; nothing is ever written here, only returned.

:func:`inspect` reads what rotation decides on: validity, names, whether a certificate is a CA,
whether a key belongs to it and whether a CA signed it. Unparseable input is a
:class:`CertificateError`, never a crash. ``cryptography`` is imported when a function runs, so an
operator that serves certificates it did not make (cert-manager's) never loads it.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

__all__ = [
    "CertificateError",
    "CertificateInfo",
    "KeyPair",
    "inspect",
    "issue_serving_certificate",
    "key_matches",
    "new_ca",
    "signed_by",
    "split_pem",
]

if TYPE_CHECKING:
    from cryptography import x509

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


def _key_usage(*, signs: bool) -> x509.KeyUsage:
    """Digital signatures (ECDSA keys need no encipherment), and certificates too for a CA."""
    from cryptography import x509  # noqa: PLC0415

    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs,
        crl_sign=signs,
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
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0] if dns_names else str(ip_addresses[0])))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
        .not_valid_after(min(now + validity, ca_cert.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
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
