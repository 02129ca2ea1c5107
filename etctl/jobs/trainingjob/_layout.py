"""A TrainingJob's files and mounts: et-operator's layout, on the launcher/worker layer.

**ConfigMap** ``<job>-config``, rendered from ``status.currentWorkers`` (the members, in index
order):

* ``hostfile``: ``<pod>:<slots>`` per member (Horovod's format);
* ``deepspeed-hostfile``: ``<pod> slots=<slots>`` per member (DeepSpeed's format);
* ``discover_hosts.sh``: prints the live hostfile; ``horovodrun --host-discovery-script`` runs it;
* ``kubexec.sh``: Open MPI's rsh agent in kubexec mode.

**Launcher** (et-operator's layout, so existing images and commands work unchanged):
``serviceAccountName: <job>-launcher``; the ConfigMap as volume ``training-job-config`` at
``/etc/mpi`` (hostfile 0444, discover_hosts.sh 0555, kubexec.sh 0555, deepspeed-hostfile 0444);
the init container ``init-hostfile`` copies the hostfile (0644) and discover_hosts.sh (0755) into
the emptyDir ``training-job-hostfile`` at ``/etc/edl`` and the DeepSpeed hostfile (0644) into
``deepspeed-hostfile`` at ``/job``, where the membership pusher rewrites both hostfiles when the
membership changes; the emptyDir ``training-job-kubectl`` at ``/opt/kube``. kubexec mode:
``OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh`` in the first container and, when the operator is
given a kubectl image, the init container ``kubectl-delivery`` copying that image's ``kubectl``
into ``/opt/kube``; without one, the launcher image must bring its own ``kubectl`` on PATH
(et-operator shipped this mode with the delivery container commented out). et-operator's labels
(``training-job-role: launcher``).

**ssh** mode: the job's key (Ed25519, Secret ``<job>``) at ``/root/.ssh`` in every container of
the launcher and the workers, as ``id_ed25519``, ``id_ed25519.pub``, ``authorized_keys`` and
``config``, every file 0600 (volume ``training-job-ssh``).

Slots per worker: ``slotsPerWorker``, else the ``nvidia.com/gpu`` limit of the worker's first
container, else 1 (et-operator's rule).
"""

from __future__ import annotations

from collections.abc import Sequence

from etctl.jobs.launcher import (
    DISCOVER_KEY,
    HOSTFILE_KEY,
    KUBEXEC_KEY,
    ConfigFile,
    LauncherLayout,
    LiveFile,
    SshMount,
    hostfile,
    kubexec_script,
    slots_hostfile,
)
from etctl.jobs.launcher import decorate_launcher as decorate
from etctl.jobs.launcher import discover_hosts_script as cat_script
from etctl.jobs.launcher import mount_ssh as mount_key
from etctl.jobs.trainingjob._names import compat_labels
from etctl.runtime import KubeObject

__all__ = [
    "CONFIG_VOLUME",
    "DEEPSPEED_HOSTFILE",
    "DEEPSPEED_KEY",
    "HOSTFILE",
    "INIT_CONTAINER",
    "KUBECTL_DELIVERY",
    "LAYOUT",
    "RSH_AGENT_ENV",
    "SSH",
    "SSH_VOLUME",
    "config_data",
    "decorate_launcher",
    "discover_hosts_script",
    "mount_ssh",
]

DEEPSPEED_KEY = "deepspeed-hostfile"
CONFIG_VOLUME = "training-job-config"
SSH_VOLUME = "training-job-ssh"
INIT_CONTAINER = "init-hostfile"
KUBECTL_DELIVERY = "kubectl-delivery"
RSH_AGENT_ENV = "OMPI_MCA_plm_rsh_agent"

_LIVE_HOSTFILE = LiveFile(
    key=HOSTFILE_KEY, volume="training-job-hostfile", directory="/etc/edl", name="hostfile"
)
_LIVE_DEEPSPEED = LiveFile(
    key=DEEPSPEED_KEY, volume="deepspeed-hostfile", directory="/job", name="hostfile"
)
HOSTFILE = _LIVE_HOSTFILE.path
"""The live hostfile the launcher reads (``/etc/edl/hostfile``)."""
DEEPSPEED_HOSTFILE = _LIVE_DEEPSPEED.path
"""The live DeepSpeed hostfile (``/job/hostfile``)."""

LAYOUT = LauncherLayout(
    config_volume=CONFIG_VOLUME,
    files=(
        ConfigFile(HOSTFILE_KEY, 0o444),
        ConfigFile(DISCOVER_KEY, 0o555),
        ConfigFile(KUBEXEC_KEY, 0o555),
        ConfigFile(DEEPSPEED_KEY, 0o444),
    ),
    live=(
        _LIVE_HOSTFILE,
        LiveFile(
            key=DISCOVER_KEY,
            volume="training-job-hostfile",
            directory="/etc/edl",
            name=DISCOVER_KEY,
            mode=0o755,
            pushed=False,  # it prints the live hostfile: its content never changes
        ),
        _LIVE_DEEPSPEED,
    ),
    init_container=INIT_CONTAINER,
    kubectl_volume="training-job-kubectl",
    delivery_container=KUBECTL_DELIVERY,
)
"""The launcher's layout (see the module docstring)."""

SSH = SshMount(volume=SSH_VOLUME)
"""The ssh key in every container at ``/root/.ssh``, as ``id_ed25519``, files 0600."""


def discover_hosts_script() -> str:
    """Prints the live hostfile (``horovodrun --host-discovery-script``)."""
    return cat_script(HOSTFILE)


def config_data(members: Sequence[str], slots: int, worker_container: str) -> dict[str, str]:
    """The ConfigMap's data for ``members``."""
    return {
        HOSTFILE_KEY: hostfile(members, slots),
        DISCOVER_KEY: discover_hosts_script(),
        KUBEXEC_KEY: kubexec_script(worker_container),
        DEEPSPEED_KEY: slots_hostfile(members, slots),
    }


def mount_ssh(pod: KubeObject, secret: str) -> None:
    """Mount the key of ``secret`` at ``/root/.ssh`` in every container of ``pod``."""
    mount_key(pod, secret, SSH)


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
    decorate(
        pod,
        LAYOUT,
        config_map=config_map,
        init_image=init_image,
        service_account=service_account,
        kubectl_image=kubectl_image if kubexec else None,
        env={RSH_AGENT_ENV: LAYOUT.path(KUBEXEC_KEY)} if kubexec else None,
    )
    if ssh_secret is not None:
        mount_ssh(pod, ssh_secret)
