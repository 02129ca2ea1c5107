"""What the webhook server and the rotation of its certificate are configured with.

Settings only: :class:`WebhookServerOptions` (where the webhook server listens, and its limits)
and :class:`CertRotation` (the certificates a :class:`~etctl.runtime.CertRotator` provisions).
:class:`~etctl.runtime.ManagerOptions` holds both, so they load with every manager, while the
server (:mod:`etctl.runtime._webhook_server`) and the rotator (:mod:`etctl.runtime._cert_rotator`)
load only in a process that registers a webhook or rotates a certificate.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from etctl.errors import ConfigError

if TYPE_CHECKING:
    from etctl._cert_rotation import Policy

__all__ = [
    "DEFAULT_CERT_DIR",
    "DEFAULT_WEBHOOK_PORT",
    "MAX_REQUEST_SIZE",
    "CertRotation",
    "WebhookServerOptions",
]

_DAY = 86400.0

DEFAULT_WEBHOOK_PORT = 9443
"""controller-runtime's (and kubebuilder's) webhook port."""
DEFAULT_CERT_DIR = Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"
"""controller-runtime's default certificate directory."""
MAX_REQUEST_SIZE = 7 * 1024 * 1024
"""controller-runtime's limit on a review's size, in bytes."""


@dataclass(frozen=True, kw_only=True, slots=True)
class WebhookServerOptions:
    """Where and how the webhook server listens.

    Attributes:
        host: the interface to bind (``""``: every interface).
        port: the port (9443; 0 picks a free one, for tests).
        cert_dir: the directory of the serving certificate and key.
        cert_name: the certificate's file in it (PEM, leaf first).
        key_name: the key's file in it.
        max_request_size: the largest request body accepted, in bytes.
        timeout: seconds a request may take: sending it, its handler, taking the answer.
        cert_wait_timeout: seconds to wait for a usable certificate before failing.
    """

    host: str = ""
    port: int = DEFAULT_WEBHOOK_PORT
    cert_dir: Path = DEFAULT_CERT_DIR
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    max_request_size: int = MAX_REQUEST_SIZE
    timeout: float = 30.0
    cert_wait_timeout: float = 300.0

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            msg = f"the webhook port must be in 0-65535, got {self.port}"
            raise ConfigError(msg)
        if self.max_request_size <= 0 or self.timeout <= 0 or self.cert_wait_timeout <= 0:
            msg = "max_request_size, timeout and cert_wait_timeout must be positive"
            raise ConfigError(msg)

    @property
    def cert_path(self) -> Path:
        """The serving certificate's file."""
        return self.cert_dir / self.cert_name

    @property
    def key_path(self) -> Path:
        """The serving key's file."""
        return self.cert_dir / self.key_name


@dataclass(frozen=True, kw_only=True, slots=True)
class CertRotation:
    """What a :class:`CertRotator` provisions, and where it injects the CA.

    Attributes:
        secret_name: the Secret holding the CA and serving certificate (created when missing).
        namespace: its namespace (the operator's).
        dns_names: the serving certificate's DNS names (the webhook Service's, see
            :meth:`for_service`).
        ip_addresses: its IP addresses (an operator outside the cluster, reached by URL).
        validating_webhooks: ValidatingWebhookConfigurations whose webhooks get the CA bundle.
        mutating_webhooks: MutatingWebhookConfigurations whose webhooks get the CA bundle.
        conversion_crds: CRDs (by name) whose conversion webhook gets the CA bundle.
        ca_name: the CA's common name.
        ca_validity: seconds a new CA is valid (10 years, cert-controller's).
        cert_validity: seconds a new serving certificate is valid (1 year).
        lookahead: seconds before expiry at which a certificate is replaced (90 days).
        check_interval: the longest time between two passes (12 hours).
    """

    secret_name: str
    namespace: str
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    validating_webhooks: tuple[str, ...] = ()
    mutating_webhooks: tuple[str, ...] = ()
    conversion_crds: tuple[str, ...] = ()
    ca_name: str = "etctl-webhook-ca"
    ca_validity: float = 3650 * _DAY
    cert_validity: float = 365 * _DAY
    lookahead: float = 90 * _DAY
    check_interval: float = 12 * 3600.0

    def __post_init__(self) -> None:
        if not self.dns_names and not self.ip_addresses:
            msg = "a certificate rotation needs the DNS names or IP addresses to serve"
            raise ValueError(msg)
        if not 0 < self.lookahead < self.cert_validity <= self.ca_validity:
            msg = "certificate rotation needs 0 < lookahead < cert_validity <= ca_validity"
            raise ValueError(msg)

    @staticmethod
    def service_names(service: str, namespace: str) -> tuple[str, ...]:
        """The names a Service is reached by inside the cluster."""
        return (
            f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local",
        )

    def policy(self) -> Policy:
        """What the certificates must be, for the plan."""
        from etctl._cert_rotation import Policy  # noqa: PLC0415 - the rotator's, loaded with it

        return Policy(
            dns_names=self.dns_names,
            ip_addresses=self.ip_addresses,
            ca_name=self.ca_name,
            ca_validity=self.ca_validity,
            cert_validity=self.cert_validity,
            lookahead=self.lookahead,
        )
