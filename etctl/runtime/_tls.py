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
child process (``python -m etctl._certificates``, which imports nothing else of etctl) whose
output, the PEMs, comes back through a pipe; :func:`self_signed_pem` does the same in process, for
whoever has the memory to spare.

Invariants: a new key every time (never one shipped in the package); a private key touches the
disk only for the instant :meth:`ssl.SSLContext.load_cert_chain` needs a file, in a directory only
this user can read, removed before the context is returned; TLS 1.2 is the oldest version served.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import sys
import tempfile
from pathlib import Path
from typing import Final

from etctl import _certificates
from etctl._certificates import self_signed_pem
from etctl.errors import ConfigError

__all__ = [
    "CERT_NAME",
    "KEY_NAME",
    "certificates_child",
    "directory_context",
    "self_signed_context",
    "self_signed_pem",
    "serving_context",
]

CERT_NAME: Final = "tls.crt"
KEY_NAME: Final = "tls.key"
_CHILD_TIMEOUT: Final = 60.0


def _serving() -> ssl.SSLContext:
    # Not create_default_context(Purpose.CLIENT_AUTH): that loads the system's CA bundle (about
    # 1 MB resident) to verify client certificates, which these servers never ask for.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
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


async def certificates_child(*args: str, stdin: bytes = b"") -> bytes:
    """The output of ``python -m etctl._certificates ARGS`` fed ``stdin``, in a child process.

    ``cryptography``'s work is done there, so that this process never loads it.

    Raises:
        ConfigError: the child failed or took over a minute.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        _certificates.__name__,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(_CHILD_TIMEOUT):
            out, err = await process.communicate(stdin)
    except BaseException as exc:
        # Timed out, or cancelled (a manager stopping mid-pass): the child goes too, reaped
        # before this returns even if cancelled again meanwhile (a kill takes milliseconds), so
        # that no process or pipe outlives the call.
        if process.returncode is None:
            process.kill()
        reaped = asyncio.ensure_future(process.wait())
        while not reaped.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(reaped)
        if isinstance(exc, TimeoutError):
            msg = f"making certificates took over {_CHILD_TIMEOUT:g} s"
            raise ConfigError(msg) from None
        raise
    if process.returncode != 0:
        msg = f"making certificates failed: {err.decode(errors='replace')[-500:]}"
        raise ConfigError(msg)
    return out


async def self_signed_context(common_name: str) -> ssl.SSLContext:
    """A server's TLS context with a fresh self-signed certificate, made in a child process.

    Raises:
        ConfigError: the child failed or took over a minute.
    """
    made = json.loads(await certificates_child(common_name))
    return serving_context(made["cert"].encode(), made["key"].encode())
