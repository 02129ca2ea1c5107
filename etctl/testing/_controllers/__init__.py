"""The controllers a cluster runs beside its API server: garbage collection, namespaces, workloads.

:class:`GarbageCollector` deletes dependents whose owners are gone (background, foreground and
orphan propagation, dangling references); :class:`NamespaceController` empties terminating
namespaces and removes them; :class:`WorkloadController` runs Deployments and ReplicaSets.
``ApiServer`` runs them unless built with ``controllers=False``.
"""

from etctl.testing._controllers.garbagecollector import GarbageCollector
from etctl.testing._controllers.host import ControllerHost, QueueController, WorkQueue
from etctl.testing._controllers.namespaces import NamespaceController
from etctl.testing._controllers.workloads import WorkloadController

__all__ = [
    "ControllerHost",
    "GarbageCollector",
    "NamespaceController",
    "QueueController",
    "WorkQueue",
    "WorkloadController",
]
