"""An in-process Kubernetes API server and simulated kubelet, for tests and the sandbox.

The public surface is small:

* :class:`ApiServer`: the server (``async with ApiServer() as server``), with its internal
  :class:`Storage`, fault injection (:class:`Fault`), request log (:class:`RequestRecord`) and
  kubeconfig writer, :class:`Limits` (its size limits: request bodies, ConfigMap and Secret
  data, stored objects), :class:`History` (how long it remembers changes: the watch cache and
  etcd's compaction), :class:`WatchLatency` (how late its watch events arrive, as from a real
  server's watch cache), and ``ApiServer(auth=AuthConfig())``, which authenticates tokens and
  enforces RBAC;
* :class:`BackgroundApiServer`: the same server on its own thread, shareable across event loops;
* :class:`Kubelet` (with :class:`KubeletConfig`, :class:`NodeConfig`, :class:`Behaviour` and
  :class:`PodPolicy`): the simulated nodes, scheduler and kubelet (``ApiServer(kubelet=...)``);
* waiting: :func:`eventually` waits, bounded, for a state a test expects (never a sleep for
  luck), and :func:`wait_idle` until an operator under test (and the server) has nothing left to
  do before moving a FakeClock;
* :class:`MockTransport` (with :func:`json_answer` and :func:`watch_answer`): a client
  transport whose answers the test writes, so a unit test of code on a
  :class:`~etctl.runtime.Client` needs no server (``Client(transport=MockTransport(answer))``);
* :func:`cluster_target` (a :class:`ClusterTarget`): where a test runs, a fresh embedded server
  or a namespace of the real cluster named by ``ETCTL_TEST_KUBECONFIG`` (:class:`RealCluster`),
  with the storage's synchronous verbs either way (``target.storage``), so one test runs in both
  modes;
* the pytest plugin (``etctl.testing.pytest_plugin``, opt-in: ``-p etctl.testing.pytest_plugin``
  or ``pytest_plugins = ["etctl.testing.pytest_plugin"]`` in a conftest): fixtures
  ``etctl_apiserver``, ``etctl_shared_apiserver``, ``etctl_kubeconfig``, ``etctl_target`` and
  ``etctl_kubelet``, and the ``etctl_*`` markers.

See ``docs/testing.md`` for usage, the internal storage API and the server's limits.
"""

from etctl.testing._apiserver.authorization import AuthConfig
from etctl.testing._apiserver.background import BackgroundApiServer
from etctl.testing._apiserver.deletion import DeleteOptions
from etctl.testing._apiserver.faults import Fault
from etctl.testing._apiserver.history import History
from etctl.testing._apiserver.http import SubresourceRequest
from etctl.testing._apiserver.limits import Limits
from etctl.testing._apiserver.propagation import WatchLatency
from etctl.testing._apiserver.requestlog import RequestRecord
from etctl.testing._apiserver.server import ApiServer
from etctl.testing._apiserver.storage import Storage, WriteOptions
from etctl.testing._apiserver.store import Event
from etctl.testing._eventually import eventually
from etctl.testing._idle import wait_idle
from etctl.testing._kubelet import Behaviour, Kubelet, KubeletConfig, NodeConfig, PodPolicy
from etctl.testing._mocktransport import MockTransport, json_answer, watch_answer
from etctl.testing._realcluster import RealCluster
from etctl.testing._target import ClusterTarget, cluster_target
from etctl.testing._tokenrequest import serve_token_requests

__all__ = [
    "ApiServer",
    "AuthConfig",
    "BackgroundApiServer",
    "Behaviour",
    "ClusterTarget",
    "DeleteOptions",
    "Event",
    "Fault",
    "History",
    "Kubelet",
    "KubeletConfig",
    "Limits",
    "MockTransport",
    "NodeConfig",
    "PodPolicy",
    "RealCluster",
    "RequestRecord",
    "Storage",
    "SubresourceRequest",
    "WatchLatency",
    "WriteOptions",
    "cluster_target",
    "eventually",
    "json_answer",
    "serve_token_requests",
    "wait_idle",
    "watch_answer",
]
