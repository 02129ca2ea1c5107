import shutil
import subprocess
from pathlib import Path

import pytest

from etctl.jobs.launcher import digest, hostfile, kubexec_script, slots_per_worker
from etctl.jobs.launcher import slots_hostfile as deepspeed_hostfile
from etctl.jobs.trainingjob._layout import config_data, discover_hosts_script


def template(limits: dict[str, object] | None = None) -> dict[str, object]:
    container: dict[str, object] = {"name": "w"}
    if limits is not None:
        container["resources"] = {"limits": limits}
    return {"spec": {"containers": [container]}}


@pytest.mark.parametrize(
    ("slots", "limits", "expected"),
    [
        (4, {"nvidia.com/gpu": "2"}, 4),
        (None, {"nvidia.com/gpu": "2"}, 2),
        (None, {"nvidia.com/gpu": 3}, 3),
        (None, {"nvidia.com/gpu": "0"}, 1),
        (None, {"nvidia.com/gpu": "1.5"}, 1),
        (None, {"cpu": "4"}, 1),
        (None, None, 1),
    ],
)
def test_slots(slots: int | None, limits: dict[str, object] | None, expected: int) -> None:
    assert slots_per_worker(slots, template(limits)) == expected


def test_hostfile_formats() -> None:
    members = ["j-worker-0", "j-worker-3"]
    assert hostfile(members, 2) == "j-worker-0:2\nj-worker-3:2\n"
    assert deepspeed_hostfile(members, 2) == "j-worker-0 slots=2\nj-worker-3 slots=2\n"
    assert hostfile([], 1) == ""
    assert digest("a") == digest("a") != digest("b")
    assert len(digest("")) == 64


def test_config_data_keys() -> None:
    data = config_data(["j-worker-0"], 1, "w")
    assert sorted(data) == ["deepspeed-hostfile", "discover_hosts.sh", "hostfile", "kubexec.sh"]
    assert data["hostfile"] == "j-worker-0:1\n"


def test_discover_hosts_prints_the_live_hostfile(tmp_path: Path) -> None:
    script = discover_hosts_script().replace("/etc/edl/hostfile", str(tmp_path / "hostfile"))
    (tmp_path / "hostfile").write_text("a:1\nb:1\n")
    (tmp_path / "d.sh").write_text(script)
    out = subprocess.run(
        ["sh", str(tmp_path / "d.sh")], check=True, capture_output=True, text=True, timeout=10
    )
    assert out.stdout == "a:1\nb:1\n"


def test_kubexec_finds_kubectl_and_passes_the_command(tmp_path: Path) -> None:
    fake = tmp_path / "kubectl"
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    fake.chmod(0o755)
    script = kubexec_script("w").replace("/opt/kube/kubectl", str(tmp_path / "absent"))
    (tmp_path / "k.sh").write_text(script)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    out = subprocess.run(
        ["sh", str(tmp_path / "k.sh"), "j-worker-1", "orted", "-mca", "x"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=10,
    )
    assert out.stdout == "exec|j-worker-1|--container|w|--|/bin/sh|-c|orted -mca x|"


def test_kubexec_without_kubectl_says_so(tmp_path: Path) -> None:
    script = kubexec_script("w").replace("/opt/kube/kubectl", str(tmp_path / "absent"))
    (tmp_path / "k.sh").write_text(script)
    shell = shutil.which("sh")
    assert shell is not None
    out = subprocess.run(
        [shell, str(tmp_path / "k.sh"), "p", "true"],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path)},
        timeout=10,
        check=False,
    )
    assert out.returncode == 127
    assert "no kubectl in /opt/kube or on PATH" in out.stderr
