"""The webhook settings of ``etctl run``: the server, its certificate, and how it is reached.

:class:`WebhookSettings` is the part of :class:`~etctl.cli._settings.RunSettings` that says whether
the operator serves its admission webhooks (``--webhooks``) and how: kubebuilder's defaults (port
9443, the certificate in ``/tmp/k8s-webhook-server/serving-certs``), certificates the operator
keeps itself (``--webhook-certs self``: a CA and serving certificate in ``--webhook-secret``, the
CA injected into the webhook configurations, both rotated) or someone else's (``external``:
cert-manager's), reached through ``--webhook-service`` in the cluster or ``--webhook-url`` from
outside it. :data:`WEBHOOK_OPTIONS` declares their flags and variables.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from etctl.cli._option import Option, choice, declare, text
from etctl.cli._values import (
    parse_bool,
    parse_https_url,
    parse_namespace,
    parse_object_name,
    parse_port,
)
from etctl.errors import ConfigError
from etctl.runtime import (
    DEFAULT_CERT_DIR,
    DEFAULT_WEBHOOK_PORT,
    CertRotation,
    WebhookServerOptions,
)

__all__ = [
    "DEFAULT_WEBHOOK_SECRET",
    "DEFAULT_WEBHOOK_SERVICE",
    "MUTATING_WEBHOOKS",
    "VALIDATING_WEBHOOKS",
    "WEBHOOK_OPTIONS",
    "WebhookSettings",
    "webhook_options",
]

DEFAULT_WEBHOOK_SECRET = "etctl-webhook-server-cert"  # noqa: S105 - a Secret's name
"""The Secret the operator keeps its webhook certificates in (and the manifests mount)."""
DEFAULT_WEBHOOK_SERVICE = "etctl-webhook-service"
"""The Service the API server reaches the webhooks through."""
MUTATING_WEBHOOKS = "etctl-mutating-webhooks"
"""The MutatingWebhookConfiguration the manifests install (defaults of every kind)."""
VALIDATING_WEBHOOKS = "etctl-validating-webhooks"
"""The ValidatingWebhookConfiguration the manifests install (validation of every kind)."""


class WebhookSettings(BaseModel):
    """Whether and how ``etctl run`` serves its admission webhooks (see the module docs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    webhooks: bool = False
    """Serve the admission webhooks of every enabled kind."""
    webhook_host: str = ""
    """Interface the webhook server binds; empty: every interface."""
    webhook_port: int = DEFAULT_WEBHOOK_PORT
    """Port of the webhook server (kubebuilder's 9443)."""
    webhook_cert_path: str = str(DEFAULT_CERT_DIR)
    """Directory of the webhook server's certificate and key."""
    webhook_cert_name: str = "tls.crt"
    """The certificate's file in that directory."""
    webhook_cert_key: str = "tls.key"
    """The key's file in that directory."""
    webhook_certs: Literal["self", "external"] = "self"
    """self: the operator keeps its own CA and certificate; external: cert-manager's."""
    webhook_secret: str = DEFAULT_WEBHOOK_SECRET
    """The Secret of the operator's own certificates (webhook_certs self)."""
    webhook_service: str = DEFAULT_WEBHOOK_SERVICE
    """The Service the API server reaches the webhooks through."""
    webhook_namespace: str = ""
    """Namespace of that Secret and Service; empty: the pod's own."""
    webhook_url: str = ""
    """Base URL the API server reaches an operator outside the cluster at."""


WEBHOOK_OPTIONS: tuple[Option, ...] = (
    declare(
        "webhooks",
        parse_bool,
        "serve the admission webhooks of every enabled job kind (HTTPS)",
        metavar="BOOL",
        switch=True,
    ),
    declare(
        "webhook_host",
        text,
        "interface the webhook server binds",
        metavar="HOST",
        default_help="every interface",
    ),
    declare("webhook_port", parse_port, "port of the webhook server", metavar="PORT"),
    declare(
        "webhook_cert_path",
        text,
        "directory of the webhook server's certificate and key, reloaded when they change",
        metavar="DIR",
    ),
    declare("webhook_cert_name", text, "certificate file in that directory", metavar="FILE"),
    declare("webhook_cert_key", text, "key file in that directory", metavar="FILE"),
    declare(
        "webhook_certs",
        choice("self", "external"),
        "self: keep a CA and serving certificate in --webhook-secret, inject the CA into the "
        "webhook configurations and rotate both before they expire; external: use the files "
        "someone else provides (cert-manager)",
        metavar="MODE",
    ),
    declare(
        "webhook_secret",
        parse_object_name,
        "Secret of the operator's own webhook certificates",
        metavar="NAME",
    ),
    declare(
        "webhook_service",
        parse_object_name,
        "Service the API server reaches the webhooks through (the certificate's names)",
        metavar="NAME",
    ),
    declare(
        "webhook_namespace",
        parse_namespace,
        "namespace of the webhook Secret and Service (set it when running outside a pod)",
        metavar="NS",
        default_help="the pod's own namespace",
    ),
    declare(
        "webhook_url",
        parse_https_url,
        "https://HOST[:PORT] the API server reaches an operator outside the cluster at "
        "(etctl manifests --webhook-url renders the matching configurations); the certificate "
        "is made for HOST",
        metavar="URL",
        default_help="none: the Service",
    ),
)
"""The webhook options of ``etctl run``, in ``--help`` order."""


def _url_names(url: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The DNS names and IP addresses of a webhook URL's host, for the certificate."""
    host = urlsplit(url).hostname or ""
    try:
        return (), (str(ipaddress.ip_address(host)),)
    except ValueError:
        return (host,), ()


def webhook_options(
    settings: WebhookSettings, pod_namespace: Callable[[], str]
) -> tuple[WebhookServerOptions, CertRotation | None]:
    """The webhook server's options and, with ``--webhook-certs self``, its certificate rotation.

    Args:
        settings: the validated settings.
        pod_namespace: the operator's own namespace (``""`` outside a pod).

    Raises:
        ConfigError: the operator keeps its own certificates outside a pod without
            ``--webhook-namespace``.
    """
    server = WebhookServerOptions(
        host=settings.webhook_host,
        port=settings.webhook_port,
        cert_dir=Path(settings.webhook_cert_path),
        cert_name=settings.webhook_cert_name,
        key_name=settings.webhook_cert_key,
    )
    if settings.webhook_certs == "external":
        return server, None
    namespace = settings.webhook_namespace or pod_namespace()
    if not namespace:
        msg = (
            "--webhook-certs self outside a pod needs --webhook-namespace (or "
            "ETCTL_WEBHOOK_NAMESPACE): the namespace of the certificate Secret"
        )
        raise ConfigError(msg)
    dns, ips = _url_names(settings.webhook_url) if settings.webhook_url else ((), ())
    rotation = CertRotation(
        secret_name=settings.webhook_secret,
        namespace=namespace,
        dns_names=(*CertRotation.service_names(settings.webhook_service, namespace), *dns),
        ip_addresses=ips,
        validating_webhooks=(VALIDATING_WEBHOOKS,),
        mutating_webhooks=(MUTATING_WEBHOOKS,),
    )
    return server, rotation
