"""Reconnect backoff: how long a reflector waits after a failed list or watch.

This is client-go's reflector backoff (``wait.NewExponentialBackoffManager`` with the reflector's
defaults): the n-th consecutive failure waits a delay drawn uniformly from ``[d, 2d)`` where
``d = min(initial * factor**(n-1), cap)``; with the defaults (0.8 s doubling, capped at 30 s) the
delays are [0.8, 1.6), [1.6, 3.2), ... and settle in [30, 60), about 0.02 requests per second per
informer however long the API server stays down. The jitter spreads the reconnects of many
informers (and many operators) that failed together, which a fixed retry period does not: after
an API server restart it turned into a reconnect storm of thousands of requests per second.

Invariants:

* every delay is in ``[d, 2d)`` for the current ``d``, and ``d`` never exceeds ``cap``;
* the sequence starts over (``d = initial``) once ``reset_after`` seconds of the clock passed
  since the previous delay ended with no new failure: a long healthy period forgets old trouble;
* all time is read from the injected :class:`~etctl.runtime.Clock`.
"""

from __future__ import annotations

import random

from etctl.runtime._clock import Clock

__all__ = ["Backoff"]


class Backoff:
    """Jittered, capped exponential delays that reset after a healthy period.

    Args:
        clock: where time is read and slept.
        initial: the first delay's lower bound, in seconds.
        factor: how much the lower bound grows per consecutive failure.
        cap: the largest lower bound (delays stay below ``2 * cap``).
        reset_after: seconds without a failure after which the sequence starts over.
        rng: the jitter source (seed it for reproducible tests).
    """

    __slots__ = (
        "_cap",
        "_clock",
        "_factor",
        "_healthy_since",
        "_initial",
        "_reset",
        "_rng",
        "_step",
    )

    def __init__(
        self,
        *,
        clock: Clock,
        initial: float = 0.8,
        factor: float = 2.0,
        cap: float = 30.0,
        reset_after: float = 120.0,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or factor < 1 or cap < initial or reset_after <= 0:
            msg = "need 0 < initial <= cap, factor >= 1 and reset_after > 0"
            raise ValueError(msg)
        self._clock = clock
        self._initial = initial
        self._factor = factor
        self._cap = cap
        self._reset = reset_after
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._step = 0
        self._healthy_since: float | None = None

    def next_delay(self) -> float:
        """Record a failure and return the seconds to wait before the next attempt."""
        now = self._clock.monotonic()
        if self._healthy_since is not None and now - self._healthy_since >= self._reset:
            self._step = 0
        base = min(self._initial * self._factor**self._step, self._cap)
        if base < self._cap:
            self._step += 1
        delay = base + self._rng.random() * base
        self._healthy_since = now + delay
        return delay

    async def wait(self) -> float:
        """Record a failure and sleep its delay on the clock; returns the delay slept."""
        delay = self.next_delay()
        await self._clock.sleep(delay)
        return delay

    def reset(self) -> None:
        """Start over at the initial delay."""
        self._step = 0
        self._healthy_since = None
