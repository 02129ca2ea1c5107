from etctl.runtime import CreateEvent, DeleteEvent, UpdateEvent
from tests.runtime._fakes import obj


def test_an_update_with_the_same_resource_version_is_a_resync() -> None:
    current = obj("p", rv="7")
    assert UpdateEvent(current, current).is_resync
    assert UpdateEvent(current, obj("p", rv="7", generation=2)).is_resync
    assert not UpdateEvent(current, obj("p", rv="8")).is_resync


def test_defaults() -> None:
    current = obj("p")
    assert CreateEvent(current).is_in_initial_list is False
    assert DeleteEvent(current).state_unknown is False
