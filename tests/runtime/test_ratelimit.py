import random
from collections.abc import Callable

import pytest

from etctl.runtime import FakeClock
from etctl.runtime._ratelimit import (
    BucketRateLimiter,
    ItemExponentialRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_doubles_from_base_and_caps_at_the_19th_failure() -> None:
    limiter = ItemExponentialRateLimiter(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == pytest.approx(655.36)  # the 18th failure: 5 ms * 2**17, still under
    assert delays[18:] == [1000.0, 1000.0]  # 5 ms * 2**18 = 1310.72 s is capped
    assert limiter.num_requeues("a") == 20


def test_exponential_is_per_item_and_forget_resets() -> None:
    limiter = ItemExponentialRateLimiter(0.005, 1000.0)
    for _ in range(5):
        limiter.when("a")
    assert limiter.when("b") == 0.005
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005
    assert limiter.num_requeues("b") == 1


def test_exponential_never_overflows() -> None:
    limiter = ItemExponentialRateLimiter(0.5, 60.0)
    for _ in range(3000):
        delay = limiter.when("x")
    assert delay == 60.0


def test_exponential_jitter_spreads_but_respects_the_cap() -> None:
    limiter = ItemExponentialRateLimiter(1.0, 10.0, jitter=0.5, rng=random.Random(7))
    first = [limiter.when(i) for i in range(50)]
    assert all(1.0 <= d < 1.5 for d in first)
    assert len(set(first)) > 40
    for _ in range(10):
        capped = limiter.when(0)
    assert capped == 10.0


def test_bucket_allows_the_burst_then_goes_into_debt() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert bucket.when("x") == pytest.approx(0.1)
    assert bucket.when("y") == pytest.approx(0.2)
    assert bucket.when("z") == pytest.approx(0.3)  # debt accumulates: every call took a token
    assert bucket.num_requeues("x") == 0


async def test_bucket_refills_at_qps_up_to_the_burst() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10, burst=5, clock=clock)
    for i in range(7):
        bucket.when(i)  # 5 tokens, then 2 in debt
    await clock.advance(0.5)  # +5 tokens pay the debt of 2: 3 available
    assert [bucket.when(i) for i in range(3)] == [0.0] * 3
    assert bucket.when("next") == pytest.approx(0.1)
    await clock.advance(3600)
    assert [bucket.when(i) for i in range(5)] == [0.0] * 5  # refill stops at the burst
    assert bucket.when("more") == pytest.approx(0.1)


def test_fast_slow_switches_after_max_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.1, 30.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.1, 0.1, 0.1, 30.0, 30.0]
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.when("a") == 0.1


def test_max_of_takes_the_longest_delay_and_every_limiter_counts() -> None:
    fast_slow = ItemFastSlowRateLimiter(2.0, 60.0, 2)
    exponential = ItemExponentialRateLimiter(1.0, 100.0)
    limiter = MaxOfRateLimiter(fast_slow, exponential)
    assert [limiter.when("a") for _ in range(4)] == [2.0, 2.0, 60.0, 60.0]
    assert exponential.num_requeues("a") == 4
    assert limiter.num_requeues("a") == 4
    assert [limiter.when("a") for _ in range(4)] == [60.0, 60.0, 64.0, 100.0]
    limiter.forget("a")
    assert fast_slow.num_requeues("a") == 0
    assert exponential.num_requeues("a") == 0
    assert limiter.when("a") == 2.0


def test_default_controller_limiter_is_exponential_until_the_bucket_runs_dry() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    assert limiter.when("a") == 0.005
    assert limiter.when("a") == 0.01
    for i in range(98):
        limiter.when(i)  # the bucket is now empty
    assert limiter.when("b") == pytest.approx(0.1)  # the bucket dominates a first failure
    assert limiter.num_requeues("a") == 2


@pytest.mark.parametrize(
    "build",
    [
        lambda: ItemExponentialRateLimiter(0, 1),
        lambda: ItemExponentialRateLimiter(2, 1),
        lambda: ItemExponentialRateLimiter(1, 2, jitter=-1),
        lambda: BucketRateLimiter(qps=0, burst=1, clock=FakeClock()),
        lambda: BucketRateLimiter(qps=1, burst=0, clock=FakeClock()),
        lambda: ItemFastSlowRateLimiter(-1, 1, 1),
        MaxOfRateLimiter,
    ],
)
def test_invalid_settings_are_refused(build: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match=r"."):
        build()
