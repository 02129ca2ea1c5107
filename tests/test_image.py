"""The operator image (Dockerfile) agrees with the Deployment that runs it and with the package.

There is no container engine in the test environment, so the Dockerfile is read, not built: its
instructions are parsed and checked against manifests/base/manager/deployment.yaml (image tag, user,
ports, command, the writable /tmp) and against the package (version, Python version).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from etctl import __version__

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Instruction:
    keyword: str
    argument: str

    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form instruction, or None for the shell form."""
        if not self.argument.startswith("["):
            return None
        parsed = json.loads(self.argument)
        assert isinstance(parsed, list)
        return [str(part) for part in parsed]


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and comments left out."""
    found: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, argument = (pending + line).partition(" ")
        found.append(Instruction(keyword.upper(), " ".join(argument.split())))
        pending = ""
    return found


def stages(found: list[Instruction]) -> list[list[Instruction]]:
    """The instructions of each build stage (a stage starts at FROM)."""
    out: list[list[Instruction]] = []
    for instruction in found:
        if instruction.keyword == "FROM":
            out.append([])
        if out:
            out[-1].append(instruction)
    return out


def assignments(argument: str) -> dict[str, str]:
    """``K=V`` pairs of an ENV, ARG or LABEL instruction."""
    return dict(part.split("=", 1) for part in shlex.split(argument) if "=" in part)


def settings(found: list[Instruction], keyword: str) -> dict[str, str]:
    """Every ``K=V`` the instructions of one keyword set (ARG defaults, ENV, LABEL)."""
    return {k: v for i in found if i.keyword == keyword for k, v in assignments(i.argument).items()}


def default_args(found: list[Instruction]) -> dict[str, str]:
    return settings(found, "ARG")


def dockerfile() -> list[Instruction]:
    return instructions((ROOT / "Dockerfile").read_text())


def operator_container() -> tuple[dict[str, Any], dict[str, Any]]:
    """The Deployment's pod spec and its operator container."""
    text = (ROOT / "manifests" / "base" / "manager" / "deployment.yaml").read_text()
    (deployment,) = [d for d in yaml.safe_load_all(text) if d]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, container


def final_stage() -> list[Instruction]:
    return stages(dockerfile())[-1]


def test_the_deployment_runs_the_image_of_this_version() -> None:
    _, container = operator_container()
    repository, _, tag = container["image"].rpartition(":")
    assert repository == "ghcr.io/etctl/etctl"
    assert tag == __version__
    assert default_args(dockerfile())["ETCTL_VERSION"] == __version__
    labels = settings(final_stage(), "LABEL")
    assert labels["org.opencontainers.image.version"] == "${ETCTL_VERSION}"


def test_the_user_is_the_deployments_numeric_non_root_user() -> None:
    pod, _ = operator_container()
    (user,) = [i.argument for i in final_stage() if i.keyword == "USER"]
    uid, _, gid = user.partition(":")
    context = pod["securityContext"]
    assert int(uid) == context["runAsUser"] != 0
    assert int(gid) == context["runAsGroup"] == context["fsGroup"]
    assert context["runAsNonRoot"] is True


def test_the_base_is_a_slim_python_of_the_supported_version_pinned_by_digest() -> None:
    found = dockerfile()
    base = default_args(found)["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?@sha256:[0-9a-f]{64}", base), base
    assert all(i.argument.split()[0] == "${PYTHON_IMAGE}" for i in found if i.keyword == "FROM")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"


def test_no_shell_is_needed_at_runtime() -> None:
    stage = final_stage()
    assert [i for i in stage if i.keyword == "RUN"] == []
    (entrypoint,) = [i.exec_form() for i in stage if i.keyword == "ENTRYPOINT"]
    (cmd,) = [i.exec_form() for i in stage if i.keyword == "CMD"]
    assert entrypoint == ["etctl"]
    assert cmd == ["run"]
    # Exec form everywhere: nothing goes through /bin/sh, in either stage.
    assert all(i.exec_form() is not None for i in dockerfile() if i.keyword == "RUN")
    _, container = operator_container()
    assert container["command"] == entrypoint
    assert container["args"][0] == "run"


def test_nothing_is_written_outside_the_tmp_volume() -> None:
    pod, container = operator_container()
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    writable = [m for m in container["volumeMounts"] if not m.get("readOnly")]
    (mount,) = writable
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert mount["mountPath"] == "/tmp"
    assert "emptyDir" in volumes[mount["name"]]
    # The webhook certificate Secret is mounted too, read-only (the kubelet writes it).
    (certs,) = [m for m in container["volumeMounts"] if m.get("readOnly")]
    assert "secret" in volumes[certs["name"]]
    env = settings(final_stage(), "ENV")
    assert env["HOME"] == "/tmp"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PATH"].split(":")[0] == "/opt/etctl/bin"
    (workdir,) = [i.argument for i in final_stage() if i.keyword == "WORKDIR"]
    assert workdir == "/tmp"
    # Bytecode is compiled when the image is built, so imports never try to write it.
    install = [i.exec_form() for i in dockerfile() if i.keyword == "RUN"]
    assert any(argv and "install" in argv and "--compile" in argv for argv in install)


def test_the_ports_are_the_deployments() -> None:
    _, container = operator_container()
    (exposed,) = [i.argument for i in final_stage() if i.keyword == "EXPOSE"]
    assert sorted(int(p) for p in exposed.split()) == sorted(
        p["containerPort"] for p in container["ports"]
    )


def test_the_build_context_holds_only_what_the_build_copies() -> None:
    rules = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert rules[0] == "*"
    allowed = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    copied = {
        source.rstrip("/")
        for i in stages(dockerfile())[0]
        if i.keyword == "COPY"
        for source in i.argument.split()[:-1]
    }
    assert copied == allowed
    for name in copied:
        assert (ROOT / name).exists(), name


LOCK = ROOT / "requirements.lock"


def locked() -> dict[str, tuple[str, list[str]]]:
    """The lock file's pins: normalized name -> (version, hashes)."""
    pins: dict[str, tuple[str, list[str]]] = {}
    for entry in re.split(r"\n(?=\S)", LOCK.read_text(encoding="utf-8")):
        if entry.startswith("#") or not entry.strip():
            continue
        requirement = entry.split(" \\", 1)[0].split(";", 1)[0].strip()
        name, _, version = requirement.partition("==")
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", entry)
        pins[canonicalize_name(name)] = (version, hashes)
    return pins


def test_every_dependency_is_pinned_with_hashes_and_satisfies_pyproject() -> None:
    pins = locked()
    assert pins, "requirements.lock pins nothing"
    for name, (version, hashes) in pins.items():
        assert re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", version), f"{name} is not pinned: {version}"
        assert hashes, f"{name} has no hash"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in project["dependencies"]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is a dependency the lock does not pin: refresh it"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"the lock pins {name}=={version}, outside pyproject's {requirement.specifier}"
        )


def test_the_lock_is_closed_under_the_dependencies_of_what_it_pins() -> None:
    pins = locked()
    environment = {"python_version": "3.11", "sys_platform": "linux", "extra": ""}
    for name in pins:
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue  # not installed here (another platform's dependency): nothing to read
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            needed = canonicalize_name(requirement.name)
            assert needed in pins, f"{name} needs {needed}, which the lock does not pin"


def test_the_lock_is_installed_by_hash_before_the_source() -> None:
    header = LOCK.read_text(encoding="utf-8").splitlines()[:2]
    command = header[1].lstrip("# ")
    assert command.startswith("uv pip compile pyproject.toml --generate-hashes"), header
    build = stages(dockerfile())[0]
    runs = [i.exec_form() or [] for i in build if i.keyword == "RUN"]
    (from_lock,) = [argv for argv in runs if "requirements.lock" in argv]
    assert "--require-hashes" in from_lock
    (package,) = [argv for argv in runs if argv and argv[-1] == "/src"]
    assert "--no-deps" in package  # nothing but the lock's pins reaches the image
    copies = [i.argument.split()[0] for i in build if i.keyword == "COPY"]
    assert copies.index("requirements.lock") < copies.index("etctl")
