"""The built-in resources the server serves, as a real cluster's discovery describes them.

Names, scopes, short names, categories, verbs and subresources follow kube-apiserver 1.32, so
``kubectl`` resolves ``po``, ``svc``, ``crd``... and lists what it lists on a cluster. Each entry
carries the strategy of its kind; :func:`builtin_resources` builds fresh strategies per server
(the service address allocator is per server).
"""

from __future__ import annotations

from etctl.testing._apiserver.apps import WorkloadStrategy
from etctl.testing._apiserver.autoscaling import HorizontalPodAutoscalerStrategy
from etctl.testing._apiserver.corekinds import (
    ConfigMapStrategy,
    EventStrategy,
    NamespaceStrategy,
    NodeStrategy,
    PriorityClassStrategy,
    RoleBindingStrategy,
    SecretStrategy,
)
from etctl.testing._apiserver.crds import CRDStrategy
from etctl.testing._apiserver.limits import DEFAULT_LIMITS, Limits
from etctl.testing._apiserver.pods import PodStrategy
from etctl.testing._apiserver.registry import (
    ResourceInfo,
    ScaleSpec,
    SubresourceInfo,
    VersionInfo,
)
from etctl.testing._apiserver.services import ClusterIPAllocator, ServiceStrategy
from etctl.testing._apiserver.strategy import Strategy
from etctl.testing._apiserver.validation import NameRule
from etctl.testing._apiserver.webhookconfigs import WebhookConfigurationStrategy

__all__ = ["builtin_resources"]

_REPLICAS = ScaleSpec(".spec.replicas", ".status.replicas")
_NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")


def _v1(*, status: bool = False) -> tuple[VersionInfo, ...]:
    return (VersionInfo("v1", status=status),)


def builtin_resources(
    allocator: ClusterIPAllocator,
    *,
    limits: Limits = DEFAULT_LIMITS,
    scheduling_gates: bool = True,
) -> list[ResourceInfo]:
    """The built-in resources with fresh strategies.

    Args:
        allocator: the cluster-IP allocator Services draw from.
        limits: the size limits the strategies enforce (ConfigMap and Secret data).
        scheduling_gates: whether pods keep ``spec.schedulingGates`` (the release has them).
    """
    plain = Strategy()
    rbac = "rbac.authorization.k8s.io"
    return [
        ResourceInfo(
            group="",
            plural="namespaces",
            singular="namespace",
            kind="Namespace",
            namespaced=False,
            versions=_v1(status=True),
            strategy=NamespaceStrategy(),
            short_names=("ns",),
            verbs=_NO_COLLECTION_DELETE,
            subresources=(SubresourceInfo("finalize", "Namespace", ("update",)),),
            name_rule=NameRule.LABEL,
            return_deleted_object=True,
        ),
        ResourceInfo(
            group="",
            plural="pods",
            singular="pod",
            kind="Pod",
            namespaced=True,
            versions=_v1(status=True),
            strategy=PodStrategy(scheduling_gates=scheduling_gates),
            short_names=("po",),
            categories=("all",),
            subresources=(
                SubresourceInfo("binding", "Binding", ("create",)),
                SubresourceInfo("exec", "PodExecOptions", ("create", "get")),
                SubresourceInfo("log", "Pod", ("get",)),
            ),
            return_deleted_object=True,
        ),
        ResourceInfo(
            group="",
            plural="services",
            singular="service",
            kind="Service",
            namespaced=True,
            versions=_v1(status=True),
            strategy=ServiceStrategy(allocator),
            short_names=("svc",),
            categories=("all",),
            name_rule=NameRule.DNS1035,
            return_deleted_object=True,
        ),
        ResourceInfo(
            group="",
            plural="endpoints",
            singular="endpoints",
            kind="Endpoints",
            namespaced=True,
            versions=_v1(),
            strategy=plain,
            short_names=("ep",),
        ),
        ResourceInfo(
            group="",
            plural="configmaps",
            singular="configmap",
            kind="ConfigMap",
            namespaced=True,
            versions=_v1(),
            strategy=ConfigMapStrategy(max_data_bytes=limits.max_data_bytes),
            short_names=("cm",),
        ),
        ResourceInfo(
            group="",
            plural="secrets",
            singular="secret",
            kind="Secret",
            namespaced=True,
            versions=_v1(),
            strategy=SecretStrategy(max_data_bytes=limits.max_data_bytes),
        ),
        ResourceInfo(
            group="",
            plural="serviceaccounts",
            singular="serviceaccount",
            kind="ServiceAccount",
            namespaced=True,
            versions=_v1(),
            strategy=plain,
            short_names=("sa",),
            return_deleted_object=True,
        ),
        ResourceInfo(
            group="",
            plural="events",
            singular="event",
            kind="Event",
            namespaced=True,
            versions=_v1(),
            strategy=EventStrategy(),
            short_names=("ev",),
        ),
        ResourceInfo(
            group="",
            plural="nodes",
            singular="node",
            kind="Node",
            namespaced=False,
            versions=_v1(status=True),
            strategy=NodeStrategy(),
            short_names=("no",),
        ),
        ResourceInfo(
            group=rbac,
            plural="roles",
            singular="role",
            kind="Role",
            namespaced=True,
            versions=_v1(),
            strategy=plain,
            name_rule=NameRule.PATH_SEGMENT,
        ),
        ResourceInfo(
            group=rbac,
            plural="rolebindings",
            singular="rolebinding",
            kind="RoleBinding",
            namespaced=True,
            versions=_v1(),
            strategy=RoleBindingStrategy(),
            name_rule=NameRule.PATH_SEGMENT,
        ),
        ResourceInfo(
            group=rbac,
            plural="clusterroles",
            singular="clusterrole",
            kind="ClusterRole",
            namespaced=False,
            versions=_v1(),
            strategy=plain,
            name_rule=NameRule.PATH_SEGMENT,
        ),
        ResourceInfo(
            group=rbac,
            plural="clusterrolebindings",
            singular="clusterrolebinding",
            kind="ClusterRoleBinding",
            namespaced=False,
            versions=_v1(),
            strategy=RoleBindingStrategy(),
            name_rule=NameRule.PATH_SEGMENT,
        ),
        ResourceInfo(
            group="coordination.k8s.io",
            plural="leases",
            singular="lease",
            kind="Lease",
            namespaced=True,
            versions=_v1(),
            strategy=plain,
        ),
        ResourceInfo(
            group="events.k8s.io",
            plural="events",
            singular="event",
            kind="Event",
            namespaced=True,
            versions=_v1(),
            strategy=plain,
            short_names=("ev",),
        ),
        ResourceInfo(
            group="apiextensions.k8s.io",
            plural="customresourcedefinitions",
            singular="customresourcedefinition",
            kind="CustomResourceDefinition",
            namespaced=False,
            versions=_v1(status=True),
            strategy=CRDStrategy(),
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            has_generation=True,
        ),
        ResourceInfo(
            group="scheduling.k8s.io",
            plural="priorityclasses",
            singular="priorityclass",
            kind="PriorityClass",
            namespaced=False,
            versions=_v1(),
            strategy=PriorityClassStrategy(),
            short_names=("pc",),
        ),
        *(
            ResourceInfo(
                group="admissionregistration.k8s.io",
                plural=f"{kind.lower()}s",
                singular=kind.lower(),
                kind=kind,
                namespaced=False,
                versions=_v1(),
                strategy=WebhookConfigurationStrategy(mutating=kind.startswith("Mutating")),
                categories=("api-extensions",),
                has_generation=True,
            )
            for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        ),
        ResourceInfo(
            group="autoscaling",
            plural="horizontalpodautoscalers",
            singular="horizontalpodautoscaler",
            kind="HorizontalPodAutoscaler",
            namespaced=True,
            versions=(VersionInfo("v2", status=True),),
            strategy=HorizontalPodAutoscalerStrategy(),
            short_names=("hpa",),
            categories=("all",),
        ),
        *(
            ResourceInfo(
                group="apps",
                plural=f"{singular}s",
                singular=singular,
                kind=kind,
                namespaced=True,
                versions=(VersionInfo("v1", status=True, scale=_REPLICAS),),
                strategy=WorkloadStrategy(deployment=kind == "Deployment"),
                short_names=(short,),
                categories=("all",),
                has_generation=True,
            )
            for singular, kind, short in (
                ("deployment", "Deployment", "deploy"),
                ("replicaset", "ReplicaSet", "rs"),
            )
        ),
    ]
