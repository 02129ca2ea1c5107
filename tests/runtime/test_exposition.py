"""The ``/metrics`` answer is prometheus-client's, byte for byte, for every ``Accept`` it knows."""

from __future__ import annotations

import pytest
from prometheus_client import exposition
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    StateSetMetricFamily,
)
from prometheus_client.metrics import Counter, Enum, Gauge, Histogram, Info, Summary
from prometheus_client.registry import Collector, CollectorRegistry

from etctl.runtime import REGISTRY
from etctl.runtime._exposition import CONTENT_TYPE_TEXT_0_0_4, choose_encoder, text_format

ACCEPTS = [
    "",
    "*/*",
    "text/plain",
    "text/plain; version=0.0.4",
    "text/plain; version=1.0.0",
    "text/plain;version=1.0.0;escaping=allow-utf-8",
    "text/plain;version=1.0.0;escaping=dots",
    "text/plain;version=1.0.0;escaping=values",
    "text/plain;version=1.0.0;escaping=nonsense",
    "application/openmetrics-text",
    "application/openmetrics-text; version=0.0.1",
    "application/openmetrics-text; version=1.0.0; charset=utf-8",
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8",
    "application/openmetrics-text;version=2.0.0;escaping=underscores",
    # Prometheus 2's and 3's scrape headers.
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
    "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
    "escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    "application/json, text/plain;version=0.0.4",
]


class Families(Collector):
    """The metric types that only custom collectors produce."""

    def collect(self):  # type: ignore[no-untyped-def]
        yield InfoMetricFamily("build", "Build facts.", value={"version": "1.2", "os": "linux"})
        states = StateSetMetricFamily("mode", "A\\state\nset.", labels=["who"])
        states.add_metric(["x"], {"on": True, "off": False})
        yield states
        gauge_histogram = GaugeHistogramMetricFamily("queue_age", "Ages.", labels=["q"])
        gauge_histogram.add_metric(["a"], [("1.0", 2), ("+Inf", 5)], gsum_value=7.5)
        yield gauge_histogram
        counter = CounterMetricFamily("stamped", "With timestamps.", labels=["k"])
        counter.add_metric(["v"], 3, timestamp=1712345678.125)
        yield counter
        yield GaugeMetricFamily("untyped_value", "No labels.", value=float("nan"))


def registry() -> CollectorRegistry:
    """A registry with every kind of metric, label values that need escaping, odd numbers."""
    found = CollectorRegistry()
    counter = Counter("requests", "Requests\\seen.\nTwo lines.", ["code", "path"], registry=found)
    counter.labels("200", '/a"b\\c\nd').inc(3)
    counter.labels("500", "ünïcode").inc()
    Gauge("temperature", "Degrees.", registry=found).set(-1.5e-7)
    histogram = Histogram("latency_seconds", "Latency.", ["op"], registry=found)
    histogram.labels("get").observe(0.03)
    histogram.labels("get").observe(12)
    summary = Summary("sizes_bytes", "Sizes.", registry=found)
    summary.observe(1024)
    Info("release", "Release.", registry=found).info({"name": "x"})
    Enum("phase", "Phase.", states=["a", "b"], registry=found).state("b")
    found.register(Families())
    return found


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("which", ["every type", "the runtime's"])
def test_the_encoder_and_content_type_are_the_librarys(accept: str, which: str) -> None:
    source = registry() if which == "every type" else REGISTRY
    ours, ours_type = choose_encoder(accept)
    theirs, theirs_type = exposition.choose_encoder(accept)
    assert ours_type == theirs_type
    # One collection for both: the process collector's CPU time moves between two.
    snapshot = CollectorRegistry()
    snapshot.register(Frozen(source))
    assert ours(snapshot) == theirs(snapshot)


def test_no_accept_header_gets_the_classic_text_format() -> None:
    assert choose_encoder("") == (text_format, CONTENT_TYPE_TEXT_0_0_4)
    text = text_format(registry()).decode()
    assert '\nrequests_total{code="200",path="/a\\"b\\\\c\\nd"} 3.0\n' in text
    assert "# HELP requests_total Requests\\\\seen.\\nTwo lines.\n" in text


class Frozen(Collector):
    """One collection of ``source``, replayed: both encoders see the very same samples."""

    def __init__(self, source: CollectorRegistry) -> None:
        self._metrics = list(source.collect())

    def collect(self):  # type: ignore[no-untyped-def]
        return iter(self._metrics)
