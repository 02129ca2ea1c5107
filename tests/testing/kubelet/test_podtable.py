"""The kubelet's pod table: marks, timers, lookups, and what removing a pod releases."""

from __future__ import annotations

import pytest

from etctl.testing import ApiServer
from etctl.testing._kubelet import Kubelet
from etctl.testing._kubelet.podtable import PodTable
from tests.testing.apiserver._client import Api
from tests.testing.kubelet._helpers import PODS, phase_is, pod, wait_for


async def test_marks_timers_lookups_and_removal(
    api: Api, server: ApiServer, kubelet: Kubelet
) -> None:
    await api.create(PODS, pod("p"))
    await wait_for(api, PODS, "p", phase_is("Running"))
    worker = kubelet.worker("default", "p")
    assert worker is not None
    table = PodTable(server.storage.store)
    assert table.find("default", "p") is None
    table.add(worker)
    assert table.take(0.0) == set()  # added, not marked
    table.mark(worker.uid)
    assert table.marked
    assert table.take(0.0) == {worker.uid}
    assert table.take(0.0) == set()  # taking clears the marks

    table.set_deadline(worker.uid, 5.0)
    assert table.next_deadline() == 5.0
    assert table.take(4.0) == set()
    assert table.take(5.0) == {worker.uid}
    table.set_deadline(worker.uid, None)
    assert table.next_deadline() is None

    assert table.require("default", "p") is worker
    assert table.on_node(worker.node) == [worker]
    assert table.container(worker, None) is worker.containers[0]
    with pytest.raises(LookupError, match='container "nope" not found in pod default/p'):
        table.container(worker, "nope")
    with pytest.raises(LookupError, match="pod default/q is not running on this kubelet"):
        table.require("default", "q")

    ip = worker.node.pod_ip(worker.uid)
    table.set_deadline(worker.uid, 1.0)
    assert table.remove(worker.uid) is worker
    assert worker.uid not in table
    assert table.uids == []
    assert table.next_deadline() is None
    assert worker.containers[0].log.closed
    assert worker.node.pod_ip("next-pod") == ip  # the address is free again
    assert table.remove(worker.uid) is None
