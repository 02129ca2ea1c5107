"""The launcher pod: the user's template plus what lets it find and reach the workers.

Added to the template (et-operator's layout, so existing images and commands work unchanged):

* ``serviceAccountName: <job>-launcher`` (:mod:`~etctl.jobs.trainingjob._rbac`);
* volumes: ``training-job-config`` (the ConfigMap at ``/etc/mpi``, read-only: hostfile 0444,
  discover_hosts.sh 0555, kubexec.sh 0555, deepspeed-hostfile 0444), and three emptyDirs:
  ``training-job-hostfile`` at ``/etc/edl``, ``deepspeed-hostfile`` at ``/job`` and
  ``training-job-kubectl`` at ``/opt/kube``, mounted in the first container;
* the init container ``init-hostfile`` (the operator's helper image) that copies the hostfile
  (0644), discover_hosts.sh (0755, so ``--host-discovery-script /etc/edl/discover_hosts.sh``
  runs) and the DeepSpeed hostfile (0644) from the ConfigMap into the emptyDirs, where the
  membership pusher rewrites them when the membership changes; a restarted launcher starts from
  the ConfigMap's current content;
* kubexec mode: ``OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh`` in the first container and, when
  the operator is given a kubectl image, the init container ``kubectl-delivery`` that copies that
  image's ``kubectl`` into ``/opt/kube`` (the image needs ``sh`` and ``kubectl`` on its PATH).
  Without one, the launcher image must bring its own ``kubectl`` on PATH: et-operator shipped this
  mode with the delivery container commented out, so ``/opt/kube/kubectl`` never existed;
* ssh mode: the job's key at ``/root/.ssh`` in every container (:mod:`~etctl.jobs.trainingjob.
  ssh`);
* et-operator's labels (``training-job-role: launcher``).
"""

from __future__ import annotations

from typing import Any

from etctl.jobs.trainingjob import _hostfile as hf
from etctl.jobs.trainingjob._names import compat_labels
from etctl.jobs.trainingjob._ssh import mount_ssh
from etctl.runtime import KubeObject

__all__ = [
    "CONFIG_VOLUME",
    "DEEPSPEED_VOLUME",
    "HOSTFILE_VOLUME",
    "INIT_CONTAINER",
    "KUBECTL_DELIVERY",
    "KUBECTL_VOLUME",
    "RSH_AGENT_ENV",
    "decorate_launcher",
]

INIT_CONTAINER = "init-hostfile"
KUBECTL_DELIVERY = "kubectl-delivery"
HOSTFILE_VOLUME = "training-job-hostfile"
DEEPSPEED_VOLUME = "deepspeed-hostfile"
KUBECTL_VOLUME = "training-job-kubectl"
CONFIG_VOLUME = "training-job-config"
RSH_AGENT_ENV = "OMPI_MCA_plm_rsh_agent"

_COPY = " && ".join(
    (
        f"cp {hf.CONFIG_MOUNT}/{hf.HOSTFILE_KEY} {hf.HOSTFILE}",
        f"chmod 644 {hf.HOSTFILE}",
        f"cp {hf.CONFIG_MOUNT}/{hf.DISCOVER_KEY} {hf.DISCOVER_HOSTS}",
        f"chmod 755 {hf.DISCOVER_HOSTS}",
        f"cp {hf.CONFIG_MOUNT}/{hf.DEEPSPEED_KEY} {hf.DEEPSPEED_HOSTFILE}",
        f"chmod 644 {hf.DEEPSPEED_HOSTFILE}",
    )
)
_DELIVER = f'cp "$(command -v kubectl)" {hf.KUBECTL} && chmod 755 {hf.KUBECTL}'


def _mount(name: str, path: str, *, read_only: bool = False) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": name, "mountPath": path}
    if read_only:
        mount["readOnly"] = True
    return mount


def _volumes(config_map: str) -> list[dict[str, Any]]:
    def item(key: str, mode: int) -> dict[str, Any]:
        return {"key": key, "path": key, "mode": mode}

    return [
        {"name": HOSTFILE_VOLUME, "emptyDir": {}},
        {"name": DEEPSPEED_VOLUME, "emptyDir": {}},
        {"name": KUBECTL_VOLUME, "emptyDir": {}},
        {
            "name": CONFIG_VOLUME,
            "configMap": {
                "name": config_map,
                "items": [
                    item(hf.HOSTFILE_KEY, 0o444),
                    item(hf.DISCOVER_KEY, 0o555),
                    item(hf.KUBEXEC_KEY, 0o555),
                    item(hf.DEEPSPEED_KEY, 0o444),
                ],
            },
        },
    ]


def _init_container(image: str) -> dict[str, Any]:
    return {
        "name": INIT_CONTAINER,
        "image": image,
        "command": ["sh", "-c", _COPY],
        "resources": {
            "limits": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
            "requests": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
        },
        "volumeMounts": [
            _mount(CONFIG_VOLUME, hf.CONFIG_MOUNT, read_only=True),
            _mount(HOSTFILE_VOLUME, hf.HOSTFILE_MOUNT),
            _mount(DEEPSPEED_VOLUME, hf.DEEPSPEED_MOUNT),
        ],
    }


def _delivery_container(image: str) -> dict[str, Any]:
    return {
        "name": KUBECTL_DELIVERY,
        "image": image,
        "command": ["sh", "-c", _DELIVER],
        "volumeMounts": [_mount(KUBECTL_VOLUME, hf.KUBECTL_MOUNT)],
    }


def _without(entries: list[Any], names: set[str]) -> list[Any]:
    return [e for e in entries if not (isinstance(e, dict) and e.get("name") in names)]


def decorate_launcher(
    pod: KubeObject,
    *,
    job: str,
    service_account: str,
    config_map: str,
    init_image: str,
    kubexec: bool,
    kubectl_image: str | None,
    ssh_secret: str | None,
) -> None:
    """Turn the pod built from the launcher template into the launcher (mutates ``pod``)."""
    metadata = pod.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **compat_labels(job, "launcher")}
    spec = pod.setdefault("spec", {})
    spec["serviceAccountName"] = service_account
    ours = {HOSTFILE_VOLUME, DEEPSPEED_VOLUME, KUBECTL_VOLUME, CONFIG_VOLUME}
    spec["volumes"] = [*_without(spec.get("volumes") or [], ours), *_volumes(config_map)]
    helpers = [_init_container(init_image)]
    if kubexec and kubectl_image:
        helpers.append(_delivery_container(kubectl_image))
    inits = _without(spec.get("initContainers") or [], {INIT_CONTAINER, KUBECTL_DELIVERY})
    spec["initContainers"] = [*inits, *helpers]
    main = spec["containers"][0]
    mounts = _without(main.get("volumeMounts") or [], ours)
    main["volumeMounts"] = [
        *mounts,
        _mount(HOSTFILE_VOLUME, hf.HOSTFILE_MOUNT),
        _mount(CONFIG_VOLUME, hf.CONFIG_MOUNT, read_only=True),
        _mount(KUBECTL_VOLUME, hf.KUBECTL_MOUNT),
        _mount(DEEPSPEED_VOLUME, hf.DEEPSPEED_MOUNT),
    ]
    if kubexec:
        env = [e for e in main.get("env") or [] if e.get("name") != RSH_AGENT_ENV]
        main["env"] = [*env, {"name": RSH_AGENT_ENV, "value": hf.KUBEXEC}]
    if ssh_secret is not None:
        mount_ssh(pod, ssh_secret)
