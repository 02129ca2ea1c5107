"""Serving certificates: loaded from a directory, or self-signed when none is given.

A server that speaks TLS (the manager's metrics endpoint; the embedded API server) gets its
:class:`ssl.SSLContext` here, as controller-runtime's metrics server gets its own:

* from ``<dir>/tls.crt`` and ``<dir>/tls.key`` (the names a Kubernetes TLS Secret mounts, and what
  cert-manager writes), when a certificate directory is given;
* else from a self-signed certificate made at start-up for ``localhost`` and ``127.0.0.1`` (an
  ECDSA P-256 key, its own CA): the traffic is encrypted and the scraper, which authenticates
  the server by its ServiceAccount token rather than by name, skips verification, as
  kube-controller-manager's scrapers do.

The ``cryptography`` package that makes the certificate costs about 11 MB of resident memory once
imported, a quarter of an idle operator: :func:`self_signed_context` makes it in a short-lived
child process (``python -m etctl.runtime._tls``) whose output, the PEMs, comes back through a
pipe; :func:`self_signed_pem` does the same in process, for whoever has the memory to spare.

Invariants: a new key every time (never one shipped in the package); a private key touches the
disk only for the instant :meth:`ssl.SSLContext.load_cert_chain` needs a file, in a directory only
this user can read, removed before the context is returned; TLS 1.2 is the oldest version served.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from etctl.errors import ConfigError

__all__ = [
    "CERT_NAME",
    "KEY_NAME",
    "directory_context",
    "self_signed_context",
    "self_signed_pem",
    "serving_context",
]

CERT_NAME: Final = "tls.crt"
KEY_NAME: Final = "tls.key"
_VALIDITY: Final = datetime.timedelta(days=365)
_NAMES: Final = ("localhost",)
_ADDRESSES: Final = ("127.0.0.1",)
_CHILD_TIMEOUT: Final = 60.0


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


def _serving() -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def serving_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server's TLS context serving ``cert_pem`` with ``key_pem``."""
    context = _serving()
    # SSLContext loads a chain from files only: a private directory, gone when this returns.
    with tempfile.TemporaryDirectory(prefix="etctl-tls-") as directory:
        cert_file, key_file = Path(directory) / CERT_NAME, Path(directory) / KEY_NAME
        cert_file.write_bytes(cert_pem)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key_pem)
        context.load_cert_chain(cert_file, key_file)
    return context


def directory_context(
    directory: str | Path, cert_name: str = CERT_NAME, key_name: str = KEY_NAME
) -> ssl.SSLContext:
    """A server's TLS context from the certificate and key files in ``directory``.

    Raises:
        ConfigError: a file is missing or unreadable, or they do not form a pair.
    """
    cert, key = Path(directory) / cert_name, Path(directory) / key_name
    context = _serving()
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        msg = f"cannot serve TLS with {cert} and {key}: {exc}"
        raise ConfigError(msg) from exc
    return context


async def self_signed_context(common_name: str) -> ssl.SSLContext:
    """A server's TLS context with a fresh self-signed certificate, made in a child process.

    Raises:
        ConfigError: the child failed or took over a minute.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        __name__,
        common_name,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(_CHILD_TIMEOUT):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        msg = f"making a self-signed certificate took over {_CHILD_TIMEOUT:g} s"
        raise ConfigError(msg) from None
    if process.returncode != 0:
        msg = f"making a self-signed certificate failed: {err.decode(errors='replace')[-500:]}"
        raise ConfigError(msg)
    made = json.loads(out)
    return serving_context(made["cert"].encode(), made["key"].encode())


if __name__ == "__main__":
    cert_pem, key_pem = self_signed_pem(sys.argv[1])
    sys.stdout.write(json.dumps({"cert": cert_pem.decode(), "key": key_pem.decode()}))
