"""Container records: image references, ids and restarts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from etctl.testing._kubelet.containers import ContainerRuntime, image_id, normalize_image


@pytest.mark.parametrize(
    ("image", "reference"),
    [
        ("busybox", "docker.io/library/busybox:latest"),
        ("busybox:1.36", "docker.io/library/busybox:1.36"),
        ("team/app:v1", "docker.io/team/app:v1"),
        ("ghcr.io/org/app", "ghcr.io/org/app:latest"),
        ("localhost/app:dev", "localhost/app:dev"),
        ("registry:5000/app@sha256:abc", "registry:5000/app@sha256:abc"),
    ],
)
def test_images_are_fully_qualified(image: str, reference: str) -> None:
    assert normalize_image(image) == reference


def test_image_ids_are_stable_digests() -> None:
    assert image_id("busybox:1.36") == image_id("docker.io/library/busybox:1.36")
    assert image_id("busybox:1.36").startswith("docker.io/library/busybox@sha256:")
    assert image_id("busybox:1.36") != image_id("busybox:1.37")


def test_a_restart_keeps_the_last_termination_and_log() -> None:
    runtime = ContainerRuntime({"name": "c", "image": "x"}, pod_uid="u", init=False, log_lines=5)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    runtime.start(now="t0", mono=0.0, wall=when)
    first_id = runtime.container_id
    runtime.log.write("first run", time=when)
    runtime.terminate(1, "Error", "", now="t1")
    runtime.start(now="t2", mono=1.0, wall=when)
    assert runtime.restarts == 1
    assert runtime.last is not None
    assert runtime.last.container_id == first_id != runtime.container_id
    assert runtime.previous_log is not None
    assert [line.text for line in runtime.previous_log.lines()] == ["first run"]
    status = runtime.status()
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["started"] is True
