"""Every Prometheus metric of the runtime, on one registry that the manager serves at ``/metrics``.

Names, labels and buckets follow controller-runtime and client-go exactly, so existing dashboards
and alerts work unchanged. On top of them etctl exports what neither has: informer metrics (events
received by type, relists, watch restarts, objects cached, time of the last event).

All metrics live on :data:`REGISTRY`, not on prometheus-client's global default registry, so an
application that embeds etctl keeps control of its own metrics. Components import the metric
objects from here and never declare their own: one module is the inventory a golden test checks.
This module is also where prometheus-client is first imported, its package deferred (below), so
what the process loads of it is the metric types and the registry, never its servers.
"""

from __future__ import annotations

from etctl.runtime._deferred import defer

# The package's __init__ imports every part of the library, its push-gateway client and HTTP
# servers among them (about 1 MB of an idle operator); deferred, its modules import one by one, and
# the package runs only if something reads a name from it (see etctl.runtime._deferred).
defer("prometheus_client")

from prometheus_client.metrics import Counter, Gauge, Histogram  # noqa: E402
from prometheus_client.platform_collector import PLATFORM_COLLECTOR  # noqa: E402
from prometheus_client.process_collector import PROCESS_COLLECTOR  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402

__all__ = [
    "ACTIVE_WORKERS",
    "CERTWATCHER_READ_ERRORS",
    "CERTWATCHER_READS",
    "CONVERSION_WEBHOOK_PANICS",
    "INFORMER_EVENTS",
    "INFORMER_HANDLER_ERRORS",
    "INFORMER_LAST_EVENT",
    "INFORMER_OBJECTS",
    "INFORMER_RELISTS",
    "INFORMER_WATCH_RESTARTS",
    "LEADER_ELECTION_MASTER_STATUS",
    "LEADER_ELECTION_SLOWPATH",
    "MAX_CONCURRENT_RECONCILES",
    "RECONCILE_ERRORS",
    "RECONCILE_PANICS",
    "RECONCILE_TIME",
    "RECONCILE_TIMEOUTS",
    "RECONCILE_TOTAL",
    "REGISTRY",
    "REST_CLIENT_REQUESTS",
    "TERMINAL_RECONCILE_ERRORS",
    "WEBHOOK_LATENCY",
    "WEBHOOK_PANICS",
    "WEBHOOK_REQUESTS",
    "WEBHOOK_REQUESTS_IN_FLIGHT",
    "WORKQUEUE_ADDS",
    "WORKQUEUE_DEPTH",
    "WORKQUEUE_LONGEST_RUNNING",
    "WORKQUEUE_QUEUE_DURATION",
    "WORKQUEUE_RETRIES",
    "WORKQUEUE_UNFINISHED_WORK",
    "WORKQUEUE_WORK_DURATION",
]

REGISTRY = CollectorRegistry(auto_describe=True)
"""The registry the manager serves; pass it to ``generate_latest``."""

# Process (CPU, memory, file descriptors) and platform series, as controller-runtime registers its
# process and Go-runtime collectors: memory is how Python operators are known to fail.
REGISTRY.register(PROCESS_COLLECTOR)
REGISTRY.register(PLATFORM_COLLECTOR)

# controller-runtime's reconcile-time buckets (pkg/internal/controller/metrics).
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
    0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
    6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip
# client-go workqueue: ExponentialBuckets(10e-9, 10, 12), 10 ns to 1000 s.
_QUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(12))

# -- controller
RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics_total",
    "Total number of reconciliation panics (unexpected exceptions) per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIMEOUTS = Counter(
    "controller_runtime_reconcile_timeouts_total",
    "Total number of reconciliation timeouts per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
    registry=REGISTRY,
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
    registry=REGISTRY,
)

# -- workqueue (name == controller, as controller-runtime sets them)
WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth",
    "Current depth of workqueue",
    ["name", "controller", "priority"],
    registry=REGISTRY,
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total",
    "Total number of adds handled by workqueue",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name", "controller"],
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes",
    ["name", "controller"],
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads.",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name", "controller"],
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue (items added with a non-zero delay)",
    ["name", "controller"],
    registry=REGISTRY,
)

# -- leader election
LEADER_ELECTION_MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
    "indicates master. 'name' is the string used to identify the lease.",
    ["name"],
    registry=REGISTRY,
)
LEADER_ELECTION_SLOWPATH = Counter(
    "leader_election_slowpath_total",
    "Total number of slow path exercised in renewing leader leases. 'name' is the string used to "
    "identify the lease.",
    ["name"],
    registry=REGISTRY,
)

# -- REST client
REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=REGISTRY,
)

# -- informers (etctl's own: neither client-go nor controller-runtime export these)
INFORMER_EVENTS = Counter(
    "etctl_informer_events_total",
    "Watch events received by an informer, by event type (ADDED, MODIFIED, DELETED, BOOKMARK)",
    ["resource", "type"],
    registry=REGISTRY,
)
INFORMER_HANDLER_ERRORS = Counter(
    "etctl_informer_handler_errors_total",
    "Exceptions raised by an informer's event handlers (each logged; delivery to the other "
    "handlers goes on)",
    ["resource"],
    registry=REGISTRY,
)
INFORMER_RELISTS = Counter(
    "etctl_informer_relists_total",
    "Full lists performed by an informer (the first sync, and every relist after a 410 or error)",
    ["resource"],
    registry=REGISTRY,
)
INFORMER_WATCH_RESTARTS = Counter(
    "etctl_informer_watch_restarts_total",
    "Watches an informer restarted, by reason (timeout, closed, error, expired, watchdog)",
    ["resource", "reason"],
    registry=REGISTRY,
)
INFORMER_OBJECTS = Gauge(
    "etctl_informer_objects",
    "Objects currently held in an informer's cache",
    ["resource"],
    registry=REGISTRY,
)
INFORMER_LAST_EVENT = Gauge(
    "etctl_informer_last_event_timestamp_seconds",
    "Unix time of the last watch event (bookmarks included) an informer received; alert on "
    "time() minus this to catch a silent watch",
    ["resource"],
    registry=REGISTRY,
)

# -- webhooks (controller-runtime's pkg/webhook/internal/metrics and admission/conversion metrics)
WEBHOOK_LATENCY = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
    buckets=_QUEUE_BUCKETS,  # ExponentialBuckets(10e-9, 10, 12), as controller-runtime's
    registry=REGISTRY,
)
WEBHOOK_REQUESTS = Counter(
    "controller_runtime_webhook_requests_total",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
    registry=REGISTRY,
)
WEBHOOK_REQUESTS_IN_FLIGHT = Gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Current number of admission requests being served.",
    ["webhook"],
    registry=REGISTRY,
)
WEBHOOK_PANICS = Counter(
    "controller_runtime_webhook_panics_total",
    "Total number of webhook panics (unexpected exceptions of a validator or defaulter)",
    registry=REGISTRY,
)
CONVERSION_WEBHOOK_PANICS = Counter(
    "controller_runtime_conversion_webhook_panics_total",
    "Total number of conversion webhook panics (unexpected exceptions of a converter)",
    registry=REGISTRY,
)

# -- the webhook server's certificate (controller-runtime's pkg/certwatcher/metrics)
CERTWATCHER_READS = Counter(
    "certwatcher_read_certificate_total",
    "Total number of certificate reads",
    registry=REGISTRY,
)
CERTWATCHER_READ_ERRORS = Counter(
    "certwatcher_read_certificate_errors_total",
    "Total number of certificate read errors",
    registry=REGISTRY,
)
