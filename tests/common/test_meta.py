from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from etctl.common import (
    KubeModel,
    KubeObjectModel,
    ObjectMeta,
    OwnerReference,
    Timestamp,
    ValueModel,
    format_timestamp,
    to_timestamp,
)


class Sample(KubeModel):
    some_field: int = 0
    optional_value: str | None = None
    when: Timestamp | None = None


class Frozen(ValueModel):
    items_count: int = 1


def test_camel_case_aliases_and_population_by_name() -> None:
    by_alias = Sample.model_validate({"someField": 3})
    by_name = Sample.model_validate({"some_field": 3})
    assert by_alias == by_name
    assert by_alias.some_field == 3
    assert by_alias.to_dict() == {"someField": 3}


def test_unknown_fields_are_ignored_and_none_is_not_serialised() -> None:
    parsed = Sample.model_validate({"someField": 1, "notAField": {"x": 1}})
    assert parsed.to_dict() == {"someField": 1}
    assert "notAField" not in parsed.model_dump(by_alias=True)


def test_value_models_are_frozen() -> None:
    value = Frozen()
    with pytest.raises(ValidationError):
        value.items_count = 2  # type: ignore[misc]
    assert value.model_copy(update={"items_count": 2}).items_count == 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2020-11-04T13:54:26Z", "2020-11-04T13:54:26Z"),
        ("2020-11-04T13:54:26.987654Z", "2020-11-04T13:54:26Z"),
        ("2020-11-04T15:54:26+02:00", "2020-11-04T13:54:26Z"),
        (datetime(2020, 11, 4, 13, 54, 26, 500), "2020-11-04T13:54:26Z"),
    ],
)
def test_timestamps_parse_rfc3339_and_serialise_with_z(raw: object, expected: str) -> None:
    parsed = Sample.model_validate({"when": raw})
    assert parsed.when is not None
    assert parsed.when.tzinfo is UTC
    assert parsed.when.microsecond == 0
    assert parsed.to_dict() == {"someField": 0, "when": expected}
    # Whole seconds survive a round trip exactly.
    assert Sample.model_validate(parsed.to_dict()) == parsed


def test_timestamp_helpers() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert to_timestamp(datetime(2026, 1, 1, 2, 0, 0, 999, tzinfo=plus_two)) == datetime(
        2026, 1, 1, tzinfo=UTC
    )
    assert format_timestamp(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00Z"


def test_bad_timestamps_are_rejected() -> None:
    with pytest.raises(ValidationError):
        Sample.model_validate({"when": "yesterday"})


def test_object_meta_serialises_like_go_omitempty() -> None:
    meta = ObjectMeta.model_validate(
        {
            "generateName": "scalein-sample-",
            "labels": {},
            "generation": 0,
            "creationTimestamp": "2020-11-04T13:54:26Z",
        }
    )
    assert meta.name == ""
    assert meta.to_dict() == {
        "generateName": "scalein-sample-",
        "creationTimestamp": "2020-11-04T13:54:26Z",
    }


def test_object_meta_controller_ref_and_object_key() -> None:
    owner = {"apiVersion": "v1", "kind": "TrainingJob", "name": "job", "uid": "u1"}
    meta = ObjectMeta.model_validate(
        {
            "name": "scaler",
            "namespace": "ns",
            "ownerReferences": [
                {**owner, "uid": "u0"},
                {**owner, "controller": True, "blockOwnerDeletion": True},
            ],
        }
    )
    ref = meta.controller_ref()
    assert ref == OwnerReference(
        api_version="v1",
        kind="TrainingJob",
        name="job",
        uid="u1",
        controller=True,
        block_owner_deletion=True,
    )
    assert ObjectMeta().controller_ref() is None
    obj = KubeObjectModel(api_version="v1", kind="Thing", metadata=meta)
    assert obj.key == "ns/scaler"
    cluster = KubeObjectModel(api_version="v1", kind="Thing", metadata=ObjectMeta(name="n"))
    assert cluster.key == "n"
