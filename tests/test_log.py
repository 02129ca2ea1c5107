"""etctl's logging: nothing on standard output, context and redaction once configured."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from etctl.log import bind_context, configure, get_logger

_UNCONFIGURED = """
from etctl.log import get_logger
log = get_logger("etctl.example")
log.info("quiet by default")
log.warning("worth knowing", job="ns/a")
"""


def test_an_unconfigured_program_gets_warnings_on_stderr_and_nothing_on_stdout() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _UNCONFIGURED],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == ""
    assert "worth knowing" in done.stderr
    assert "job=ns/a" in done.stderr
    assert "quiet by default" not in done.stderr


@pytest.fixture
def configured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()  # noqa: TID251 - restoring the root logger after the test
    handlers, level, was = root.handlers[:], root.level, structlog.get_config()["processors"]
    configure(fmt="json", level="info", stream=stream)
    yield stream
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.configure(processors=was)


def test_configured_json_carries_bound_context_and_redacts_secrets(
    configured: io.StringIO,
) -> None:
    log = get_logger("etctl.example")
    with bind_context(controller="jobs", namespace="ns", name="a"):
        log.info("reconciled", token="s3cret", replicas=3)
    log.debug("below the level")
    lines = [json.loads(line) for line in configured.getvalue().splitlines()]
    assert len(lines) == 1
    line = lines[0]
    assert line["msg"] == "reconciled"
    assert line["level"] == "info"
    assert line["logger"] == "etctl.example"
    assert (line["controller"], line["namespace"], line["name"]) == ("jobs", "ns", "a")
    assert line["token"] == "<redacted>"
    assert line["replicas"] == 3


def test_a_program_that_configured_structlog_gets_etctl_events_through_it() -> None:
    log = get_logger("etctl.example")
    with capture_logs() as captured:
        log.warning("seen by the program", password="hunter2")
    assert [(e["event"], e["log_level"], e["password"]) for e in captured] == [
        ("seen by the program", "warning", "<redacted>")
    ]


def test_a_log_call_never_fails_its_caller_even_on_an_unprintable_traceback() -> None:
    deep: dict[str, object] = {}
    for _ in range(5000):
        deep = {"n": deep}
    log = get_logger("etctl.example")

    def explode(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> str:
        raise RecursionError

    with capture_logs():
        structlog.configure(processors=[explode])
        try:
            raise TypeError(deep)
        except TypeError:
            log.exception("could not compact", obj=deep)


def test_a_logged_exception_reaches_a_program_pipeline_as_plain_text() -> None:
    log = get_logger("etctl.example")
    with capture_logs() as captured:
        structlog.configure(
            processors=[structlog.processors.add_log_level, structlog.dev.set_exc_info, _keep]
        )
        try:
            raise KeyError("spec")
        except KeyError:
            log.exception("failed")
    (event,) = KEPT
    assert "exc_info" not in event  # a renderer gets no traceback object to walk
    assert "KeyError: 'spec'" in event["exception"]
    assert event["level"] == "error"
    assert captured == []


KEPT: list[MutableMapping[str, Any]] = []


def _keep(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> str:
    KEPT.append(dict(event))
    raise structlog.DropEvent
