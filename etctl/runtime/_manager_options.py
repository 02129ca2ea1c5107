"""The manager's options: what a :class:`~etctl.runtime.Manager` serves, elects, waits for.

Defaults are controller-runtime's where they make sense for a library: metrics and probes off (a
manager embedded in another program claims no port), leader election off, lease 15 s / renew
deadline 10 s / retry 2 s, 30 s of graceful shutdown, 2 min for the caches to sync. Options are
checked when built, so a bad bind address or a missing lease name fails at start-up rather than
mid-run. The lease namespace defaults to the pod's own (its service account's namespace file), as
controller-runtime's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from etctl.errors import ConfigError
from etctl.runtime._cache_options import CacheOptions
from etctl.runtime._health import parse_bind_address
from etctl.runtime._lease import LeaderElectionConfig, default_identity
from etctl.runtime._webhook_options import CertRotation, WebhookServerOptions

__all__ = ["SERVICE_ACCOUNT_NAMESPACE", "ManagerOptions"]

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
"""Where a pod finds its own namespace: the default namespace of the leader-election lease."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ManagerOptions:
    """How a :class:`Manager` serves, elects, starts and stops.

    The HTTP endpoints are off unless asked for: a library's manager must not claim a port (two
    operators on one host would collide); ``etctl run`` serves secure metrics on ``:8443`` and
    the probes on ``:8081`` by flag default, as kubebuilder's scaffold and a Deployment's probes
    expect.

    Attributes:
        metrics_bind_address: where ``/metrics`` listens (``host:port``, ``:port`` for every
            interface; ``0``, the default, disables it).
        metrics_secure: serve ``/metrics`` over HTTPS, to requests whose bearer token a
            TokenReview authenticates and whose user a SubjectAccessReview allows to ``get`` the
            non-resource URL ``/metrics`` (controller-runtime's ``SecureServing`` with its
            authentication and authorization filter). Off by default, as controller-runtime's.
        metrics_cert_dir: the directory of the metrics certificate and key; unset, a self-signed
            certificate is made at start.
        metrics_cert_name: the certificate's file in ``metrics_cert_dir``.
        metrics_key_name: the key's file in ``metrics_cert_dir``.
        health_probe_bind_address: where ``/healthz`` and ``/readyz`` listen (``0``, the default,
            disables them).
        leader_election: run leader-only work only while holding the lease.
        leader_election_id: the name of the Lease (required with ``leader_election``).
        leader_election_namespace: the Lease's namespace; by default the pod's own namespace.
        leader_election_identity: this process's holder identity (``<hostname>_<uuid>`` when
            unset).
        lease_duration: how long a standby waits for an unrenewed lease before taking it over.
        renew_deadline: how long the leader keeps trying to renew before giving up leadership.
        retry_period: the pause between election attempts.
        graceful_shutdown_timeout: how long a graceful shutdown may take in all.
        cache_sync_timeout: how long the cache may take to sync before :meth:`Manager.run` fails.
        cache: the options of the manager's cache (namespaces, transforms, compaction, resync,
            page size).
        webhook: where and how the webhook server listens, once a webhook is registered
            (``manager.webhook(...)``): port 9443 and the certificate in
            ``/tmp/k8s-webhook-server/serving-certs`` by default, as controller-runtime's.
        cert_rotation: provision the webhook server's certificate: a CA and serving certificate
            kept in a Secret, the CA injected into the webhook configurations, both rotated
            before they expire (:class:`~etctl.runtime.CertRotator`); ``None`` (the default) when
            the certificate comes from elsewhere (cert-manager).
    """

    metrics_bind_address: str = "0"
    metrics_secure: bool = False
    metrics_cert_dir: str | None = None
    metrics_cert_name: str = "tls.crt"
    metrics_key_name: str = "tls.key"
    health_probe_bind_address: str = "0"
    leader_election: bool = False
    leader_election_id: str = ""
    leader_election_namespace: str | None = None
    leader_election_identity: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    cache: CacheOptions = field(default_factory=CacheOptions)
    webhook: WebhookServerOptions = field(default_factory=WebhookServerOptions)
    cert_rotation: CertRotation | None = None

    def __post_init__(self) -> None:
        parse_bind_address(self.metrics_bind_address)
        parse_bind_address(self.health_probe_bind_address)
        if self.leader_election and not self.leader_election_id:
            msg = "leader_election needs a leader_election_id (the name of the Lease)"
            raise ConfigError(msg)
        if self.graceful_shutdown_timeout < 0:
            msg = (
                f"graceful_shutdown_timeout must not be negative: {self.graceful_shutdown_timeout}"
            )
            raise ConfigError(msg)
        if self.cache_sync_timeout <= 0:
            msg = f"cache_sync_timeout must be positive: {self.cache_sync_timeout}"
            raise ConfigError(msg)

    def leader_election_config(self) -> LeaderElectionConfig | None:
        """The election these options ask for (``None`` without ``leader_election``).

        Raises:
            ConfigError: no lease namespace (not set, and not running in a pod), or durations that
                break ``lease_duration > renew_deadline > 1.2 * retry_period``.
        """
        if not self.leader_election:
            return None
        return LeaderElectionConfig(
            name=self.leader_election_id,
            namespace=_lease_namespace(self),
            identity=self.leader_election_identity or default_identity(),
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
        )


def _lease_namespace(options: ManagerOptions) -> str:
    if options.leader_election_namespace:
        return options.leader_election_namespace
    try:
        namespace = SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip()
    except OSError:
        namespace = ""
    if not namespace:
        msg = (
            "cannot find the leader election namespace: not running in a pod, so set "
            "leader_election_namespace"
        )
        raise ConfigError(msg)
    return namespace
