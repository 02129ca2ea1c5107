"""The shell interpreter: runs parsed scripts against a :class:`~.fs.FileSystem`, synchronously.

:class:`Shell` executes the subset :mod:`~.syntax` parses. Every command is a builtin written in
Python (see :mod:`~.commands`, :mod:`~.files` and :mod:`~.text`); pipes pass one command's whole
output to the next, so a pipeline runs its commands one after the other. A command that is not a
builtin exits 127 with ``sh: <cmd>: not found``; a path naming a script file runs it with ``sh``.

Honest limits: there are no processes, so nothing runs concurrently and nothing blocks;
``sleep`` and ``timeout`` take no time; all variables are exported; ``set`` knows ``-e``,
``-u``, ``-x`` and ``-o pipefail``; field splitting uses blanks and newlines (``IFS`` is
ignored); globbing handles ``*``, ``?`` and ``[...]`` in each path component.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from etctl.testing._kubelet.shell.expansion import ExpansionError, expand, expand_text
from etctl.testing._kubelet.shell.fs import FileSystem, FsError, join
from etctl.testing._kubelet.shell.syntax import (
    AndOr,
    Command,
    Compound,
    For,
    If,
    Loop,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    Word,
    parse,
)

__all__ = ["IO", "Builtin", "Exit", "LoopControl", "Resolver", "Shell", "ShellResult", "Sink"]

_MAX_DEPTH = 32
_MAX_ITERATIONS = 100_000
"""A loop that runs longer ends the shell: time is virtual, so ``while true; do sleep 1; done``
would otherwise never give the kubelet back."""
_BIN_DIRS = frozenset({"", "/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"})


class Exit(Exception):
    """Raised by ``exit`` (and errors that end the shell) to unwind with a status."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class LoopControl(Exception):
    """Raised by ``break`` and ``continue`` to leave or restart the ``levels``-th enclosing loop."""

    def __init__(self, kind: str, levels: int) -> None:
        super().__init__(kind, levels)
        self.kind = kind
        self.levels = levels


@dataclass(frozen=True, slots=True)
class ShellResult:
    """How a run ended: exit code, and everything written to stdout and stderr."""

    exit_code: int
    stdout: bytes
    stderr: bytes

    @property
    def output(self) -> str:
        """The stdout, decoded."""
        return self.stdout.decode(errors="replace")

    @property
    def errors(self) -> str:
        """The stderr, decoded."""
        return self.stderr.decode(errors="replace")


class Sink:
    """Where a descriptor writes: a buffer, a file of the filesystem, or nowhere."""

    def __init__(self, fs: FileSystem | None = None, path: str = "") -> None:
        self.data = bytearray()
        self._fs = fs
        self._path = path
        self.discard = path == "/dev/null"

    def write(self, data: bytes) -> None:
        """Write ``data`` (files are appended to at once)."""
        if self.discard or not data:
            return
        if self._fs is not None:
            self._fs.write(self._path, data, append=True)
        else:
            self.data.extend(data)


@dataclass(slots=True)
class _Input:
    data: bytes
    used: bool = False

    def read(self) -> bytes:
        if self.used:
            return b""
        self.used = True
        return self.data


@dataclass(slots=True)
class IO:
    """A command's descriptors: input to read once, and output sinks by number."""

    stdin: _Input
    fds: dict[int, Sink] = field(default_factory=dict)

    def read(self) -> bytes:
        """All of stdin (a second read gets nothing, as the stream is consumed)."""
        return self.stdin.read()

    def write(self, data: bytes | str) -> None:
        """Write to stdout."""
        self._to(1, data)

    def error(self, data: bytes | str) -> None:
        """Write to stderr."""
        self._to(2, data)

    def _to(self, fd: int, data: bytes | str) -> None:
        sink = self.fds.get(fd)
        if sink is not None:
            sink.write(data.encode() if isinstance(data, str) else data)


Builtin = Callable[["Shell", list[str], IO], int]
"""A command: ``(shell, argv, io) -> exit status``."""

Resolver = Callable[[str], tuple[str, tuple[str, ...]] | None]
"""A DNS lookup: a name to the fully qualified name that answered and its addresses, or None."""


def _builtins() -> dict[str, Builtin]:
    from etctl.testing._kubelet.shell import (  # noqa: PLC0415 - they import this module
        commands,
        files,
        listing,
        network,
        session,
        text,
    )

    return {
        **commands.COMMANDS,
        **network.COMMANDS,
        **session.COMMANDS,
        **files.COMMANDS,
        **listing.COMMANDS,
        **text.COMMANDS,
    }


class Shell:
    """A shell session: variables, working directory, options and the last status.

    Args:
        fs: the filesystem commands work on.
        env: the initial (exported) variables.
        cwd: the working directory.
        hostname: what ``hostname`` prints.
        args: ``$0`` and the positional parameters.
        now: the clock for file times (``touch``, ``ls -l``).
        resolver: the DNS ``nslookup`` and ``getent hosts`` ask (None: nothing resolves).
    """

    def __init__(
        self,
        fs: FileSystem,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
        hostname: str = "localhost",
        args: Sequence[str] = ("sh",),
        now: Callable[[], datetime] | None = None,
        depth: int = 0,
        resolver: Resolver | None = None,
    ) -> None:
        self.fs = fs
        self.resolver = resolver
        self.env: dict[str, str] = dict(env or {})
        self.cwd = cwd
        self.hostname = hostname
        self.args = list(args) or ["sh"]
        self.now = now or (lambda: datetime.now(UTC))
        self.depth = depth
        self.status = 0
        self.options: set[str] = set()
        self.builtins = _builtins()

    # -- entry points ---------------------------------------------------------------------------

    def run(self, source: str, *, stdin: bytes = b"") -> ShellResult:
        """Run a script; returns its exit status and output."""
        out, err = Sink(), Sink()
        code = self.run_io(source, IO(_Input(stdin), {1: out, 2: err}))
        return ShellResult(code, bytes(out.data), bytes(err.data))

    def run_argv(self, argv: Sequence[str], *, stdin: bytes = b"") -> ShellResult:
        """Run one command from an argument vector, unparsed (as ``exec`` does)."""
        out, err = Sink(), Sink()
        io = IO(_Input(stdin), {1: out, 2: err})
        try:
            code = self.call(list(argv), io)
        except Exit as done:
            code = done.code
        except LoopControl:
            code = 0  # break or continue outside a loop: dash does nothing
        return ShellResult(code, bytes(out.data), bytes(err.data))

    def run_io(self, source: str, io: IO) -> int:
        """Run a script with the given descriptors; returns its exit status."""
        try:
            script = parse(source)
        except ShellSyntaxError as exc:
            io.error(f"{self.args[0]}: syntax error: {exc}\n")
            return 2
        try:
            return self.execute(script, io)
        except Exit as done:
            return done.code
        except LoopControl:
            return 0  # break or continue outside a loop: dash does nothing

    def child(self, args: Sequence[str] | None = None) -> Shell:
        """A subshell: a copy of the variables and directory that does not leak back.

        Raises:
            Exit: subshells nest too deeply (a script calling itself).
        """
        if self.depth >= _MAX_DEPTH:
            raise Exit(2)
        shell = Shell(
            self.fs,
            env=self.env,
            cwd=self.cwd,
            hostname=self.hostname,
            args=self.args if args is None else args,
            now=self.now,
            depth=self.depth + 1,
            resolver=self.resolver,
        )
        shell.options = set(self.options)
        return shell

    # -- execution ------------------------------------------------------------------------------

    def execute(self, script: Script, io: IO) -> int:
        """Run parsed and-or lists in order; ``set -e`` stops at the first failure."""
        for item in script:
            status, checked = self._and_or(item, io)
            self.status = status
            if status and checked and "errexit" in self.options:
                raise Exit(status)
        return self.status

    def _and_or(self, item: AndOr, io: IO) -> tuple[int, bool]:
        """The status, and whether ``set -e`` applies to it (the last pipeline ran, unnegated)."""
        status = self._pipeline(item.first, io)
        checked = not item.first.negated
        for op, pipeline in item.rest:
            if (op == "&&") != (status == 0):
                checked = False
                continue
            status = self._pipeline(pipeline, io)
            checked = not pipeline.negated
        if item.rest and item.rest[-1][0] != "&&" and status == 0:
            checked = False
        return status, checked

    def _pipeline(self, pipeline: Pipeline, io: IO) -> int:
        statuses: list[int] = []
        stdin = io.stdin
        count = len(pipeline.commands)
        for index, command in enumerate(pipeline.commands):
            last = index == count - 1
            out = io.fds.get(1, Sink()) if last else Sink()
            stage = IO(stdin, {**io.fds, 1: out})
            try:
                status = self._command(command, stage)
            except Exit as done:
                if count == 1:
                    raise
                status = done.code
            statuses.append(status)
            self.status = status
            if not last:
                stdin = _Input(bytes(out.data))
        status = statuses[-1]
        if "pipefail" in self.options:
            status = next((s for s in reversed(statuses) if s), 0)
        if pipeline.negated:
            status = 0 if status else 1
        self.status = status
        return status

    def _command(self, command: Command | Compound, io: IO) -> int:
        if isinstance(command, If):
            return self._if(command, io)
        if isinstance(command, For):
            return self._for(command, io)
        if isinstance(command, Loop):
            return self._loop(command, io)
        return self._simple(command, io)

    def _if(self, clause: If, io: IO) -> int:
        for condition, body in clause.branches:
            if self._condition(condition, io) == 0:
                return self.execute(body, io)
        if clause.otherwise is not None:
            return self.execute(clause.otherwise, io)
        return 0

    def _condition(self, condition: Script, io: IO) -> int:
        """A condition's status; ``set -e`` does not apply to it."""
        errexit = "errexit" in self.options
        self.options.discard("errexit")
        try:
            return self.execute(condition, io)
        finally:
            if errexit:
                self.options.add("errexit")

    def _for(self, loop: For, io: IO) -> int:
        if loop.words is None:
            values = self.args[1:]
        else:
            values = [field for word in loop.words for field in self.expand(word)]
        status = 0
        for value in values:
            self.env[loop.name] = value
            done, status = self._iteration(loop.body, io, status)
            if done:
                break
        return status

    def _loop(self, loop: Loop, io: IO) -> int:
        status = 0
        for _ in range(_MAX_ITERATIONS):
            holds = self._condition(loop.condition, io) == 0
            if holds == loop.until:
                return status
            done, status = self._iteration(loop.body, io, status)
            if done:
                return status
        io.error(f"{self.args[0]}: a loop ran {_MAX_ITERATIONS} times; giving up\n")
        raise Exit(2)

    def _iteration(self, body: Script, io: IO, status: int) -> tuple[bool, int]:
        """Run one pass of a loop body: (whether the loop ends, the status)."""
        try:
            return False, self.execute(body, io)
        except LoopControl as control:
            if control.levels > 1:
                raise LoopControl(control.kind, control.levels - 1) from None
            return control.kind == "break", 0

    def _simple(self, command: Command, io: IO) -> int:
        try:
            argv = [field for word in command.words for field in self.expand(word)]
            values = [(name, self.expand_text(word)) for name, word in command.assignments]
        except ExpansionError as exc:
            # As in dash: a failed expansion ends a non-interactive shell.
            io.error(f"{self.args[0]}: {exc}\n")
            raise Exit(2) from None
        stage = IO(io.stdin, dict(io.fds))
        for redirect in command.redirects:
            problem = self._redirect(redirect, stage)
            if problem is not None:
                io.error(f"{self.args[0]}: {problem}\n")
                return 1
        if not argv:
            self.env.update(values)
            return 0
        if "xtrace" in self.options:
            io.error("+ " + " ".join(argv) + "\n")
        if not values:
            return self.call(argv, stage)
        saved = {name: self.env.get(name) for name, _ in values}
        self.env.update(values)
        try:
            return self.call(argv, stage)
        finally:
            for name, old in saved.items():
                if old is None:
                    self.env.pop(name, None)
                else:
                    self.env[name] = old

    def _redirect(self, redirect: Redirect, io: IO) -> str | None:
        """Apply one redirection to ``io``; returns an error message instead of raising."""
        target = self.expand_text(redirect.target)
        if redirect.op in (">&", "<&") and (target.isdigit() or target == "-"):
            io.fds[redirect.fd] = (
                Sink(path="/dev/null")
                if target == "-"
                else io.fds.get(int(target), Sink(path="/dev/null"))
            )
            return None
        path = join(self.cwd, target)
        if redirect.op == "<":
            try:
                io.stdin = _Input(b"" if path == "/dev/null" else self.fs.read(path))
            except FsError as exc:
                return f"can't open '{target}': {exc.message}"
            return None
        sink = Sink(path="/dev/null")
        if path != "/dev/null":
            try:
                if redirect.op == ">>":
                    self.fs.write(path, b"", append=True)
                else:
                    self.fs.write(path, b"")
            except FsError as exc:
                return f"can't create {target}: {exc.message}"
            sink = Sink(self.fs, path)
        if redirect.op in ("&>", ">&"):
            io.fds[1] = io.fds[2] = sink
        else:
            io.fds[redirect.fd] = sink
        return None

    def call(self, argv: list[str], io: IO) -> int:
        """Run one command (a builtin, or a script file by path)."""
        if not argv:
            return 0
        name = argv[0]
        directory, _, base = name.rpartition("/")
        builtin = self.builtins.get(base) if directory in _BIN_DIRS else None
        if builtin is not None:
            return builtin(self, argv, io)
        if "/" in name:
            return self._script_file(argv, io)
        io.error(f"{self.args[0]}: {name}: not found\n")
        return 127

    def _script_file(self, argv: list[str], io: IO) -> int:
        path = join(self.cwd, argv[0])
        stat = self.fs.stat(path)
        if stat is None:
            io.error(f"{self.args[0]}: {argv[0]}: not found\n")
            return 127
        if stat.is_dir or not stat.mode & 0o111:
            io.error(f"{self.args[0]}: {argv[0]}: Permission denied\n")
            return 126
        return self.builtins["sh"](self, ["sh", *argv], io)

    # -- expansion ------------------------------------------------------------------------------

    def substitute(self, source: str) -> str:
        """The output of ``$(source)``, run in a subshell, without its trailing newlines."""
        shell = self.child()
        out = Sink()
        shell.run_io(source, IO(_Input(b""), {1: out, 2: Sink(path="/dev/null")}))
        self.status = shell.status
        return bytes(out.data).decode(errors="replace").rstrip("\n")

    def expand(self, word: Word) -> list[str]:
        """A word expanded to fields (see :func:`~.expansion.expand`)."""
        return expand(self, word)

    def expand_text(self, word: Word) -> str:
        """A word expanded to one string (see :func:`~.expansion.expand_text`)."""
        return expand_text(self, word)
