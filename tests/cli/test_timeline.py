"""The demo's timeline: plain when piped, coloured and animated on a terminal, always aligned."""

from __future__ import annotations

import io
import re

import pytest

from etctl.cli._timeline import Mark, Timeline, Tone
from etctl.runtime import FakeClock

_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Terminal(io.StringIO):
    """A StringIO that says it is a UTF-8 terminal."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def plain(out: io.StringIO, clock: FakeClock, steps: int = 2) -> Timeline:
    return Timeline(out, steps=steps, clock=clock, environ={})


async def test_piped_output_is_plain_ascii_with_aligned_columns() -> None:
    out, clock = io.StringIO(), FakeClock()
    timeline = plain(out, clock)
    timeline.start()
    timeline.step("Create")
    timeline.hint("kubectl apply -f job.yaml")
    await clock.advance(0.25)
    timeline.change("pod/a", "Pending -> Running", tone=Tone.GOOD)
    timeline.change("trainingjob/elastic-mnist", "phase Running")
    await clock.advance(1.0)
    timeline.done("running")
    timeline.waiting("something")  # no spinner when piped
    text = out.getvalue()
    assert "\x1b" not in text
    assert "\r" not in text
    assert text.isascii()
    lines = text.splitlines()
    assert lines[0] == ""
    assert lines[1] == "[1/2] Create"
    assert lines[2] == "        $ kubectl apply -f job.yaml"
    first, second = lines[3], lines[4]
    assert first.startswith("   0.25s  pod/a ")
    assert second.startswith("   0.25s  trainingjob/elastic-mnist ")
    # The change column starts at the same place whatever the subject's length.
    assert first.index("Pending") == second.index("phase")
    assert lines[5] == "  ok running (1.25s)"


async def test_elapsed_times_count_from_start_and_steps_from_their_own_start() -> None:
    out, clock = io.StringIO(), FakeClock()
    timeline = plain(out, clock)
    timeline.start()
    await clock.advance(2)
    timeline.step("One")
    await clock.advance(0.5)
    assert timeline.elapsed() == pytest.approx(2.5)
    assert timeline.step_elapsed() == pytest.approx(0.5)
    timeline.step("Two")
    assert "[2/2] Two" in out.getvalue()
    assert timeline.step_elapsed() == 0


def test_blocks_mark_added_and_removed_lines() -> None:
    out = io.StringIO()
    timeline = plain(out, FakeClock())
    timeline.block([(Mark.SAME, "w-0:1"), (Mark.ADDED, "w-3:1"), (Mark.REMOVED, "w-1:1")])
    assert out.getvalue().splitlines() == ["          w-0:1", "        + w-3:1", "        - w-1:1"]


def test_tables_align_every_column_but_the_last() -> None:
    out = io.StringIO()
    timeline = plain(out, FakeClock())
    timeline.table(["NAME", "STATUS", "NODE"], [["launcher", "Running", "node-0"], ["w", "X", "n"]])
    assert out.getvalue().splitlines() == [
        "        NAME      STATUS   NODE",
        "        launcher  Running  node-0",
        "        w         X        n",
    ]


def test_grouped_tables_share_one_header_and_their_columns() -> None:
    out = io.StringIO()
    timeline = plain(out, FakeClock())
    timeline.grouped_table(
        ["COUNT", "REASON", "MESSAGE"],
        [("job/a", [["1", "Created", "made"]]), ("scaler/b", [["12", "ScalingStart", "go"]])],
    )
    assert out.getvalue().splitlines() == [
        "          COUNT  REASON        MESSAGE",
        "        job/a",
        "          1      Created       made",
        "        scaler/b",
        "          12     ScalingStart  go",
    ]


def test_fields_and_failures_read_plainly() -> None:
    out = io.StringIO()
    timeline = plain(out, FakeClock())
    timeline.title("Sandbox")
    timeline.field("kubeconfig:", "/tmp/k")
    timeline.failed("step 1: not done")
    timeline.finish("all done")
    assert out.getvalue().splitlines() == [
        "Sandbox",
        "  kubeconfig:  /tmp/k",
        "  FAILED: step 1: not done",
        "  ok all done",
    ]


def test_a_terminal_gets_colour_unicode_and_a_spinner_erased_before_the_next_line() -> None:
    out = Terminal()
    timeline = Timeline(out, steps=1, clock=FakeClock(), environ={"TERM": "xterm"})
    assert timeline.live
    assert timeline.color
    assert timeline.arrow == "→"
    timeline.waiting("the workers to run")
    timeline.waiting("the workers to run")
    timeline.change("pod/a", "created", tone=Tone.GOOD)
    text = out.getvalue()
    frames = text.split("\r")
    assert "⠋ " in _ESCAPE.sub("", frames[1])
    assert "⠙ " in _ESCAPE.sub("", frames[2])
    # The last spinner frame is erased (carriage return, clear line) before the change is written.
    assert "\r\x1b[K" in text
    assert text.endswith("\n")
    assert "\x1b[32mcreated\x1b[0m" in text
    timeline.done("ok")
    assert "✓" in out.getvalue()


@pytest.mark.parametrize("environ", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_dumb_terminals_get_no_colour(environ: dict[str, str]) -> None:
    out = Terminal()
    timeline = Timeline(out, steps=1, clock=FakeClock(), environ=environ)
    timeline.change("pod/a", "created", tone=Tone.BAD)
    assert timeline.live
    assert not timeline.color
    assert "\x1b[3" not in out.getvalue()


def test_a_terminal_line_is_cut_to_the_width_a_pipe_gets_it_whole() -> None:
    long = "x" * 200
    live = Terminal()
    Timeline(live, steps=1, clock=FakeClock(), environ={}, width=80, color=False).change("a", long)
    line = live.getvalue().rstrip("\n")
    assert len(line) == 80
    assert line.endswith("…")
    piped = io.StringIO()
    plain(piped, FakeClock()).change("a", long)
    assert long in piped.getvalue()
