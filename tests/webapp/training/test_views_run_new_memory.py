"""On a GPU machine the training form's estimate says whether the run fits in GPU memory."""

import pytest
from django.urls import reverse

from tests.ml.conftest import build_model
from tests.webapp.training.test_views_run_new_estimate import three_steps  # noqa: F401 (fixture)
from webapp.training import estimates


@pytest.fixture
def tiny_folder(tmp_path, model_version):
    build_model("llama", 500).config.save_pretrained(tmp_path)
    model_version.path = str(tmp_path)
    model_version.save()
    return tmp_path


def test_the_estimate_says_the_run_fits_on_the_gpus(client, three_steps, settings, tiny_folder):  # noqa: F811
    settings.TRAINING_GPU_MEMORY_GB = 141
    settings.TRAINING_LAUNCHER = "accelerate launch --multi_gpu --num_processes 2"
    html = client.post(reverse("training:run_new"), three_steps, headers={"HX-Request": "true"}).content.decode()
    assert "memory: " in html and "GB per GPU of 141: fits" in html


def test_a_run_that_does_not_fit_names_the_change(client, three_steps, settings, tiny_folder):  # noqa: F811
    settings.TRAINING_GPU_MEMORY_GB = 1.0  # below the 1 GiB (1.07 GB) headroom alone
    html = client.post(reverse("training:run_new"), three_steps, headers={"HX-Request": "true"}).content.decode()
    assert "does not fit: " in html


def test_on_the_cpu_there_is_no_memory_line(client, three_steps, settings, tiny_folder):  # noqa: F811
    settings.TRAINING_GPU_MEMORY_GB = 0
    html = client.post(reverse("training:run_new"), three_steps, headers={"HX-Request": "true"}).content.decode()
    assert "memory: " not in html


@pytest.mark.parametrize(
    "launcher, gpus",
    [("", 1), ("accelerate launch --multi_gpu --num_processes 8", 8), ("torchrun --nproc-per-node 4", 4)],
)
def test_the_gpu_count_is_the_launchers_process_count(launcher, gpus):
    assert estimates._launcher_processes(launcher) == gpus
