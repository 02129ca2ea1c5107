"""The rotation plan, made here and in the child process the rotator runs it in."""

from __future__ import annotations

import datetime

from etctl._cert_rotation import (
    CA_CERT,
    CA_KEY,
    TLS_CERT,
    TLS_KEY,
    Policy,
    plan,
    plan_request,
    read_plan,
)
from etctl._certificates import signed_by
from etctl.runtime._tls import certificates_child

NOW = datetime.datetime(2026, 6, 1, tzinfo=datetime.UTC)
DAY = 86400.0
POLICY = Policy(
    dns_names=("etctl-webhook-service.etctl-system.svc",),
    ip_addresses=("127.0.0.1",),
    ca_name="etctl-webhook-ca",
    ca_validity=3650 * DAY,
    cert_validity=365 * DAY,
    lookahead=90 * DAY,
)


async def test_a_plan_made_in_the_child_is_the_plan_made_here() -> None:
    request = plan_request({}, POLICY, NOW).encode()
    child = read_plan((await certificates_child("--rotate", stdin=request)).decode())
    for made in (plan({}, POLICY, NOW), child):
        assert made.ca_created
        assert not made.replaces_ca
        assert made.first is not None
        assert sorted(made.first) == [CA_CERT, CA_KEY, TLS_CERT, TLS_KEY]
        assert signed_by(made.first[TLS_CERT], made.first[CA_CERT])
        assert made.serving is None  # issued with the CA: nothing was served before
        assert made.due == NOW + datetime.timedelta(days=365 - 90)  # the serving cert's turn
    assert child.first is not None
    again = plan(child.first, POLICY, NOW + datetime.timedelta(days=1))
    assert (again.first, again.serving, again.ca_created) == (None, None, False)
