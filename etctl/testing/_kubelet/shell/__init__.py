"""A small, honest POSIX ``sh`` for simulated containers: builtins over a virtual filesystem.

:class:`Shell` parses and runs scripts (see :mod:`.syntax` for the grammar it accepts and
:mod:`.interpreter` for its semantics and limits); commands are Python builtins working on a
:class:`FileSystem` (see :mod:`.commands`, :mod:`.files` and :mod:`.text` for what each
supports). Unknown commands exit 127 with ``sh: <cmd>: not found``.
"""

from etctl.testing._kubelet.shell.fs import FileSystem, FsError, Stat
from etctl.testing._kubelet.shell.interpreter import Shell, ShellResult
from etctl.testing._kubelet.shell.syntax import ShellSyntaxError

__all__ = ["FileSystem", "FsError", "Shell", "ShellResult", "ShellSyntaxError", "Stat"]
