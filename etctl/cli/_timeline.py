"""A timeline on a terminal: numbered steps, timestamped changes, and progress while waiting.

:class:`Timeline` is how ``etctl sandbox --demo`` talks to people. Every line it writes starts at
a fixed column layout, so a run reads as a table of what happened when:

.. code-block:: text

    [1/6] Create a TrainingJob
          $ kubectl apply -f elastic-mnist.yaml
      0.02s  trainingjob/elastic-mnist         created
      0.31s  pod/elastic-mnist-worker-0        ContainerCreating -> Running
      ok  launcher and 3 workers Running                                  (1.20s)

Two renderings of the same calls, chosen once from the output stream:

* **live** (the stream is a terminal): colour (unless ``NO_COLOR`` is set or ``TERM`` is
  ``dumb``), Unicode marks, and a spinner line redrawn in place while something is awaited;
* **plain** (piped or redirected): the same lines without colour, escapes or spinner, ASCII only,
  so logs and tests read them as text.

Invariants: a spinner line is always erased before anything else is written, so it never mixes
with a real line; times are measured on the injected clock from :meth:`Timeline.start`; the
timeline only writes, it never waits.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import TextIO

from etctl.runtime import Clock, RealClock

__all__ = ["Mark", "Timeline", "Tone"]

_SUBJECT_WIDTH = 34
_INDENT = "  "
_TIME_WIDTH = 8  # "  12.34s"
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Tone(Enum):
    """How a change reads: neutral, good news, a warning, or bad news."""

    PLAIN = ""
    GOOD = "32"  # green
    WARN = "33"  # yellow
    BAD = "31"  # red


class Mark(Enum):
    """The margin mark of a line in a block: unchanged, added or removed."""

    SAME = " "
    ADDED = "+"
    REMOVED = "-"


_MARK_TONES: Mapping[Mark, Tone] = {
    Mark.SAME: Tone.PLAIN,
    Mark.ADDED: Tone.GOOD,
    Mark.REMOVED: Tone.BAD,
}
_BOLD, _DIM, _CYAN = "1", "2", "36"


def _wants_color(environ: Mapping[str, str]) -> bool:
    return "NO_COLOR" not in environ and environ.get("TERM", "") != "dumb"


def _is_tty(out: TextIO) -> bool:
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


class Timeline:
    """Writes a run as numbered steps of timestamped lines.

    Args:
        out: where to write (usually standard output).
        steps: how many numbered steps the run has (shown as ``[n/steps]``).
        live: redraw a spinner while waiting and use Unicode marks; by default, when ``out`` is a
            terminal.
        color: use ANSI colours; by default, when live and neither ``NO_COLOR`` nor a dumb
            ``TERM`` says otherwise.
        clock: the clock elapsed times are read from.
        environ: the environment read for ``NO_COLOR`` and ``TERM`` (the process's by default).
        width: the terminal's width in columns, to which live lines are cut (by default, asked
            of the terminal each time, so a resize is followed).
    """

    def __init__(
        self,
        out: TextIO,
        *,
        steps: int,
        live: bool | None = None,
        color: bool | None = None,
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
        width: int | None = None,
    ) -> None:
        self._out = out
        self._width = width
        self._steps = steps
        self.live = _is_tty(out) if live is None else live
        env = os.environ if environ is None else environ
        self.color = (self.live and _wants_color(env)) if color is None else color
        self._clock: Clock = clock or RealClock()
        self._started = self._clock.monotonic()
        self._step_started = self._started
        self._step = 0
        self._frame = 0
        self._spinning = False
        encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
        self._unicode = self.live and encoding in ("utf8", "utf_8")
        self.arrow = "→" if self._unicode else "->"

    # -- time

    def start(self) -> None:
        """Start counting elapsed time now."""
        self._started = self._step_started = self._clock.monotonic()

    def elapsed(self) -> float:
        """Seconds since :meth:`start`."""
        return self._clock.monotonic() - self._started

    def step_elapsed(self) -> float:
        """Seconds since the current step began."""
        return self._clock.monotonic() - self._step_started

    # -- lines

    def title(self, text: str) -> None:
        """A headline (bold when coloured)."""
        self._line(self._style(text, _BOLD))

    def field(self, label: str, value: str, *, width: int = 12) -> None:
        """An aligned ``label  value`` line, for settings and summaries."""
        self._line(f"{_INDENT}{self._style(label.ljust(width), _DIM)} {value}")

    def text(self, text: str = "") -> None:
        """A line as it is (an empty one separates paragraphs)."""
        self._line(text)

    def step(self, title: str) -> None:
        """Begin the next numbered step."""
        self._step += 1
        self._step_started = self._clock.monotonic()
        self._line("")
        self._line(self._style(f"[{self._step}/{self._steps}] {title}", _BOLD, _CYAN))

    def hint(self, command: str) -> None:
        """The command a user would type to do or see the same (dimmed)."""
        self._line(self._style(f"{' ' * _TIME_WIDTH}$ {command}", _DIM))

    def change(self, subject: str, what: str, *, tone: Tone = Tone.PLAIN) -> None:
        """Something changed: ``<elapsed>  <subject>  <what>``, aligned in columns.

        On a live terminal, ``what`` is cut to fit the line; piped, it is written whole.
        """
        stamp = self._style(f"{self.elapsed():{_TIME_WIDTH - 1}.2f}s", _DIM)
        subject = subject.ljust(_SUBJECT_WIDTH)
        what = self._fit(what, _TIME_WIDTH + 2 + len(subject) + 1)
        self._line(f"{stamp}  {subject} {self._toned(what, tone)}")

    def block(self, lines: Sequence[tuple[Mark, str]]) -> None:
        """Lines shown as they are (a file's content), each behind its mark."""
        pad = " " * _TIME_WIDTH
        for mark, content in lines:
            shown = f"{mark.value} {content}"
            self._line(f"{pad}{self._toned(shown, _MARK_TONES[mark])}")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """An aligned table under a dimmed header (the last column is not padded)."""
        self.grouped_table(headers, [("", rows)])

    def grouped_table(
        self, headers: Sequence[str], groups: Sequence[tuple[str, Sequence[Sequence[str]]]]
    ) -> None:
        """Tables under titles, with one header and columns aligned across every group.

        A group with an empty title is not titled and its rows are not indented further.
        """
        widths = [len(h) for h in headers]
        for _, rows in groups:
            for row in rows:
                for index, cell in enumerate(row):
                    widths[index] = max(widths[index], len(cell))

        def render(cells: Sequence[str]) -> str:
            padded = [cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])]
            return "  ".join([*padded, cells[-1]]) if cells else ""

        pad = " " * _TIME_WIDTH
        inner = pad + "  " if any(title for title, _ in groups) else pad
        self._line(inner + self._style(render(headers), _DIM))
        for title, rows in groups:
            if title:
                self._line(pad + title)
            indent = inner if title else pad
            for row in rows:
                self._line(indent + self._fit(render(row), len(indent)))

    def done(self, text: str) -> None:
        """The current step succeeded, with its duration."""
        mark = "✓" if self._unicode else "ok"
        took = self._style(f"({self.step_elapsed():.2f}s)", _DIM)
        self._line(f"{_INDENT}{self._toned(mark, Tone.GOOD)} {text} {took}")

    def finish(self, text: str) -> None:
        """The whole run succeeded (no step duration: the text says how long it took)."""
        self._marked(("✓", "ok"), Tone.GOOD, self._style(text, _BOLD))

    def failed(self, text: str) -> None:
        """The current step failed: why."""
        self._marked(("✗", "FAILED:"), Tone.BAD, self._toned(text, Tone.BAD))

    def warning(self, text: str) -> None:
        """Something goes wrong that the run keeps trying to get past: what."""
        self._marked(("!", "WARNING:"), Tone.WARN, self._toned(text, Tone.WARN))

    def stopped(self, text: str) -> None:
        """The run stopped before its end (out of time), neither a success nor a failure: why."""
        self._marked(("■", "STOPPED:"), Tone.WARN, text)

    def _marked(self, marks: tuple[str, str], tone: Tone, text: str) -> None:
        """A line behind a mark (Unicode or ASCII, as the output takes) of ``tone``."""
        mark = marks[0] if self._unicode else marks[1]
        self._line(f"{_INDENT}{self._toned(mark, tone)} {text}")

    def waiting(self, what: str) -> None:
        """Show that ``what`` is awaited: a spinner frame on a live terminal, nothing otherwise.

        Call it on every poll; each call draws the next frame over the previous one.
        """
        if not self.live:
            return
        frame = _SPINNER[self._frame % len(_SPINNER)] if self._unicode else "-\\|/"[self._frame % 4]
        self._frame += 1
        took = f"{self.step_elapsed():.1f}s"
        what = self._fit(what, len(_INDENT) + 2 + len(took) + 1)
        self._out.write(
            f"\r{_INDENT}{self._style(frame, _CYAN)} {what} {self._style(took, _DIM)}\x1b[K"
        )
        self._out.flush()
        self._spinning = True

    # -- rendering

    def _fit(self, text: str, used: int) -> str:
        """``text`` cut (with an ellipsis) to what is left of a live terminal's line."""
        if not self.live:
            return text
        room = max(self._columns() - used, 20)
        if len(text) <= room:
            return text
        return text[: room - 1] + ("…" if self._unicode else "~")

    def _columns(self) -> int:
        return self._width or shutil.get_terminal_size().columns

    def _line(self, text: str) -> None:
        self._erase()
        self._out.write(text + "\n")
        self._out.flush()

    def _erase(self) -> None:
        if self._spinning:
            self._out.write("\r\x1b[K")
            self._spinning = False

    def _style(self, text: str, *codes: str) -> str:
        if not self.color or not codes:
            return text
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"

    def _toned(self, text: str, tone: Tone) -> str:
        return self._style(text, tone.value) if tone is not Tone.PLAIN else text
