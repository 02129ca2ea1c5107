"""TFJob manifests for the tests, and the TF_CONFIG their pods get.

The pods' ``tensorflow`` container names an image the simulated kubelet runs until told
(:meth:`tests._cluster.Cluster.exit`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject

__all__ = ["NAMESPACE", "replica", "tf_config", "tfjob"]

NAMESPACE = "default"


def replica(
    count: int = 1,
    *,
    policy: str = "Never",
    annotations: Mapping[str, str] | None = None,
    **container: Any,
) -> dict[str, Any]:
    """A replica spec whose ``tensorflow`` container the simulated kubelet runs until told."""
    template: dict[str, Any] = {
        "spec": {"containers": [{"name": "tensorflow", "image": "tf:2", **container}]}
    }
    if annotations:
        template["metadata"] = {"annotations": dict(annotations)}
    return {"replicas": count, "restartPolicy": policy, "template": template}


def tfjob(
    name: str,
    *,
    namespace: str = NAMESPACE,
    run_policy: Mapping[str, Any] | None = None,
    success_policy: str | None = None,
    dynamic: bool | None = None,
    **specs: dict[str, Any],
) -> KubeObject:
    """A TFJob manifest with the given replica specs."""
    spec: dict[str, Any] = {"tfReplicaSpecs": specs}
    if run_policy is not None:
        spec["runPolicy"] = dict(run_policy)
    if success_policy is not None:
        spec["successPolicy"] = success_policy
    if dynamic is not None:
        spec["enableDynamicWorker"] = dynamic
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def tf_config(pod: KubeObject) -> dict[str, Any] | None:
    """The parsed TF_CONFIG of a pod's ``tensorflow`` container, or None."""
    for container in pod["spec"]["containers"]:
        if container["name"] != "tensorflow":
            continue
        for env in container.get("env", []):
            if env["name"] == "TF_CONFIG":
                parsed: dict[str, Any] = json.loads(env["value"])
                return parsed
    return None
