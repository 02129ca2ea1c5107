"""Image references as the kubelet parses them: what it accepts, and its words when it does not."""

from __future__ import annotations

import pytest

from etctl.testing._kubelet.imageref import InvalidReference, default_tag_problem, parse

_HEX64 = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("image", "reference"),
    [
        ("busybox", "docker.io/library/busybox"),
        ("busybox:1.36", "docker.io/library/busybox:1.36"),
        ("docker.io/ubuntu", "docker.io/library/ubuntu"),
        ("index.docker.io/ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
        ("mpioperator/openmpi:0.6.0", "docker.io/mpioperator/openmpi:0.6.0"),
        ("example.org/open-mpi:cpu", "example.org/open-mpi:cpu"),
        ("localhost/app:dev", "localhost/app:dev"),
        ("localhost:5000/team/app__x.y--z:v_1", "localhost:5000/team/app__x.y--z:v_1"),
        ("Registry.Example.com/app", "Registry.Example.com/app"),
        ("[::1]:5000/app", "[::1]:5000/app"),
        (f"busybox@sha256:{_HEX64}", f"docker.io/library/busybox@sha256:{_HEX64}"),
        (f"busybox:1.36@sha256:{_HEX64}", f"docker.io/library/busybox:1.36@sha256:{_HEX64}"),
        (f"app@sha512:{_HEX64 * 2}", f"docker.io/library/app@sha512:{_HEX64 * 2}"),
    ],
)
def test_a_reference_parses_to_its_normalized_form(image: str, reference: str) -> None:
    assert str(parse(image)) == reference


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("example.org/open mpi:cpu", "invalid reference format"),
        ("", "invalid reference format"),
        (" busybox", "invalid reference format"),
        ("busybox:1.36\n", "invalid reference format"),
        ("busybox:", "invalid reference format"),
        ("team//app", "invalid reference format"),
        ("app:" + "x" * 129, "invalid reference format"),
        ("app:-dash", "invalid reference format"),
        ("app_:v1", "invalid reference format"),
        ("Ubuntu", "invalid reference format: repository name (library/Ubuntu) must be lowercase"),
        ("team/App:v1", "invalid reference format: repository name (team/App) must be lowercase"),
        ("example.org/App", "invalid reference format: repository name (App) must be lowercase"),
        (_HEX64, f"invalid repository name ({_HEX64}), cannot specify 64-byte hexadecimal strings"),
        ("a/" + "b" * 260, "repository name must not be more than 255 characters"),
        (f"busybox@sha256:{_HEX64[:-1]}", "invalid checksum digest format"),
        (f"busybox@sha256:{_HEX64.upper()}", "invalid checksum digest format"),
        (f"busybox@md5:{_HEX64[:32]}", "unsupported digest algorithm"),
        (f"busybox@sha256:{_HEX64[:31]}", "invalid reference format"),
    ],
)
def test_what_is_not_a_reference_is_refused_in_the_librarys_words(image: str, why: str) -> None:
    with pytest.raises(InvalidReference) as refused:
        parse(image)
    assert str(refused.value) == why


def test_the_kubelet_message_names_the_image_twice_and_the_reason() -> None:
    assert default_tag_problem("example.org/open mpi:cpu") == (
        'Failed to apply default image tag "example.org/open mpi:cpu": couldn\'t parse image '
        'name "example.org/open mpi:cpu": invalid reference format'
    )
    assert default_tag_problem("") == (
        'Failed to apply default image tag "": couldn\'t parse image name "": invalid reference '
        "format"
    )
    assert default_tag_problem("a\tb") is not None
    assert '"a\\tb"' in str(default_tag_problem("a\tb"))
    assert default_tag_problem("busybox:1.36") is None
