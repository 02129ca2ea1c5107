"""The webhook server: admission and conversion webhooks over HTTPS, as controller-runtime's.

A :class:`WebhookServer` belongs to a :class:`~etctl.runtime.Manager`
(``manager.webhook_server``); :class:`~etctl.runtime.WebhookBuilder` registers handlers on it by
path, and the manager runs it when at least one is registered, before its caches (a CRD whose
versions are converted by webhook cannot be listed before its converter serves). Invariants:

* **TLS 1.2 or later**, with the certificate and key of ``cert_dir`` (``tls.crt``, ``tls.key``,
  kubebuilder's ``/tmp/k8s-webhook-server/serving-certs`` by default) reloaded when they change
  (:class:`~etctl.runtime._certwatcher.CertWatcher`): a renewed certificate is served from the
  next handshake on, without a restart or a refused request. Until a usable pair exists the server
  waits for one (a Secret volume may take a minute to appear), for at most
  ``cert_wait_timeout`` seconds, then fails the manager with the reason.
* **POST only**, bodies up to ``max_request_size`` (7 MiB, controller-runtime's limit: an
  ``AdmissionReview`` carries the object and its old version); a larger body is refused with 413
  and a log line before it is read, a malformed review with 400 (by its endpoint). Every request
  is bounded by ``timeout`` (sending it, the handler, taking the answer); a handler past it gets
  a 500.
* **Metrics** under controller-runtime's names, per path:
  ``controller_runtime_webhook_requests_total{webhook,code}``,
  ``controller_runtime_webhook_latency_seconds{webhook}`` and
  ``controller_runtime_webhook_requests_in_flight{webhook}``.
* **Readiness**: :meth:`WebhookServer.check` (``/readyz/webhook``) passes once the server
  listens with a certificate.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from etctl.errors import ConfigError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._certwatcher import CertWatcher
from etctl.runtime._clock import Clock, RealClock
from etctl.runtime._http_server import Listener, Request, Response, text
from etctl.runtime._webhook_options import (
    DEFAULT_CERT_DIR,
    DEFAULT_WEBHOOK_PORT,
    MAX_REQUEST_SIZE,
    WebhookServerOptions,
)

if TYPE_CHECKING:
    from etctl.runtime._conversion_review import ConversionEndpoint
    from etctl.runtime._webhook_config import WebhookSpec

__all__ = [
    "CONVERSION_PATH",
    "DEFAULT_CERT_DIR",
    "DEFAULT_WEBHOOK_PORT",
    "MAX_REQUEST_SIZE",
    "WebhookHandler",
    "WebhookServer",
    "WebhookServerOptions",
]

log = get_logger(__name__)

CONVERSION_PATH = "/convert"
"""Where the conversion webhook of every kind is served (controller-runtime's path)."""

WebhookHandler = Callable[[Request], Awaitable[Response]]
"""Serves one webhook path."""


class WebhookServer:
    """Serves registered webhook paths over HTTPS (see the module docs).

    Args:
        options: where and how to listen.
        clock: the clock of the certificate watcher's waits.
    """

    def __init__(self, options: WebhookServerOptions | None = None, *, clock: Clock | None = None):
        self.options = options or WebhookServerOptions()
        self._clock: Clock = clock or RealClock()
        self._handlers: dict[str, WebhookHandler] = {}
        self.specs: list[WebhookSpec] = []
        """The admission webhooks registered (what the webhook configurations must list)."""
        self._conversion: ConversionEndpoint | None = None
        self._started = False
        self.address: tuple[str, int] | None = None
        """Where the server listens, once it does."""
        self.certificate = CertWatcher(
            self.options.cert_path, self.options.key_path, clock=self._clock
        )

    @property
    def paths(self) -> list[str]:
        """The registered paths, sorted."""
        return sorted(self._handlers)

    @property
    def active(self) -> bool:
        """True when a path is registered: the manager runs the server only then."""
        return bool(self._handlers)

    def register(self, path: str, handler: WebhookHandler) -> None:
        """Serve ``handler`` at ``path``.

        Raises:
            ValueError: the path is not absolute or is taken.
            RuntimeError: the server has started.
        """
        if self._started:
            msg = f"cannot register {path!r}: the webhook server has started"
            raise RuntimeError(msg)
        if not path.startswith("/"):
            msg = f"a webhook path starts with '/', got {path!r}"
            raise ValueError(msg)
        if path in self._handlers:
            msg = f"the webhook path {path!r} is registered already"
            raise ValueError(msg)
        self._handlers[path] = _instrumented(path, handler, self.options.timeout)
        log.debug("webhook registered", path=path)

    @property
    def conversion(self) -> ConversionEndpoint:
        """The conversion endpoint (``/convert``), registered on first use."""
        if self._conversion is None:
            # Loaded on first use: its review models (pydantic) cost an operator without
            # webhooks nothing.
            from etctl.runtime._conversion_review import ConversionEndpoint  # noqa: PLC0415

            self._conversion = ConversionEndpoint()
            self.register(CONVERSION_PATH, self._conversion)
        return self._conversion

    def check(self) -> str | None:
        """The readiness check: ``None`` once serving, else why not."""
        if self.address is not None:
            return None
        if not self.certificate.loaded:
            return f"the webhook server waits for its certificate in {self.options.cert_dir}"
        return "the webhook server is not listening yet"

    async def run(self) -> None:
        """Wait for a certificate, listen, serve until cancelled (see the module docs).

        Raises:
            ConfigError: no usable certificate appeared within ``cert_wait_timeout``.
            OSError: the address cannot be bound (a port in use), named with the endpoint.
        """
        self._started = True
        failure: Exception | None = None
        async with asyncio.TaskGroup() as group:
            watching = group.create_task(self.certificate.run(), name="webhook-server:certificate")
            try:
                await self._serve()
            except Exception as error:  # noqa: BLE001 - raised as itself below, not in a group
                failure = error
            finally:
                watching.cancel()
        if failure is not None:
            raise failure

    async def _serve(self) -> None:
        options = self.options
        self.certificate.load()
        if not self.certificate.loaded:
            log.info("waiting for the webhook server's certificate", cert_dir=str(options.cert_dir))
            if not await self.certificate.wait_loaded(options.cert_wait_timeout):
                msg = (
                    f"no usable serving certificate in {options.cert_dir} "
                    f"({options.cert_name}, {options.key_name}) after "
                    f"{options.cert_wait_timeout:g}s"
                )
                raise ConfigError(msg)
        listener = Listener(
            self._route,
            timeout=options.timeout,
            tls=self._tls,
            methods=("POST",),
            max_body=options.max_request_size,
            name="webhook server",
        )
        try:
            self.address = await listener.start(options.host or None, options.port)
        except OSError as exc:
            # asyncio names the address but not what was to listen there (as for metrics).
            raise OSError(exc.errno, f"webhooks: {exc.strerror or exc}") from exc
        host, port = self.address
        log.info("serving webhooks", address=f"{host}:{port}", paths=self.paths)
        try:
            await asyncio.get_running_loop().create_future()  # until cancelled
        finally:
            self.address = None
            await listener.close()

    async def _tls(self) -> ssl.SSLContext:
        # One context for the server's life: the watcher swaps the certificate inside it.
        return self.certificate.context

    def _route(self, path: str) -> WebhookHandler | None:
        return self._handlers.get(path)


def _instrumented(path: str, handler: WebhookHandler, timeout: float) -> WebhookHandler:
    """``handler`` bounded by ``timeout`` and counted under controller-runtime's metrics."""
    latency = metrics.WEBHOOK_LATENCY.labels(path)
    in_flight = metrics.WEBHOOK_REQUESTS_IN_FLIGHT.labels(path)
    # The series controller-runtime creates up front; others as they are answered.
    counted = {code: metrics.WEBHOOK_REQUESTS.labels(path, str(code)) for code in (200, 500)}

    async def serve(request: Request) -> Response:
        started = time.perf_counter()
        in_flight.inc()
        try:
            async with asyncio.timeout(timeout):
                response = await handler(request)
        except TimeoutError:
            log.error("a webhook handler timed out", path=path, timeout=timeout)
            response = text(500, f"the webhook did not answer within {timeout:g}s\n")
        except Exception:
            log.exception("a webhook handler failed", path=path)
            response = text(500, "internal error\n")
        finally:
            in_flight.dec()
        latency.observe(time.perf_counter() - started)
        counter = counted.get(response.status)
        if counter is None:
            counter = counted[response.status] = metrics.WEBHOOK_REQUESTS.labels(
                path, str(response.status)
            )
        counter.inc()
        return response

    return serve
