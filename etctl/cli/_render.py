"""The install manifests `etctl manifests` renders: a kustomize tree and a one-file release.

:func:`render` builds every file of the tree committed under ``manifests/``, laid out as the
anchors' users expect (mpi-operator's and training-operator's ``base`` plus ``overlays``)::

    kustomization.yaml              the standalone overlay: ``kubectl apply -k manifests/``
    install.yaml                    the standalone install as one file (``--server-side``)
    base/kustomization.yaml         every file below, in namespace etctl-system
    base/crds/<group>_<plural>.yaml the plugins' CRDs (as ``etctl crds`` writes them)
    base/rbac/                      service account, ClusterRole from the plugins' needs +
                                    binding, leader-election Role + binding (the operator's
                                    namespace only), the webhook certificate Secret's Role +
                                    binding (that Secret only), the metrics-auth ClusterRole +
                                    binding (TokenReviews, SubjectAccessReviews) and the
                                    metrics-reader ClusterRole for scrapers, and per job kind the
                                    ClusterRoles aggregated into admin, edit and view
                                    (:mod:`._userroles`)
    base/manager/deployment.yaml    the operator: non-root, read-only root filesystem, seccomp
                                    RuntimeDefault, no privilege escalation, all capabilities
                                    dropped, probes on 8081 (HTTP), metrics on 8443 (HTTPS,
                                    authenticated and authorized, self-signed certificate),
                                    webhooks on 9443 (HTTPS)
    base/manager/metrics-service.yaml  port 8443 (https)
    base/webhook/                   the admission webhooks: configurations, Service, the empty
                                    certificate Secret the operator fills (:mod:`._render_webhooks`)
    overlays/standalone/            its own namespace (``--namespace``, etctl-system), created
    overlays/kubeflow/              into Kubeflow's ``kubeflow`` namespace (not created), the
                                    job kinds' roles also aggregated into kubeflow-admin/edit/view
                                    (``aggregate-to-kubeflow.yaml``, strategic-merge patches)
    overlays/cert-manager/          the standalone overlay with cert-manager's certificate instead
                                    of the operator's own (``--webhook-certs=external``)

:func:`render_stream` renders what one overlay installs, computed here rather than by kustomize:
``install.yaml`` is the standalone one, and a test checks that ``kubectl kustomize`` of each
overlay gives exactly these objects. Rendering is deterministic (sorted keys, no anchors), so a
golden test diffs the committed tree against it and any new permission or setting is a reviewable
diff.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from etctl._version import __version__
from etctl.cli._crdfiles import render_manifests
from etctl.cli._manifest_docs import OPERATOR_NAME as _NAME
from etctl.cli._manifest_docs import dump as _dump
from etctl.cli._manifest_docs import kustomization as _kustomization
from etctl.cli._manifest_docs import labels as _labels
from etctl.cli._manifest_docs import meta as _meta
from etctl.cli._rbac import (
    LEADER_ELECTION_RULES,
    METRICS_AUTH_RULES,
    cluster_role_rules,
    merge_rules,
    rule_to_dict,
)
from etctl.cli._render_webhooks import (
    WEBHOOK_RULES,
    WEBHOOK_SECRET_RULES,
    cert_manager_documents,
    cert_manager_overlay,
    inject_ca_annotation,
    webhook_configuration_documents,
    webhook_secret,
    webhook_service,
    webhook_volume,
)
from etctl.cli._userroles import KUBEFLOW_LABELS, ROLES, role_name, user_roles
from etctl.common import CustomResource, JobPlugin, crd_manifest, custom_resources
from etctl.errors import ConfigError

__all__ = [
    "CERT_MANAGER",
    "DEFAULT_IMAGE",
    "KUBEFLOW",
    "KUBEFLOW_NAMESPACE",
    "METRICS_READER",
    "OVERLAYS",
    "STANDALONE",
    "ManifestOptions",
    "render",
    "render_stream",
]

STANDALONE = "standalone"
KUBEFLOW = "kubeflow"
CERT_MANAGER = "cert-manager"
OVERLAYS = (STANDALONE, KUBEFLOW, CERT_MANAGER)
"""The overlays of the tree: the operator alone in its namespace, inside Kubeflow, or alone with
cert-manager's webhook certificate."""
KUBEFLOW_NAMESPACE = "kubeflow"
"""The namespace of a Kubeflow platform, where the kubeflow overlay installs the operator."""

DEFAULT_IMAGE = f"ghcr.io/etctl/etctl:{__version__}"
"""The operator image the Deployment runs (override with ``--image`` or kustomize ``images``)."""

_METRICS_PORT = 8443
_PROBE_PORT = 8081
_UID = 65532
_SELECTOR = {"app.kubernetes.io/name": "etctl", "app.kubernetes.io/component": "operator"}
METRICS_READER = "etctl-metrics-reader"
"""The ClusterRole a scraper is bound to (``nonResourceURLs: ["/metrics"]``, ``get``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ManifestOptions:
    """What to render.

    Attributes:
        namespace: the namespace the operator is installed in.
        image: the operator image.
        gang_scheduler: grant the PodGroups of this scheduler and pass it to the operator.
        jobs: the plugins the operator enables (``--jobs``); empty: every installed one.
        overlay: what :func:`render_stream` renders: ``standalone`` (in ``namespace``, which it
            creates), ``kubeflow`` (in ``kubeflow``, roles aggregated into Kubeflow's too) or
            ``cert-manager`` (standalone, the webhook certificate from cert-manager).
        webhook_url: point the webhook configurations at this URL instead of the Service (an
            operator run outside the cluster, ``etctl run --webhook-url``).
    """

    namespace: str = "etctl-system"
    image: str = DEFAULT_IMAGE
    gang_scheduler: str = ""
    jobs: tuple[str, ...] = ()
    overlay: str = STANDALONE
    webhook_url: str = ""


def _rbac(
    plugins: Sequence[JobPlugin[Any]], options: ManifestOptions, ns: str, *, kubeflow: bool
) -> dict[str, dict[str, Any]]:
    subject = [{"kind": "ServiceAccount", "name": _NAME, "namespace": ns}]
    rules = merge_rules(
        [*cluster_role_rules(plugins, gang_scheduler=options.gang_scheduler), *WEBHOOK_RULES]
    )
    api = "rbac.authorization.k8s.io"
    return {
        "rbac/service-account.yaml": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(_NAME, ns),
        },
        "rbac/cluster-role.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(_NAME),
            "rules": [rule_to_dict(rule) for rule in rules],
        },
        "rbac/cluster-role-binding.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(_NAME),
            "roleRef": {"apiGroup": api, "kind": "ClusterRole", "name": _NAME},
            "subjects": subject,
        },
        "rbac/leader-election-role.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "Role",
            "metadata": _meta(f"{_NAME}-leader-election", ns),
            "rules": [rule_to_dict(rule) for rule in LEADER_ELECTION_RULES],
        },
        "rbac/leader-election-role-binding.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "RoleBinding",
            "metadata": _meta(f"{_NAME}-leader-election", ns),
            "roleRef": {"apiGroup": api, "kind": "Role", "name": f"{_NAME}-leader-election"},
            "subjects": subject,
        },
        "rbac/webhook-cert-role.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "Role",
            "metadata": _meta(f"{_NAME}-webhook-cert", ns),
            "rules": [rule_to_dict(rule) for rule in WEBHOOK_SECRET_RULES],
        },
        "rbac/webhook-cert-role-binding.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "RoleBinding",
            "metadata": _meta(f"{_NAME}-webhook-cert", ns),
            "roleRef": {"apiGroup": api, "kind": "Role", "name": f"{_NAME}-webhook-cert"},
            "subjects": subject,
        },
        "rbac/metrics-auth-role.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(f"{_NAME}-metrics-auth"),
            "rules": [rule_to_dict(rule) for rule in METRICS_AUTH_RULES],
        },
        "rbac/metrics-auth-role-binding.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(f"{_NAME}-metrics-auth"),
            "roleRef": {"apiGroup": api, "kind": "ClusterRole", "name": f"{_NAME}-metrics-auth"},
            "subjects": subject,
        },
        # Bind a scraper's ServiceAccount (Prometheus's) to this to let it read /metrics.
        "rbac/metrics-reader-role.yaml": {
            "apiVersion": f"{api}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(METRICS_READER),
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        **{
            f"rbac/{role_name(plugin, role)}-role.yaml": document
            for plugin in plugins
            for role, document in user_roles(plugin, _labels(), kubeflow=kubeflow).items()
        },
    }


def _args(options: ManifestOptions, *, overlay: str | None = None) -> list[str]:
    args = [
        "run",
        "--leader-elect",
        f"--metrics-bind-address=:{_METRICS_PORT}",
        f"--health-probe-bind-address=:{_PROBE_PORT}",
        "--webhooks",
    ]
    if overlay == CERT_MANAGER:
        args.append("--webhook-certs=external")
    if options.jobs:
        args.append("--jobs=" + ",".join(options.jobs))
    if options.gang_scheduler:
        args.append(f"--gang-scheduler={options.gang_scheduler}")
    return args


def _probe(path: str, *, initial: int, period: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "health"},
        "initialDelaySeconds": initial,
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": 3,
    }


def _deployment(
    options: ManifestOptions, namespace: str, *, overlay: str | None = None
) -> dict[str, Any]:
    webhook_port, webhook_certs, webhook_mount = webhook_volume()
    container = {
        "name": "operator",
        "image": options.image,
        "command": ["etctl"],
        "args": _args(options, overlay=overlay),
        "env": [
            # The Lease lives next to the operator, whatever namespace it was installed in.
            {
                "name": "ETCTL_LEADER_ELECTION_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
            {"name": "ETCTL_LOG_FORMAT", "value": "json"},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
        ],
        "ports": [
            {"name": "metrics", "containerPort": _METRICS_PORT, "protocol": "TCP"},
            {"name": "health", "containerPort": _PROBE_PORT, "protocol": "TCP"},
            webhook_port,
        ],
        "livenessProbe": _probe("/healthz", initial=15, period=20),
        "readinessProbe": _probe("/readyz", initial=5, period=10),
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
        },
        # The only writable path: Python and its libraries may want a temporary directory. The
        # webhook certificates are mounted read-only below it, where the webhook server reads.
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, webhook_mount],  # noqa: S108
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(_NAME, namespace),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": _SELECTOR},
            "template": {
                "metadata": {"labels": _labels()},
                "spec": {
                    "serviceAccountName": _NAME,
                    "automountServiceAccountToken": True,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": _UID,
                        "runAsGroup": _UID,
                        "fsGroup": _UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    # Longer than the operator's 30 s graceful shutdown, so SIGTERM drains fully.
                    "terminationGracePeriodSeconds": 40,
                    "containers": [container],
                    "volumes": [
                        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                        webhook_certs,
                    ],
                },
            },
        },
    }


def _metrics_service(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(f"{_NAME}-metrics", namespace),
        "spec": {
            "selector": _SELECTOR,
            "ports": [
                {
                    "name": "https",
                    "port": _METRICS_PORT,
                    "targetPort": "metrics",
                    "protocol": "TCP",
                }
            ],
        },
    }


def _crds(plugins: Sequence[JobPlugin[Any]]) -> list[CustomResource]:
    seen: dict[str, CustomResource] = {}
    for plugin in plugins:
        for resource in custom_resources(plugin):
            seen.setdefault(resource.name, resource)
    return [seen[name] for name in sorted(seen)]


def _documents(
    plugins: Sequence[JobPlugin[Any]],
    options: ManifestOptions,
    *,
    overlay: str | None,
    crds: bool = True,
) -> list[tuple[str, dict[str, Any]]]:
    """The documents of the base (``overlay=None``) or what an overlay installs, in apply order.

    Each comes with its file in the base. The order is namespace (standalone only), CRDs, RBAC,
    the webhook certificate's Secret (and cert-manager's Certificate), operator, Services, then
    the webhook configurations; a CRD's file is named as the CRD generator names it
    (``crds/<group>_<plural>.yaml``).
    ``crds=False`` leaves the CRDs out, for a caller that renders them itself.

    Raises:
        ConfigError: an unknown overlay.
    """
    if overlay not in (None, *OVERLAYS):
        msg = f"unknown overlay {overlay!r} (known: {', '.join(OVERLAYS)})"
        raise ConfigError(msg)
    kubeflow = overlay == KUBEFLOW
    namespace = KUBEFLOW_NAMESPACE if kubeflow else options.namespace
    first: list[tuple[str, dict[str, Any]]] = []
    if overlay in (STANDALONE, CERT_MANAGER):
        first.append(("namespace.yaml", _namespace(namespace)))
    annotations = inject_ca_annotation(namespace) if overlay == CERT_MANAGER else None
    mutating, validating = webhook_configuration_documents(
        plugins, namespace, _labels(), url=options.webhook_url, annotations=annotations
    )
    return [
        *first,
        *(
            (f"crds/{resource.group}_{resource.plural}.yaml", crd_manifest(resource))
            for resource in (_crds(plugins) if crds else ())
        ),
        *_rbac(plugins, options, namespace, kubeflow=kubeflow).items(),
        ("webhook/secret.yaml", webhook_secret(namespace, _meta(_NAME))),
        *(
            (f"cert-manager/{doc['kind'].lower()}.yaml", doc)
            for doc in (cert_manager_documents(namespace, _meta(_NAME)) if annotations else ())
        ),
        ("manager/deployment.yaml", _deployment(options, namespace, overlay=overlay)),
        ("manager/metrics-service.yaml", _metrics_service(namespace)),
        ("webhook/service.yaml", webhook_service(namespace, _meta(_NAME), _SELECTOR)),
        # Last: once they exist, writes of the kinds wait for the operator's webhooks.
        ("webhook/mutating-webhook-configuration.yaml", mutating),
        ("webhook/validating-webhook-configuration.yaml", validating),
    ]


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name)}


def _kubeflow_patches(plugins: Sequence[JobPlugin[Any]]) -> str:
    """Strategic-merge patches adding Kubeflow's aggregation labels to the job kinds' roles."""
    return _dump(
        *(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": role_name(plugin, role), "labels": KUBEFLOW_LABELS[role]},
            }
            for plugin in plugins
            for role in ROLES
        )
    )


def render(plugins: Sequence[JobPlugin[Any]], options: ManifestOptions) -> dict[str, str]:
    """Every file of the tree, by path relative to the tree's root, sorted."""
    # The CRD files are written exactly as the CRD generator writes them, with its header.
    base: dict[str, str] = {
        f"crds/{name}": text for name, text in render_manifests(_crds(plugins)).items()
    }
    documents = _documents(plugins, options, overlay=None, crds=False)
    base.update({path: _dump(doc) for path, doc in documents})
    files = {f"base/{path}": text for path, text in base.items()}
    files["base/kustomization.yaml"] = _kustomization(
        namespace=options.namespace, resources=sorted(base)
    )
    files["overlays/standalone/namespace.yaml"] = _dump(_namespace(options.namespace))
    files["overlays/standalone/kustomization.yaml"] = _kustomization(
        namespace=options.namespace, resources=["namespace.yaml", "../../base"]
    )
    files["overlays/kubeflow/aggregate-to-kubeflow.yaml"] = _kubeflow_patches(plugins)
    files["overlays/kubeflow/kustomization.yaml"] = _kustomization(
        namespace=KUBEFLOW_NAMESPACE,
        resources=["../../base"],
        patches=[{"path": "aggregate-to-kubeflow.yaml"}],
    )
    files.update(cert_manager_overlay(options.namespace, _args(options, overlay=CERT_MANAGER)))
    files["kustomization.yaml"] = _kustomization(resources=["overlays/standalone"])
    standalone = dataclasses.replace(options, overlay=STANDALONE)
    files["install.yaml"] = render_stream(plugins, standalone)
    return dict(sorted(files.items()))


def render_stream(plugins: Sequence[JobPlugin[Any]], options: ManifestOptions) -> str:
    """What ``options.overlay`` installs, as one YAML stream in apply order.

    Raises:
        ConfigError: an unknown overlay.
    """
    return _dump(*(doc for _, doc in _documents(plugins, options, overlay=options.overlay)))
