"""Fixtures shared by the API server, controller and kubelet tests.

Each suite's own conftest configures the server (``etctl_apiserver_options``, seeded, on the
``clock`` below); these give the started server a short name and an HTTP client for it.

Everything here tests etctl.testing itself (the embedded server, the simulated kubelet, the
pytest plugin): a real-cluster run skips it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from tests.testing.apiserver._client import Api

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of etctl.testing itself: they need the embedded server, not a cluster."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.etctl_hooks("tests the embedded API server itself"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def server(etctl_apiserver: ApiServer) -> ApiServer:
    return etctl_apiserver


@pytest.fixture
async def api(server: ApiServer) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield Api(session, server.url)
