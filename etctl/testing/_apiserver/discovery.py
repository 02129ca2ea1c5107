"""Discovery documents, generated from the registry: ``/version``, ``/api``, ``/apis`` and below.

Two forms, as kube-apiserver 1.32 serves them: the legacy documents (``APIVersions``,
``APIGroupList``, ``APIGroup``, ``APIResourceList``) that kubernetes_asyncio and older clients
read, and aggregated discovery (``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``) that
``kubectl`` asks for first, served when the ``Accept`` header asks for it. Documents are cached per
registry revision, so a CRD that registers or goes away shows up in the next request.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

from etctl.testing._apiserver.registry import Registry, ResourceInfo

__all__ = [
    "AGGREGATED_V2",
    "AGGREGATED_V2BETA1",
    "Discovery",
    "SERVER_VERSION",
    "wants_aggregated",
]

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T17:59:15Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}
"""What ``/version`` answers: the Kubernetes release whose API this server follows."""

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def _aliases(info: ResourceInfo) -> dict[str, list[str]]:
    """The resource's ``shortNames`` and ``categories``, each only when it has some."""
    aliases = {}
    if info.short_names:
        aliases["shortNames"] = list(info.short_names)
    if info.categories:
        aliases["categories"] = list(info.categories)
    return aliases


def wants_aggregated(accept: str) -> str | None:
    """The aggregated discovery version the ``Accept`` header prefers, or None for legacy."""
    for entry in accept.split(","):
        fields = [f.strip() for f in entry.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if fields[0] not in ("application/json", "*/*"):
            continue
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            version = params.get("v")
            if version in ("v2", "v2beta1"):
                return version
        elif fields[0] == "application/json" and not params.get("as"):
            return None
    return None


def _hash(group: str, version: str, kind: str) -> str:
    digest = hashlib.sha256(f"{group}/{version}, Kind={kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _subresources(info: ResourceInfo, version: str) -> list[tuple[str, str, str, str, list[str]]]:
    """``(name, group, version, kind, verbs)`` of each subresource at ``version``."""
    out = []
    served = info.version(version)
    if served and served.status:
        out.append(("status", info.group, version, info.kind, ["get", "patch", "update"]))
    if served and served.scale:
        out.append(("scale", "autoscaling", "v1", "Scale", ["get", "patch", "update"]))
    out.extend(
        (
            sub.name,
            sub.group if sub.group is not None else info.group,
            sub.version or version,
            sub.kind,
            list(sub.verbs),
        )
        for sub in info.subresources
    )
    return sorted(out)


class Discovery:
    """Discovery documents for one registry, cached per registry revision.

    Args:
        registry: the served resources.
        address: ``host:port`` the server is reachable at (for ``/api``).
    """

    def __init__(self, registry: Registry, address: Callable[[], str]) -> None:
        self.registry = registry
        self._address = address
        self._cache: dict[tuple[Any, ...], bytes] = {}
        self._revision = -1

    def _cached(self, key: tuple[Any, ...], build: Callable[[], Any]) -> bytes:
        if self._revision != self.registry.revision:
            self._cache.clear()
            self._revision = self.registry.revision
        body = self._cache.get(key)
        if body is None:
            body = self._cache[key] = json.dumps(build(), separators=(",", ":")).encode()
        return body

    # -- legacy ---------------------------------------------------------------------------------

    def api_versions(self) -> bytes:
        """``/api``."""
        return self._cached(
            ("api",),
            lambda: {
                "kind": "APIVersions",
                "versions": self.registry.groups().get("", ["v1"]),
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": self._address()}
                ],
            },
        )

    def _group(self, group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def group_list(self) -> bytes:
        """``/apis``."""

        def build() -> dict[str, Any]:
            groups = self.registry.groups()
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [self._group(g, v) for g, v in sorted(groups.items()) if g],
            }

        return self._cached(("apis",), build)

    def group(self, group: str) -> bytes | None:
        """``/apis/<group>``, or None when no version of the group is served."""
        versions = self.registry.groups().get(group)
        if not group or not versions:
            return None
        return self._cached(
            ("group", group),
            lambda: {"kind": "APIGroup", "apiVersion": "v1", **self._group(group, versions)},
        )

    def resource_list(self, group: str, version: str) -> bytes | None:
        """``/api/v1`` or ``/apis/<group>/<version>``, or None when nothing is served there."""
        infos = self.registry.resources_in(group, version)
        if not infos:
            return None

        def build() -> dict[str, Any]:
            resources: list[dict[str, Any]] = []
            for info in infos:
                entry: dict[str, Any] = {
                    "name": info.plural,
                    "singularName": info.singular,
                    "namespaced": info.namespaced,
                    "kind": info.kind,
                    "verbs": sorted(info.verbs),
                }
                entry.update(_aliases(info))
                entry["storageVersionHash"] = _hash(info.group, version, info.kind)
                resources.append(entry)
                for name, sub_group, sub_version, kind, verbs in _subresources(info, version):
                    sub: dict[str, Any] = {
                        "name": f"{info.plural}/{name}",
                        "singularName": "",
                        "namespaced": info.namespaced,
                    }
                    if sub_group != info.group or sub_version != version:
                        sub["group"], sub["version"] = sub_group, sub_version
                    sub.update({"kind": kind, "verbs": verbs})
                    resources.append(sub)
            gv = f"{group}/{version}" if group else version
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": gv,
                "resources": resources,
            }

        return self._cached(("resources", group, version), build)

    # -- aggregated -----------------------------------------------------------------------------

    def aggregated(self, *, core: bool, version: str) -> bytes:
        """The aggregated document of ``/api`` (core) or ``/apis`` (every other group)."""

        def build() -> dict[str, Any]:
            groups = self.registry.groups()
            names = [""] if core else sorted(g for g in groups if g)
            items = []
            for group in names:
                versions = [
                    {
                        "version": v,
                        "resources": [
                            self._aggregated_resource(i, v)
                            for i in self.registry.resources_in(group, v)
                        ],
                        "freshness": "Current",
                    }
                    for v in groups.get(group, [])
                ]
                items.append(
                    {"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}
                )
            return {
                "kind": "APIGroupDiscoveryList",
                "apiVersion": f"apidiscovery.k8s.io/{version}",
                "metadata": {},
                "items": items,
            }

        return self._cached(("aggregated", core, version), build)

    @staticmethod
    def _aggregated_resource(info: ResourceInfo, version: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "resource": info.plural,
            "responseKind": {"group": info.group, "version": version, "kind": info.kind},
            "scope": "Namespaced" if info.namespaced else "Cluster",
            "singularResource": info.singular,
            "verbs": sorted(info.verbs),
        }
        entry.update(_aliases(info))
        subs = [
            {
                "subresource": name,
                "responseKind": {"group": group, "version": sub_version, "kind": kind},
                "verbs": verbs,
            }
            for name, group, sub_version, kind, verbs in _subresources(info, version)
        ]
        if subs:
            entry["subresources"] = subs
        return entry
