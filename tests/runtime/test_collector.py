"""The cycle collector pause around large decodes and list compactions."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from etctl.runtime._collector import paused_collection


@pytest.fixture
def collector_state() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_state")
def test_the_collector_is_off_inside_and_back_on_after() -> None:
    gc.enable()
    with paused_collection():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="boom"), paused_collection():
        raise ValueError("boom")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_state")
def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    with paused_collection(), paused_collection():
        assert not gc.isenabled()
    assert not gc.isenabled()
