"""Labels tying children to their job: selectors, canonical strings, defensive reads."""

from __future__ import annotations

from etctl.common import _labels as labels
from etctl.common._labels import (
    by_job,
    job_selector,
    matches,
    replica_index_of,
    replica_labels,
    replica_type_of,
    selector_string,
)


def test_replica_labels_are_kubeflows_keys_with_a_lower_case_type() -> None:
    assert replica_labels("mnist", "etctl", "Worker", 3) == {
        "training.kubeflow.org/operator-name": "etctl",
        "training.kubeflow.org/job-name": "mnist",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "3",
    }


def test_selector_string_is_canonical() -> None:
    one = selector_string({"b": "2", "a": "1"})
    other = selector_string({"a": "1", "b": "2"})
    assert one == other == "a=1,b=2"


def test_matches_requires_every_selector_label() -> None:
    selector = job_selector("mnist", "etctl")
    pod = {"metadata": {"labels": {**selector, "extra": "x"}}}
    assert matches(pod, selector)
    assert not matches({"metadata": {"labels": {labels.JOB_NAME: "mnist"}}}, selector)
    assert not matches({"metadata": {}}, selector)


def test_replica_index_reads_only_plain_non_negative_integers() -> None:
    def pod(value: object) -> dict[str, object]:
        return {"metadata": {"labels": {labels.REPLICA_INDEX: value}}}

    assert replica_index_of(pod("7")) == 7
    for bad in ("-1", "x", "", "٣", 3, None):
        assert replica_index_of(pod(bad)) is None


def test_replica_type_of_missing_label_is_none() -> None:
    assert replica_type_of({"metadata": {"labels": {labels.REPLICA_TYPE: "ps"}}}) == "ps"
    assert replica_type_of({"metadata": {"labels": {}}}) is None


def test_by_job_indexes_by_namespace_and_job_name() -> None:
    pod = {"metadata": {"namespace": "ns", "labels": {labels.JOB_NAME: "mnist"}}}
    assert by_job(pod) == ("ns/mnist",)
    assert by_job({"metadata": {"namespace": "ns"}}) == ()
