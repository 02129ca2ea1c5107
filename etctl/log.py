"""The one logging setup of etctl (structlog).

Two renderings of the same event dictionaries:

* ``json``: one JSON object per line with ``ts``, ``level``, ``logger``, ``msg`` and the bound
  context
  (``controller``, ``namespace``, ``name``, ``reconcile_id``...), for log shippers.
* ``console``: readable, coloured when the stream is a terminal: for people.

Context is bound with :func:`bind_context` (contextvars), so every line logged inside a reconcile
carries its controller, namespace, name and reconcile id without threading a logger through every
call. Standard-library loggers (aiohttp, kubernetes_asyncio) are routed through the same renderer.

Secrets never reach the logs: :func:`redact` replaces values of keys that look like credentials, and
it runs as a processor on every event.

etctl is also a library, so its loggers never depend on how (or whether) the program configured
structlog: every etctl logger writes through the standard library's ``logging`` under its module
name (``etctl.runtime._controller``...). Until :func:`configure` is called (``etctl run`` and
``etctl sandbox`` call it; a program embedding etctl may, or may configure ``logging`` its own way),
lines go through the program's own structlog processors if it configured structlog, else they are
plain text; either way they go wherever the program's ``logging`` sends them (with no configuration
at all, Python's last-resort handler: warnings and above on standard error). Nothing is ever
written to standard output, and :func:`redact` always runs first.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import MutableMapping
from contextlib import AbstractContextManager
from typing import Any, Literal, TextIO

import structlog

__all__ = ["LogFormat", "bind_context", "configure", "get_logger", "redact"]

LogFormat = Literal["json", "console", "auto"]

_SECRET_KEYS = (
    "token",
    "password",
    "secret",
    "authorization",
    "private",
    "id_rsa",
    "ssh-privatekey",
)


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Processor: blank the values of keys that look like credentials."""
    for key in list(event):
        lowered = key.lower()
        if any(marker in lowered for marker in _SECRET_KEYS):
            event[key] = "<redacted>"
    return event


def _shared_processors() -> list[Any]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
        redact,
        structlog.processors.StackInfoRenderer(),
    ]


# Plain tracebacks: a rich one renders the locals of every frame, which can be huge (a cached
# object) or fail (a structure too deep to print), and a log call must never fail its caller.
_PLAIN = structlog.dev.ConsoleRenderer(
    colors=False, exception_formatter=structlog.dev.plain_traceback
)


def _plain(logger: Any, method: str, event: MutableMapping[str, Any]) -> str:
    """Plain text; at least the message when a field cannot be printed (too deep, a bad repr)."""
    try:
        return str(_PLAIN(logger, method, event))
    except Exception as exc:  # noqa: BLE001 - a log call must never fail its caller
        return f"{event.get('event')} (fields not printable: {type(exc).__name__})"


def _hand_over(logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
    """The last processor: etctl's formatter, else the program's structlog, else plain text.

    When structlog's chain ends by handing events to a ``ProcessorFormatter`` (what
    :func:`configure` installs, and the usual structlog-on-logging setup), events go to that
    formatter on the handlers. Any other pipeline a program configured (a test inside
    ``structlog.testing.capture_logs()`` included) gets etctl's events through its own
    processors, after etctl's (so secrets are already redacted). Otherwise they are plain text
    for the standard library's ``logging``.
    """
    configured = structlog.get_config()["processors"]
    if configured and configured[-1] is structlog.stdlib.ProcessorFormatter.wrap_for_formatter:
        return structlog.stdlib.ProcessorFormatter.wrap_for_formatter(logger, method, event)
    if structlog.is_configured():
        # Tracebacks become plain text first: the program's renderer may print every frame's
        # locals (rich does), which takes minutes, or fails, on a large cached object. The
        # program then sees an "error" (an "exception" would make set_exc_info add it back).
        rendered: Any = structlog.processors.format_exc_info(logger, method, dict(event))
        level = "error" if method == "exception" else method
        try:
            for processor in structlog.get_config()["processors"]:
                rendered = processor(logger, level, rendered)
        except structlog.DropEvent:
            raise
        except Exception:  # noqa: BLE001 - the program's pipeline failed: still say what happened
            return _plain(logger, method, event)
        return rendered
    return _plain(logger, method, event)


def configure(
    *,
    fmt: LogFormat = "auto",
    level: str | int = "info",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and the standard library once for the whole process.

    Args:
        fmt: ``json`` for machines, ``console`` for people, ``auto`` picks console on a terminal.
        level: the minimum level (name or number).
        stream: where to write; standard error by default.
    """
    out = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if out.isatty() else "json"
    numeric = level if isinstance(level, int) else logging.getLevelNamesMapping()[level.upper()]

    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
        final: list[Any] = [
            structlog.processors.EventRenamer("msg"),
            structlog.processors.format_exc_info,
            renderer,
        ]
    else:
        final = [
            structlog.dev.ConsoleRenderer(
                colors=out.isatty(), exception_formatter=structlog.dev.plain_traceback
            )
        ]

    structlog.configure(
        processors=[
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()  # noqa: TID251 - the one place that configures the stdlib root
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # Third-party chatter stays at warning unless the user asked for debug.
    for noisy in ("aiohttp.access", "kubernetes_asyncio"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))  # noqa: TID251


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """Return the structlog logger for an etctl module (use ``__name__``).

    It writes through ``logging.getLogger(name)`` whatever the program's structlog configuration
    is; events below that logger's level are dropped before any rendering.
    """
    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(name),  # noqa: TID251 - etctl's loggers are stdlib-backed by design
        processors=[structlog.stdlib.filter_by_level, *_shared_processors(), _hand_over],
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    return logger


_VARIABLES: dict[str, contextvars.ContextVar[Any]] = {}
"""structlog's context variable of each key bound so far (structlog keeps one per key)."""


def _variable(key: str) -> contextvars.ContextVar[Any]:
    variable = _VARIABLES.get(key)
    if variable is None:
        token = structlog.contextvars.bind_contextvars(**{key: None})[key]
        variable = token.var
        variable.reset(token)
        _VARIABLES[key] = variable
    return variable


class _Bound:
    """The ``with`` block of :func:`bind_context`: binds on entry, restores on exit."""

    __slots__ = ("_tokens", "_values")

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values
        self._tokens: list[contextvars.Token[Any]] = []

    def __enter__(self) -> None:
        self._tokens = [_variable(key).set(value) for key, value in self._values.items()]

    def __exit__(self, *_exc: object) -> None:
        # Each variable goes back to exactly what it was before (unset included), so an outer
        # binding of the same key reappears.
        for token in reversed(self._tokens):
            token.var.reset(token)


def bind_context(**values: Any) -> AbstractContextManager[None]:
    """Bind key/values to every log line emitted inside the ``with`` block (contextvars).

    Safe across ``await``: each asyncio task has its own copy of the context. Cheap enough for
    every reconcile: one variable set on entry and reset on exit per key, nothing copied.
    """
    return _Bound(values)
