"""The settings of ``etctl run``: every flag, its environment variable, its default, validated.

Each option is declared once in :data:`OPTIONS` (flag, ``ETCTL_...`` variable, parser, help), and
that table builds the argparse arguments, the ``--help`` text and the environment lookup, so a flag
cannot exist without its variable or its documentation. :class:`RunSettings` is the validated
result, a frozen pydantic model that the operator is started from.

Precedence, highest first: the flag, its ``ETCTL_`` variable, a compatibility variable where one is
established (``CUSTOM_CLUSTER_DOMAIN``, as kubeflow's training-operator reads it), the default.
Bad values raise :class:`SettingsError` naming the flag or variable and what was expected; the CLI
prints it and exits with status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from etctl.cli._option import Option, choice, declare, text
from etctl.cli._values import (
    parse_bind_address,
    parse_bool,
    parse_duration,
    parse_list,
    parse_namespace,
    parse_object_name,
    parse_period,
    parse_positive_int,
)
from etctl.cli._webhook_settings import WEBHOOK_OPTIONS, WebhookSettings
from etctl.common import DEFAULT_JOB_WORKERS, SCHEDULER_PLUGINS, VOLCANO

__all__ = [
    "GANG_SCHEDULERS",
    "OPTIONS",
    "Option",
    "RunSettings",
    "SettingsError",
    "add_run_arguments",
    "settings_from",
]

GANG_SCHEDULERS = ("", VOLCANO, SCHEDULER_PLUGINS)
"""Accepted values of ``--gang-scheduler`` (empty: no gang scheduling)."""

LogFormat = Literal["json", "console"]
LogLevel = Literal["debug", "info", "warning", "error"]


class SettingsError(ValueError):
    """A flag or environment variable has a value ``etctl run`` cannot use."""


class RunSettings(WebhookSettings):
    """What ``etctl run`` was asked to do, validated (see ``etctl run --help``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    jobs: tuple[str, ...] = ()
    """Plugins to enable by name; empty enables every discovered plugin."""
    namespaces: tuple[str, ...] = ()
    """Namespaces to watch; empty watches all of them."""
    leader_elect: bool = False
    """Elect a leader through a Lease before reconciling."""
    leader_election_namespace: str = ""
    """Namespace of the Lease; empty: the pod's own namespace (required outside a pod)."""
    leader_election_id: str = "etctl-leader"
    """Name of the Lease."""
    leader_elect_lease_duration: float = 15.0
    """Seconds a non-leader waits before taking over an unrenewed lease."""
    leader_elect_renew_deadline: float = 10.0
    """Seconds the leader keeps trying to renew before it gives up leading."""
    leader_elect_retry_period: float = 2.0
    """Seconds between attempts to acquire or renew."""
    cache_sync_timeout: float = 120.0
    """Seconds the informers may take to list everything before the operator gives up."""
    graceful_shutdown_timeout: float = 30.0
    """Seconds a shutdown may take for in-flight reconciles to finish."""
    metrics_bind_address: str = ":8443"
    """Where /metrics is served; ``0`` disables it."""
    metrics_secure: bool = True
    """Serve /metrics over HTTPS to ServiceAccount tokens allowed to get it (else plain HTTP)."""
    metrics_cert_path: str = ""
    """Directory of the metrics serving certificate; empty: a self-signed one made at start."""
    metrics_cert_name: str = "tls.crt"
    """The certificate's file in the directory."""
    metrics_cert_key: str = "tls.key"
    """The key's file in the directory."""
    health_probe_bind_address: str = ":8081"
    """Where /healthz and /readyz are served; ``0`` disables them."""
    max_concurrent_reconciles: int = DEFAULT_JOB_WORKERS
    """Reconciles run at once per job kind."""
    cluster_domain: str = ""
    """DNS suffix appended to service names in generated cluster specs (TF_CONFIG)."""
    gang_scheduler: Literal["", "volcano", "scheduler-plugins"] = ""
    """Batch scheduler whose PodGroups gang-schedule each job's pods; empty: none."""
    member_batch_period: float = Field(default=0.5, ge=0)
    """Seconds an elastic job's and its pods' updates gather before its members are judged."""
    log_format: LogFormat = "json"
    """json for log shippers, console for people."""
    log_level: LogLevel = "info"
    """The minimum level logged."""
    kubeconfig: str = ""
    """Kubeconfig file; empty: in-cluster config, else $KUBECONFIG or ~/.kube/config."""
    context: str = ""
    """Kubeconfig context; empty: the current context."""

    @model_validator(mode="after")
    def _lease_timings(self) -> RunSettings:
        # client-go's rule: the lease outlives the renew deadline, which outlives 1.2 retries.
        if self.leader_elect_lease_duration <= self.leader_elect_renew_deadline:
            msg = (
                "--leader-elect-lease-duration must be longer than --leader-elect-renew-deadline "
                f"({self.leader_elect_lease_duration:g}s <= {self.leader_elect_renew_deadline:g}s)"
            )
            raise ValueError(msg)
        if self.leader_elect_renew_deadline <= 1.2 * self.leader_elect_retry_period:
            msg = (
                "--leader-elect-renew-deadline must be longer than 1.2 x "
                f"--leader-elect-retry-period ({self.leader_elect_renew_deadline:g}s <= "
                f"1.2 x {self.leader_elect_retry_period:g}s)"
            )
            raise ValueError(msg)
        return self


OPTIONS: tuple[Option, ...] = (
    declare(
        "jobs",
        text,
        "job plugins to enable, by name (repeatable or comma-separated)",
        metavar="NAME",
        default_help="every installed plugin",
        repeatable=True,
    ),
    declare(
        "namespaces",
        parse_namespace,
        "namespace to watch (repeatable or comma-separated)",
        flag="--namespace",
        default_help="all namespaces",
        metavar="NS",
        repeatable=True,
    ),
    declare(
        "leader_elect",
        parse_bool,
        "elect a leader through a Lease so that only one replica reconciles",
        metavar="BOOL",
        switch=True,
    ),
    declare(
        "leader_election_namespace",
        parse_namespace,
        "namespace of the leader Lease (set it when running outside a pod)",
        metavar="NS",
        default_help="the pod's own namespace",
    ),
    declare("leader_election_id", parse_object_name, "name of the leader Lease", metavar="NAME"),
    declare(
        "leader_elect_lease_duration",
        parse_duration,
        "how long a non-leader waits before taking over a lease that was not renewed",
        metavar="DURATION",
    ),
    declare(
        "leader_elect_renew_deadline",
        parse_duration,
        "how long the leader tries to renew before it stops leading",
        metavar="DURATION",
    ),
    declare(
        "leader_elect_retry_period",
        parse_duration,
        "interval between attempts to acquire or renew the lease",
        metavar="DURATION",
    ),
    declare(
        "cache_sync_timeout",
        parse_duration,
        "how long the informers may take to list everything at start; past it the operator "
        "exits with the reason (a missing CRD, a forbidden list)",
        metavar="DURATION",
    ),
    declare(
        "graceful_shutdown_timeout",
        parse_duration,
        "how long a shutdown waits for reconciles in flight to finish",
        metavar="DURATION",
    ),
    declare(
        "metrics_bind_address",
        parse_bind_address,
        "address of the Prometheus /metrics endpoint (:8443 for HTTPS, :8080 for HTTP); 0 "
        "disables it",
        metavar="ADDR",
    ),
    declare(
        "metrics_secure",
        parse_bool,
        "serve /metrics over HTTPS to callers whose bearer token a TokenReview authenticates "
        "and a SubjectAccessReview allows to get /metrics; --metrics-secure=false serves plain "
        "HTTP to anyone",
        metavar="BOOL",
        switch=True,
    ),
    declare(
        "metrics_cert_path",
        text,
        "directory holding the metrics serving certificate and key",
        metavar="DIR",
        default_help="a self-signed certificate made at start",
    ),
    declare(
        "metrics_cert_name",
        text,
        "the certificate's file name in --metrics-cert-path",
        metavar="NAME",
    ),
    declare("metrics_cert_key", text, "the key's file name in --metrics-cert-path", metavar="NAME"),
    declare(
        "health_probe_bind_address",
        parse_bind_address,
        "address of the /healthz and /readyz probes; 0 disables them",
        metavar="ADDR",
    ),
    declare(
        "max_concurrent_reconciles",
        parse_positive_int,
        "jobs of one kind reconciled at the same time",
        metavar="N",
    ),
    declare(
        "cluster_domain",
        text,
        "DNS suffix of service names in generated cluster specs such as TF_CONFIG (cluster.local)",
        metavar="DOMAIN",
        default_help="none: short names resolved through the pods' DNS search path",
        compat_env="CUSTOM_CLUSTER_DOMAIN",
    ),
    declare(
        "gang_scheduler",
        choice(*GANG_SCHEDULERS),
        "gang-schedule each job's pods through this batch scheduler's PodGroups: "
        "volcano or scheduler-plugins",
        metavar="NAME",
        default_help="none",
    ),
    declare(
        "member_batch_period",
        parse_period,
        "how long updates of an elastic job and its pods gather before its members are judged, "
        "so workers that start or go together change the members once; 0 judges each at once",
        metavar="DURATION",
    ),
    declare("log_format", choice("json", "console"), "json or console", metavar="FORMAT"),
    declare(
        "log_level",
        choice("debug", "info", "warning", "error"),
        "debug, info, warning or error",
        metavar="LEVEL",
    ),
    declare(
        "kubeconfig",
        text,
        "kubeconfig file",
        metavar="PATH",
        default_help="the pod's service account, else $KUBECONFIG or ~/.kube/config",
    ),
    declare("context", text, "kubeconfig context", metavar="NAME", default_help="the current one"),
    *WEBHOOK_OPTIONS,
)
"""Every option of ``etctl run``, in ``--help`` order."""


class _Parsed(argparse.Action):
    """Run the option's parser at parse time, so a bad value is argparse's usual exit 2."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        self.option: Option = kwargs.pop("option")
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        raw = "true" if values is None else str(values)
        try:
            value = _parse_all(self.option, raw)
        except ValueError as exc:
            parser.error(f"argument {self.option.flag}: {exc}")
        if self.option.repeatable:
            value = [*(getattr(namespace, self.dest, None) or []), *value]
        setattr(namespace, self.dest, value)


def _parse_all(option: Option, raw: str) -> Any:
    if not option.repeatable:
        return option.parse(raw)
    return [option.parse(item) for item in parse_list(raw)]


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare every :data:`OPTIONS` entry on ``parser``, with its variable and default in help."""
    for option in OPTIONS:
        env = option.env + (f" or {option.compat_env}" if option.compat_env else "")
        help_text = f"{option.help} [env {env}; default: {option.default_text(RunSettings)}]"
        parser.add_argument(
            option.flag,
            dest=option.field,
            action=_Parsed,
            option=option,
            metavar=option.metavar or None,
            nargs="?" if option.switch else None,
            default=None,
            help=help_text,
        )


def settings_from(args: argparse.Namespace, environ: Mapping[str, str]) -> RunSettings:
    """Merge flags over environment over defaults and validate the result.

    Raises:
        SettingsError: a variable's value is unusable, or the combination is invalid.
    """
    values: dict[str, Any] = {}
    for option in OPTIONS:
        flagged = getattr(args, option.field, None)
        if flagged is not None:
            values[option.field] = tuple(flagged) if option.repeatable else flagged
            continue
        for name in (option.env, option.compat_env):
            raw = environ.get(name) if name else None
            if raw is None or not raw.strip():
                continue
            try:
                parsed = _parse_all(option, raw)
            except ValueError as exc:
                msg = f"environment variable {name}: {exc}"
                raise SettingsError(msg) from None
            values[option.field] = tuple(parsed) if option.repeatable else parsed
            break
    try:
        return RunSettings(**values)
    except ValidationError as exc:
        raise SettingsError("; ".join(_messages(exc))) from None


def _messages(error: ValidationError) -> list[str]:
    # A model validator's message says it all; a field error is shown with the field's flag.
    messages = []
    for item in error.errors(include_url=False):
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["loc"]:
            message = "--" + str(item["loc"][0]).replace("_", "-") + ": " + message
        messages.append(message)
    return messages
