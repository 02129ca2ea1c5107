"""A serving certificate read from files and reloaded when they change (a certwatcher).

:class:`CertWatcher` owns the TLS context a server listens with. Each new connection's handshake
takes the certificate loaded last (the context's SNI callback hands the connection the current
one, as Go's ``tls.Config.GetCertificate`` does), so a certificate renewed on disk is served from
the next handshake on, with no restart and no connection refused in between: connections already
open keep the certificate they were opened with.

Invariants:

* **Only a usable pair is served.** A reload builds a fresh context from the two files and swaps it
  in only when the certificate and key load and match; anything else (a half-written file, a key
  of another certificate, a missing file) keeps the previous pair, counts an error in
  ``certwatcher_read_certificate_errors_total`` and is logged once per distinct error.
* **Noticed promptly, at little cost.** :meth:`CertWatcher.run` looks at the files' identity
  (device, inode, size, modification time) every ``interval`` seconds, which also sees a Secret
  volume's atomic symlink swap, and reloads when it changed; every ``resync`` seconds it rereads
  them regardless (controller-runtime polls every 10 s), so an update with an identical identity
  is not missed for long. Waits run on the injected clock.
* **TLS 1.2 or later**, HTTP/1.1 by ALPN (clients that prefer HTTP/2 fall back to it).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path

from etctl.errors import ConfigError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._clock import Clock, wait_event
from etctl.runtime._tls import directory_context

__all__ = ["CertWatcher"]

log = get_logger(__name__)

_Identity = tuple[tuple[int, int, int, int], ...]


class CertWatcher:
    """The serving certificate of ``cert_path`` and ``key_path``, reloaded when they change.

    Args:
        cert_path: the PEM certificate (chain), leaf first.
        key_path: its PEM private key.
        clock: the clock of every wait.
        interval: seconds between looks at the files.
        resync: seconds between rereads whatever the files look like.
    """

    def __init__(
        self,
        cert_path: Path,
        key_path: Path,
        *,
        clock: Clock,
        interval: float = 1.0,
        resync: float = 10.0,
    ) -> None:
        self.cert_path = cert_path
        self.key_path = key_path
        self._clock = clock
        self._interval = interval
        self._resync = resync
        self._current: ssl.SSLContext | None = None
        self._outer: ssl.SSLContext | None = None
        self._identity: _Identity | None = None  # of the files last read, loaded or not
        self._content: tuple[bytes, bytes] | None = None  # of the pair in use
        self._failure: str | None = None  # the last load error, logged once
        self._loaded = asyncio.Event()
        self.reloads = 0
        """How many times a new pair was loaded (the first load included)."""

    @property
    def loaded(self) -> bool:
        """True once a usable pair was read."""
        return self._current is not None

    @property
    def context(self) -> ssl.SSLContext:
        """The context to listen with: each handshake gets the pair loaded last.

        Raises:
            RuntimeError: nothing was loaded yet.
        """
        if self._outer is None:
            msg = f"no certificate loaded from {self.cert_path} yet"
            raise RuntimeError(msg)
        return self._outer

    def _select(
        self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        current = self._current
        if current is not None:
            connection.context = current

    def _read_identity(self) -> _Identity | None:
        try:
            stats = (os.stat(self.cert_path), os.stat(self.key_path))
        except OSError:
            return None
        return tuple((s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)

    def load(self) -> bool:
        """Read the files now; swap the pair in when it is usable and new. True if it was.

        Errors are counted and logged (once per content of the files), never raised: the
        previous pair stays in use.
        """
        self._identity = self._read_identity()
        metrics.CERTWATCHER_READS.inc()
        try:
            content = (self.cert_path.read_bytes(), self.key_path.read_bytes())
            if content == self._content:
                return False
            fresh = directory_context(
                self.cert_path.parent, self.cert_path.name, self.key_path.name
            )
            fresh.set_alpn_protocols(["http/1.1"])
        except (OSError, ConfigError) as exc:
            metrics.CERTWATCHER_READ_ERRORS.inc()
            failed = str(exc)
            if failed != self._failure:
                self._failure = failed
                # Files not written yet are the normal start (the rotator or the kubelet brings
                # them, and the server says it waits): said, not warned about.
                awaited = self._current is None and isinstance(exc, FileNotFoundError)
                (log.info if awaited else log.warning)(
                    "cannot load the serving certificate; the previous one stays in use"
                    if self._current is not None
                    else "cannot load the serving certificate yet",
                    cert=str(self.cert_path),
                    key=str(self.key_path),
                    error=failed,
                )
            return False
        if self._outer is None:
            # The first pair's context is the one listened with: it serves that pair itself (a
            # client without SNI still reaches the callback) and hands every later handshake the
            # pair loaded last. Made from what was read, not from the files when the first
            # client comes, which may be broken by then.
            fresh.sni_callback = self._select
            self._outer = fresh
        self._current = fresh
        self._content = content
        self._failure = None
        self.reloads += 1
        self._loaded.set()
        log.info("serving certificate loaded", cert=str(self.cert_path), reloads=self.reloads)
        return True

    async def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait until a usable pair is loaded (by :meth:`load` or :meth:`run`); False on timeout."""
        return await wait_event(self._clock, self._loaded, timeout)

    async def run(self) -> None:
        """Watch the files until cancelled, reloading them as they change."""
        self.load()
        last_read = self._clock.monotonic()
        while True:
            await self._clock.sleep(self._interval)
            now = self._clock.monotonic()
            if now - last_read >= self._resync or self._read_identity() != self._identity:
                last_read = now
                self.load()
