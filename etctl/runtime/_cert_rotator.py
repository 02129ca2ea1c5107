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
conditional on the resourceVersion read. ``cryptography`` is loaded by the first pass.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etctl.errors import AlreadyExists, EtctlError, NotFound
from etctl.log import get_logger
from etctl.runtime._certs import (
    CertificateError,
    KeyPair,
    inspect,
    issue_serving_certificate,
    key_matches,
    new_ca,
    signed_by,
    split_pem,
)
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

__all__ = ["CA_CERT", "CA_KEY", "TLS_CERT", "TLS_KEY", "CertRotation", "CertRotator"]

log = get_logger(__name__)

CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
"""The keys of the certificate Secret (cert-controller's)."""

_DAY = 86400.0
_MAX_BACKOFF = 300.0


@dataclass(frozen=True, kw_only=True, slots=True)
class CertRotation:
    """What a :class:`CertRotator` provisions, and where it injects the CA.

    Attributes:
        secret_name: the Secret holding the CA and serving certificate (created when missing).
        namespace: its namespace (the operator's).
        dns_names: the serving certificate's DNS names (the webhook Service's, see
            :meth:`for_service`).
        ip_addresses: its IP addresses (an operator outside the cluster, reached by URL).
        validating_webhooks: ValidatingWebhookConfigurations whose webhooks get the CA bundle.
        mutating_webhooks: MutatingWebhookConfigurations whose webhooks get the CA bundle.
        conversion_crds: CRDs (by name) whose conversion webhook gets the CA bundle.
        ca_name: the CA's common name.
        ca_validity: seconds a new CA is valid (10 years, cert-controller's).
        cert_validity: seconds a new serving certificate is valid (1 year).
        lookahead: seconds before expiry at which a certificate is replaced (90 days).
        check_interval: the longest time between two passes (12 hours).
    """

    secret_name: str
    namespace: str
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    validating_webhooks: tuple[str, ...] = ()
    mutating_webhooks: tuple[str, ...] = ()
    conversion_crds: tuple[str, ...] = ()
    ca_name: str = "etctl-webhook-ca"
    ca_validity: float = 3650 * _DAY
    cert_validity: float = 365 * _DAY
    lookahead: float = 90 * _DAY
    check_interval: float = 12 * 3600.0

    def __post_init__(self) -> None:
        if not self.dns_names and not self.ip_addresses:
            msg = "a certificate rotation needs the DNS names or IP addresses to serve"
            raise ValueError(msg)
        if not 0 < self.lookahead < self.cert_validity <= self.ca_validity:
            msg = "certificate rotation needs 0 < lookahead < cert_validity <= ca_validity"
            raise ValueError(msg)

    @staticmethod
    def service_names(service: str, namespace: str) -> tuple[str, ...]:
        """The names a Service is reached by inside the cluster."""
        return (
            f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local",
        )


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


def _expiry(pem: bytes) -> datetime.datetime:
    return inspect(pem).not_after


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
    ) -> None:
        self._client = client
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
            EtctlError: an API call failed (a conflict included): the pass is retried.
        """
        rotation = self.rotation
        now = self._clock.now()
        horizon = now + datetime.timedelta(seconds=rotation.lookahead)
        try:
            secret: KubeObject | None = await self._client.get(
                SECRETS, rotation.secret_name, namespace=rotation.namespace
            )
        except NotFound:
            secret = None
        data = _decode(secret)
        ca, bundle = self._ca(data, now, horizon)
        wanted = dict(data)
        wanted[CA_CERT], wanted[CA_KEY] = b"".join(bundle), ca.key_pem
        if wanted != data:
            if TLS_CERT not in wanted or TLS_KEY not in wanted:
                wanted.update(self._serving(ca, data, now, horizon) or {})
            secret = await self._write(secret, wanted)
            data = wanted
        await self._inject(data[CA_CERT])
        serving = self._serving(ca, data, now, horizon)
        if serving is not None:
            data = {**data, **serving}
            secret = await self._write(secret, data)
            log.info("webhook serving certificate issued", kept_in=rotation.secret_name)
        self._write_files(data[TLS_CERT], data[TLS_KEY])
        self.passes += 1
        due = min(_expiry(ca.cert_pem), _expiry(data[TLS_CERT])) - datetime.timedelta(
            seconds=rotation.lookahead
        )
        return min(rotation.check_interval, max((due - now).total_seconds(), 1.0))

    def _ca(
        self, data: Mapping[str, bytes], now: datetime.datetime, horizon: datetime.datetime
    ) -> tuple[KeyPair, list[bytes]]:
        """The CA to sign with and the bundle to inject (step 1)."""
        bundle = split_pem(data.get(CA_CERT, b""))
        current = bundle[0] if bundle else b""
        key = data.get(CA_KEY, b"")
        if current and self._usable_ca(current, key, horizon):
            ca = KeyPair(current, key)
        else:
            ca = new_ca(
                self.rotation.ca_name,
                now=now,
                validity=datetime.timedelta(seconds=self.rotation.ca_validity),
            )
            log.info(
                "webhook CA created", kept_in=self.rotation.secret_name, replaces=bool(current)
            )
        # The bundle: the signing CA, then the one it replaced while that one is still valid.
        older = [pem for pem in bundle if pem != ca.cert_pem and self._valid_ca(pem, now)]
        return ca, [ca.cert_pem, *older[:1]]

    @staticmethod
    def _valid_ca(pem: bytes, moment: datetime.datetime) -> bool:
        try:
            info = inspect(pem)
        except CertificateError:
            return False
        return info.is_ca and info.valid_until(moment)

    def _usable_ca(self, pem: bytes, key: bytes, horizon: datetime.datetime) -> bool:
        return self._valid_ca(pem, horizon) and key_matches(pem, key)

    def _serving(
        self,
        ca: KeyPair,
        data: Mapping[str, bytes],
        now: datetime.datetime,
        horizon: datetime.datetime,
    ) -> dict[str, bytes] | None:
        """A new serving certificate and key, or None when the current pair is good (step 3)."""
        rotation = self.rotation
        cert, key = data.get(TLS_CERT, b""), data.get(TLS_KEY, b"")
        try:
            info = inspect(cert) if cert else None
        except CertificateError:
            info = None
        if (
            info is not None
            and info.valid_until(horizon)
            and info.covers(rotation.dns_names, rotation.ip_addresses)
            and signed_by(cert, ca.cert_pem)
            and key_matches(cert, key)
        ):
            return None
        issued = issue_serving_certificate(
            ca,
            dns_names=rotation.dns_names,
            ip_addresses=rotation.ip_addresses,
            now=now,
            validity=datetime.timedelta(seconds=rotation.cert_validity),
        )
        return {TLS_CERT: issued.cert_pem, TLS_KEY: issued.key_pem}

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
