"""The launcher/worker layer: what every "launcher + elastic workers" job kind shares.

A kind of this family (TrainingJob, an elastic MPIJob) runs one launcher pod that starts the
training processes (``horovodrun``, ``mpirun``) on a set of worker pods, reached through ssh or
``kubectl exec``, while the set changes. This package holds everything such a kind needs and is
typed to none of them: a kind says how it names its children (:class:`LauncherNames`), lays out its
launcher's files (:class:`LauncherLayout`), mounts its ssh key (:class:`SshMount`) and reads its own
job (:class:`LauncherJob`), and gets:

* the files a launcher reads of its workers (hostfiles in both formats, ``discover_hosts.sh``
  printing a live file or listing the running, Ready workers, ``kubexec.sh``);
* the launcher pod's decoration (ConfigMap mount, live copies and their init container, kubectl
  delivery, environment) and the workers' ConfigMap mounts;
* the per-job ssh Secret and its mounts;
* the launcher's ServiceAccount, Role (``pods/exec`` only on the current workers) and RoleBinding,
  and the operator's rules for them;
* the launcher's gate (it waits for its workers) and the job's verdict (the launcher decides);
* the launcher as the consumer of the elastic members (:func:`read_launcher`);
* the membership pusher, which keeps a running launcher's copies equal to the ConfigMap;
* the size checks of a membership against the cluster's object size limits.

Plugins import this front door only; it imports ``etctl.common`` and ``etctl.runtime`` and no
plugin. See ``docs/plugins.md`` for how a kind is built on it.
"""

from etctl.jobs.launcher._elastic import LauncherReading, read_launcher
from etctl.jobs.launcher._hostfile import (
    CONFIG_MOUNT,
    DISCOVER_KEY,
    HOSTFILE_KEY,
    KUBECTL,
    KUBECTL_MOUNT,
    KUBEXEC_KEY,
    PUSHED_ANNOTATION,
    HostfileFormat,
    digest,
    discover_hosts_listing,
    discover_hosts_script,
    hostfile,
    kubexec_script,
    live_hosts,
    member_host,
    slots_hostfile,
    slots_per_worker,
)
from etctl.jobs.launcher._launcher import (
    ConfigFile,
    LauncherAttachMode,
    LauncherLayout,
    LiveFile,
    decorate_launcher,
    mount_config,
    set_env,
)
from etctl.jobs.launcher._lifecycle import (
    DEFAULT_WORKERS_READY_TIMEOUT,
    LauncherJob,
    launcher_gate,
    launcher_vanished,
    launcher_verdict,
    vanished_message,
    workers_ready,
)
from etctl.jobs.launcher._names import LauncherNames
from etctl.jobs.launcher._pusher import (
    DEFAULT_EXEC_TIMEOUT,
    MembershipPusher,
    register_membership_pusher,
    setup_membership_pusher,
    write_command,
)
from etctl.jobs.launcher._rbac import (
    LAUNCHER_RESOURCES,
    WRITE_VERBS,
    launcher_objects,
    launcher_role,
    launcher_role_binding,
    launcher_service_account,
    operator_rules,
)
from etctl.jobs.launcher._sizes import (
    STATUS_HEADROOM,
    MemberCost,
    Names,
    job_bytes,
    membership_problem,
    most_fitting,
)
from etctl.jobs.launcher._ssh import (
    SSH_CONFIG,
    SSH_DIR,
    KeyAlgorithm,
    SshMount,
    generate_key_pair,
    mount_ssh,
    ssh_secret,
)

__all__ = [
    "CONFIG_MOUNT",
    "ConfigFile",
    "DEFAULT_EXEC_TIMEOUT",
    "DEFAULT_WORKERS_READY_TIMEOUT",
    "DISCOVER_KEY",
    "HOSTFILE_KEY",
    "HostfileFormat",
    "KUBECTL",
    "KUBECTL_MOUNT",
    "KUBEXEC_KEY",
    "KeyAlgorithm",
    "LAUNCHER_RESOURCES",
    "LauncherAttachMode",
    "LauncherJob",
    "LauncherLayout",
    "LauncherNames",
    "LauncherReading",
    "LiveFile",
    "MemberCost",
    "MembershipPusher",
    "Names",
    "PUSHED_ANNOTATION",
    "SSH_CONFIG",
    "SSH_DIR",
    "STATUS_HEADROOM",
    "SshMount",
    "WRITE_VERBS",
    "decorate_launcher",
    "digest",
    "discover_hosts_listing",
    "discover_hosts_script",
    "generate_key_pair",
    "hostfile",
    "job_bytes",
    "kubexec_script",
    "launcher_gate",
    "launcher_objects",
    "launcher_role",
    "launcher_role_binding",
    "launcher_service_account",
    "launcher_vanished",
    "launcher_verdict",
    "live_hosts",
    "member_host",
    "membership_problem",
    "most_fitting",
    "mount_config",
    "mount_ssh",
    "operator_rules",
    "read_launcher",
    "register_membership_pusher",
    "set_env",
    "setup_membership_pusher",
    "slots_hostfile",
    "slots_per_worker",
    "ssh_secret",
    "vanished_message",
    "workers_ready",
    "write_command",
]
