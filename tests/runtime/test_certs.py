"""The certificates a webhook server provisions for itself."""

from __future__ import annotations

import datetime
import ssl

import pytest

from etctl._certificates import (
    CertificateError,
    inspect,
    issue_serving_certificate,
    key_matches,
    new_ca,
    signed_by,
    split_pem,
)

NOW = datetime.datetime(2026, 6, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def test_a_ca_signs_serving_certificates_for_names_and_addresses() -> None:
    ca = new_ca("etctl-webhook-ca", now=NOW, validity=3650 * DAY)
    served = issue_serving_certificate(
        ca,
        dns_names=["etctl-webhook-service.etctl-system.svc"],
        ip_addresses=["127.0.0.1", "::1"],
        now=NOW,
        validity=365 * DAY,
    )
    ca_info, info = inspect(ca.cert_pem), inspect(served.cert_pem)
    assert ca_info.is_ca
    assert not info.is_ca
    assert info.not_before == NOW - datetime.timedelta(hours=1)
    assert info.not_after == NOW + 365 * DAY
    assert info.covers(["etctl-webhook-service.etctl-system.svc"], ["127.0.0.1", "0:0::1"])
    assert not info.covers(["other.svc"], [])
    assert info.valid_until(NOW + 300 * DAY)
    assert not info.valid_until(NOW + 366 * DAY)
    assert key_matches(served.cert_pem, served.key_pem)
    assert not key_matches(served.cert_pem, ca.key_pem)
    assert signed_by(served.cert_pem, ca.cert_pem)
    other = new_ca("other", now=NOW, validity=DAY)
    assert not signed_by(served.cert_pem, other.cert_pem)
    # What Python's TLS stack (OpenSSL) makes of them: a chain it verifies.
    store = ssl.create_default_context(cadata=ca.cert_pem.decode())
    assert store.cert_store_stats()["x509_ca"] == 1


def test_a_serving_certificate_never_outlives_its_ca() -> None:
    ca = new_ca("short", now=NOW, validity=10 * DAY)
    served = issue_serving_certificate(ca, dns_names=["a.b.svc"], now=NOW, validity=365 * DAY)
    assert inspect(served.cert_pem).not_after == NOW + 10 * DAY


def test_garbage_is_an_error_or_false_never_a_crash() -> None:
    with pytest.raises(CertificateError):
        inspect(b"not a certificate")
    ca = new_ca("x", now=NOW, validity=DAY)
    assert not key_matches(b"junk", ca.key_pem)
    assert not key_matches(ca.cert_pem, b"junk")
    assert not signed_by(b"junk", ca.cert_pem)
    with pytest.raises(CertificateError):
        issue_serving_certificate(ca, dns_names=[], now=NOW, validity=DAY)
    with pytest.raises(CertificateError):
        issue_serving_certificate(
            type(ca)(ca.cert_pem, b"junk"), dns_names=["a"], now=NOW, validity=DAY
        )


def test_a_bundle_splits_into_its_certificates() -> None:
    first = new_ca("one", now=NOW, validity=DAY).cert_pem
    second = new_ca("two", now=NOW, validity=DAY).cert_pem
    assert split_pem(first + b"\n" + second) == [first, second]
    assert split_pem(b"") == []
