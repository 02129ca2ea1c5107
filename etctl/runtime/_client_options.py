"""The options of a Kubernetes API client: timeouts, retries, pools and identity.

:class:`ClientOptions` is frozen: a :class:`~etctl.runtime.Client` reads it once, when it is
built. Every timeout has a finite default, so no request built from the defaults can wait forever,
and every size a server controls has a finite default limit, so no answer can fill memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from etctl._version import __version__
from etctl.runtime._clock import Clock, RealClock
from etctl.runtime._retry import RetryPolicy

__all__ = ["ClientOptions"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientOptions:
    """Timeouts, retries and identity of a :class:`Client`.

    Attributes:
        connect_timeout: seconds to open a TCP (and TLS) connection.
        request_timeout: seconds for a whole request, answer body included (per attempt).
        watch_idle_timeout: default seconds a watch may receive nothing before it is ended with
            :class:`~etctl.runtime._watch.WatchIdleTimeout` (bookmarks count as traffic).
        retry: how transient failures are retried.
        pool_size: concurrent request connections.
        watch_pool_size: concurrent watch connections (0: no limit).
        max_line_bytes: the longest watch event line accepted (a watch is read line by line,
            so this bounds what one watch holds).
        max_response_bytes: the longest answer the client reads whole (a GET, a list page, a
            write's answer, an exec's output), 256 MiB by default: an unpaged list of some 30,000
            pods. A longer answer raises :class:`~etctl.errors.ResponseTooLarge` as soon as that
            is known (at once when its ``Content-Length`` says so), instead of filling memory.
            0 lifts the limit.
        max_message_bytes: the longest websocket message an exec accepts (32 MiB; 0: no limit).
        user_agent: the ``User-Agent`` header.
        field_manager: the default field manager of server-side apply.
        clock: the clock retry sleeps and credential refreshes run on.
    """

    connect_timeout: float = 5.0
    request_timeout: float = 30.0
    watch_idle_timeout: float = 90.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    pool_size: int = 100
    watch_pool_size: int = 0
    max_line_bytes: int = 32 * 1024 * 1024
    max_response_bytes: int = 256 * 1024 * 1024
    max_message_bytes: int = 32 * 1024 * 1024
    user_agent: str = f"etctl/{__version__}"
    field_manager: str = "etctl"
    clock: Clock = field(default_factory=RealClock)
