"""Job kinds as a person names them, and what a kind lets tools read of its jobs."""

from __future__ import annotations

import pytest

from etctl.cli._jobkinds import JobKind, job_kinds, resolve, split_target
from etctl.cli._registry import Registry, discover
from etctl.common import PublishedFile
from etctl.errors import ConfigError
from etctl.jobs.tfjob import TFJOB
from etctl.jobs.trainingjob import TrainingJobPlugin


def test_every_registered_kind_is_named_as_kubectl_names_it() -> None:
    kinds = job_kinds(discover())
    for word in ("tfjob", "TFJob", "tfjobs", "tfjobs.kubeflow.org"):
        assert resolve(kinds, word).kind == "TFJob"
    for word in ("trainingjob", "TrainingJobs", "trainingjobs.kai.alibabacloud.com"):
        assert resolve(kinds, word).kind == "TrainingJob"
    for word in ("mpijob", "MPIJobs", "mpij", "mj", "mpijobs.kubeflow.org"):
        assert resolve(kinds, word).kind == "MPIJob"
    for word in ("pytorchjob", "PyTorchJobs", "ptj", "pytorchjobs.kubeflow.org"):
        assert resolve(kinds, word).kind == "PyTorchJob"
    with pytest.raises(ConfigError) as unknown:
        resolve(kinds, "mpijobz")
    assert str(unknown.value) == (
        "'mpijobz' is not a registered job kind (registered: MPIJob, PyTorchJob, TFJob, "
        "TrainingJob)"
    )


def test_short_names_and_entry_names_count() -> None:
    kind = JobKind.of(TrainingJobPlugin(), "elastic")
    assert resolve([kind], "elastic") is kind
    assert kind.names >= {"trainingjob", "trainingjobs", "elastic"}
    assert kind.subject("a") == "trainingjob/a"
    assert kind.elastic
    assert kind.resource.plural == "trainingjobs"


def test_a_kind_without_a_controller_reads_nothing_from_its_spec() -> None:
    registry = Registry()
    registry.register("apionly", TFJOB)
    (kind,) = job_kinds(registry)
    assert kind.plugin is None
    assert not kind.elastic
    assert kind.parse({"spec": {}}) is None
    assert kind.desired_replicas(None) == {}
    assert kind.files(None) == ()


def test_the_plugin_says_which_files_it_publishes() -> None:
    kind = JobKind.of(TrainingJobPlugin())
    job = kind.parse(
        {
            "metadata": {"name": "j"},
            "spec": {
                "etReplicaSpecs": {
                    "worker": {
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "m", "image": "i"}]}},
                    }
                }
            },
        }
    )
    assert job is not None
    assert kind.files(job) == (
        PublishedFile(
            config_map="j-config", key="hostfile", path="/etc/edl/hostfile", reader="j-launcher"
        ),
    )
    assert kind.desired_replicas(job) == {"Worker": 1}


@pytest.mark.parametrize(
    ("words", "expected"),
    [(["tfjob/mnist"], ("tfjob", "mnist")), (["tfjob", "mnist"], ("tfjob", "mnist"))],
)
def test_targets_are_kind_slash_name_or_two_words(
    words: list[str], expected: tuple[str, str]
) -> None:
    assert split_target(words) == expected


@pytest.mark.parametrize("words", [["tfjob"], ["tfjob/"], ["/x"], ["a/b/c"], ["a/b", "c"]])
def test_other_targets_are_refused(words: list[str]) -> None:
    with pytest.raises(ConfigError, match="expected KIND/NAME or KIND NAME"):
        split_target(words)
