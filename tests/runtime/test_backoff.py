from __future__ import annotations

import asyncio
import random

import pytest

from etctl.runtime import FakeClock
from etctl.runtime._backoff import Backoff


def test_delays_double_from_the_initial_one_with_jitter_up_to_the_cap() -> None:
    backoff = Backoff(clock=FakeClock(), rng=random.Random(1))
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0]
    delays = [backoff.next_delay() for _ in bases]
    for base, delay in zip(bases, delays, strict=True):
        assert base <= delay < 2 * base
    assert len({round(d / b, 6) for d, b in zip(delays, bases, strict=True)}) > 1  # jittered


def test_jitter_spans_the_whole_interval() -> None:
    backoff = Backoff(clock=FakeClock(), rng=random.Random(3), initial=1.0, cap=1.0)
    delays = [backoff.next_delay() for _ in range(2000)]
    assert min(delays) < 1.05
    assert max(delays) > 1.95
    assert all(1.0 <= d < 2.0 for d in delays)


async def test_two_healthy_minutes_reset_the_sequence() -> None:
    clock = FakeClock()
    backoff = Backoff(clock=clock, rng=random.Random(2))
    for _ in range(5):
        await clock.advance(backoff.next_delay())
    assert backoff.next_delay() >= 12.8  # still escalating
    await clock.advance(60)  # the previous delay ended; healthy since, but not for long enough
    assert backoff.next_delay() >= 25.6
    last = backoff.next_delay()
    await clock.advance(last + 120)
    assert 0.8 <= backoff.next_delay() < 1.6


async def test_wait_sleeps_the_delay_on_the_clock() -> None:
    clock = FakeClock()
    backoff = Backoff(clock=clock, rng=random.Random(0))
    waiter = asyncio.create_task(backoff.wait())
    await clock.settle()
    deadline = clock.next_deadline()
    assert deadline is not None
    assert 0.8 <= deadline < 1.6
    await clock.advance(deadline)
    assert waiter.done()
    assert waiter.result() == deadline


def test_reset_starts_over() -> None:
    backoff = Backoff(clock=FakeClock(), rng=random.Random(0))
    for _ in range(4):
        backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() < 1.6


@pytest.mark.parametrize(
    "options",
    [{"initial": 0.0}, {"factor": 0.5}, {"initial": 5.0, "cap": 1.0}, {"reset_after": 0.0}],
)
def test_nonsense_settings_are_refused(options: dict[str, float]) -> None:
    settings = {"initial": 0.8, "factor": 2.0, "cap": 30.0, "reset_after": 120.0, **options}
    with pytest.raises(ValueError, match="initial"):
        Backoff(
            clock=FakeClock(),
            initial=settings["initial"],
            factor=settings["factor"],
            cap=settings["cap"],
            reset_after=settings["reset_after"],
        )
