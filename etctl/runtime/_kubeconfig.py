"""Where the client's connection to a cluster comes from, and how its credentials stay fresh.

A :class:`ClusterConfig` is a resolved connection: the server URL, TLS material and a credential,
loaded by kubernetes_asyncio's configuration loaders from one of

* a kubeconfig file (an explicit path, else ``$KUBECONFIG`` with its ``:``-separated merge list,
  else ``~/.kube/config``) and one of its contexts;
* the in-cluster service account (``KUBERNETES_SERVICE_HOST``/``PORT`` plus the mounted token and
  CA bundle).

Credentials that expire are refreshed without the caller noticing, as client-go refreshes them:

* an exec plugin's token is kept until its ``expirationTimestamp`` has passed (client-go's
  ``credsExpired``; a token that lives a minute is still run for once a minute, not per request),
  and a plugin that gives no expiry is re-run only when the server answers 401;
* token files (the service-account token, a kubeconfig ``tokenFile``) are read as client-go's
  ``fileTokenSource`` reads them, surrounding whitespace and the final newline trimmed, an empty
  file refused, and re-read every minute, because the kubelet rotates projected tokens in place; a
  re-read that fails keeps the token it had (client-go's cached token source does the same);
* any credential is reloaded when the server answers 401 (:meth:`ClusterConfig.refresh` with
  ``force=True``; the client does that once per request before giving up), unless the credential
  refused is no longer the current one: another request refreshed it already.

Refreshes are serialised by a lock, so a burst of requests with an expired or refused token runs
the plugin once. Client certificates (from the file or from an exec plugin) are read when the
connection pool is created and are not rotated.

kubernetes_asyncio is imported when a connection is first loaded, not with this module, and only
its configuration layer (its ``config`` modules and the client's ``Configuration``), by way of
:mod:`etctl.runtime._deferred`:

* the ``__init__`` of the package, of its ``client`` and ``client.models`` and of its ``config``
  are deferred: they import 60-odd generated API classes and 768 model modules (about 30 MB and a
  second of CPU) that etctl never uses;
* so is urllib3, which ``Configuration``'s module imports for one method etctl never calls
  (``get_basic_auth_token``: the kubeconfig loader puts a basic-auth credential in the token
  itself), about 5 MB with its connection pools;
* ``config.kube_config`` imports ``ApiClient`` (for ``new_client_from_config``, which etctl never
  calls) and ``OpenIDRequestor`` (to refresh an OIDC auth provider's token), whose modules import
  aiohttp, kubernetes_asyncio's REST client, dateutil and a multiprocessing thread pool. It is
  imported with :class:`~etctl.runtime._deferred.OnFirstCall` stand-ins lent for those two names,
  which import the real class when kube_config first calls it; ``config.openid`` is deferred too.

Other code in the process that imports kubernetes_asyncio gets the complete, real modules and
classes: each deferred module runs its code the first time anything reads a name from it, and the
stand-ins exist only in ``kube_config``'s own globals.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from etctl.errors import ConfigError
from etctl.log import get_logger
from etctl.runtime._clock import Clock, RealClock
from etctl.runtime._deferred import OnFirstCall, defer, lent

__all__ = [
    "ClusterConfig",
    "context_namespace",
    "default_kubeconfig_path",
    "in_cluster_available",
    "load_in_cluster",
    "load_kubeconfig",
]

log = get_logger(__name__)

_TOKEN_FILE_PERIOD = 60.0
"""Seconds between re-reads of a token file (client-go's cached token source uses one minute)."""

_REFRESH_TIMEOUT = 60.0
"""Seconds a credential refresh (an exec plugin run) may take before it counts as failed."""

_BEARER = "BearerToken"
_HOME = "__home__"
"""Where each merged user entry records the directory of the file that defined it."""
_DEFERRED = (
    "urllib3",
    "kubernetes_asyncio",
    "kubernetes_asyncio.client",
    "kubernetes_asyncio.client.models",
    "kubernetes_asyncio.config",
    "kubernetes_asyncio.config.openid",
)
"""The modules whose code waits until something reads a name from them (see the module docstring).

Parents come before their children: a module is deferred only under a deferred or imported parent.
"""

_KUBE_CONFIG = "kubernetes_asyncio.config.kube_config"
_LENT = (
    ("kubernetes_asyncio.client", "ApiClient", "kubernetes_asyncio.client.api_client"),
    ("kubernetes_asyncio.config.openid", "OpenIDRequestor", "kubernetes_asyncio.config.openid"),
)
"""(module, name, module defining the class): the names kube_config imports that it only calls.

Each is lent to its module, as a stand-in that imports the class at its first call, while
kube_config is imported (see the module docstring).
"""


@dataclass(frozen=True, slots=True)
class _Layer:
    """What etctl uses of kubernetes_asyncio's configuration layer."""

    Configuration: Any
    ConfigException: type[Exception]
    load_kube_config: Any
    InClusterConfigLoader: Any
    host_variable: str
    port_variable: str
    token_file: str
    ca_file: str
    load_errors: tuple[type[Exception], ...]


@functools.cache
def _layer() -> _Layer:
    """kubernetes_asyncio's configuration layer, imported once, without what etctl does not use."""
    for name in _DEFERRED:
        defer(name)
    # Imported here, after the deferral, not at the top: see the module docstring.
    from kubernetes_asyncio.client import configuration  # noqa: PLC0415

    client: ModuleType = sys.modules["kubernetes_asyncio.client"]
    # The configuration modules import Configuration from the client package: the very object its
    # __init__ binds, so nothing differs whether that has run or not.
    client.__dict__.setdefault("Configuration", configuration.Configuration)
    with contextlib.ExitStack() as lending:
        # Lent only while kube_config is imported (it keeps them; nothing else sees them), and a
        # name its module binds already (imported in full before) is not lent at all.
        for module, name, home in _LENT:
            if module in sys.modules:
                stand_in = OnFirstCall(home, name, user=_KUBE_CONFIG)
                lending.enter_context(lent(sys.modules[module], name, stand_in))
        from kubernetes_asyncio.config import kube_config  # noqa: PLC0415
    from kubernetes_asyncio.config import config_exception  # noqa: PLC0415
    from kubernetes_asyncio.config import incluster_config as incluster  # noqa: PLC0415

    return _Layer(
        Configuration=configuration.Configuration,
        ConfigException=config_exception.ConfigException,
        load_kube_config=kube_config.load_kube_config,
        InClusterConfigLoader=incluster.InClusterConfigLoader,
        host_variable=incluster.SERVICE_HOST_ENV_NAME,
        port_variable=incluster.SERVICE_PORT_ENV_NAME,
        token_file=incluster.SERVICE_TOKEN_FILENAME,
        ca_file=incluster.SERVICE_CERT_FILENAME,
        load_errors=(
            config_exception.ConfigException,
            OSError,
            ValueError,
            KeyError,
            TypeError,
            yaml.YAMLError,
        ),
    )


class ClusterConfig:
    """A resolved connection to one cluster, with credentials that refresh themselves.

    Built by :func:`load_kubeconfig` or :func:`load_in_cluster`; the client reads
    :attr:`configuration` (a kubernetes_asyncio ``Configuration``) once to create its connection
    pools, and kubernetes_asyncio calls the refresh hook installed here before every request.

    Attributes:
        configuration: the kubernetes_asyncio ``Configuration`` the transport is built from.
        source: where the settings came from (``kubeconfig <path> context <name>``, ``in-cluster``).
    """

    def __init__(self, configuration: Any, *, source: str, clock: Clock | None = None) -> None:
        self.configuration = configuration
        self.source = source
        self._clock = clock or RealClock()
        self._lock = asyncio.Lock()

    @property
    def host(self) -> str:
        """The server URL (``https://host:port``)."""
        return str(self.configuration.host)

    @property
    def refreshable(self) -> bool:
        """True when :meth:`refresh` can obtain a different credential."""
        return False

    @property
    def credential(self) -> str | None:
        """The ``Authorization`` value requests carry now (``Bearer ...``), if any."""
        value = self.configuration.api_key.get(_BEARER)
        return str(value) if value else None

    def _due(self) -> bool:
        """True when the credential should be refreshed before the next request."""
        return False

    async def _reload(self) -> None:
        """Obtain a fresh credential and store it in :attr:`configuration`."""

    async def refresh(self, *, force: bool = False, refused: str | None = None) -> None:
        """Refresh the credential if it is due, or unconditionally with ``force``.

        Args:
            force: refresh even if the credential is not due (the server refused it).
            refused: the credential the server refused; when it is no longer the current one,
                another request refreshed it already and nothing is done.

        Raises:
            ConfigError: the credential source failed (the exec plugin exited non-zero, the
                kubeconfig's token file vanished at load).
        """
        if not self.refreshable:
            return
        due_before = force or self._due()
        if not due_before:
            return
        async with self._lock:
            # Another request may have refreshed while this one waited for the lock.
            if not force and not self._due():
                return
            if force and refused is not None and refused != self.credential:
                return
            try:
                async with asyncio.timeout(_REFRESH_TIMEOUT):
                    await self._reload()
            except TimeoutError as exc:
                msg = f"refreshing credentials from {self.source} took over {_REFRESH_TIMEOUT} s"
                raise ConfigError(msg) from exc
            except _layer().load_errors as exc:
                msg = f"refreshing credentials from {self.source} failed: {exc}"
                raise ConfigError(msg) from exc
            log.debug("credentials refreshed", source=self.source, forced=force)

    async def _hook(self, _configuration: Any) -> None:
        # kubernetes_asyncio awaits this before reading the token for every request: keep it cheap.
        if self._due():
            await self.refresh()


class _KubeconfigCluster(ClusterConfig):
    """A cluster from a kubeconfig: refreshes exec-plugin tokens, token files and auth providers."""

    def __init__(
        self,
        configuration: Any,
        loader: Any,
        *,
        source: str,
        user: Mapping[str, Any],
        token_file: Path | None,
        clock: Clock,
    ) -> None:
        super().__init__(configuration, source=source, clock=clock)
        self._loader = loader
        self._exec = "exec" in user
        self._token_file = _TokenFile(token_file, configuration) if token_file else None
        self._provider = bool(getattr(loader, "provider", None))
        if self._token_file is not None:
            self._token_file.load(self._clock)  # kubernetes_asyncio read it untrimmed
        if self.refreshable:
            configuration.refresh_api_key_hook = self._hook

    @property
    def refreshable(self) -> bool:
        return self._exec or self._token_file is not None or self._provider

    def _expiry(self) -> datetime | None:
        value = self._loader.__dict__.get("exec_plugin_expiry")
        return value if isinstance(value, datetime) else None

    def _due(self) -> bool:
        if self._exec:
            expiry = self._expiry()
            return expiry is not None and self._clock.now() > expiry
        if self._token_file is not None:
            return self._token_file.due(self._clock)
        return False

    async def _reload(self) -> None:
        if self._token_file is not None:
            self._token_file.reload(self._clock, self.source)
            return
        # The loader skips the exec plugin while it believes the last token is still valid; the
        # decision to refresh is ours (on this clock), so forget its expiry first.
        self._loader.__dict__.pop("exec_plugin_expiry", None)
        await self._loader.load_and_set(self.configuration)


class _TokenFile:
    """A bearer token kept in a file, read as client-go's ``fileTokenSource`` reads it.

    The file's content, surrounding whitespace (the newline an editor or ``echo`` leaves) trimmed,
    is the token; an empty or unreadable file is an error at load, and on a later re-read keeps the
    token read before (the kubelet rewrites projected tokens in place, and a read may fall between
    its writes).
    """

    def __init__(self, path: Path, configuration: Any) -> None:
        self.path = path
        self._configuration = configuration
        self._loaded_at = 0.0

    def read(self) -> str:
        """The token, trimmed.

        Raises:
            OSError: the file cannot be read.
            ValueError: it holds nothing but whitespace.
        """
        token = self.path.read_text(encoding="utf-8").strip()
        if not token:
            msg = f"token file {self.path} is empty"
            raise ValueError(msg)
        return token

    def load(self, clock: Clock | None = None) -> None:
        """Read the token into the configuration (errors raised)."""
        self._configuration.api_key[_BEARER] = f"Bearer {self.read()}"
        self._loaded_at = clock.monotonic() if clock is not None else 0.0

    def due(self, clock: Clock) -> bool:
        """True when the file was last read a minute ago or more."""
        return clock.monotonic() - self._loaded_at >= _TOKEN_FILE_PERIOD

    def reload(self, clock: Clock, source: str) -> None:
        """Read the file again; on failure keep the token read before, and say so."""
        try:
            self.load(clock)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            self._loaded_at = clock.monotonic()  # try again in a minute, not on every request
            log.warning(
                "token file unreadable: the last token is kept", source=source, error=str(exc)
            )


class _InClusterConfig(ClusterConfig):
    """The pod's service account: the projected token file is re-read every minute."""

    def __init__(self, configuration: Any, *, token_path: Path, clock: Clock) -> None:
        super().__init__(configuration, source="in-cluster", clock=clock)
        self._token_file = _TokenFile(token_path, configuration)
        self._token_file.load(self._clock)  # kubernetes_asyncio read it untrimmed
        configuration.refresh_api_key_hook = self._hook

    @property
    def refreshable(self) -> bool:
        return True

    def _due(self) -> bool:
        return self._token_file.due(self._clock)

    async def _reload(self) -> None:
        self._token_file.reload(self._clock, self.source)


def default_kubeconfig_path(environ: Mapping[str, str] | None = None) -> str:
    """``$KUBECONFIG`` (possibly a ``:``-separated list) or ``~/.kube/config``."""
    env = os.environ if environ is None else environ
    return env.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())


def in_cluster_available(environ: Mapping[str, str] | None = None) -> bool:
    """True when the service-account environment of a pod is present."""
    env = os.environ if environ is None else environ
    layer = _layer()
    return bool(env.get(layer.host_variable)) and bool(env.get(layer.port_variable))


def _merged(path_list: str) -> tuple[dict[str, Any], str | None]:
    """The contexts and users of a kubeconfig list, and its current context, merged as kubectl.

    The first file that defines an entry (or sets ``current-context``) wins.
    """
    merged: dict[str, Any] = {"contexts": [], "users": []}
    current: str | None = None
    for raw in path_list.split(os.pathsep):
        path = Path(raw).expanduser()
        if not raw or not path.exists():
            continue
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            msg = f"kubeconfig {path} is not a mapping"
            raise ConfigError(msg)
        merged["contexts"].extend(data.get("contexts") or [])
        # Each user keeps the directory of its file: a relative tokenFile is read from there.
        users = data.get("users") or []
        merged["users"].extend({**u, _HOME: path.parent} for u in users if isinstance(u, dict))
        current = current or data.get("current-context")
    return merged, current


def _context(path_list: str, context: str | None) -> Mapping[str, Any]:
    """The ``context`` entry of the named context (or the current one); empty when absent."""
    merged, current = _merged(path_list)
    wanted = context or current
    ctx = next((c for c in merged["contexts"] if c.get("name") == wanted), None)
    value = (ctx or {}).get("context") or {}
    return value if isinstance(value, Mapping) else {}


def context_namespace(
    path: str | os.PathLike[str] | None = None, context: str | None = None
) -> str:
    """The namespace a kubeconfig context names (``""`` when it names none), as kubectl reads it.

    Args:
        path: the file or ``:``-separated list (``None``: ``$KUBECONFIG`` or ``~/.kube/config``).
        context: the context (``None``: the current one).

    Raises:
        ConfigError: a file is not a kubeconfig.
    """
    paths = os.fspath(path) if path is not None else default_kubeconfig_path()
    try:
        namespace = _context(paths, context).get("namespace")
    except (OSError, yaml.YAMLError) as exc:
        msg = f"kubeconfig {paths} is unusable: {exc}"
        raise ConfigError(msg) from exc
    return namespace if isinstance(namespace, str) else ""


def _read_user(path_list: str, context: str | None) -> tuple[Mapping[str, Any], Path | None]:
    """The ``user`` entry the chosen context refers to, and the token file it reads.

    The first file that defines the user wins. A token file is read only when the user has no
    token of its own (as client-go does), from the directory of the file that names it.
    """
    merged, _ = _merged(path_list)
    user_name = _context(path_list, context).get("user")
    user = next((u for u in merged["users"] if u.get("name") == user_name), None) or {}
    value = user.get("user") or {}
    if not isinstance(value, Mapping):
        return {}, None
    token_file = value.get("tokenFile")
    if value.get("token") or not token_file:
        return value, None
    return value, Path(user[_HOME]) / Path(str(token_file)).expanduser()


def _existing(paths: str) -> list[str]:
    """The entries of a ``:``-separated kubeconfig list that exist."""
    return [p for p in paths.split(os.pathsep) if p and Path(p).expanduser().exists()]


async def load_kubeconfig(
    path: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    clock: Clock | None = None,
) -> ClusterConfig:
    """Load a cluster connection from a kubeconfig file.

    Args:
        path: the file, or a ``:``-separated list merged like kubectl does; ``None`` means
            ``$KUBECONFIG`` or ``~/.kube/config``.
        context: the context to use; ``None`` means the file's ``current-context``.
        clock: the clock that times credential refreshes.

    Raises:
        ConfigError: no such file or context, or the file is unusable.
    """
    paths = os.fspath(path) if path is not None else default_kubeconfig_path()
    if not _existing(paths):
        msg = f"no kubeconfig found at {paths}"
        raise ConfigError(msg)
    layer = _layer()
    configuration = layer.Configuration()
    try:
        loader = await layer.load_kube_config(
            config_file=paths,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
        user, token_file = _read_user(paths, context)
        cluster = _KubeconfigCluster(
            configuration,
            loader,
            source=f"kubeconfig {paths} context {context or 'current'}",
            user=user,
            token_file=token_file,
            clock=clock or RealClock(),
        )
    except layer.load_errors as exc:
        msg = f"kubeconfig {paths} (context {context or 'current'}) is unusable: {exc}"
        raise ConfigError(msg) from exc
    name = context or (loader.current_context or {}).get("name", "")
    cluster.source = f"kubeconfig {paths} context {name}"
    return cluster


def load_in_cluster(
    *,
    token_path: str | os.PathLike[str] | None = None,
    ca_path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    clock: Clock | None = None,
) -> ClusterConfig:
    """Load the in-cluster connection of a pod's service account.

    Args:
        token_path: the projected service-account token (re-read every minute); by default the
            service account's own.
        ca_path: the cluster CA bundle; by default the service account's.
        environ: the environment to read ``KUBERNETES_SERVICE_HOST``/``PORT`` from.
        clock: the clock that times token re-reads.

    Raises:
        ConfigError: not running in a pod, or the token or CA file is missing or empty.
    """
    layer = _layer()
    token_path = layer.token_file if token_path is None else token_path
    ca_path = layer.ca_file if ca_path is None else ca_path
    configuration = layer.Configuration()
    loader = layer.InClusterConfigLoader(
        token_filename=os.fspath(token_path),
        cert_filename=os.fspath(ca_path),
        try_refresh_token=False,
        environ=dict(os.environ if environ is None else environ),
    )
    try:
        loader.load_and_set(configuration)
        return _InClusterConfig(
            configuration, token_path=Path(token_path), clock=clock or RealClock()
        )
    except layer.load_errors as exc:
        msg = f"in-cluster configuration is unusable: {exc}"
        raise ConfigError(msg) from exc
