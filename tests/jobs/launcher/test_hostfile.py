"""The files a launcher reads, in the shapes MPIJob's launchers expect too."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from etctl.jobs.launcher import (
    HostfileFormat,
    discover_hosts_listing,
    discover_hosts_script,
    kubexec_script,
    live_hosts,
    member_host,
)


def pod(name: str, phase: str = "Running", *, ready: bool = True, **meta: Any) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "metadata": {"name": name, **meta},
        "status": {"phase": phase, "conditions": conditions},
    }


def horovod_hosts(script: str, tmp_path: Path) -> dict[str, int]:
    """Run a discover_hosts.sh and parse its output as Horovod's driver does."""
    (tmp_path / "d.sh").write_text(script)
    out = subprocess.run(
        ["sh", str(tmp_path / "d.sh")], check=True, capture_output=True, text=True, timeout=10
    )
    lines = {line for line in out.stdout.strip().split("\n") if line}
    return {host: int(slots) for host, _, slots in (line.rpartition(":") for line in lines)}


def test_hostfile_formats_of_every_mpi() -> None:
    hosts = ["j-worker-0.j.ns.svc", "j-worker-1.j.ns.svc"]
    assert HostfileFormat.SLOTS.render(hosts, 4) == (
        "j-worker-0.j.ns.svc slots=4\nj-worker-1.j.ns.svc slots=4\n"
    )
    assert HostfileFormat.COLON.render(hosts, 2) == "j-worker-0.j.ns.svc:2\nj-worker-1.j.ns.svc:2\n"


def test_a_member_is_reached_by_its_name_or_its_dns_name() -> None:
    assert member_host("j-worker-0") == "j-worker-0"
    assert member_host("j-worker-0", service="j", namespace="ns") == "j-worker-0.j.ns.svc"
    assert (
        member_host("j-worker-0", service="j", namespace="ns", cluster_domain="cluster.local")
        == "j-worker-0.j.ns.svc.cluster.local"
    )


def test_live_hosts_are_running_ready_members_sorted() -> None:
    pods = [
        pod("j-worker-10"),
        pod("j-worker-2"),
        pod("j-worker-3", ready=False),  # sshd not up yet
        pod("j-worker-4", "Pending"),
        pod("j-worker-5", deletionTimestamp="2026-01-01T00:00:00Z"),
        pod("other-worker-0"),
    ]
    members = [f"j-worker-{i}" for i in (10, 2, 3, 4, 5)]
    assert live_hosts(members, pods) == ["j-worker-10", "j-worker-2"]
    assert live_hosts(members, pods, ready=False) == ["j-worker-10", "j-worker-2", "j-worker-3"]


def test_a_listing_discover_hosts_parses_as_horovod_parses_it(tmp_path: Path) -> None:
    script = discover_hosts_listing(["j-worker-1.j.ns.svc", "j-worker-0.j.ns.svc"], 2)
    assert script == "#!/bin/sh\necho j-worker-0.j.ns.svc:2\necho j-worker-1.j.ns.svc:2\n"
    assert horovod_hosts(script, tmp_path) == {"j-worker-0.j.ns.svc": 2, "j-worker-1.j.ns.svc": 2}
    assert horovod_hosts(discover_hosts_listing([], 1), tmp_path) == {}


def test_a_printing_discover_hosts_prints_the_file(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text("a:1\nb:3\n")
    assert horovod_hosts(discover_hosts_script(str(tmp_path / "hosts")), tmp_path) == {
        "a": 1,
        "b": 3,
    }


def test_kubexec_uses_a_delivered_kubectl_where_it_is_told(tmp_path: Path) -> None:
    fake = tmp_path / "kube" / "kubectl"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    fake.chmod(0o755)
    script = kubexec_script("main", kubectl=str(fake))
    (tmp_path / "k.sh").write_text(script)
    out = subprocess.run(
        ["sh", str(tmp_path / "k.sh"), "j-worker-0", "orted", "-x"],
        check=True,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=10,
    )
    assert out.stdout == "exec|j-worker-0|--container|main|--|/bin/sh|-c|orted -x|"
