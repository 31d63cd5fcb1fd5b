"""The sharding settings of DSM, CPT and SFT runs: offered, validated beside their field, stored."""

from webapp.training import configs
from webapp.training.forms import LaunchForm
from webapp.training.models import RunKind


def test_sharding_is_a_choice_of_none_fsdp_or_zero2_stored_in_the_train_section():
    config, problems = configs.build_config(RunKind.DSM, {"train": {"sharding": "fsdp", "cpu_offload": True}})
    assert problems == {}
    assert (config["train"]["sharding"], config["train"]["cpu_offload"]) == ("fsdp", True)
    default, _ = configs.build_config(RunKind.SFT, {})
    assert (default["train"]["sharding"], default["train"]["cpu_offload"]) == ("none", False)
    _, problems = configs.build_config(RunKind.CPT, {"train": {"sharding": "zero3"}})
    assert problems == {"train.sharding": "The sharding must be one of none, fsdp, zero2; got 'zero3'."}


def test_cpu_offload_without_fsdp_is_refused_beside_its_setting():
    _, problems = configs.build_config(RunKind.DSM, {"train": {"cpu_offload": True}})
    assert problems == {
        "train.cpu_offload": "CPU offload keeps FSDP's shards in host memory: set the sharding to fsdp."
    }


def test_the_launch_form_offers_the_sharding_choices(researcher):
    form = LaunchForm(preset="dsm-full", user=researcher)
    field = form.fields["train__sharding"]
    assert [value for value, _ in field.choices] == ["none", "fsdp", "zero2"] and field.initial == "none"
    assert form.fields["train__cpu_offload"].label == "CPU offload (fsdp)"
