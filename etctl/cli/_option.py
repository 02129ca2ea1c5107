"""One setting of a command: its flag, its ``ETCTL_`` variable, its parser and its help.

:func:`declare` declares a setting from its field name (``webhook_port`` is ``--webhook-port`` and
``ETCTL_WEBHOOK_PORT``); :func:`choice` and :func:`text` are the parsers settings share with the
ones of :mod:`etctl.cli._values`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["Option", "choice", "declare", "text"]


def choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            shown = ", ".join(a or '""' for a in allowed)
            msg = f"{text!r} is not one of {shown}"
            raise ValueError(msg)
        return value

    return parse


def text(text: str) -> str:
    return text.strip()


@dataclass(frozen=True, slots=True)
class Option:
    """One setting of ``etctl run``: its flag, environment variable, parser and documentation.

    Attributes:
        field: the settings field it sets.
        flag: the long flag (``--metrics-bind-address``).
        env: the environment variable (``ETCTL_METRICS_BIND_ADDRESS``).
        parse: turns one raw value into the field's type (raises ValueError).
        help: what it does, for ``--help``.
        metavar: the value's placeholder in ``--help``.
        repeatable: the flag may be given several times (and takes comma-separated lists).
        switch: a boolean flag that may be given without a value (``--leader-elect``).
        compat_env: another variable read when the ``ETCTL_`` one is unset.
        default_help: how ``--help`` describes the default (else the default value itself).
    """

    field: str
    flag: str
    env: str
    parse: Callable[[str], Any]
    help: str
    metavar: str = ""
    repeatable: bool = False
    switch: bool = False
    compat_env: str = ""
    default_help: str = ""

    def default_text(self, model: type[BaseModel]) -> str:
        """The default value as ``--help`` shows it, from the settings ``model``'s field."""
        if self.default_help:
            return self.default_help
        default = model.model_fields[self.field].default
        if isinstance(default, bool):
            return str(default).lower()
        if isinstance(default, float):
            return f"{default:g}s"
        if default in ("", ()):
            return "unset"
        return str(default)


def declare(field: str, parse: Callable[[str], Any], help_text: str, **kwargs: Any) -> Option:
    flag = kwargs.pop("flag", "--" + field.replace("_", "-"))
    return Option(
        field=field,
        flag=flag,
        env="ETCTL_" + flag.removeprefix("--").replace("-", "_").upper(),
        parse=parse,
        help=help_text,
        **kwargs,
    )
