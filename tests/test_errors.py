import pytest

from etctl import errors


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (404, "NotFound", errors.NotFound),
        (409, "AlreadyExists", errors.AlreadyExists),
        (409, "Conflict", errors.Conflict),
        (409, "", errors.Conflict),
        (410, "Expired", errors.Gone),
        (422, "Invalid", errors.Invalid),
        (429, "TooManyRequests", errors.TooManyRequests),
        (503, "ServiceUnavailable", errors.ServerError),
        (500, "", errors.ServerError),
        (403, "Forbidden", errors.Forbidden),
        (415, "UnsupportedMediaType", errors.UnsupportedMediaType),
        (413, "RequestEntityTooLarge", errors.RequestEntityTooLarge),
        (418, "", errors.ApiError),
    ],
)
def test_status_maps_to_class(status: int, reason: str, expected: type[errors.ApiError]) -> None:
    err = errors.api_error_from_status(status, {"reason": reason, "message": "boom"})
    assert type(err) is expected
    assert err.status == status
    assert err.message == "boom"


def test_already_exists_is_not_a_conflict() -> None:
    err = errors.api_error_from_status(409, {"reason": "AlreadyExists"})
    assert not isinstance(err, errors.Conflict)


def test_invalid_carries_causes_and_retry_after_from_details() -> None:
    body = {
        "reason": "Invalid",
        "message": "bad",
        "details": {
            "causes": [{"field": "spec.replicas", "reason": "FieldValueInvalid"}],
            "retryAfterSeconds": 3,
        },
    }
    err = errors.api_error_from_status(422, body)
    assert err.causes == [{"field": "spec.replicas", "reason": "FieldValueInvalid"}]
    assert err.retry_after == 3.0
    assert str(err) == "(422 Invalid) bad"


def test_every_error_is_an_etctl_error() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type):
            assert issubclass(obj, errors.EtctlError)


def test_request_not_sent_is_a_transport_error() -> None:
    # Callers that only care that no answer came catch TransportError; the retry rules and the
    # reflector tell the two apart.
    assert issubclass(errors.RequestNotSent, errors.TransportError)
    assert "RequestNotSent" in errors.__all__
