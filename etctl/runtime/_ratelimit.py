"""Rate limiters: how long a failed item waits before its next try.

A :class:`RateLimiter` answers one question per failure, ``when(item)``: the delay, in seconds,
before the item may be retried. The workqueue's ``add_rate_limited`` is
``add_after(item, when(item))``, and ``forget(item)`` (called after a success) resets what a limiter
remembers about the item.

The implementations follow client-go's ``util/workqueue/default_rate_limiters.go`` exactly:

* :class:`ItemExponentialRateLimiter`: ``base * 2**failures`` per item, capped. The first call
  returns ``base``; with the controller defaults (5 ms, 1000 s) the 18th call is the last one under
  the cap (655.36 s) and every call from the 19th on returns 1000 s. Optional jitter (off by
  default, as in client-go) spreads retries of items that failed together.
* :class:`BucketRateLimiter`: one token bucket shared by every item. Each call always takes a
  token, so a burst beyond the bucket runs into debt and the delays grow (as
  ``rate.Limiter.Reserve().Delay()`` does).
* :class:`ItemFastSlowRateLimiter`: a short delay for the first few failures, then a long one.
* :class:`MaxOfRateLimiter`: the longest delay of several limiters, each of which counts the
  failure.

:func:`default_controller_rate_limiter` is controller-runtime's default: the maximum of a 5 ms to
1000 s exponential backoff and a 10 qps, burst 100 bucket.

Limiters are not thread-safe: each belongs to one event loop, like the queue that calls it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable
from typing import Protocol, TypeVar

from etctl.runtime._clock import Clock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]

T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    """Decides how long an item waits before it is retried."""

    def when(self, item: T_contra) -> float:
        """Record a failure of ``item`` and return how many seconds it should wait."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded): its next failure starts from scratch."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures of ``item`` are being tracked."""
        ...


class ItemExponentialRateLimiter:
    """Per-item exponential backoff: ``base * 2**n`` for the item's n-th tracked failure, capped.

    Args:
        base: the first delay, in seconds.
        cap: the longest delay, in seconds.
        jitter: when positive, each delay is multiplied by a random factor in ``[1, 1 + jitter)``
            (and still capped), so items that failed together do not all retry at the same instant.
        rng: the random source for jitter (a seeded one makes tests reproducible).
    """

    def __init__(
        self,
        base: float = 0.005,
        cap: float = 1000.0,
        *,
        jitter: float = 0.0,
        rng: random.Random | None = None,
    ) -> None:
        if base <= 0 or cap < base:
            msg = f"need 0 < base <= cap, got base={base} cap={cap}"
            raise ValueError(msg)
        if jitter < 0:
            msg = f"jitter must not be negative, got {jitter}"
            raise ValueError(msg)
        self._base = base
        self._cap = cap
        self._jitter = jitter
        self._rng = rng or random.Random()  # noqa: S311 - spreading retries, not cryptography
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """Count a failure and return ``base * 2**previous_failures``, capped (and jittered)."""
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        try:
            delay = min(math.ldexp(self._base, exponent), self._cap)
        except OverflowError:
            delay = self._cap
        if self._jitter:
            delay = min(delay * (1.0 + self._jitter * self._rng.random()), self._cap)
        return delay

    def forget(self, item: Hashable) -> None:
        """Reset the item's failure count."""
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """The item's failure count since it was last forgotten."""
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """A token bucket shared by all items: ``qps`` tokens a second, at most ``burst`` saved up.

    Every call takes a token, even when none is left: the bucket then goes into debt and the
    returned delay is how long the refill takes to pay it back. Ten thousand failures at once thus
    spread over ``(10000 - burst) / qps`` seconds instead of all retrying together.

    Args:
        qps: tokens added per second.
        burst: the bucket size (and how many tokens it starts with).
        clock: the time source.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock) -> None:
        if qps <= 0 or burst < 1:
            msg = f"need qps > 0 and burst >= 1, got qps={qps} burst={burst}"
            raise ValueError(msg)
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def when(self, item: Hashable) -> float:
        """Take a token and return how long until it is actually available (0 if it is now)."""
        now = self._clock.monotonic()
        refilled = self._tokens + (now - self._last) * self._qps
        self._tokens = min(self._burst, refilled) - 1.0
        self._last = now
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def forget(self, item: Hashable) -> None:
        """Nothing to forget: the bucket does not track items."""

    def num_requeues(self, item: Hashable) -> int:
        """Always 0: the bucket does not track items."""
        return 0


class ItemFastSlowRateLimiter:
    """``fast`` seconds for an item's first ``max_fast`` failures, ``slow`` seconds after that.

    Args:
        fast: the delay of the first ``max_fast`` attempts.
        slow: the delay of every later attempt.
        max_fast: how many attempts get the fast delay.
    """

    def __init__(self, fast: float, slow: float, max_fast: int) -> None:
        if fast < 0 or slow < 0 or max_fast < 0:
            msg = f"delays and max_fast must not be negative: {fast}, {slow}, {max_fast}"
            raise ValueError(msg)
        self._fast = fast
        self._slow = slow
        self._max_fast = max_fast
        self._attempts: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """Count an attempt and return the fast or the slow delay."""
        attempts = self._attempts.get(item, 0) + 1
        self._attempts[item] = attempts
        return self._fast if attempts <= self._max_fast else self._slow

    def forget(self, item: Hashable) -> None:
        """Reset the item's attempt count."""
        self._attempts.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """The item's attempt count since it was last forgotten."""
        return self._attempts.get(item, 0)


class MaxOfRateLimiter:
    """Combines limiters: every one of them counts each failure, and the longest delay wins.

    Args:
        limiters: at least one limiter.
    """

    def __init__(self, *limiters: RateLimiter[Hashable]) -> None:
        if not limiters:
            msg = "MaxOfRateLimiter needs at least one limiter"
            raise ValueError(msg)
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        """Ask every limiter (each records the failure) and return the longest delay."""
        return max([limiter.when(item) for limiter in self._limiters])

    def forget(self, item: Hashable) -> None:
        """Forget the item in every limiter."""
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        """The highest failure count any limiter tracks for the item."""
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(clock: Clock) -> MaxOfRateLimiter:
    """controller-runtime's default: max of exponential(5 ms, 1000 s) and bucket(10 qps, 100)."""
    return MaxOfRateLimiter(
        ItemExponentialRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
