"""Suite-wide test settings, the cluster fixture, and the etctl pytest plugin (opt-in: etctl's own
suite opts in)."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests._cluster import Cluster, cluster, sandboxed_nodes

pytest_plugins = ["etctl.testing.pytest_plugin"]

# Property tests must not fail because a loaded two-core CI machine ran an example slowly: a
# deadline or a too-slow health check is a timing artefact, not a property violation.
settings.register_profile(
    "etctl",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("etctl")


@pytest.fixture
async def env(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Cluster]:
    """The cluster under test (:func:`tests._cluster.cluster`), as the test's marker asks.

    ``@pytest.mark.cluster(TFJobPlugin, kubelet=KubeletConfig())`` (on the test or its module)
    names the job kinds (plugin classes or instances; a class is built once per test) and passes
    the other arguments on; ``sandboxes=True`` runs the kubelet on :func:`sandboxed_nodes`.
    """
    marker = request.node.get_closest_marker("cluster")
    kinds = [kind() if isinstance(kind, type) else kind for kind in (marker.args if marker else ())]
    options: dict[str, Any] = dict(marker.kwargs) if marker else {}
    if options.pop("sandboxes", False):
        options["kubelet"] = sandboxed_nodes(tmp_path)
    async with cluster(tmp_path, *kinds, **options) as found:
        yield found
