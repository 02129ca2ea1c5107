"""The columns kube-apiserver's printers give the built-in kinds, and how ages are shown.

Each printer turns one object into the cells of its row; the column definitions are those of the
real server's printers (``kubectl get`` shows them, the wide ones with ``-o wide``): the core kinds,
events, RBAC bindings, PriorityClasses, Leases, and the apps group's Deployments and ReplicaSets.
Kinds without a printer get ``Name`` and ``Created At``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from etctl.runtime import ObjectView

__all__ = ["DEFAULT_PRINTER", "NAME_COLUMN", "PRINTERS", "Column", "Printer", "human_duration"]

Column = tuple[str, str, str, int]
"""``(name, type, format, priority)`` of a column."""

Printer = tuple[tuple[Column, ...], Callable[[ObjectView, datetime], list[Any]]]
"""The columns of a kind and the function computing a row's cells."""


def _pair(major: int, minor: int, big: str, small: str) -> str:
    return f"{major}{big}{minor}{small}" if minor else f"{major}{big}"


def human_duration(seconds: float) -> str:
    """A duration as the printers show ages (``45s``, ``3m20s``, ``5h``, ``12d``)."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        text = f"{s}s"
    elif minutes < 10:
        text = _pair(minutes, s % 60, "m", "s")
    elif minutes < 180:
        text = f"{minutes}m"
    elif hours < 8:
        text = _pair(hours, minutes % 60, "h", "m")
    elif hours < 48:
        text = f"{hours}h"
    elif hours < 24 * 8:
        text = _pair(days, hours % 24, "d", "h")
    elif days < 365 * 2:
        text = f"{days}d"
    elif days < 365 * 8:
        text = _pair(days // 365, days % 365, "y", "d")
    else:
        text = f"{days // 365}y"
    return text


def _age(obj: ObjectView, now: datetime) -> str:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    created = datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return human_duration((now - created).total_seconds())


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(obj: ObjectView) -> str:
    return str(_m(obj.get("metadata")).get("name") or "")


# -- built-in printers ----------------------------------------------------------------------------


def _init_reason(spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[str | None, int]:
    """The Status while init containers run (``Init:0/2``, ``Init:Error``), and their restarts."""
    restarts = 0
    for index, init in enumerate(_l(status.get("initContainerStatuses"))):
        state = _m(_m(init).get("state"))
        restarts += int(_m(init).get("restartCount") or 0)
        terminated, waiting = _m(state.get("terminated")), _m(state.get("waiting"))
        if terminated and terminated.get("exitCode") == 0:
            continue
        if terminated:
            code = terminated.get("exitCode")
            return f"Init:{terminated.get('reason') or f'ExitCode:{code}'}", restarts
        if waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            return f"Init:{waiting['reason']}", restarts
        return f"Init:{index}/{len(_l(spec.get('initContainers')))}", restarts
    return None, restarts


def _container_reason(status: Mapping[str, Any], reason: str) -> tuple[str, int, int]:
    """The Status from the containers' states, with ready containers and restarts."""
    ready = restarts = 0
    has_running = False
    for container in reversed(_l(status.get("containerStatuses"))):
        c = _m(container)
        state = _m(c.get("state"))
        restarts += int(c.get("restartCount") or 0)
        waiting, terminated = _m(state.get("waiting")), _m(state.get("terminated"))
        if waiting.get("reason"):
            reason = str(waiting["reason"])
        elif terminated.get("reason"):
            reason = str(terminated["reason"])
        elif terminated:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif c.get("ready") and state.get("running") is not None:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        conditions = _l(status.get("conditions"))
        ready_condition = any(
            _m(c).get("type") == "Ready" and _m(c).get("status") == "True" for c in conditions
        )
        reason = "Running" if ready_condition else "NotReady"
    return reason, ready, restarts


def _pod(obj: ObjectView, now: datetime) -> list[Any]:
    spec, status = _m(obj.get("spec")), _m(obj.get("status"))
    reason = str(status.get("reason") or status.get("phase") or "")
    init_reason, restarts = _init_reason(spec, status)
    ready = 0
    if init_reason is not None:
        reason = init_reason
    else:
        reason, ready, more = _container_reason(status, reason)
        restarts += more
    terminal = status.get("phase") in ("Succeeded", "Failed")
    if _m(obj.get("metadata")).get("deletionTimestamp") and not terminal:
        reason = "Terminating"
    gates = _l(spec.get("readinessGates"))
    gates_text = "<none>"
    if gates:
        conditions = {_m(c).get("type"): _m(c).get("status") for c in _l(status.get("conditions"))}
        true = sum(1 for g in gates if conditions.get(_m(g).get("conditionType")) == "True")
        gates_text = f"{true}/{len(gates)}"
    return [
        _name(obj),
        f"{ready}/{len(_l(spec.get('containers')))}",
        reason,
        str(restarts),
        _age(obj, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


def _namespace(obj: ObjectView, now: datetime) -> list[Any]:
    return [_name(obj), str(_m(obj.get("status")).get("phase") or ""), _age(obj, now)]


def _node(obj: ObjectView, now: datetime) -> list[Any]:
    spec, status = _m(obj.get("spec")), _m(obj.get("status"))
    states = []
    for condition in _l(status.get("conditions")):
        c = _m(condition)
        if c.get("type") == "Ready":
            states.append("Ready" if c.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = _m(_m(obj.get("metadata")).get("labels"))
    roles = sorted(
        key.split("/", 1)[1] for key in labels if key.startswith("node-role.kubernetes.io/")
    )
    info = _m(status.get("nodeInfo"))
    addresses = {_m(a).get("type"): _m(a).get("address") for a in _l(status.get("addresses"))}
    return [
        _name(obj),
        ",".join(states),
        ",".join(roles) or "<none>",
        _age(obj, now),
        str(info.get("kubeletVersion") or ""),
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        str(info.get("osImage") or "<unknown>"),
        str(info.get("kernelVersion") or "<unknown>"),
        str(info.get("containerRuntimeVersion") or "<unknown>"),
    ]


def _service(obj: ObjectView, now: datetime) -> list[Any]:
    spec = _m(obj.get("spec"))
    ports = []
    for port in _l(spec.get("ports")):
        p = _m(port)
        text = f"{p.get('port')}/{p.get('protocol', 'TCP')}"
        if p.get("nodePort"):
            text = f"{p.get('port')}:{p.get('nodePort')}/{p.get('protocol', 'TCP')}"
        ports.append(text)
    external = ",".join(str(ip) for ip in _l(spec.get("externalIPs"))) or "<none>"
    selector = _m(spec.get("selector"))
    return [
        _name(obj),
        str(spec.get("type") or ""),
        str(spec.get("clusterIP") or "<none>"),
        external,
        ",".join(ports) or "<none>",
        _age(obj, now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


def _endpoints(obj: ObjectView, now: datetime) -> list[Any]:
    addresses = []
    for subset in _l(obj.get("subsets")):
        ports = [_m(p).get("port") for p in _l(_m(subset).get("ports"))] or [None]
        for address in _l(_m(subset).get("addresses")):
            for port in ports:
                ip = _m(address).get("ip")
                addresses.append(f"{ip}:{port}" if port else str(ip))
    shown = ",".join(addresses[:3]) + (
        f" + {len(addresses) - 3} more..." if len(addresses) > 3 else ""
    )
    return [_name(obj), shown or "<none>", _age(obj, now)]


def _configmap(obj: ObjectView, now: datetime) -> list[Any]:
    count = len(_m(obj.get("data"))) + len(_m(obj.get("binaryData")))
    return [_name(obj), count, _age(obj, now)]


def _secret(obj: ObjectView, now: datetime) -> list[Any]:
    return [_name(obj), str(obj.get("type") or ""), len(_m(obj.get("data"))), _age(obj, now)]


def _serviceaccount(obj: ObjectView, now: datetime) -> list[Any]:
    return [_name(obj), len(_l(obj.get("secrets"))), _age(obj, now)]


def _event(obj: ObjectView, now: datetime) -> list[Any]:
    involved = _m(obj.get("involvedObject") or obj.get("regarding"))
    last = (
        obj.get("lastTimestamp")
        or obj.get("eventTime")
        or _m(obj.get("metadata")).get("creationTimestamp")
    )
    first = obj.get("firstTimestamp") or last
    source = _m(obj.get("source")).get("component") or obj.get("reportingController") or ""

    def since(stamp: Any) -> str:
        if not stamp:
            return "<unknown>"
        text = str(stamp)[:19] + "Z"
        return _age({"metadata": {"creationTimestamp": text}}, now)

    return [
        since(last),
        str(obj.get("type") or ""),
        str(obj.get("reason") or ""),
        f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
        str(involved.get("fieldPath") or ""),
        str(source),
        str(obj.get("message") or obj.get("note") or "").strip(),
        since(first),
        int(obj.get("count") or 1),
        _name(obj),
    ]


def _lease(obj: ObjectView, now: datetime) -> list[Any]:
    holder = _m(obj.get("spec")).get("holderIdentity") or "<none>"
    return [_name(obj), str(holder), _age(obj, now)]


def _priorityclass(obj: ObjectView, now: datetime) -> list[Any]:
    return [
        _name(obj),
        obj.get("value", 0),
        bool(obj.get("globalDefault")),
        _age(obj, now),
        str(obj.get("preemptionPolicy") or ""),
    ]


def _binding(obj: ObjectView, now: datetime) -> list[Any]:
    ref = _m(obj.get("roleRef"))
    subjects = [_m(s) for s in _l(obj.get("subjects"))]

    def of(kind: str) -> str:
        def shown(subject: Mapping[str, Any]) -> str:
            if kind == "ServiceAccount":
                return f"{subject.get('namespace')}/{subject.get('name')}"
            return str(subject.get("name"))

        return ", ".join(shown(s) for s in subjects if s.get("kind") == kind)

    return [
        _name(obj),
        f"{ref.get('kind')}/{ref.get('name')}",
        _age(obj, now),
        of("User"),
        of("Group"),
        of("ServiceAccount"),
    ]


def _label_selector(selector: Mapping[str, Any]) -> str:
    """A label selector as ``metav1.FormatLabelSelector`` writes it (``<none>`` when empty)."""
    parts = [f"{k}={v}" for k, v in sorted(_m(selector.get("matchLabels")).items())]
    for expression in _l(selector.get("matchExpressions")):
        e = _m(expression)
        key, operator, values = e.get("key"), str(e.get("operator") or ""), _l(e.get("values"))
        if operator == "Exists":
            parts.append(str(key))
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            parts.append(f"{key} {operator.lower()} ({','.join(str(v) for v in values)})")
    return ",".join(parts) or "<none>"


def _workload(obj: ObjectView) -> list[Any]:
    """The wide cells every workload shares: containers, images, selector."""
    spec = _m(obj.get("spec"))
    containers = [_m(c) for c in _l(_m(_m(spec.get("template")).get("spec")).get("containers"))]
    return [
        ",".join(str(c.get("name") or "") for c in containers),
        ",".join(str(c.get("image") or "") for c in containers),
        _label_selector(_m(spec.get("selector"))),
    ]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _desired(obj: ObjectView) -> int:
    """``spec.replicas``, 1 when unset (the default the server would have filled in)."""
    desired = _m(obj.get("spec")).get("replicas")
    return _count(desired) if desired is not None else 1


def _deployment(obj: ObjectView, now: datetime) -> list[Any]:
    status = _m(obj.get("status"))
    return [
        _name(obj),
        f"{_count(status.get('readyReplicas'))}/{_desired(obj)}",
        _count(status.get("updatedReplicas")),
        _count(status.get("availableReplicas")),
        _age(obj, now),
        *_workload(obj),
    ]


def _replicaset(obj: ObjectView, now: datetime) -> list[Any]:
    status = _m(obj.get("status"))
    return [
        _name(obj),
        _desired(obj),
        _count(status.get("replicas")),
        _count(status.get("readyReplicas")),
        _age(obj, now),
        *_workload(obj),
    ]


def _hpa_target(metric: Mapping[str, Any]) -> str:
    """One metric of the Targets column (``formatHPAMetrics``; no current values are known)."""
    kind = metric.get("type")
    key = {
        "Object": "object",
        "Pods": "pods",
        "Resource": "resource",
        "External": "external",
        "ContainerResource": "containerResource",
    }.get(str(kind))
    if key is None:
        return "<unknown type>"
    source = _m(metric.get(key))
    target = _m(source.get("target"))
    average, value = target.get("averageValue"), target.get("value")
    if key in ("object", "external"):
        return f"<unknown>/{average} (avg)" if average is not None else f"<unknown>/{value}"
    if key == "pods":
        return f"<unknown>/{average}"
    name = source.get("name")
    if average is not None:
        return f"{name}: <unknown>/{average}"
    utilization = target.get("averageUtilization")
    shown = f"{utilization}%" if utilization is not None else "<auto>"
    return f"{name}: <unknown>/{shown}"


def _hpa_targets(metrics: list[Any]) -> str:
    if not metrics:
        return "<none>"
    shown = [_hpa_target(_m(metric)) for metric in metrics]
    if len(shown) > 2:
        return f"{', '.join(shown[:2])} + {len(shown) - 2} more..."
    return ", ".join(shown)


def _hpa(obj: ObjectView, now: datetime) -> list[Any]:
    spec, status = _m(obj.get("spec")), _m(obj.get("status"))
    ref = _m(spec.get("scaleTargetRef"))
    low = spec.get("minReplicas")
    return [
        _name(obj),
        f"{ref.get('kind')}/{ref.get('name')}",
        _hpa_targets(_l(spec.get("metrics"))),
        "<unset>" if low is None else str(low),
        _count(spec.get("maxReplicas")),
        _count(status.get("currentReplicas")),
        _age(obj, now),
    ]


def _created_at(obj: ObjectView, now: datetime) -> list[Any]:
    return [_name(obj), _m(obj.get("metadata")).get("creationTimestamp")]


NAME_COLUMN: Column = ("Name", "string", "name", 0)
_NAME = NAME_COLUMN
_AGE: Column = ("Age", "string", "", 0)
PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): (
        (
            _NAME,
            ("Ready", "string", "", 0),
            ("Status", "string", "", 0),
            ("Restarts", "string", "", 0),
            _AGE,
            ("IP", "string", "", 1),
            ("Node", "string", "", 1),
            ("Nominated Node", "string", "", 1),
            ("Readiness Gates", "string", "", 1),
        ),
        _pod,
    ),
    ("", "namespaces"): ((_NAME, ("Status", "string", "", 0), _AGE), _namespace),
    ("", "nodes"): (
        (
            _NAME,
            ("Status", "string", "", 0),
            ("Roles", "string", "", 0),
            _AGE,
            ("Version", "string", "", 0),
            ("Internal-IP", "string", "", 1),
            ("External-IP", "string", "", 1),
            ("OS-Image", "string", "", 1),
            ("Kernel-Version", "string", "", 1),
            ("Container-Runtime", "string", "", 1),
        ),
        _node,
    ),
    ("", "services"): (
        (
            _NAME,
            ("Type", "string", "", 0),
            ("Cluster-IP", "string", "", 0),
            ("External-IP", "string", "", 0),
            ("Port(s)", "string", "", 0),
            _AGE,
            ("Selector", "string", "", 1),
        ),
        _service,
    ),
    ("", "endpoints"): ((_NAME, ("Endpoints", "string", "", 0), _AGE), _endpoints),
    ("", "configmaps"): ((_NAME, ("Data", "string", "", 0), _AGE), _configmap),
    ("", "secrets"): ((_NAME, ("Type", "string", "", 0), ("Data", "string", "", 0), _AGE), _secret),
    ("", "serviceaccounts"): ((_NAME, ("Secrets", "string", "", 0), _AGE), _serviceaccount),
    ("coordination.k8s.io", "leases"): ((_NAME, ("Holder", "string", "", 0), _AGE), _lease),
    ("scheduling.k8s.io", "priorityclasses"): (
        (
            _NAME,
            ("Value", "integer", "", 0),
            ("Global-Default", "boolean", "", 0),
            _AGE,
            ("PreemptionPolicy", "string", "", 0),
        ),
        _priorityclass,
    ),
}
_EVENT_COLUMNS: tuple[Column, ...] = (
    ("Last Seen", "string", "", 0),
    ("Type", "string", "", 0),
    ("Reason", "string", "", 0),
    ("Object", "string", "", 0),
    ("Subobject", "string", "", 1),
    ("Source", "string", "", 1),
    ("Message", "string", "", 0),
    ("First Seen", "string", "", 1),
    ("Count", "string", "", 1),
    ("Name", "string", "", 1),
)
_WORKLOAD_WIDE: tuple[Column, ...] = (
    ("Containers", "string", "", 1),
    ("Images", "string", "", 1),
    ("Selector", "string", "", 1),
)
PRINTERS[("apps", "deployments")] = (
    (
        _NAME,
        ("Ready", "string", "", 0),
        ("Up-to-date", "integer", "", 0),
        ("Available", "integer", "", 0),
        _AGE,
        *_WORKLOAD_WIDE,
    ),
    _deployment,
)
PRINTERS[("apps", "replicasets")] = (
    (
        _NAME,
        ("Desired", "integer", "", 0),
        ("Current", "integer", "", 0),
        ("Ready", "integer", "", 0),
        _AGE,
        *_WORKLOAD_WIDE,
    ),
    _replicaset,
)
PRINTERS[("autoscaling", "horizontalpodautoscalers")] = (
    (
        _NAME,
        ("Reference", "string", "", 0),
        ("Targets", "string", "", 0),
        ("MinPods", "string", "", 0),
        ("MaxPods", "integer", "", 0),
        ("Replicas", "integer", "", 0),
        _AGE,
    ),
    _hpa,
)
_BINDING_COLUMNS: tuple[Column, ...] = (
    _NAME, ("Role", "string", "", 0), _AGE, ("Users", "string", "", 1), ("Groups", "string", "", 1),
    ("ServiceAccounts", "string", "", 1),
)  # fmt: skip
for _events_key in (("", "events"), ("events.k8s.io", "events")):
    PRINTERS[_events_key] = (_EVENT_COLUMNS, _event)
for _binding_key in (
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
):
    PRINTERS[_binding_key] = (_BINDING_COLUMNS, _binding)
DEFAULT_PRINTER: Printer = (
    (_NAME, ("Created At", "date", "", 0)),
    _created_at,
)
