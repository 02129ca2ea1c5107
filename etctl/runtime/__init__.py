"""The controller runtime: what an operator author needs, in one namespace.

``etctl.runtime`` is the front door of the runtime layer; every module behind it is private and may
change. A minimal operator::

    from etctl import runtime

    async def reconcile(request: runtime.Request) -> runtime.Result:
        ...
        return runtime.Result()

    async with runtime.Client.connect() as client:
        manager = runtime.Manager(client, runtime.ManagerOptions())
        manager.controller("widgets", reconcile).for_(WIDGETS).owns(runtime.CONFIGMAPS).build()
        await manager.run(handle_signals=True)

The groups below are what the layer offers (see ``docs/runtime.md`` for a walk-through):

* **client**: :class:`Client`, :class:`ClientOptions`, :class:`RetryPolicy`, the watch and list
  types, the cluster connection (:class:`ClusterConfig`), and its transport seam
  (:class:`HttpTransport`, one :class:`HttpRequest` in, one :class:`HttpResponse` out), which a
  test answers without a server (``etctl.testing.MockTransport``); :class:`EndpointClient` calls
  another HTTP endpoint (a webhook) on the client's own connections;
* **objects and resources**: objects are plain dicts (:data:`KubeObject`, :data:`ObjectView`),
  their metadata read through the :mod:`objects` namespace and a pod's facts through the
  :mod:`podview` namespace (``podview.phase(pod)``); :class:`Resource` names a collection, with
  constants for the built-in ones;
* **manager and controllers**: :class:`Manager`, :class:`ManagerOptions`,
  :class:`ControllerBuilder`, :class:`Request`, :class:`Result`, handlers and predicates;
* **cache reads**: :class:`Cache`, :class:`CacheOptions` (with :class:`ByObject`, the scope of one
  resource), index functions and transforms;
* **webhooks**: :class:`WebhookServer` and its options, :class:`WebhookBuilder`
  (``manager.webhook(res)``), :class:`Validator` and :class:`Defaulter` handlers answering
  :class:`AdmissionRequest` s, :func:`invalid` and :class:`FieldError` for a 422,
  :class:`HubAndSpoke` conversion, :func:`webhook_configurations`, and :class:`CertRotation`
  for certificates the manager keeps itself;
* **events, leader election, expectations, time, metrics**.

Errors are the classes of :mod:`etctl.errors`, the one tree every layer raises and catches.
"""

import importlib
from typing import TYPE_CHECKING, Any

from etctl.runtime import _objects as objects
from etctl.runtime import _podview as podview
from etctl.runtime._builder import ControllerBuilder, ReconcilerLike
from etctl.runtime._cache import Cache, CacheReader, NotCachedError
from etctl.runtime._cache_options import ByObject, CacheOptions
from etctl.runtime._client import (
    Client,
    ClientOptions,
    ExecResult,
    ObjectList,
    PatchType,
    PropagationPolicy,
    RetryPolicy,
    WatchEvent,
    WatchEventType,
)
from etctl.runtime._clock import Clock, FakeClock, RealClock, wait_event
from etctl.runtime._event import CreateEvent, DeleteEvent, UpdateEvent
from etctl.runtime._exchange import HttpRequest, HttpResponse, HttpTransport
from etctl.runtime._expectations import DEFAULT_TTL, Expectations
from etctl.runtime._handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventHandler,
    MapFunc,
    PriorityFunc,
)
from etctl.runtime._kubeconfig import ClusterConfig, context_namespace, in_cluster_available
from etctl.runtime._lease import LeaderElectionConfig
from etctl.runtime._manager import Manager, RunnableFunc
from etctl.runtime._manager_options import SERVICE_ACCOUNT_NAMESPACE, ManagerOptions
from etctl.runtime._metrics import REGISTRY
from etctl.runtime._objects import KubeObject, ObjectView, Tombstone
from etctl.runtime._predicate import (
    AnnotationsChanged,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    ResourceVersionChanged,
    and_,
    not_,
    or_,
    predicate_func,
)
from etctl.runtime._ratelimit import RateLimiter, default_controller_rate_limiter
from etctl.runtime._reconcile import ReconcileFunc, Reconciler, Request, Result, stop_requested
from etctl.runtime._recorder import EventRecorder, EventType
from etctl.runtime._resources import (
    CONFIGMAPS,
    CRDS,
    ENDPOINTS,
    EVENTS,
    LEASES,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITYCLASSES,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Resource,
)
from etctl.runtime._selectors import FieldSelector, LabelSelector, SelectorError
from etctl.runtime._store import IndexFunc
from etctl.runtime._tls import self_signed_pem, serving_context
from etctl.runtime._transforms import Transform, compose, strip_managed_fields
from etctl.runtime._webhook_options import (
    DEFAULT_CERT_DIR,
    DEFAULT_WEBHOOK_PORT,
    CertRotation,
    WebhookServerOptions,
)
from etctl.runtime._workqueue import WorkQueue

if TYPE_CHECKING:
    from etctl.runtime._admission import (
        AdmissionRequest,
        AdmissionResponse,
        GroupVersionKind,
        GroupVersionResource,
        UserInfo,
    )
    from etctl.runtime._admission_handlers import (
        AdmissionEndpoint,
        AdmissionHandler,
        Defaulter,
        Validator,
    )
    from etctl.runtime._cert_rotator import CertRotator
    from etctl.runtime._conversion import ConversionError, HubAndSpoke, Spoke
    from etctl.runtime._endpoint_client import EndpointClient
    from etctl.runtime._field_errors import FieldError, invalid
    from etctl.runtime._webhook_builder import WebhookBuilder
    from etctl.runtime._webhook_config import (
        FailurePolicy,
        WebhookClientConfig,
        WebhookSpec,
        webhook_configurations,
    )
    from etctl.runtime._webhook_server import WebhookServer

_LAZY = {
    "AdmissionEndpoint": "etctl.runtime._admission_handlers",
    "AdmissionHandler": "etctl.runtime._admission_handlers",
    "AdmissionRequest": "etctl.runtime._admission",
    "AdmissionResponse": "etctl.runtime._admission",
    "CertRotator": "etctl.runtime._cert_rotator",
    "ConversionError": "etctl.runtime._conversion",
    "Defaulter": "etctl.runtime._admission_handlers",
    "EndpointClient": "etctl.runtime._endpoint_client",
    "FailurePolicy": "etctl.runtime._webhook_config",
    "FieldError": "etctl.runtime._field_errors",
    "GroupVersionKind": "etctl.runtime._admission",
    "GroupVersionResource": "etctl.runtime._admission",
    "HubAndSpoke": "etctl.runtime._conversion",
    "Spoke": "etctl.runtime._conversion",
    "UserInfo": "etctl.runtime._admission",
    "Validator": "etctl.runtime._admission_handlers",
    "WebhookBuilder": "etctl.runtime._webhook_builder",
    "WebhookClientConfig": "etctl.runtime._webhook_config",
    "WebhookServer": "etctl.runtime._webhook_server",
    "WebhookSpec": "etctl.runtime._webhook_config",
    "invalid": "etctl.runtime._field_errors",
    "webhook_configurations": "etctl.runtime._webhook_config",
}
"""Names loaded on first use: the webhook server, admission, conversion and certificate rotation,
which an operator without webhooks never runs (admission reviews are pydantic models; the
rotator brings the certificate planning). Their settings (:class:`WebhookServerOptions`,
:class:`CertRotation`) load with the manager's options."""


def __getattr__(name: str) -> Any:
    """Load the webhook names on first use (see :data:`_LAZY`)."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AdmissionEndpoint",
    "AdmissionHandler",
    "AdmissionRequest",
    "AdmissionResponse",
    "AnnotationsChanged",
    "ByObject",
    "CONFIGMAPS",
    "CRDS",
    "Cache",
    "CacheOptions",
    "CacheReader",
    "CertRotation",
    "CertRotator",
    "Client",
    "ClientOptions",
    "Clock",
    "ClusterConfig",
    "ControllerBuilder",
    "ConversionError",
    "CreateEvent",
    "DEFAULT_CERT_DIR",
    "DEFAULT_TTL",
    "DEFAULT_WEBHOOK_PORT",
    "Defaulter",
    "DeleteEvent",
    "ENDPOINTS",
    "EVENTS",
    "EndpointClient",
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "EventRecorder",
    "EventType",
    "ExecResult",
    "Expectations",
    "FailurePolicy",
    "FakeClock",
    "FieldError",
    "FieldSelector",
    "GenerationChanged",
    "GroupVersionKind",
    "GroupVersionResource",
    "HttpRequest",
    "HttpResponse",
    "HttpTransport",
    "HubAndSpoke",
    "IndexFunc",
    "KubeObject",
    "LEASES",
    "LabelSelector",
    "LabelsChanged",
    "LeaderElectionConfig",
    "MUTATING_WEBHOOK_CONFIGURATIONS",
    "Manager",
    "ManagerOptions",
    "MapFunc",
    "NAMESPACES",
    "NODES",
    "NotCachedError",
    "ObjectList",
    "ObjectView",
    "PODS",
    "PRIORITYCLASSES",
    "PatchType",
    "Predicate",
    "PriorityFunc",
    "PropagationPolicy",
    "REGISTRY",
    "ROLEBINDINGS",
    "ROLES",
    "RateLimiter",
    "RealClock",
    "ReconcileFunc",
    "Reconciler",
    "ReconcilerLike",
    "Request",
    "Resource",
    "ResourceVersionChanged",
    "Result",
    "RetryPolicy",
    "RunnableFunc",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "SERVICE_ACCOUNT_NAMESPACE",
    "SelectorError",
    "Spoke",
    "Tombstone",
    "Transform",
    "UpdateEvent",
    "UserInfo",
    "VALIDATING_WEBHOOK_CONFIGURATIONS",
    "Validator",
    "WatchEvent",
    "WatchEventType",
    "WebhookBuilder",
    "WebhookClientConfig",
    "WebhookServer",
    "WebhookServerOptions",
    "WebhookSpec",
    "WorkQueue",
    "and_",
    "compose",
    "context_namespace",
    "default_controller_rate_limiter",
    "in_cluster_available",
    "invalid",
    "not_",
    "objects",
    "or_",
    "podview",
    "predicate_func",
    "self_signed_pem",
    "serving_context",
    "stop_requested",
    "strip_managed_fields",
    "wait_event",
    "webhook_configurations",
]
