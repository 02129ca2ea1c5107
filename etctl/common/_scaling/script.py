"""A scaler's script as the command executed on the launcher.

et-operator runs ``export K=V ... && timeout <t> sh <script> <host:slots>,...`` with the values
pasted in raw, so a value with a space, a quote or ``$(...)`` breaks the command or runs code.
Here every piece that comes from a user (the script path, every value, every host) is quoted for
the shell, and names are checked against the shell's variable syntax (the schema checks them too):

    sh -c "export REASON='more data' && timeout 60 sh /scripts/scale.sh j-worker-0:1,j-worker-1:1"

The host list is the job's hostfile after the scale, as ``<pod>:<slots>`` joined by commas.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence

from etctl.common._scaling.api import EnvVar

__all__ = ["EXEC_GRACE_SECONDS", "host_list", "script_command"]

EXEC_GRACE_SECONDS = 10.0
"""How much longer than the script's own timeout the exec that runs it may take."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def host_list(members: Sequence[str], slots: int) -> str:
    """``<pod>:<slots>`` for every member, comma separated."""
    return ",".join(f"{member}:{slots}" for member in members)


def script_command(script: str, *, timeout: int, env: Iterable[EnvVar], hosts: str) -> list[str]:
    """The argv that runs ``script`` with ``env`` exported, under ``timeout`` seconds.

    Raises:
        ValueError: an environment variable name is not a shell variable name.
    """
    parts = []
    for var in env:
        if not _NAME.fullmatch(var.name):
            msg = f"{var.name!r} is not a shell variable name"
            raise ValueError(msg)
        parts.append(f"export {var.name}={shlex.quote(var.value)}")
    parts.append(f"timeout {int(timeout)} sh {shlex.quote(script)} {shlex.quote(hosts)}")
    return ["sh", "-c", " && ".join(parts)]
