"""Fixtures of the controller tests: a server with its controllers, on a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.runtime import FakeClock
from tests.testing.apiserver._client import WIDGET_CRD


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "seed": 5, "crds": [WIDGET_CRD]}
