"""Name lookups: ``getent hosts`` and ``nslookup``, answered by the shell's resolver.

* ``getent hosts NAME...``: each name from ``/etc/hosts`` first (the pod's own host name, as the
  kubelet writes the file), then from DNS; one ``<address> <name>`` line per address; exit 2 when
  a name is not found (glibc's ``getent``).
* ``nslookup NAME``: DNS only (busybox's output: the server, then the name that answered and its
  addresses); exit 1 with ``** server can't find NAME: NXDOMAIN`` when it does not resolve.

Invariants: lookups read the cluster at the moment they run; nothing is cached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.fs import FsError

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import IO, Builtin, Shell

__all__ = ["COMMANDS", "NAMESERVER"]

NAMESERVER = "10.96.0.10"
"""What ``nslookup`` reports as its server (the ``nameserver`` of every pod's resolv.conf)."""


def _hosts_file(shell: Shell, name: str) -> list[tuple[str, str]]:
    """``(address, name)`` of the ``/etc/hosts`` lines that name ``name``."""
    try:
        text = shell.fs.read("/etc/hosts").decode(errors="replace")
    except FsError:
        return []
    found = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) > 1 and name in fields[1:]:
            found.append((fields[0], fields[1]))
    return found


def getent(shell: Shell, argv: list[str], io: IO) -> int:
    """``getent hosts NAME...``."""
    if len(argv) < 2 or argv[1] != "hosts":
        io.error(f"getent: only 'hosts' is supported here: {' '.join(argv[1:])}\n")
        return 1
    status = 0
    for name in argv[2:]:
        lines = _hosts_file(shell, name)
        if not lines:
            answer = shell.resolver(name) if shell.resolver is not None else None
            lines = [(address, answer[0]) for address in answer[1]] if answer else []
        if not lines:
            status = 2
        for address, canonical in lines:
            io.write(f"{address:<15} {canonical}\n")
    return status


def nslookup(shell: Shell, argv: list[str], io: IO) -> int:
    """``nslookup NAME``."""
    names = [a for a in argv[1:] if not a.startswith("-")]
    if not names:
        io.error("Usage: nslookup HOST\n")
        return 1
    io.write(f"Server:\t\t{NAMESERVER}\nAddress:\t{NAMESERVER}:53\n\n")
    answer = shell.resolver(names[0]) if shell.resolver is not None else None
    if answer is None:
        io.write(f"** server can't find {names[0]}: NXDOMAIN\n\n")
        return 1
    name, addresses = answer
    for address in addresses:
        io.write(f"Name:\t{name}\nAddress: {address}\n\n")
    return 0


COMMANDS: dict[str, Builtin] = {"getent": getent, "nslookup": nslookup}
