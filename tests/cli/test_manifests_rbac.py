"""The committed manifests under enforced RBAC: the grants are enough, and no more.

The first test runs on the cluster under test: the release file's RBAC is installed into the
test's namespace (cluster-wide objects renamed after it, and deleted afterwards), the operator
gets its ServiceAccount's token from the TokenRequest API and runs as that account, and none of
its requests may be refused.

The others run on the embedded API server, which enforces RBAC (with Kubernetes 1.35's rule that
a WebSocket exec also needs ``create``, the stricter of the two behaviours). The release file
``manifests/install.yaml`` is installed (the Deployment left out, since the test runs the operator
itself), and the operator is assembled as ``etctl run`` assembles it, authenticated as its
ServiceAccount, electing a leader in its namespace, serving its admission webhooks (the release's
Service reaches them through an Endpoints object naming the test's loopback port): it provisions
its certificate into the release's Secret and injects its CA into the release's webhook
configurations, under the same grants. People get the job kinds through the aggregated
``etctl-<plural>-edit`` and ``-view`` roles.

On the cluster under test the webhook configurations are left out: they are cluster-wide, and
would send every job write of the cluster to this test's operator.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.cli._local_webhooks import publish_endpoint
from etctl.cli._registry import discover
from etctl.cli._render import ManifestOptions, render_stream
from etctl.cli._run import build_manager, serve
from etctl.cli._settings import RunSettings
from etctl.common import SCALEINS, SCALEOUTS
from etctl.errors import CacheSyncError, Forbidden, Invalid, NotFound
from etctl.jobs.mpijob import MPIJOB, MPIJOBS, MPIJobPlugin
from etctl.jobs.tfjob import TFJobPlugin
from etctl.jobs.tfjob._api import TFJOBS
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import (
    CONFIGMAPS,
    CRDS,
    EVENTS,
    LEASES,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    NODES,
    PODS,
    REGISTRY,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Client,
    FakeClock,
    Manager,
    Resource,
)
from etctl.testing import (
    ApiServer,
    AuthConfig,
    ClusterTarget,
    cluster_target,
    eventually,
    serve_token_requests,
)
from tests._cluster import Cluster, sandboxed_nodes
from tests.jobs.tfjob._manifests import replica, tfjob
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, hostfile, w
from tests.runtime._realtime import client_of, run_manager
from tests.schema_support import EXAMPLES, load_yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
_RBAC = "rbac.authorization.k8s.io"
KINDS = {
    "Namespace": NAMESPACES,
    "CustomResourceDefinition": CRDS,
    "ServiceAccount": SERVICEACCOUNTS,
    "Service": SERVICES,
    "Role": ROLES,
    "RoleBinding": ROLEBINDINGS,
    "ClusterRole": Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False),
    "ClusterRoleBinding": Resource(
        _RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
    ),
    "Secret": SECRETS,
    "MutatingWebhookConfiguration": MUTATING_WEBHOOK_CONFIGURATIONS,
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATIONS,
}
WEBHOOK_CONFIGURATIONS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def manifests(release: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """The operator's namespace and the documents of a release file (manifests/install.yaml).

    The Deployment is left out: the operator runs in the test, as its ServiceAccount.
    """
    documents = [
        doc
        for doc in yaml.safe_load_all(release or (MANIFESTS / "install.yaml").read_text())
        if doc and doc["kind"] != "Deployment"
    ]
    namespace = next(d for d in documents if d["kind"] == "Namespace")["metadata"]["name"]
    return namespace, documents


NAMESPACE, DOCUMENTS = manifests()
ACCOUNT = next(d for d in DOCUMENTS if d["kind"] == "ServiceAccount")["metadata"]["name"]
OPERATOR = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"


def renamed_into(namespace: str) -> list[dict[str, Any]]:
    """The RBAC documents of manifests/ in ``namespace``; cluster-wide names end in it."""
    documents = []
    for document in DOCUMENTS:
        kind = document["kind"]
        if kind in ("Namespace", "CustomResourceDefinition", *WEBHOOK_CONFIGURATIONS):
            continue  # the test's namespace; CRDs come with the cluster target; see the docs
        labels = document["metadata"].get("labels") or {}
        if any(label.startswith("rbac.authorization.k8s.io/aggregate-to-") for label in labels):
            continue  # people's roles, aggregated into the cluster's own: not the operator's
        doc = copy.deepcopy(document)
        if KINDS[kind].namespaced:
            doc["metadata"]["namespace"] = namespace
        else:
            doc["metadata"]["name"] += f"-{namespace}"
        if kind in ("ClusterRoleBinding", "RoleBinding"):
            if doc["roleRef"]["kind"] == "ClusterRole":
                doc["roleRef"]["name"] += f"-{namespace}"
            for subject in doc["subjects"]:
                subject["namespace"] = namespace
        documents.append(doc)
    return documents


async def token_of(admin: Client, namespace: str, account: str) -> str:
    """A token of the ServiceAccount, from the TokenRequest API (``kubectl create token``)."""
    # The subresource, addressed as a resource of its own: POST .../serviceaccounts/<name>/token.
    request = Resource("", "v1", f"serviceaccounts/{account}/token", "TokenRequest")
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    answer = await admin.create(request, body, namespace=namespace)
    return str(answer["status"]["token"])


def as_token(kubeconfig: Path, token: str, path: Path) -> Path:
    """``kubeconfig``'s current cluster, reached with ``token`` (nothing else of its user)."""
    config = yaml.safe_load(kubeconfig.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": "operator", "user": {"token": token}}],
                "contexts": [
                    {
                        "name": "operator",
                        "context": {"cluster": cluster["name"], "user": "operator"},
                    }
                ],
                "current-context": "operator",
            }
        )
    )
    return path


def refusals() -> float:
    """Requests this process's clients got 401 or 403 for, so far."""
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name == "rest_client_requests_total" and sample.labels["code"] in (
                "401",
                "403",
            ):
                total += sample.value
    return total


async def test_the_manifests_grant_what_the_operator_does_on_the_cluster_under_test(
    tmp_path: Path,
) -> None:
    crds = [d for d in DOCUMENTS if d["kind"] == "CustomResourceDefinition"]
    async with (
        cluster_target(tmp_path, crds=crds, auth=AuthConfig()) as target,
        client_of(target) as admin,
    ):
        if target.server is not None:
            serve_token_requests(target.server)
        ns = target.namespace
        documents = renamed_into(ns)
        try:
            for doc in documents:
                await admin.create(KINDS[doc["kind"]], doc)
            try:
                token = await token_of(admin, ns, ACCOUNT)
            except NotFound:
                pytest.skip("the cluster under test serves no TokenRequest API (no RBAC either)")
            kubeconfig = as_token(target.kubeconfig, token, tmp_path / "operator.kubeconfig")
            await operator_runs_unrefused(target, admin, kubeconfig)
        finally:
            for doc in documents:
                if not KINDS[doc["kind"]].namespaced:
                    await admin.delete(KINDS[doc["kind"]], doc["metadata"]["name"])


async def operator_runs_unrefused(target: ClusterTarget, admin: Client, kubeconfig: Path) -> None:
    """Run ``etctl run``'s operator as the ServiceAccount: it works, and nothing is refused."""
    ns = target.namespace
    async with await Client.from_kubeconfig(kubeconfig) as operator_client:
        try:
            await operator_client.list(NODES)  # not granted: the cluster must say no
        except Forbidden:
            pass
        else:
            pytest.skip("the cluster under test does not enforce RBAC")
        before = refusals()
        # The operator watches the test's namespace only. Cluster-wide, it would meet what other
        # tests leave in namespaces being deleted, where a cluster refuses every create with a
        # 403 (NamespaceTerminating): a refusal, but none of RBAC's. The ClusterRole is what
        # grants the namespaced verbs too, so nothing of the manifests goes unchecked.
        settings = RunSettings(
            kubeconfig=str(kubeconfig),
            namespaces=(ns,),
            leader_elect=True,
            leader_election_namespace=ns,
            metrics_bind_address="0",
            health_probe_bind_address="0",
            member_batch_period=0,  # the fake clock never moves: a batch would never end
        )
        manager = build_manager(operator_client, settings, discover().plugins(), clock=FakeClock())
        async with run_manager(manager):
            await eventually(lambda: manager.is_leader)
            await admin.create(
                TFJOBS,
                {
                    **tfjob("mnist", Worker=replica(2)),
                    "metadata": {"name": "mnist", "namespace": ns},
                },
            )
            job = {**example("training-job.yaml")}
            job["metadata"] = {**job["metadata"], "namespace": ns}
            await admin.create(TRAININGJOBS, job)
            names = ("mnist-worker-0", "mnist-worker-1", w(0), w(1))  # the launcher waits
            await eventually(lambda: names_of(target, PODS) >= set(names), timeout=20)
            await eventually(lambda: {"mnist-worker-0", w(0)} <= names_of(target, SERVICES))
            await eventually(lambda: "SuccessfulCreatePod" in reasons(target))
        assert refusals() == before
    leases = target.storage.list(LEASES, namespace=ns).items
    assert [lease["metadata"]["name"] for lease in leases] == [settings.leader_election_id]


def reasons(target: ClusterTarget) -> set[str]:
    """The reasons of the Events recorded in the test's namespace."""
    listed = target.storage.list(EVENTS, namespace=target.namespace)
    return {str(event.get("reason")) for event in listed.items}


def names_of(target: ClusterTarget, res: Resource) -> set[str]:
    return {
        o["metadata"]["name"] for o in target.storage.list(res, namespace=target.namespace).items
    }


def install(
    server: ApiServer,
    edit: Callable[[dict[str, Any]], None] | None = None,
    *,
    webhooks: bool = True,
    documents: list[dict[str, Any]] = DOCUMENTS,
) -> None:
    for document in documents:
        if not webhooks and document["kind"] in WEBHOOK_CONFIGURATIONS:
            continue
        doc = copy.deepcopy(document)
        if edit is not None:
            edit(doc)
        server.apply_object(KINDS[doc["kind"]], doc)


def settings_for(server: ApiServer, tmp_path: Path, **options: Any) -> RunSettings:
    kubeconfig = server.write_service_account_kubeconfig(
        tmp_path / "operator.kubeconfig", namespace=NAMESPACE, name=ACCOUNT
    )
    return RunSettings(
        kubeconfig=str(kubeconfig),
        leader_elect=True,
        leader_election_namespace=NAMESPACE,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        member_batch_period=0,  # the fake clock never moves: a batch would never end
        **options,
    )


@asynccontextmanager
async def enforced(
    tmp_path: Path, *, webhooks: bool = True, documents: list[dict[str, Any]] = DOCUMENTS
) -> AsyncIterator[Cluster]:
    """A server enforcing RBAC with manifests/ installed, its kubelet, and an admin client.

    ``webhooks=False`` leaves the webhook configurations out (no operator to answer them);
    ``documents`` are another release's.
    """
    clock = FakeClock(start=datetime.now(UTC))  # the webhook certificate is checked for real
    auth = AuthConfig(websocket_exec_requires_create=True)
    async with (
        ApiServer(clock=clock, kubelet=sandboxed_nodes(tmp_path), auth=auth) as server,
        client_of(server, tmp_path) as admin,
    ):
        install(server, webhooks=webhooks, documents=documents)
        target = ClusterTarget(server.write_kubeconfig(tmp_path / "admin"), NS, server=server)
        kinds = (TrainingJobPlugin(), MPIJobPlugin(), TFJobPlugin())
        yield Cluster(target, admin, clock, kinds=kinds)


@asynccontextmanager
async def operator(
    env: Cluster, tmp_path: Path, jobs: tuple[str, ...] = ()
) -> AsyncIterator[Manager]:
    """``etctl run --webhooks``'s operator with every plugin (or ``jobs``), as its ServiceAccount.

    Its webhook server listens on a free loopback port, published as the release Service's
    endpoint; the block runs once its certificate is provisioned and its CA injected.
    """
    settings = settings_for(
        env.server,
        tmp_path,
        webhooks=True,
        webhook_host="127.0.0.1",
        webhook_port=0,
        webhook_cert_path=str(tmp_path / "webhook-certs"),
        webhook_namespace=NAMESPACE,
        jobs=jobs,
    )
    async with await Client.from_kubeconfig(settings.kubeconfig) as client:
        entries = discover().plugins(list(jobs) or None)
        manager = build_manager(client, settings, entries, clock=env.clock)
        async with run_manager(manager):
            await eventually(lambda: manager.webhook_server.address is not None)
            assert manager.webhook_server.address is not None
            await publish_endpoint(env.client, NAMESPACE, manager.webhook_server.address[1])
            rotator = manager.cert_rotator
            assert rotator is not None
            await eventually(lambda: rotator.check() is None)
            yield manager


def refused(server: ApiServer, name: str) -> list[str]:
    """Requests of user ``name`` answered 401 or 403 (and any 401: it has no user)."""
    return [
        f"{r.code} {r.verb} {r.path}"
        for r in server.requests
        if r.code in (401, 403) and r.user in (name, "")
    ]


def example(name: str) -> dict[str, Any]:
    return load_yaml(EXAMPLES / "trainingjob" / name)


async def scaled(env: Cluster, res: Resource, name: str) -> None:
    await eventually(lambda: env.scaler_done(res, name))
    await eventually(lambda: env.status(JOB).get("currentScaler") is None)


async def hostfile_becomes(env: Cluster, expected: str) -> None:
    """Read the launcher's hostfile (exec, as the admin) until the pusher has written it."""

    async def written() -> bool:
        return await hostfile(env) == expected

    await eventually(written, what=f"the hostfile {expected!r}")


@pytest.mark.etctl_hooks("the simulated kubelet runs the examples; the request log shows refusals")
async def test_the_manifests_grant_everything_the_operator_does(tmp_path: Path) -> None:
    async with enforced(tmp_path) as env, operator(env, tmp_path):
        lease = env.server.storage
        await eventually(lambda: _holder(lease) is not None)
        # The release's webhooks answer, through its Service, with the CA the operator injected.
        for kind in WEBHOOK_CONFIGURATIONS:
            configuration = env.server.storage.get(
                KINDS[kind], next(d for d in DOCUMENTS if d["kind"] == kind)["metadata"]["name"]
            )
            assert all(h["clientConfig"].get("caBundle") for h in configuration["webhooks"])
        bad = tfjob("chiefless", Worker=replica(1))
        bad["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "tf"
        with pytest.raises(Invalid) as refused_job:
            await env.client.create(
                TFJOBS, {**bad, "metadata": {"name": "chiefless"}}, namespace=NS
            )
        assert "no container named" in str(refused_job.value)
        env.apply(example("training-job.yaml"))
        await eventually(
            lambda: env.pods_running(LAUNCHER) and env.status(JOB).get("phase") == "Running"
        )
        env.apply(example("scale-out.yaml"))
        await scaled(env, SCALEOUTS, "elastic-training-scaleout")
        assert env.status(JOB)["targetWorkers"] == [w(0), w(1), w(2)]
        env.apply(example("scale-in-count.yaml"))
        await scaled(env, SCALEINS, "scalein-sample")
        await eventually(lambda: env.status(JOB).get("currentWorkers") == [w(0), w(1)])
        # A worker deleted by someone else is replaced under a new name.
        env.server.storage.delete(PODS, w(1), namespace=NS)
        await eventually(lambda: env.status(JOB).get("currentWorkers") == [w(0), w(3)])
        await hostfile_becomes(env, f"{w(0)}:1\n{w(3)}:1\n")

        env.server.storage.create(TFJOBS, tfjob("mnist", Worker=replica(2)), namespace=NS)
        await eventually(lambda: env.pods_running("mnist-worker-0", "mnist-worker-1"))
        env.kubelet.exit(NS, "mnist-worker-0", 0)
        await eventually(lambda: _tfjob_state(env, "mnist") == "Succeeded")

        assert _holder(lease) is not None
        assert env.status(JOB)["phase"] == "Running"
        assert env.server.requests.find(user=OPERATOR)
        assert refused(env.server, OPERATOR) == []


@pytest.mark.etctl_hooks("a release rendered for one kind, its RBAC enforced")
async def test_a_release_of_one_kind_keeps_its_webhook_certificate(tmp_path: Path) -> None:
    # TFJob grants no Secrets (MPIJob's launcher needs them): the webhook certificate's Secret
    # comes with a Role of its own, for that Secret only.
    plugins = [e.plugin for e in discover().plugins(["tfjob"]) if e.plugin is not None]
    _, documents = manifests(render_stream(plugins, ManifestOptions(jobs=("tfjob",))))
    secret_rules = [
        rule
        for d in documents
        if d["kind"] in ("Role", "ClusterRole")
        for rule in d["rules"]
        if "secrets" in rule.get("resources", ())
    ]
    assert secret_rules == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["etctl-webhook-server-cert"],
            "verbs": ["get", "list", "watch", "update"],
        }
    ]
    async with (
        enforced(tmp_path, documents=documents) as env,
        operator(env, tmp_path, jobs=("tfjob",)) as manager,
    ):
        assert manager.cert_rotator is not None
        assert manager.cert_rotator.passes >= 1
        bad = tfjob("chiefless", Worker=replica(1))
        bad["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "tf"
        with pytest.raises(Invalid, match="no container named"):
            await env.client.create(TFJOBS, bad, namespace=NS)
        assert refused(env.server, OPERATOR) == []


@pytest.mark.etctl_hooks("the request log paces the refused list, in virtual time")
async def test_a_missing_rule_fails_loudly_naming_the_resource(tmp_path: Path) -> None:
    def drop_services(doc: dict[str, Any]) -> None:
        if doc["kind"] == "ClusterRole":
            doc["rules"] = [r for r in doc["rules"] if r.get("resources") != ["services"]]

    clock = FakeClock()
    async with ApiServer(clock=clock, auth=AuthConfig()) as server:
        install(server, drop_services)
        settings = settings_for(server, tmp_path, cache_sync_timeout=30)
        entries = discover().plugins()
        task = asyncio.create_task(serve(settings, entries, clock=clock), name="test:serve")
        await eventually(lambda: bool(server.requests.find(resource="services", code=403)))
        await clock.advance(31)
        with pytest.raises(CacheSyncError) as failed:
            await asyncio.wait_for(task, timeout=10)
    message = str(failed.value)
    assert "services" in message
    assert (
        f'services is forbidden: User "{OPERATOR}" cannot list resource "services" in API group '
        '"" at the cluster scope'
    ) in message


@pytest.mark.etctl_hooks("the simulated kubelet runs the examples; the request log shows refusals")
async def test_the_launcher_may_exec_into_its_current_workers_only(tmp_path: Path) -> None:
    async with enforced(tmp_path) as env, operator(env, tmp_path):
        document = example("training-job.yaml")
        document["spec"]["launcherAttachMode"] = "kubexec"
        env.apply(document)
        await eventually(lambda: env.pods_running(LAUNCHER, w(0), w(1)))
        env.server.storage.create(PODS, _pod("bystander"), namespace=NS)
        await eventually(lambda: env.pods_running("bystander"))
        path = env.server.write_service_account_kubeconfig(
            tmp_path / "launcher.kubeconfig", namespace=NS, name=LAUNCHER
        )
        async with await Client.from_kubeconfig(path) as launcher:
            can_exec = _exec_check(launcher)

            assert [await can_exec(p) for p in (w(0), w(1), LAUNCHER, "bystander")] == [
                True,
                True,
                False,
                False,
            ]
            # It reads its own ConfigMap and pods, and nothing else.
            await launcher.get(CONFIGMAPS, f"{JOB}-config", namespace=NS)
            await launcher.list(PODS, namespace=NS)
            with pytest.raises(Forbidden):
                await launcher.list(SECRETS, namespace=NS)
            with pytest.raises(Forbidden):
                await launcher.list(CONFIGMAPS, namespace=NS)

            env.apply(example("scale-out.yaml"))
            await scaled(env, SCALEOUTS, "elastic-training-scaleout")
            await eventually(lambda: env.pods_running(w(2)))
            assert await can_exec(w(2))
            env.apply(example("scale-in-count.yaml"))
            await scaled(env, SCALEINS, "scalein-sample")
            await eventually(lambda: w(2) not in env.phases())
            # Gone from the Role: refused before the server even looks for the pod.
            assert not await can_exec(w(2))
            assert [await can_exec(p) for p in (w(0), w(1))] == [True, True]
        assert refused(env.server, OPERATOR) == []


def _exec_check(launcher: Client) -> Callable[[str], Awaitable[bool]]:
    """Whether ``launcher``'s account may run a command in a pod of :data:`NS` (and it ran)."""

    async def can_exec(pod: str) -> bool:
        try:
            result = await launcher.exec(NS, pod, ["true"], timeout=10)
        except Forbidden:
            return False
        return result.exit_code == 0

    return can_exec


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


def _holder(storage: Any) -> str | None:
    for lease in storage.list(LEASES, namespace=NAMESPACE).items:
        holder = (lease.get("spec") or {}).get("holderIdentity")
        if holder:
            return str(holder)
    return None


def _tfjob_state(env: Cluster, name: str) -> str:
    job = env.server.storage.get(TFJOBS, name, namespace=NS)
    conditions = (job.get("status") or {}).get("conditions") or []
    true = [c["type"] for c in conditions if c.get("status") == "True"]
    return true[-1] if true else ""


@pytest.mark.etctl_hooks("service-account tokens minted by the embedded server")
async def test_the_edit_and_view_roles_give_people_the_job_kinds(tmp_path: Path) -> None:
    async with enforced(tmp_path, webhooks=False) as env:
        await env.client.create(NAMESPACES, {"metadata": {"name": "team"}})
        for user, role in (("alice", "etctl-tfjobs-edit"), ("bob", "etctl-tfjobs-view")):
            await env.client.create(SERVICEACCOUNTS, {"metadata": {"name": user}}, namespace="team")
            binding = {
                "metadata": {"name": user},
                "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": "team"}],
            }
            await env.client.create(ROLEBINDINGS, binding, namespace="team")

        def kubeconfig(user: str) -> Path:
            path = tmp_path / f"{user}.kubeconfig"
            return env.server.write_service_account_kubeconfig(path, namespace="team", name=user)

        job = tfjob("mnist", namespace="team", Worker=replica(1))
        async with await Client.from_kubeconfig(kubeconfig("alice")) as alice:
            await alice.create(TFJOBS, job, namespace="team")
            await alice.get(TFJOBS, "mnist", namespace="team")
            # The status is the operator's.
            with pytest.raises(Forbidden):
                await alice.patch(
                    TFJOBS,
                    "mnist",
                    {"status": {"conditions": []}},
                    namespace="team",
                    subresource="status",
                )
            # Only where the binding is.
            with pytest.raises(Forbidden):
                await alice.list(TFJOBS, namespace="default")
        async with await Client.from_kubeconfig(kubeconfig("bob")) as bob:
            listed = await bob.list(TFJOBS, namespace="team")
            assert [item["metadata"]["name"] for item in listed.items] == ["mnist"]
            with pytest.raises(Forbidden):
                await bob.delete(TFJOBS, "mnist", namespace="team")


@pytest.mark.etctl_hooks("the simulated kubelet runs the examples; the request log shows refusals")
async def test_the_manifests_grant_everything_mpijobs_need(tmp_path: Path) -> None:
    """Both MPIJob versions under RBAC: children, /scale both ways, the pusher, launcher exec."""
    elastic = "tensorflow-mnist-elastic"
    launcher_name = f"{elastic}-launcher"

    def mpi_worker(index: int) -> str:
        return f"{elastic}-worker-{index}"

    async with enforced(tmp_path) as env, operator(env, tmp_path):
        for name in ("tensorflow-mnist-elastic.yaml", "pi.yaml"):
            document = load_yaml(EXAMPLES / "mpijob" / name)
            version = document["apiVersion"].rpartition("/")[2]
            env.server.storage.create(MPIJOB.resource(version), document, namespace=NS)
        await eventually(lambda: _mpijob_phase(env, elastic) == "Running")
        await eventually(lambda: _mpijob_phase(env, "pi") == "Running")
        assert env.get(SERVICES, "pi") is not None
        assert env.get(SECRETS, "pi-ssh") is not None
        scale = {"spec": {"replicas": 3}}
        await env.client.patch(MPIJOBS, elastic, scale, namespace=NS, subresource="scale")
        await eventually(lambda: env.pods_running(mpi_worker(2)))
        path = env.server.write_service_account_kubeconfig(
            tmp_path / "mpi-launcher.kubeconfig", namespace=NS, name=launcher_name
        )
        async with await Client.from_kubeconfig(path) as launcher:
            can_exec = _exec_check(launcher)

            await eventually(lambda: can_exec(mpi_worker(2)))
            assert not await can_exec("pi-worker-0")  # another job's worker
            # Horovod's view, pushed into the launcher by the operator through pods/exec.
            hosts = "".join(f"echo {mpi_worker(i)}:1\n" for i in range(3))
            await eventually(lambda: _script_is(env, launcher_name, f"#!/bin/sh\n{hosts}"))
            scale = {"spec": {"replicas": 2}}
            await env.client.patch(MPIJOBS, elastic, scale, namespace=NS, subresource="scale")
            await eventually(lambda: mpi_worker(2) not in env.phases())
            await eventually(lambda: _not(can_exec(mpi_worker(2))))
        assert refused(env.server, OPERATOR) == []


async def _not(check: Any) -> bool:
    return not await check


async def _script_is(env: Cluster, launcher: str, expected: str) -> bool:
    command = ["cat", "/etc/mpi/discover_hosts.sh"]
    result = await env.client.exec(NS, launcher, command, timeout=10)
    return bool(result.stdout.decode() == expected)


def _mpijob_phase(env: Cluster, name: str) -> str:
    job = env.server.storage.get(MPIJOBS, name, namespace=NS)
    return str((job.get("status") or {}).get("phase") or "")
