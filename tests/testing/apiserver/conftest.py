"""Fixtures of the API server conformance suite: a server on a fake clock, without controllers."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from tests.testing.apiserver._client import WIDGET_CRD


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "seed": 7, "controllers": False}


@pytest.fixture
def widgets(server: ApiServer) -> ApiServer:
    """The server, serving the Widget CRD."""
    server.load_crds(WIDGET_CRD)
    return server
