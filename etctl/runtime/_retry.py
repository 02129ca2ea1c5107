"""When and how the client retries a failed request.

Which failures are transient: a :class:`~etctl.errors.TransportError` (no HTTP answer), a 429
:class:`~etctl.errors.TooManyRequests` and a 5xx :class:`~etctl.errors.ServerError`. Everything
else (a 409 Conflict above all) is an answer, and retrying it blindly would hide it; so is an
answer too large to read (:class:`~etctl.errors.ResponseTooLarge`: the next would be as large).

Whether a transient failure may be retried depends on the request's :class:`RetrySafety`:

* ``IDEMPOTENT`` (reads, watch starts, deletes, PUTs, merge/strategic/apply patches, JSON patches
  guarded by a ``test`` op): doing it twice has the effect of doing it once, so every transient
  failure is retried;
* ``UNSENT`` (every create, a POST, and unguarded JSON patches): a repeat after a lost answer
  would be a second effect (a duplicate object, an element appended twice) or, for a create that
  names its object, an AlreadyExists that hides the caller's own success. So only failures where
  the server provably did not act are retried, as client-go retries a POST: the connection could
  not be opened, or a 429 that says when to come back (``Retry-After``: the server throttled
  before it handled the request);
* ``UNSTARTED`` (the upgrade of an exec): the command starts only once the server switched
  protocols, so any HTTP answer instead proves it never ran: a 429 or a 5xx is retried, as is a
  connection never opened; a lost answer (the handshake timed out) is not, since the command may
  be running.

Delays grow exponentially from ``backoff_base`` up to ``backoff_cap`` with jitter (each delay drawn
uniformly from its upper half); a server's ``Retry-After`` (capped at ``retry_after_cap``) is waited
at least, as client-go waits the longer of its backoff and the server's word. Sleeps go through
the injected :class:`~etctl.runtime.Clock`.

An answer a retry gets after an attempt whose answer was lost (no answer, or a 5xx) carries
``after_lost_answer``: a 409 Conflict of a guarded write is then possibly that very write, applied
by the earlier attempt, and the caller reads the object before concluding anything.

Most requests succeed at once, so the first attempt runs on its own: the retry loop (tenacity's
``AsyncRetrying``, with its hooks) is built only after a retryable failure, and takes that failure
as its first attempt, so attempts, delays and logs are the same as if it had run from the start.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from etctl.errors import (
    ApiError,
    EtctlError,
    RequestNotSent,
    ResponseTooLarge,
    ServerError,
    TooManyRequests,
    TransportError,
)
from etctl.log import get_logger
from etctl.runtime._clock import Clock

__all__ = [
    "RetryPolicy",
    "RetrySafety",
    "backoff_delay",
    "is_retryable",
    "retry_after",
    "run_with_retries",
]

log = get_logger(__name__)

T = TypeVar("T")

# The jitter of retry delays when the caller brings no generator: one per process, seeded once,
# rather than one seeded from the OS for every request.
_JITTER = random.Random()  # noqa: S311 - jitter, not cryptography


class RetrySafety(enum.Enum):
    """How much of a request's failure may be retried (see the module docstring)."""

    IDEMPOTENT = "idempotent"
    UNSENT = "unsent"
    UNSTARTED = "unstarted"


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """Retry limits and backoff shape.

    Attributes:
        max_attempts: attempts in total, the first included (1 disables retries).
        backoff_base: the first delay's upper bound, in seconds.
        backoff_cap: no delay exceeds this, in seconds.
        retry_after_cap: a server's Retry-After is honoured up to this many seconds.
    """

    max_attempts: int = 5
    backoff_base: float = 0.2
    backoff_cap: float = 10.0
    retry_after_cap: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            msg = "max_attempts must be at least 1"
            raise ValueError(msg)
        if self.backoff_base < 0 or self.backoff_cap < 0 or self.retry_after_cap < 0:
            msg = "backoff delays must not be negative"
            raise ValueError(msg)


def is_retryable(exc: BaseException, safety: RetrySafety) -> bool:
    """True when ``exc`` is a transient failure that ``safety`` allows to retry."""
    if isinstance(exc, RequestNotSent):
        return True
    if isinstance(exc, TooManyRequests):
        return safety is not RetrySafety.UNSENT or exc.retry_after is not None
    if safety is RetrySafety.UNSENT or isinstance(exc, ResponseTooLarge):
        return False
    if safety is RetrySafety.UNSTARTED:
        return isinstance(exc, ServerError)
    return isinstance(exc, TransportError | ServerError)


def _lost_answer(exc: BaseException) -> bool:
    """The request may have been applied though its answer says nothing of it (or never came)."""
    if isinstance(exc, RequestNotSent):
        return False
    return isinstance(exc, TransportError | ServerError)


def backoff_delay(
    policy: RetryPolicy, attempt: int, exc: BaseException | None, rng: random.Random
) -> float:
    """The delay before attempt ``attempt + 1`` after ``exc`` failed attempt ``attempt``.

    The backoff, or the server's ``Retry-After`` (up to ``retry_after_cap``) when that is longer.
    """
    ceiling = min(policy.backoff_cap, policy.backoff_base * 2 ** (attempt - 1))
    delay = rng.uniform(ceiling / 2, ceiling)
    if isinstance(exc, ApiError) and exc.retry_after is not None:
        return max(delay, min(exc.retry_after, policy.retry_after_cap))
    return delay


async def run_with_retries(
    operation: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    safety: RetrySafety,
    clock: Clock,
    what: str,
    rng: random.Random | None = None,
) -> T:
    """Run ``operation`` until it succeeds, fails permanently or runs out of attempts.

    ``operation`` must be a coroutine function (tenacity awaits only those). The last failure is
    re-raised as is.
    """
    try:
        return await operation()
    except EtctlError as exc:  # nothing else is ever retried
        first = exc
    return await retry_after(
        first, operation, policy=policy, safety=safety, clock=clock, what=what, rng=rng
    )


async def retry_after(
    first: EtctlError,
    operation: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    safety: RetrySafety,
    clock: Clock,
    what: str,
    rng: random.Random | None = None,
) -> T:
    """Go on after the first attempt of ``operation`` failed with ``first``.

    ``first`` is re-raised at once when it may not be retried (or retries are off); otherwise the
    retry loop replays it as its first attempt, so the attempts, delays and logs are those of a
    loop that ran from the start.
    """
    if policy.max_attempts == 1 or not is_retryable(first, safety):
        raise first
    chance = rng or _JITTER
    replay = [first]
    lost = [_lost_answer(first)]

    async def attempt() -> T:
        if replay:
            raise replay.pop()
        try:
            return await operation()
        except ApiError as exc:
            # An answer after an attempt whose answer was lost may be the request meeting itself.
            exc.after_lost_answer = exc.after_lost_answer or any(lost)
            lost.append(_lost_answer(exc))
            raise
        except TransportError as exc:
            lost.append(_lost_answer(exc))
            raise

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return backoff_delay(policy, state.attempt_number, exc, chance)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0.0
        log.info(
            "retrying request",
            request=what,
            attempt=state.attempt_number,
            delay=round(delay, 3),
            error=str(exc),
        )

    retrying = AsyncRetrying(
        sleep=clock.sleep,
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait,
        retry=retry_if_exception(lambda exc: is_retryable(exc, safety)),
        before_sleep=before_sleep,
        reraise=True,
    )
    return await retrying(attempt)
