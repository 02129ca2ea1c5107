"""The built-in scheduler: binds pending pods to nodes that fit them, as kube-scheduler would.

Each pass (:meth:`Scheduler.schedule`) takes the unassigned, pending, not-deleting pods whose
``schedulerName`` it serves, highest priority first and oldest first, and runs the filters of
the default profile in their order on every node; the first filter a node fails gives that
node's reason:

1. ``NodeUnschedulable``: a cordoned node, unless the pod tolerates it;
2. ``TaintToleration``: a ``NoSchedule``/``NoExecute`` taint the pod does not tolerate;
3. ``NodeAffinity``: ``nodeSelector`` and required node affinity;
4. ``NodeResourcesFit``: pod count, then every requested resource, against allocatable minus
   what the node's non-terminal pods request.

A pod that fits is bound (``pods/binding``: ``spec.nodeName`` and ``PodScheduled=True``) to the
least allocated feasible node (ties go to the first node by name) and gets a ``Scheduled`` event.
A pod that fits nowhere gets ``PodScheduled=False`` with reason ``Unschedulable`` and the
scheduler's message (``0/3 nodes are available: 3 Insufficient cpu. preemption: ...``) and a
``FailedScheduling`` event; it is tried again on the next pass. Preemption is not simulated:
the message says what the real scheduler says when it finds no victims.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from etctl.errors import ApiError
from etctl.log import get_logger
from etctl.runtime import NODES, PODS, KubeObject, ObjectView, objects
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.events import EventRecorder, Source
from etctl.testing._kubelet.quantity import Resources, pod_requests, resource_list

__all__ = ["SCHEDULER_NAME", "Scheduler", "node_matches", "tolerates"]

log = get_logger(__name__)

SCHEDULER_NAME = "default-scheduler"
_SOURCE = Source(SCHEDULER_NAME)
_UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_TERMINAL = ("Succeeded", "Failed")
_DEFAULT_CPU = Fraction(1, 10)
_DEFAULT_MEMORY = Fraction(200 * 2**20)
_NO_VICTIMS = "No preemption victims found for incoming pod"
_NOT_HELPFUL = "Preemption is not helpful for scheduling"


def tolerates(tolerations: Iterable[Any], taint: Mapping[str, Any]) -> bool:
    """True when one of ``tolerations`` tolerates ``taint`` (the real matching rules)."""
    for raw in tolerations:
        toleration = mapping(raw)
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if not key and operator == "Exists":
            return True
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _compare(value: str | None, wanted: list[str], greater: bool) -> bool:
    if value is None or len(wanted) != 1:
        return False
    try:
        have, limit = int(value), int(wanted[0])
    except ValueError:
        return False
    return have > limit if greater else have < limit


_OPERATORS: dict[str, Callable[[str | None, list[str]], bool]] = {
    "In": lambda value, wanted: value is not None and value in wanted,
    "NotIn": lambda value, wanted: value is None or value not in wanted,
    "Exists": lambda value, _wanted: value is not None,
    "DoesNotExist": lambda value, _wanted: value is None,
    "Gt": lambda value, wanted: _compare(value, wanted, greater=True),
    "Lt": lambda value, wanted: _compare(value, wanted, greater=False),
}


def _expression_matches(expression: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    operator = _OPERATORS.get(str(expression.get("operator") or ""))
    if operator is None:
        return False
    value = values.get(str(expression.get("key") or ""))
    return operator(value, [str(v) for v in expression.get("values") or []])


def _term_matches(term: Mapping[str, Any], node: ObjectView) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    node_labels = objects.labels(node)
    node_fields = {"metadata.name": objects.name(node)}
    return all(_expression_matches(mapping(e), node_labels) for e in expressions) and all(
        _expression_matches(mapping(f), node_fields) for f in fields
    )


def node_matches(spec: Mapping[str, Any], node: ObjectView) -> bool:
    """``nodeSelector`` and required node affinity of a pod spec against a node."""
    node_labels = objects.labels(node)
    selector = mapping(spec.get("nodeSelector"))
    if any(node_labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    affinity = mapping(mapping(spec.get("affinity")).get("nodeAffinity"))
    required = mapping(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = [mapping(t) for t in required.get("nodeSelectorTerms") or []]
    return "nodeSelectorTerms" not in required or any(_term_matches(t, node) for t in terms)


@dataclass(slots=True)
class _NodeState:
    node: ObjectView
    allocatable: Resources
    requested: Resources = field(default_factory=dict)
    nonzero: Resources = field(default_factory=dict)
    pods: int = 0

    def add(self, requests: Resources) -> None:
        for key, amount in requests.items():
            self.requested[key] = self.requested.get(key, Fraction(0)) + amount
        for key, amount in _nonzero(requests).items():
            self.nonzero[key] = self.nonzero.get(key, Fraction(0)) + amount
        self.pods += 1


@dataclass(frozen=True, slots=True)
class _Verdict:
    reasons: tuple[str, ...]
    resolvable: bool


class Scheduler:
    """Binds pending pods to nodes.

    Args:
        storage: the server's storage.
        recorder: where Scheduled / FailedScheduling events go.
        scheduler_names: the scheduler names served (None: every pod).
    """

    def __init__(
        self,
        storage: Storage,
        recorder: EventRecorder,
        *,
        scheduler_names: frozenset[str] | None = None,
    ) -> None:
        self._storage = storage
        self._recorder = recorder
        self._names = scheduler_names
        self._reported: dict[str, str] = {}

    def serves(self, pod: ObjectView) -> bool:
        """True when the pod is this scheduler's to place."""
        spec = mapping(pod.get("spec"))
        if spec.get("nodeName") or objects.meta(pod).get("deletionTimestamp"):
            return False
        if mapping(pod.get("status")).get("phase", "Pending") != "Pending":
            return False
        return self._names is None or str(spec.get("schedulerName") or "") in self._names

    def schedule(self) -> int:
        """One pass over the pending pods; returns how many were bound."""
        pods = self._storage.list(PODS).items
        pending = [pod for pod in pods if self.serves(pod)]
        if not pending:
            # Nothing to place: skip reading the nodes and summing what runs on them.
            self._reported.clear()
            return 0
        nodes = sorted(self._storage.list(NODES).items, key=objects.name)
        states = {
            objects.name(n): _NodeState(
                n, resource_list(mapping(n.get("status")).get("allocatable"))
            )
            for n in nodes
        }
        for pod in pods:
            spec = mapping(pod.get("spec"))
            state = states.get(str(spec.get("nodeName") or ""))
            if state is not None and mapping(pod.get("status")).get("phase") not in _TERMINAL:
                state.add(pod_requests(spec))
        live = {objects.uid(p) for p in pending}
        for stale in [k for k in self._reported if k not in live]:
            del self._reported[stale]
        pending.sort(
            key=lambda p: (
                -int(mapping(p.get("spec")).get("priority") or 0),
                str(objects.meta(p).get("creationTimestamp") or ""),
                objects.namespace(p),
                objects.name(p),
            )
        )
        bound = 0
        for candidate in pending:
            if self._place(candidate, states):
                bound += 1
        return bound

    def _place(self, pod: ObjectView, states: dict[str, _NodeState]) -> bool:
        spec = mapping(pod.get("spec"))
        requests = pod_requests(spec)
        feasible: list[_NodeState] = []
        verdicts: list[_Verdict] = []
        for state in states.values():
            verdict = self._filter(spec, requests, state)
            if verdict is None:
                feasible.append(state)
            else:
                verdicts.append(verdict)
        if not feasible:
            self._unschedulable(pod, len(states), verdicts)
            return False
        chosen = feasible[0]
        best = _score(chosen, requests)
        for candidate in feasible[1:]:
            score = _score(candidate, requests)
            if score > best:
                chosen, best = candidate, score
        try:
            self._storage.bind(
                objects.name(pod),
                objects.name(chosen.node),
                namespace=objects.namespace(pod),
                uid=objects.uid(pod),
            )
        except ApiError as exc:
            log.debug(
                "binding failed",
                pod=f"{objects.namespace(pod)}/{objects.name(pod)}",
                error=str(exc),
            )
            return False
        chosen.add(requests)
        self._reported.pop(objects.uid(pod), None)
        self._recorder.record(
            pod,
            "Normal",
            "Scheduled",
            f"Successfully assigned {objects.key_of(pod)} to {objects.name(chosen.node)}",
            source=_SOURCE,
            action="Binding",
        )
        return True

    def _filter(
        self, spec: Mapping[str, Any], requests: Resources, state: _NodeState
    ) -> _Verdict | None:
        node = state.node
        node_spec = mapping(node.get("spec"))
        tolerations = spec.get("tolerations") or []
        if node_spec.get("unschedulable") and not tolerates(tolerations, _UNSCHEDULABLE_TAINT):
            return _Verdict(("node(s) were unschedulable",), resolvable=False)
        for raw in node_spec.get("taints") or []:
            taint = mapping(raw)
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if not tolerates(tolerations, taint):
                shown = f"{{{taint.get('key') or ''}: {taint.get('value') or ''}}}"
                return _Verdict((f"node(s) had untolerated taint {shown}",), resolvable=False)
        if not node_matches(spec, node):
            return _Verdict(
                ("node(s) didn't match Pod's node affinity/selector",), resolvable=False
            )
        reasons: list[str] = []
        allowed_pods = state.allocatable.get("pods", Fraction(0))
        if state.pods + 1 > allowed_pods:
            reasons.append("Too many pods")
        for resource in sorted(requests):
            wanted = requests[resource]
            if wanted <= 0 or resource == "pods":
                continue
            free = state.allocatable.get(resource, Fraction(0)) - state.requested.get(
                resource, Fraction(0)
            )
            if wanted > free:
                reasons.append(f"Insufficient {resource}")
        if reasons:
            return _Verdict(tuple(reasons), resolvable=True)
        return None

    def _unschedulable(self, pod: ObjectView, total: int, verdicts: list[_Verdict]) -> None:
        message = unschedulable_message(pod, total, verdicts)
        self._write_condition(pod, message)
        key = objects.uid(pod)
        if self._reported.get(key) == message:
            return
        self._reported[key] = message
        self._recorder.record(pod, "Warning", "FailedScheduling", message, source=_SOURCE)

    def _write_condition(self, pod: ObjectView, message: str) -> None:
        status = mapping(pod.get("status"))
        conditions = [mapping(c) for c in status.get("conditions") or []]
        for condition in conditions:
            if (
                condition.get("type") == "PodScheduled"
                and condition.get("status") == "False"
                and condition.get("message") == message
            ):
                return
        kept = [dict(c) for c in conditions if c.get("type") != "PodScheduled"]
        kept.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": self._storage.now(),
                "reason": "Unschedulable",
                "message": message,
            }
        )
        # The server copies the body it admits: replace the status, leave the pod's parts alone.
        updated: KubeObject = {**pod, "status": {**status, "conditions": kept}}
        try:
            self._storage.update(
                PODS, updated, namespace=objects.namespace(pod), subresource="status"
            )
        except ApiError as exc:
            log.debug("cannot record unschedulable pod", pod=objects.name(pod), error=str(exc))


def unschedulable_message(pod: ObjectView, total: int, verdicts: list[_Verdict]) -> str:
    """The scheduler's FitError message, with the preemption post-filter's verdict."""
    if total == 0:
        return "no nodes available to schedule pods"
    counts: Counter[str] = Counter()
    preemption: Counter[str] = Counter()
    for verdict in verdicts:
        counts.update(verdict.reasons)
        preemption[_NO_VICTIMS if verdict.resolvable else _NOT_HELPFUL] += 1
    histogram = ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))
    message = f"0/{total} nodes are available: {histogram}."
    policy = mapping(pod.get("spec")).get("preemptionPolicy")
    if policy == "Never":
        return f"{message} preemption: not eligible due to preemptionPolicy=Never."
    victims = ", ".join(sorted(f"{count} {reason}" for reason, count in preemption.items()))
    return f"{message} preemption: 0/{total} nodes are available: {victims}."


def _nonzero(requests: Resources) -> Resources:
    """CPU and memory requests with the scheduler's defaults (100m, 200Mi) for unset ones."""
    return {
        "cpu": requests.get("cpu") or _DEFAULT_CPU,
        "memory": requests.get("memory") or _DEFAULT_MEMORY,
    }


def _score(state: _NodeState, requests: Resources) -> Fraction:
    """Least-allocated score: the mean free share of cpu and memory after placing the pod."""
    total = Fraction(0)
    wanted = _nonzero(requests)
    for resource in ("cpu", "memory"):
        capacity = state.allocatable.get(resource, Fraction(0))
        if capacity <= 0:
            continue
        used = state.nonzero.get(resource, Fraction(0)) + wanted[resource]
        total += max(capacity - used, Fraction(0)) / capacity
    return total / 2
