"""Fixtures shared by the API server, controller and kubelet tests.

Each suite's own conftest configures the server (``etctl_apiserver_options``, seeded, on the
``clock`` below); these give the started server a short name and an HTTP client for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from tests.testing.apiserver._client import Api


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
