"""What the admission benchmarks share: the TFJob they create, and configurations that select.

The webhook configurations are those ``etctl run --webhooks`` registers for TFJob (URL-based, as
for an operator run outside the cluster), narrowed to the namespaces labelled ``bench: admitted``,
so one namespace's writes go through the mutating and the validating webhook and another's go
straight to storage.
"""

from __future__ import annotations

import copy
from typing import Any

from etctl.cli._manifest_docs import labels
from etctl.cli._render_webhooks import webhook_configuration_documents
from etctl.jobs.tfjob import TFJobPlugin

ADMITTED_LABELS = {"bench": "admitted"}
"""The labels of a namespace whose writes the webhooks admit."""

PLURALS = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}

_TFJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": ""},
    "spec": {
        "runPolicy": {"suspend": True},
        "tfReplicaSpecs": {
            "Worker": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}},
            }
        },
    },
}


def tfjob(name: str) -> dict[str, Any]:
    """The TFJob every create writes (suspended: nothing reconciles it), named ``name``."""
    job = copy.deepcopy(_TFJOB)
    job["metadata"]["name"] = name
    return job


def configurations(
    namespace: str, url: str, ca_bundle: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """``(collection path, document)`` of each webhook configuration, admitting one namespace.

    Args:
        namespace: the operator's namespace (the configurations' labels name it).
        url: the webhook server's base URL.
        ca_bundle: the CA to verify it with (base64 of the PEM); ``None`` leaves it to the
            operator, which injects its own.
    """
    documents = webhook_configuration_documents([TFJobPlugin()], namespace, labels(), url=url)
    out = []
    for document in documents:
        for hook in document["webhooks"]:
            hook["namespaceSelector"] = {"matchLabels": dict(ADMITTED_LABELS)}
            if ca_bundle is not None:
                hook["clientConfig"]["caBundle"] = ca_bundle
        path = f"/apis/admissionregistration.k8s.io/v1/{PLURALS[document['kind']]}"
        out.append((path, document))
    return out
