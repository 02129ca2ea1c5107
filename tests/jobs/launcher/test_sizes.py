"""Size checks of a membership for any kind's ConfigMap and status."""

from __future__ import annotations

from etctl.common import SizeLimits
from etctl.jobs.launcher import MemberCost, Names, job_bytes, membership_problem, most_fitting


def test_a_kind_brings_its_own_costs() -> None:
    # One hostfile line of "<name> slots=1\n" per worker, nothing fixed.
    cost = MemberCost(config=lambda n: n.total + 8 * n.count, job=lambda n: 0)
    limits = SizeLimits(max_data_bytes=1000)

    def grow(count: int) -> Names:
        return Names.sequential("pi-worker-", count)

    assert (
        membership_problem(grow(40), cost=cost, config_map="pi-config", limits=limits, grow=grow)
        is None
    )
    found = membership_problem(
        grow(100), cost=cost, config_map="pi-config", limits=limits, grow=grow
    )
    assert found is not None
    most = most_fitting(lambda n: cost.config(grow(n)) <= 1000, 100)
    assert found.startswith("100 workers need")
    assert (
        f"in ConfigMap pi-config, over the 1000 bytes a ConfigMap may hold; at most {most}" in found
    )


def test_job_bytes_counts_every_listed_field() -> None:
    document = {"metadata": {"name": "pi"}, "status": {"elastic": {"targets": ["x"]}}}
    one = job_bytes(document, Names(10, 100), lists=("a",))
    two = job_bytes(document, Names(10, 100), lists=("a", "b"))
    assert two - one == 100 + 3 * 10 + len('"b":[],')
    assert document["status"] == {"elastic": {"targets": ["x"]}}  # not modified
