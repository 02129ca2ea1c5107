"""The ``/metrics`` answer: Prometheus's text format, or OpenMetrics when the scraper asks for it.

What prometheus-client's ``choose_encoder`` and ``generate_latest`` do, without importing the
module they live in: ``prometheus_client.exposition`` also holds the library's push-gateway
client and its WSGI, threaded and ASGI servers, and importing it loads ``http.server``,
``socketserver``, ``wsgiref``, ``gzip`` and ``urllib.request`` with their dependencies, about 1 MB
of an idle operator's resident memory that nothing here ever runs. OpenMetrics is the library's
own encoder (``prometheus_client.openmetrics.exposition``, a small module); only the classic text
format (0.0.4, and 1.0.0 with its name escaping) is written here, as the library writes it: the
suite compares both byte for byte over the whole registry and a table of ``Accept`` headers.

Negotiation follows the library: the first acceptable media type of the ``Accept`` header wins:
``application/openmetrics-text`` (with no version, or 1.0.0 or later), or ``text/plain`` with a
version of 1.0.0 or later, each with the ``escaping`` the header names; anything else gets the
text format 0.0.4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from prometheus_client.openmetrics import exposition as openmetrics
from prometheus_client.utils import floatToGoString, parse_version

if TYPE_CHECKING:
    from prometheus_client.registry import Collector
    from prometheus_client.samples import Sample

__all__ = ["CONTENT_TYPE_TEXT_0_0_4", "CONTENT_TYPE_TEXT_1_0_0", "choose_encoder", "text_format"]

CONTENT_TYPE_TEXT_0_0_4 = "text/plain; version=0.0.4; charset=utf-8"
"""The classic text format's content type (the answer when the scraper names no other)."""
CONTENT_TYPE_TEXT_1_0_0 = "text/plain; version=1.0.0; charset=utf-8"
"""The text format with UTF-8 names, each scheme of escaping them named after it."""

Encoder = Callable[["Collector"], bytes]

_ESCAPINGS = (openmetrics.ALLOWUTF8, openmetrics.UNDERSCORES, openmetrics.DOTS, openmetrics.VALUES)
# The classic format's renaming of OpenMetrics types (and its counters' ``_total``).
_TYPES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}
_SUFFIXES = {"counter": "_total", "info": "_info"}
# Samples only OpenMetrics has, moved into a gauge of their own after their family.
_OPENMETRICS_ONLY = ("_created", "_gsum", "_gcount")


def _escape_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _sample_line(sample: Sample, escaping: str) -> str:
    labels = ",".join(
        f'{openmetrics.escape_label_name(key, escaping)}="{_escape_value(value)}"'
        for key, value in sorted(sample.labels.items())
    )
    name = openmetrics.escape_metric_name(sample.name, escaping)
    timestamp = "" if sample.timestamp is None else f" {int(float(sample.timestamp) * 1000):d}"
    value = floatToGoString(sample.value)  # type: ignore[no-untyped-call]
    if escaping != openmetrics.ALLOWUTF8 or name == sample.name:
        braced = f"{{{labels}}}" if labels else ""
        return f"{name}{braced} {value}{timestamp}\n"
    # A name outside the legacy character set goes inside the braces, quoted.
    return f"{{{name}{',' if labels else ''}{labels}}} {value}{timestamp}\n"


def text_format(registry: Collector, escaping: str = openmetrics.UNDERSCORES) -> bytes:
    """Every metric of ``registry`` in the classic text format (prometheus-client's output)."""
    output: list[str] = []
    for metric in registry.collect():
        name = metric.name + _SUFFIXES.get(metric.type, "")
        kind = _TYPES.get(metric.type, metric.type)
        escaped = openmetrics.escape_metric_name(name, escaping)
        output.append(f"# HELP {escaped} {_escape_help(metric.documentation)}\n")
        output.append(f"# TYPE {escaped} {kind}\n")
        moved: dict[str, list[str]] = {}
        for sample in metric.samples:
            suffix = next((s for s in _OPENMETRICS_ONLY if sample.name == metric.name + s), None)
            line = _sample_line(sample, escaping)
            if suffix is None:
                output.append(line)
            else:
                moved.setdefault(suffix, []).append(line)
        for suffix, lines in sorted(moved.items()):
            gauge = openmetrics.escape_metric_name(metric.name + suffix, escaping)
            output.append(f"# HELP {gauge} {_escape_help(metric.documentation)}\n")
            output.append(f"# TYPE {gauge} gauge\n")
            output.extend(lines)
    return "".join(output).encode("utf-8")


def _parameter(parameters: Sequence[str], key: str) -> str:
    """The value of ``key`` among a media type's parameters (``""`` when absent)."""
    for parameter in parameters:
        name, sep, value = parameter.strip().partition("=")
        if sep and name == key:
            return value
    return ""


def _escaping(parameters: Sequence[str]) -> str:
    value = _parameter(parameters, "escaping")
    return value if value in _ESCAPINGS else openmetrics.UNDERSCORES


def choose_encoder(accept: str) -> tuple[Encoder, str]:
    """The encoder and content type for a scrape's ``Accept`` header (see the module docs)."""
    for accepted in (accept or "").split(","):
        media, *parameters = accepted.split(";")
        media = media.strip()
        if media == "application/openmetrics-text":
            version = _parameter(parameters, "version")
            if not version:
                encoder = partial(
                    openmetrics.generate_latest, escaping=openmetrics.UNDERSCORES, version="1.0.0"
                )
                return encoder, openmetrics.CONTENT_TYPE_LATEST
            if parse_version(version) >= (1, 0, 0):
                escaping = _escaping(parameters)
                encoder = partial(openmetrics.generate_latest, escaping=escaping, version=version)
                content_type = (
                    f"application/openmetrics-text; version={version}; charset=utf-8; "
                    f"escaping={escaping}"
                )
                return encoder, content_type
        elif media == "text/plain":
            version = _parameter(parameters, "version")
            if version and parse_version(version) >= (1, 0, 0):
                escaping = _escaping(parameters)
                encoder = partial(text_format, escaping=escaping)
                return encoder, f"{CONTENT_TYPE_TEXT_1_0_0}; escaping={escaping}"
    return text_format, CONTENT_TYPE_TEXT_0_0_4
