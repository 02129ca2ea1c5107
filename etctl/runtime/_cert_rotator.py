"""Self-provisioned webhook certificates, their CA injected where the API server reads it.

A CA and a serving certificate in a Secret, the CA injected into the webhook configurations,
both rotated before they expire: what Kueue and Trainer do with cert-controller, made
level-triggered and without the gap their CA rotation has. A :class:`CertRotator` keeps one
Secret (``ca.crt``, ``ca.key``, ``tls.crt``, ``tls.key``) and the ``caBundle`` of the webhook
configurations (and the conversion webhooks of CRDs) it is told about. Each pass reads them all
and converges:

1. A CA that is missing, unreadable, not a CA, not matching its key or expiring within
   ``lookahead`` is replaced by a new one. The bundle (``ca.crt``) holds the new CA *and* the one
   it replaces while that one is still valid, and the serving certificate signed by the old CA
   stays in the Secret for now: certificates from both CAs verify against the bundle.
2. The bundle is injected into every configuration and CRD before any certificate of a new CA is
   served, so no request is refused while the files on disk (a Secret volume, updated by the
   kubelet a minute later, or the directory this rotator writes) change.
3. A serving certificate that is missing, not signed by the current CA, not matching its key,
   not covering the DNS names and IP addresses, or expiring within ``lookahead`` is replaced.
4. The serving certificate and key are written into the certificate directory, atomically (an
   operator outside the cluster, the sandbox), unless it cannot be written: a Secret volume is
   read-only, and the kubelet brings the Secret's new content there.

Passes run when something changes (the Secret, a configuration, a CRD: each watched by its own
small informer, so rotation never waits for the manager's caches) and when the next rotation is
due (at most ``check_interval`` apart). A failed pass (a 409 from a concurrent replica's write, an
API error) is retried with capped backoff; every replica may run a rotator, writes are
conditional on the resourceVersion read.

What steps 1 and 3 decide is a pure function of the Secret, the settings and the time
(:mod:`etctl._cert_rotation`), computed in a short-lived child process (about 0.1 s a pass): it
needs ``cryptography``, which would add about 11 MB to the operator's resident memory for good
(``in_process=True`` computes it here, for tests and whoever has the memory to spare).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import os
import random
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from etctl._cert_rotation import (
    CA_CERT,
    CA_KEY,
    TLS_CERT,
    TLS_KEY,
    Plan,
    plan,
    plan_request,
    read_plan,
)
from etctl._certificates import CertificateError
from etctl.errors import AlreadyExists, EtctlError, NotFound
from etctl.log import get_logger
from etctl.runtime._client import Client
from etctl.runtime._clock import Clock, RealClock, wait_event
from etctl.runtime._informer import Informer
from etctl.runtime._objects import KubeObject, ObjectView, Tombstone
from etctl.runtime._resources import (
    CRDS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    SECRETS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Resource,
)
from etctl.runtime._tls import certificates_child
from etctl.runtime._webhook_options import CertRotation

__all__ = ["CA_CERT", "CA_KEY", "TLS_CERT", "TLS_KEY", "CertRotation", "CertRotator"]

log = get_logger(__name__)

_MAX_BACKOFF = 300.0


def _decode(secret: ObjectView | None) -> dict[str, bytes]:
    data = (secret or {}).get("data") or {}
    out = {}
    for key in (CA_CERT, CA_KEY, TLS_CERT, TLS_KEY):
        value = data.get(key)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                out[key] = base64.b64decode(value, validate=True)
    return out


def _encode(data: Mapping[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in sorted(data.items())}


class CertRotator:
    """Keeps the webhook certificates of one :class:`CertRotation` (see the module docs).

    Args:
        client: the API client.
        rotation: what to provision and inject.
        cert_dir: where the webhook server reads its certificate; written when writable.
        cert_name: the certificate's file in it.
        key_name: the key's file in it.
        clock: the clock of every wait and of certificate validity.
        rng: backoff jitter.
        on_written: called after new files were written (the webhook server reloads at once).
        in_process: plan in this process rather than in a child (see the module docs).
    """

    def __init__(
        self,
        client: Client,
        rotation: CertRotation,
        *,
        cert_dir: Path | None = None,
        cert_name: str = TLS_CERT,
        key_name: str = TLS_KEY,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        on_written: Callable[[], object] | None = None,
        in_process: bool = False,
    ) -> None:
        self._client = client
        self._in_process = in_process
        self._on_written = on_written
        self.rotation = rotation
        self._cert_dir = cert_dir
        self._cert_name = cert_name
        self._key_name = key_name
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._wake = asyncio.Event()
        self._missing: set[str] = set()  # targets reported missing (once each)
        self._read_only = False  # the certificate directory refused a write (reported once)
        self.passes = 0
        """Completed passes (every target converged)."""
        self.waiting_until: float | None = None
        """While waiting between passes, the clock's monotonic time of the next one."""

    def check(self) -> str | None:
        """Readiness: ``None`` once a pass has converged, else why not yet."""
        return None if self.passes else "the webhook certificates are not provisioned yet"

    # -- the loop

    async def run(self) -> None:
        """Converge now, then whenever something changes or a rotation is due; until cancelled."""
        async with asyncio.TaskGroup() as group:
            for informer in self._informers():
                informer.add_handler(_Wake(self._wake))
                group.create_task(informer.run(), name=f"cert-rotator:{informer.describe()}")
            failures = 0
            while True:
                self._wake.clear()
                try:
                    delay = await self.reconcile()
                    failures = 0
                except (EtctlError, CertificateError, OSError) as error:
                    failures += 1
                    delay = min(2.0**failures, _MAX_BACKOFF) * (0.5 + self._rng.random())
                    log.warning("webhook certificates not converged; retrying", error=str(error))
                self.waiting_until = self._clock.monotonic() + max(delay, 0.0)
                await wait_event(self._clock, self._wake, max(delay, 0.0))
                self.waiting_until = None

    def _targets(self) -> list[tuple[Resource, str]]:
        """Where the CA bundle goes: the webhook configurations, then the CRDs."""
        rotation = self.rotation
        return [
            *((VALIDATING_WEBHOOK_CONFIGURATIONS, name) for name in rotation.validating_webhooks),
            *((MUTATING_WEBHOOK_CONFIGURATIONS, name) for name in rotation.mutating_webhooks),
            *((CRDS, name) for name in rotation.conversion_crds),
        ]

    def _informers(self) -> list[Informer]:
        rotation = self.rotation
        watched: list[tuple[Resource, str, str | None]] = [
            (SECRETS, rotation.secret_name, rotation.namespace),
            *((resource, name, None) for resource, name in self._targets()),
        ]
        return [
            Informer(
                self._client,
                resource,
                clock=self._clock,
                namespace=namespace,
                field_selector=f"metadata.name={name}",
                compact=False,
                rng=random.Random(self._rng.random()),  # noqa: S311 - jitter
            )
            for resource, name, namespace in watched
        ]

    # -- one pass

    async def reconcile(self) -> float:
        """One pass (steps 1-4 of the module docs); returns seconds until the next is due.

        Raises:
            EtctlError: an API call failed (a conflict included), or the plan could not be made:
                the pass is retried.
        """
        rotation = self.rotation
        now = self._clock.now()
        try:
            secret: KubeObject | None = await self._client.get(
                SECRETS, rotation.secret_name, namespace=rotation.namespace
            )
        except NotFound:
            secret = None
        data = _decode(secret)
        planned = await self._plan(data, now)
        if planned.ca_created:
            log.info(
                "webhook CA created", kept_in=rotation.secret_name, replaces=planned.replaces_ca
            )
        if planned.first is not None:
            secret = await self._write(secret, planned.first)
            data = planned.first
        await self._inject(data[CA_CERT])
        if planned.serving is not None:
            data = {**data, **planned.serving}
            secret = await self._write(secret, data)
            log.info("webhook serving certificate issued", kept_in=rotation.secret_name)
        self._write_files(data[TLS_CERT], data[TLS_KEY])
        self.passes += 1
        return min(rotation.check_interval, max((planned.due - now).total_seconds(), 1.0))

    async def _plan(self, data: Mapping[str, bytes], now: datetime.datetime) -> Plan:
        policy = self.rotation.policy()
        if self._in_process:
            return plan(data, policy, now)
        request = plan_request(data, policy, now).encode()
        return read_plan((await certificates_child("--rotate", stdin=request)).decode())

    async def _write(self, secret: KubeObject | None, data: Mapping[str, bytes]) -> KubeObject:
        rotation = self.rotation
        if secret is None:
            body: KubeObject = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": rotation.secret_name, "namespace": rotation.namespace},
                "type": "Opaque",
                "data": _encode(data),
            }
            try:
                return await self._client.create(SECRETS, body, namespace=rotation.namespace)
            except AlreadyExists:
                self._wake.set()  # another replica made it: read theirs
                raise
        body = {**secret, "data": {**(secret.get("data") or {}), **_encode(data)}}
        return await self._client.replace(SECRETS, body, namespace=rotation.namespace)

    # -- injection (step 2)

    async def _inject(self, bundle: bytes) -> None:
        encoded = base64.b64encode(bundle).decode()
        for resource, name in self._targets():
            try:
                obj = await self._client.get(resource, name)
            except NotFound:
                if f"{resource.plural}/{name}" not in self._missing:
                    self._missing.add(f"{resource.plural}/{name}")
                    log.info("nothing to inject the webhook CA into yet", target=name)
                continue
            self._missing.discard(f"{resource.plural}/{name}")
            if _set_bundle(obj, encoded):
                await self._client.replace(resource, obj)
                log.info("webhook CA bundle injected", target=name, kind=obj.get("kind"))

    # -- files (step 4)

    def _write_files(self, cert: bytes, key: bytes) -> None:
        directory = self._cert_dir
        if directory is None:
            return
        written = False
        for name, content in ((self._key_name, key), (self._cert_name, cert)):
            path = directory / name
            with contextlib.suppress(OSError):
                if path.read_bytes() == content:
                    continue
            written = True
            try:
                directory.mkdir(parents=True, exist_ok=True)
                _atomic_write(path, content)
            except OSError as error:
                # A Secret volume (read-only): the kubelet brings the Secret's new content.
                if not self._read_only:
                    self._read_only = True
                    log.info(
                        "the certificate directory is not writable; the kubelet updates it",
                        cert_dir=str(directory),
                        error=str(error),
                    )
                return
        if written and self._on_written is not None:
            self._on_written()


def _atomic_write(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` through a private temporary file and a rename."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _set_bundle(obj: dict[str, Any], encoded: str) -> bool:
    """Set ``caBundle`` in every webhook client config of ``obj``; True if anything changed."""
    configs: list[dict[str, Any]] = []
    if obj.get("kind") == "CustomResourceDefinition":
        conversion = (obj.get("spec") or {}).get("conversion") or {}
        webhook = conversion.get("webhook") if conversion.get("strategy") == "Webhook" else None
        if isinstance(webhook, dict) and isinstance(webhook.get("clientConfig"), dict):
            configs.append(webhook["clientConfig"])
    else:
        configs.extend(
            hook["clientConfig"]
            for hook in obj.get("webhooks") or []
            if isinstance(hook, dict) and isinstance(hook.get("clientConfig"), dict)
        )
    changed = False
    for config in configs:
        if config.get("caBundle") != encoded:
            config["caBundle"] = encoded
            changed = True
    return changed


class _Wake:
    """An informer handler that wakes the rotator on any change."""

    def __init__(self, event: asyncio.Event) -> None:
        self._event = event

    def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
        self._event.set()

    def on_update(self, old: ObjectView, new: ObjectView) -> None:
        self._event.set()

    def on_delete(self, obj: ObjectView | Tombstone) -> None:
        self._event.set()
