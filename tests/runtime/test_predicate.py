import pytest

from etctl.runtime import (
    AnnotationsChanged,
    CreateEvent,
    DeleteEvent,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    ResourceVersionChanged,
    UpdateEvent,
    and_,
    not_,
    or_,
    predicate_func,
)
from tests.runtime._fakes import obj

OLD = obj("p", rv="1", generation=1, labels={"a": "1"}, annotations={"x": "1"})
STATUS_WRITE = obj("p", rv="2", generation=1, labels={"a": "1"}, annotations={"x": "1"})
SPEC_CHANGE = obj("p", rv="3", generation=2, labels={"a": "1"}, annotations={"x": "1"})
RELABEL = obj("p", rv="4", generation=1, labels={"a": "2"}, annotations={"x": "1"})
REANNOTATE = obj("p", rv="5", generation=1, labels={"a": "1"}, annotations={"x": "2"})
RESYNC = UpdateEvent(OLD, OLD)


CHANGES = {
    "status": STATUS_WRITE,
    "spec": SPEC_CHANGE,
    "labels": RELABEL,
    "annotations": REANNOTATE,
}


@pytest.mark.parametrize(
    ("predicate", "passes"),
    [
        (GenerationChanged(), {"spec"}),
        (LabelsChanged(), {"labels"}),
        (AnnotationsChanged(), {"annotations"}),
        (ResourceVersionChanged(), {"status", "spec", "labels", "annotations"}),
    ],
    ids=repr,
)
def test_builtin_update_filters(predicate: Predicate, passes: set[str]) -> None:
    passed = {change for change, new in CHANGES.items() if predicate.update(UpdateEvent(OLD, new))}
    assert passed == passes
    assert predicate.update(RESYNC) is False  # no built-in lets a resync through
    assert predicate.create(CreateEvent(OLD)) is True
    assert predicate.delete(DeleteEvent(OLD, state_unknown=True)) is True


def test_generation_changed_drops_every_update_of_objects_without_generation() -> None:
    pod = {"metadata": {"name": "p", "resourceVersion": "1"}}
    later = {"metadata": {"name": "p", "resourceVersion": "2", "labels": {"x": "y"}}}
    assert GenerationChanged().update(UpdateEvent(pod, later)) is False


def test_predicate_func_passes_what_it_does_not_decide() -> None:
    only_initial = predicate_func(create=lambda e: e.is_in_initial_list)
    assert only_initial.create(CreateEvent(OLD, is_in_initial_list=True))
    assert not only_initial.create(CreateEvent(OLD))
    assert only_initial.update(RESYNC)
    assert only_initial.delete(DeleteEvent(OLD))
    no_deletes = predicate_func(delete=lambda e: False, update=lambda e: not e.is_resync)
    assert not no_deletes.delete(DeleteEvent(OLD))
    assert not no_deletes.update(RESYNC)
    assert no_deletes.update(UpdateEvent(OLD, STATUS_WRITE))


def test_combinators() -> None:
    spec_or_labels = or_(GenerationChanged(), LabelsChanged())
    assert spec_or_labels.update(UpdateEvent(OLD, SPEC_CHANGE))
    assert spec_or_labels.update(UpdateEvent(OLD, RELABEL))
    assert not spec_or_labels.update(UpdateEvent(OLD, STATUS_WRITE))
    both = and_(ResourceVersionChanged(), not_(GenerationChanged()))
    assert both.update(UpdateEvent(OLD, STATUS_WRITE))
    assert not both.update(UpdateEvent(OLD, SPEC_CHANGE))
    assert not both.update(RESYNC)
    assert not not_(GenerationChanged()).create(CreateEvent(OLD))
    assert not not_(GenerationChanged()).delete(DeleteEvent(OLD))
    assert and_().create(CreateEvent(OLD))
    assert not or_().create(CreateEvent(OLD))
    assert or_(not_(LabelsChanged()), LabelsChanged()).delete(DeleteEvent(OLD))
    assert and_(GenerationChanged(), LabelsChanged()).delete(DeleteEvent(OLD))


def test_builtins_satisfy_the_protocol() -> None:
    for predicate in (GenerationChanged(), predicate_func(), and_(), or_(), not_(and_())):
        assert isinstance(predicate, Predicate)
    assert repr(GenerationChanged()) == "GenerationChanged()"
