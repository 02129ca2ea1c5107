"""Health checks and the manager's HTTP server: ``/metrics``, ``/healthz`` and ``/readyz``.

A :class:`Checks` set holds named checks: callables that return ``None`` when healthy and the reason
otherwise (an exception counts as a failure, its text as the reason). It is served the way
controller-runtime serves its probes:

* ``GET <path>`` runs every check but those named by ``?exclude=<name>`` (repeatable). All passing:
  200 and ``ok``; any failing: 500 and a line per check, sorted by name (``[+]name ok``,
  ``[+]name excluded: ok``, ``[-]name failed: reason withheld``), a warning for unknown excludes and
  ``healthz check failed``. ``?verbose`` asks for the lines on success too, ending in ``healthz
  check passed``. The aggregate never shows a reason: it is public.
* ``GET <path>/<name>`` runs one check: 200 ``ok``, or 500 ``internal server error: <reason>``; 404
  for an unknown name. A set without checks serves ``ping``, which always passes.

:class:`HttpServer` binds these and ``/metrics`` (the Prometheus exposition of
:data:`etctl.runtime.REGISTRY`, OpenMetrics when asked for: :mod:`etctl.runtime._exposition`) on
the manager's event loop. With
:class:`SecureServing`, ``/metrics`` is served over HTTPS behind a guard (the manager's is
controller-runtime's TokenReview and SubjectAccessReview filter), with a certificate from a
directory or self-signed (:mod:`etctl.runtime._tls`), loaded or made at the first connection (the
files are checked at start); the probes stay plain HTTP, for the kubelet, on their own address.
Bind addresses are ``host:port`` (``:8080`` for every interface, ``127.0.0.1:0`` for a free
loopback port); ``0`` disables an endpoint. Metrics and probes on the same fixed address share
one listener. Checks must be quick and must not block: they read state that other tasks maintain.
The HTTP side is :mod:`etctl.runtime._http_server` (``GET`` and ``HEAD``, bounded requests, a
timeout on every read and write), not a web framework: importing or serving this module loads no
aiohttp. :meth:`HttpServer.stop` drops open connections, so it returns within about a second
whatever the clients do; a failed :meth:`HttpServer.start` leaves nothing bound.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.registry import CollectorRegistry

from etctl.errors import ConfigError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._exposition import choose_encoder
from etctl.runtime._http_server import (
    DEFAULT_TIMEOUT,
    Guard,
    Handler,
    Listener,
    Request,
    Response,
    Router,
    TlsSettings,
    text,
)
from etctl.runtime._tls import CERT_NAME, KEY_NAME, directory_context, self_signed_context

__all__ = ["Checker", "Checks", "HttpServer", "SecureServing", "parse_bind_address", "ping"]

log = get_logger(__name__)

Checker = Callable[[], str | None]
"""A check: ``None`` when healthy, else why not. Must return at once."""


def ping() -> str | None:
    """The check that always passes: the process answers HTTP."""
    return None


@dataclass(frozen=True, slots=True)
class _Status:
    name: str
    healthy: bool
    excluded: bool = False


class Checks:
    """An ordered set of uniquely named checks, served at one path.

    Args:
        path: where the set is served (``/healthz``, ``/readyz``).
    """

    def __init__(self, path: str) -> None:
        if not path.startswith("/") or path.endswith("/"):
            msg = f"a check path starts with '/' and does not end with one, got {path!r}"
            raise ValueError(msg)
        self.path = path
        self._checks: dict[str, Checker] = {}

    def add(self, name: str, check: Checker) -> None:
        """Add a check.

        Raises:
            ValueError: the name is empty, contains ``/`` or is taken.
        """
        if not name or "/" in name:
            msg = f"a check name is non-empty and has no '/', got {name!r}"
            raise ValueError(msg)
        if name in self._checks:
            msg = f"a check named {name!r} is already served at {self.path}"
            raise ValueError(msg)
        self._checks[name] = check

    @property
    def names(self) -> list[str]:
        """The check names, in the order they were added."""
        return list(self._checks)

    def _effective(self) -> Mapping[str, Checker]:
        return self._checks or {"ping": ping}

    def run(self, name: str) -> str | None:
        """Run one check: ``None`` when it passes, else the reason.

        Raises:
            KeyError: no check of that name.
        """
        check = self._effective()[name]
        try:
            return check()
        except Exception as err:  # noqa: BLE001 - a raising check is a failing check
            return f"{type(err).__name__}: {err}"

    def failing(self) -> dict[str, str]:
        """Every failing check and its reason (for logs and tests)."""
        reasons = {name: self.run(name) for name in self._effective()}
        return {name: reason for name, reason in reasons.items() if reason is not None}

    def aggregate(self, *, exclude: Collection[str] = (), verbose: bool = False) -> tuple[int, str]:
        """The HTTP status and body of the aggregated endpoint (see the module docs)."""
        unknown = set(exclude) - set(self._effective())
        statuses: list[_Status] = []
        for name in sorted(self._effective()):
            if name in exclude:
                statuses.append(_Status(name, healthy=True, excluded=True))
                continue
            reason = self.run(name)
            if reason is not None:
                log.debug("check failed", path=self.path, check=name, reason=reason)
            statuses.append(_Status(name, healthy=reason is None))
        failed = not all(status.healthy for status in statuses)
        if not failed and not verbose:
            return 200, "ok"
        lines = []
        for status in statuses:
            if status.excluded:
                lines.append(f"[+]{status.name} excluded: ok")
            elif status.healthy:
                lines.append(f"[+]{status.name} ok")
            else:
                lines.append(f"[-]{status.name} failed: reason withheld")
        if unknown:
            quoted = ",".join(f'"{name}"' for name in sorted(unknown))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        lines.append("healthz check failed" if failed else "healthz check passed")
        return (500 if failed else 200), "\n".join(lines) + "\n"

    def single(self, name: str) -> tuple[int, str]:
        """The HTTP status and body of ``<path>/<name>``."""
        if name not in self._effective():
            return 404, "404 page not found\n"
        reason = self.run(name)
        if reason is None:
            return 200, "ok"
        return 500, f"internal server error: {reason}\n"

    def __repr__(self) -> str:
        return f"Checks({self.path!r}, {self.names})"


def parse_bind_address(address: str) -> tuple[str | None, int] | None:
    """Parse ``host:port``; ``None`` for ``0`` (disabled) or an empty address.

    ``:8080`` binds every interface (host ``None``), ``[::1]:8080`` an IPv6 address.

    Raises:
        ConfigError: not ``host:port`` with a port in 0-65535.
    """
    address = address.strip()
    if address in ("", "0"):
        return None
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        msg = f"a bind address is host:port, ':port' or '0' (disabled), got {address!r}"
        raise ConfigError(msg)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host or None), int(port_text)


@dataclass(frozen=True, slots=True)
class SecureServing:
    """How ``/metrics`` is served securely: over HTTPS, behind a guard.

    Attributes:
        guard: what every request must pass (authentication and authorization).
        cert_dir: the directory of the serving certificate and key; ``None``: a self-signed
            certificate made at start.
        cert_name: the certificate's file name in ``cert_dir``.
        key_name: the key's file name in ``cert_dir``.
    """

    guard: Guard
    cert_dir: str | None = None
    cert_name: str = CERT_NAME
    key_name: str = KEY_NAME

    def check(self) -> None:
        """Fail at start, not at the first scrape, when the certificate files cannot be read.

        Raises:
            ConfigError: a file is missing or unreadable.
        """
        if not self.cert_dir:
            return
        for name in (self.cert_name, self.key_name):
            path = Path(self.cert_dir) / name
            try:
                with path.open("rb"):
                    pass
            except OSError as exc:
                msg = f"the metrics certificate file {path} cannot be read: {exc}"
                raise ConfigError(msg) from exc

    async def context(self) -> ssl.SSLContext:
        """The TLS settings: the files read, or a self-signed certificate made, now.

        Raises:
            ConfigError: the files cannot be used, or no certificate could be made.
        """
        if self.cert_dir:
            return directory_context(self.cert_dir, self.cert_name, self.key_name)
        return await self_signed_context("etctl metrics")


class HttpServer:
    """Serves ``/metrics`` and the probes of one manager.

    Args:
        metrics_bind_address: where ``/metrics`` listens (``0`` disables it).
        health_probe_bind_address: where ``/healthz`` and ``/readyz`` listen (``0`` disables them).
        healthz: the liveness checks.
        readyz: the readiness checks.
        registry: the metrics served.
        timeout: seconds a client may take to send a request or to take an answer before its
            connection is dropped (idle keep-alive connections included).
        secure: serve ``/metrics`` over HTTPS behind a guard (``None``: plain HTTP, open).

    Raises:
        ConfigError: a bad bind address, or secure metrics on the probes' fixed address (the
            kubelet probes over plain HTTP).
    """

    def __init__(
        self,
        *,
        metrics_bind_address: str,
        health_probe_bind_address: str,
        healthz: Checks,
        readyz: Checks,
        registry: CollectorRegistry = metrics.REGISTRY,
        timeout: float = DEFAULT_TIMEOUT,
        secure: SecureServing | None = None,
    ) -> None:
        self._metrics_at = parse_bind_address(metrics_bind_address)
        self._probes_at = parse_bind_address(health_probe_bind_address)
        self._secure = secure
        if secure is not None and self._shared():
            msg = (
                f"secure metrics and the plain-HTTP probes cannot share {metrics_bind_address}: "
                "give them different addresses"
            )
            raise ConfigError(msg)
        self.healthz = healthz
        self.readyz = readyz
        self._registry = registry
        self._timeout = timeout
        self._listeners: list[Listener] = []
        self.metrics_address: tuple[str, int] | None = None
        """The bound ``(host, port)`` of ``/metrics`` once started."""
        self.probe_address: tuple[str, int] | None = None
        """The bound ``(host, port)`` of the probes once started."""

    async def start(self) -> None:
        """Bind every enabled endpoint.

        Raises:
            OSError: an address is in use or cannot be bound, named with its endpoint (nothing
                stays bound then).
            ConfigError: secure metrics without a usable certificate.
        """
        shared = self._shared()
        secure = self._secure
        try:
            if self._metrics_at is not None:
                if secure is not None:
                    secure.check()
                self.metrics_address = await self._serve(
                    "metrics",
                    self._router(metrics=True, probes=shared),
                    self._metrics_at,
                    tls=secure.context if secure is not None else None,
                    guard=secure.guard if secure is not None else None,
                )
                if shared:
                    self.probe_address = self.metrics_address
            if self._probes_at is not None and not shared:
                self.probe_address = await self._serve(
                    "probes", self._router(metrics=False, probes=True), self._probes_at
                )
        except BaseException:
            await self.stop()
            raise

    def _shared(self) -> bool:
        """One fixed address serves both (``:0`` twice means two free ports)."""
        return (
            self._metrics_at is not None
            and self._metrics_at == self._probes_at
            and self._metrics_at[1] != 0
        )

    async def stop(self) -> None:
        """Close every listener and drop its connections; bounded, idempotent."""
        listeners, self._listeners = self._listeners, []
        for listener in reversed(listeners):
            await listener.close()

    async def _serve(
        self,
        what: str,
        router: Router,
        address: tuple[str | None, int],
        *,
        tls: TlsSettings | None = None,
        guard: Guard | None = None,
    ) -> tuple[str, int]:
        listener = Listener(router, timeout=self._timeout, tls=tls, guard=guard)
        self._listeners.append(listener)
        host, port = address
        try:
            bound = await listener.start(host, port)
        except OSError as exc:
            # asyncio names the address but not what was to listen there.
            raise OSError(exc.errno, f"{what}: {exc.strerror or exc}") from exc
        scheme = "https" if tls is not None else "http"
        log.info("serving", endpoint=what, address=f"{bound[0]}:{bound[1]}", scheme=scheme)
        return bound

    def _router(self, *, metrics: bool, probes: bool) -> Router:
        def route(path: str) -> Handler | None:
            if metrics and path == "/metrics":
                return self._metrics
            if probes:
                for checks in (self.healthz, self.readyz):
                    if path in (checks.path, checks.path + "/"):
                        return _aggregated(checks)
                    name = path.removeprefix(checks.path + "/")
                    if name != path and "/" not in name:
                        return _single(checks, name)
            return None

        return route

    def _metrics(self, request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(200, encoder(self._registry), content_type=content_type)


def _aggregated(checks: Checks) -> Handler:
    def handle(request: Request) -> Response:
        status, body = checks.aggregate(
            exclude=request.query.get("exclude", []), verbose="verbose" in request.query
        )
        return text(status, body)

    return handle


def _single(checks: Checks, name: str) -> Handler:
    def handle(_: Request) -> Response:
        return text(*checks.single(name))

    return handle
